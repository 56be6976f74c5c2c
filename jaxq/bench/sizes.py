"""Problem sizes of the benchmark: by mode (full, ``--quick``, ``JAXQ_BENCH_TINY=1``) and backend.

Lockstep engines (every replication advances one step per vector operation) only fill an accelerator
with many replications (10^5-10^6), while a CPU saturates near 10^4; sequential baselines (numba, Ciw)
stay on the host CPU in every case. ``JAXQ_BENCH_TINY=1`` shrinks everything to a dry run of the
whole benchmark (minutes on a CPU, seconds per section on a GPU).

``rep_events`` caps the events of one replication (None: no cap). On an accelerator one event of one
replication costs a few kernel launches (tens of microseconds), so the configurations with 1-100
replications would spend minutes of scarce device time measuring launch latency; capped, they still
show it. ``lockstep_chunk`` is the number of replications per compiled call of a lockstep engine: an
accelerator wants them all at once (10^6 replications of the 2x2 system take tens of megabytes);
``event_chunk`` the same for the event-driven engine, whose state is larger. ``pss2x2_family_reps``: the
replications of the per-family rows of the 2x2 event engine (10^4 on a CPU, 10^4-10^6 on an accelerator; the quick
size there is 10^6 alone: on an H200 the nine families' interleaved rounds at 10^5 and 10^6 replications and 2 x 10^8
events each did not finish in 170 s), run to ``jaxq simulate``'s default horizon or for
about ``family_target_events`` events each, whichever is shorter (the full CPU size: the default horizon);
``pss2x2_mixed_reps`` the same for the mixed-primitive systems (the largest size only on an accelerator).
``optimal_n``: the indices n of the optimum's rows (policy iteration in numpy and scipy on the host CPU whatever
the backend, so an accelerator run takes the quick size only); the full size runs n = 1000 too (about a minute
on a 2-core CPU for each implementation: see docs/performance.md). ``verdict_n`` and ``verdict_rel_se``: the n and
the relative standard error of the time to a verdict (:mod:`jaxq.bench.verdict`); ``verdict_bundled_n`` a larger n
at which the bundled cases run too (None: not run; the full CPU size: 10^6, the size of the goal of 2.5 minutes a
case).
"""

from __future__ import annotations

import os

import jax


def tiny() -> bool:
    """True when ``JAXQ_BENCH_TINY`` is set to a non-empty value other than 0."""
    return os.environ.get("JAXQ_BENCH_TINY", "0") not in ("", "0")


def grid(quick: bool) -> dict:
    """Sizes for this run: event targets per configuration and the replication counts per engine.

    Args:
        quick: The quick sizes.

    Returns:
        The sizes by key (see the module docstring), for this backend (``JAXQ_BENCH_TINY=1``: a dry run's).
    """
    accel = jax.default_backend() != "cpu"
    if tiny():
        return {"target_events": 2e5, "lockstep_target_events": 2e6, "pss2x2_event_reps": (1, 100),
                "pss2x2_family_reps": (100,), "pss2x2_mixed_reps": (100,), "family_target_events": 2e5,
                "pss2x2_ctmc_reps": (2, 1000), "pss2x2_numba_reps": (1, 2, 100, 1000),
                "mmc_reps": 1000, "mmc_horizon": 5.0, "ciw_horizon": 0.5, "rep_events": None,
                "lockstep_chunk": 1 << 16, "event_chunk": 10_000,
                "sde_paths": (256,), "sde_chunk": 256, "fastslow_ctmc": ((32, 2_000),), "network_reps": (64, 256), "mmc_scale": (),
                "optimal_n": (16,), "verdict_n": 100, "verdict_rel_se": 0.05, "verdict_bundled_n": None}
    if accel:
        return {"target_events": 2e7 if quick else 1e8, "lockstep_target_events": 1e9 if quick else 4e9,
                "pss2x2_event_reps": (1, 100, 10_000) if quick else (1, 100, 10_000, 100_000),
                "pss2x2_family_reps": (1_000_000,) if quick else (10_000, 100_000, 1_000_000),
                "pss2x2_mixed_reps": (1_000_000,),
                "family_target_events": 1e8 if quick else 1e9,
                "pss2x2_ctmc_reps": (100, 10_000, 1_000_000) if quick else (100, 10_000, 100_000, 1_000_000),
                "pss2x2_numba_reps": (1, 2, 100, 10_000, 1_000_000),
                "mmc_reps": 100_000 if quick else 1_000_000, "mmc_horizon": 20.0, "ciw_horizon": 2.0 if quick else 10.0,
                "rep_events": 2e4 if quick else 1e5, "lockstep_chunk": 1 << 20, "event_chunk": 100_000,
                "sde_paths": (10_000, 1_000_000), "sde_chunk": 1 << 20,
                "fastslow_ctmc": ((10_000, 2_000), (100_000, 2_000)),
                "network_reps": (256, 100_000), "mmc_scale": ((100, 1_000_000), (10_000, 100_000)),
                "optimal_n": (16,), "verdict_n": 10_000 if quick else 1_000_000, "verdict_rel_se": 0.001,
                "verdict_bundled_n": None}
    return {"target_events": 2e6 if quick else 2e7, "lockstep_target_events": 2e6 if quick else 2e8,
            "pss2x2_event_reps": (1, 100) if quick else (1, 100, 10_000),
            "pss2x2_family_reps": (1_000,) if quick else (10_000,),
            "pss2x2_mixed_reps": (1_000,) if quick else (10_000,),
            "family_target_events": 2e6 if quick else 7e7,  # 10^4 replications to the default horizon
            "pss2x2_ctmc_reps": (2, 100, 10_000) if quick else (2, 100, 10_000, 100_000),
            "pss2x2_numba_reps": (1, 2, 100, 1_000, 10_000) if quick else (1, 2, 100, 10_000, 100_000),
            "mmc_reps": 1000 if quick else 10_000, "mmc_horizon": 20.0 if quick else 100.0,
            "ciw_horizon": 2.0 if quick else 10.0, "rep_events": None, "lockstep_chunk": 1 << 17, "event_chunk": 10_000,
            "sde_paths": (256, 1024) if quick else (10_000, 1_000_000), "sde_chunk": 256 if quick else 1 << 16,
            "fastslow_ctmc": ((32, 2_000),) if quick else ((256, 20_000), (10_000, 2_000)),
            "network_reps": (64, 256) if quick else (256, 4096),
            "mmc_scale": () if quick else ((100, 100), (10_000, 100), (10_000, 10_000)),
            "optimal_n": (16,) if quick else (16, 100, 1000),
            "verdict_n": 1_000 if quick else 100_000, "verdict_rel_se": 0.01 if quick else 0.001,
            "verdict_bundled_n": None if quick else 1_000_000}
