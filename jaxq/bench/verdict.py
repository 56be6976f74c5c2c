"""Time to a verdict: J_n of the default policy to a relative standard error, jaxq against a plain compiled loop.

Run on request only (``jaxq bench --only verdict``: the full size takes hours on a 2-core CPU). For each system,
jaxq runs what a user types, ``jaxq.simulate(system, n=n, rel_se=target)``: a pilot on its own seed plans the
replications, the run is a prefix of the fixed stream with its control variates (:mod:`jaxq.mc.target`). Its
``wall_s`` is the wall time of the whole call (pilot, compilation and run), the user's time to the verdict.

The baseline is a plain compiled loop with no variance reduction: the numba event loop of
``benchmarks/baselines/pss2x2.py`` (one replication at a time, ``prange`` over replications on all cores) on
the same system, n and horizon. Its time to the same standard error is its time per replication (its wall time
over ``BASE_REPS`` replications, after a call that compiles it) times the replications a plain estimator needs,
``plain_var / (target J)^2``, with ``plain_var`` the variance of the uncontrolled discounted costs of the jaxq run
(the same policy's). The loop runs the P rule of the system's (lower) mode whatever the policy, so its time per
replication is that of the cheapest policy; its variance is the policy's own.

The systems: the six bundled cases (``pss_P``, ``pss_T2``, ``pss_PP``, ``pss_T2T2``, ``pss_T1T2``, ``pss_T2T1``)
and the six random systems furthest above V0 at n = 10^5 in the hard-systems study (the random-systems draw with
``draw_seed`` 0, 40 per case: :func:`jaxq.studies.random_draw.draw_system`), at ``verdict_n``; then the bundled
cases at ``verdict_bundled_n`` where the size has one (the full CPU size: 10^6).

``bench(quick)`` yields a row per system and n: system, case, n, rel_se_target, pilot_stages (the pilot's
replications per stage, :mod:`jaxq.mc.target`), pilot_ahead (the run's replications computed beside the first
stage), reps, stopped_by, rel_se, J_hat,
J_hat_stderr, V0, J_over_V0, variance_reduction, events, wall_s, plain_var, baseline_s_per_rep, baseline_reps,
baseline_s, ratio (baseline_s / wall_s) and note.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

import jaxq.bench
from jaxq.bench.sizes import grid
from jaxq.examples import path
from jaxq.model import load

BUNDLED = ("pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1")
HARD = ("T2T2_015", "T2T2_001", "T2_011", "T2T2_037", "T2T2_021", "T2_001")  # worst J_n / V0 at n = 10^5
DRAW_SEED = 0
BASE_REPS = 16  # replications of the baseline's timed call (after one that compiles)
SEED = 0


def systems() -> list[tuple[str, object]]:
    """``(label, system)`` of the bundled cases, then the hard random systems."""
    from jaxq.precision import in_float64
    from jaxq.studies.random_draw import draw_system

    out = [(name, load(path(name))) for name in BUNDLED]
    with in_float64():
        for label in HARD:
            case, index = label.rsplit("_", 1)
            out.append((label, draw_system(DRAW_SEED, case, int(index)).system))
    return out


def plain_reps(plain_var: float, target: float, value: float) -> int:
    """The replications a plain estimator needs for a standard error of ``target`` times ``value``.

    Args:
        plain_var: The plain estimator's variance per replication.
        target: The relative standard error.
        value: The estimate.

    Returns:
        The replications (at least 2).
    """
    return max(2, math.ceil(plain_var / (target * value) ** 2))


def row(label: str, system, n: float, target: float, base) -> dict:
    """One system's row (module docstring).

    Args:
        label: The system's label.
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The scale n.
        target: The relative standard error to reach.
        base (types.ModuleType | None): The numba baseline (None: the row carries a note instead of its figures).

    Returns:
        The row.
    """
    import jaxq

    t = time.perf_counter()
    r = jaxq.simulate(system, n=n, rel_se=target, seed=SEED)
    wall = time.perf_counter() - t
    J = np.asarray(r.samples["J"], dtype=np.float64)
    plain_var = float(J.var(ddof=1))
    info = r.info
    out = {"system": label, "case": jaxq.analyze(system).case, "policy": info.get("policy"), "n": n,
           "rel_se_target": target, "pilot_stages": info["pilot"]["stages"],
           "pilot_ahead": info["pilot"].get("ahead", 0), "reps": r.reps,
           "stopped_by": info.get("stopped_by"),
           "rel_se": info.get("rel_se"), "J_hat": r.value, "J_hat_stderr": r.stderr, "V0": info.get("V0"),
           "J_over_V0": r.value / info["V0"], "variance_reduction": r.main.variance_reduction,
           "events": r.events, "wall_s": wall, "plain_var": plain_var,
           "baseline_reps": plain_reps(plain_var, target, r.value)}
    if base is None:
        return {**out, "baseline_s_per_rep": None, "baseline_s": None, "ratio": None,
                "note": jaxq.bench.baseline_note("pss2x2")}
    horizon = float(info["horizon"])
    base.run(system, n, 2, horizon, seed=1)  # compiles
    b = base.run(system, n, BASE_REPS, horizon, seed=2)
    per_rep = b["wall_s"] / BASE_REPS
    baseline_s = per_rep * out["baseline_reps"]
    return {**out, "baseline_s_per_rep": per_rep, "baseline_s": baseline_s, "ratio": baseline_s / wall,
            "note": "baseline: numba loop, P rule, plain estimator"}


def bench(quick: bool) -> Iterator[dict]:
    """Time to a verdict per system (module docstring), a row as each is measured.

    Args:
        quick: n = 1000 and a 1% target (about a minute a system on a 2-core CPU); full: n = 10^5 and 0.1%,
            then the bundled cases at 10^6 (an accelerator run: 10^6 and 0.1%).

    Yields:
        rows (see the module docstring).
    """
    sizes = grid(quick)
    base = jaxq.bench.baseline("pss2x2")
    target = float(sizes["verdict_rel_se"])
    every = systems()
    for label, system in every:
        yield row(label, system, float(sizes["verdict_n"]), target, base)
    if sizes["verdict_bundled_n"] is not None:
        for label, system in every:
            if label in BUNDLED:
                yield row(label, system, float(sizes["verdict_bundled_n"]), target, base)


def _secs(s: float) -> str:
    """Seconds as the performance page writes them: ``6.7 s``, ``2.1 min``, ``3.4 h``."""
    if s < 100:
        return f"{s:.3g} s"
    if s < 6000:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _per_rep(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _vr(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _n(n: float) -> str:
    k = round(math.log10(n))
    return f"10^{k}" if 10.0 ** k == n else f"{n:g}"


def markdown(rows: list[dict]) -> str:
    """The table of docs/performance.md's "Time to a verdict" from a record's rows (``bench`` above).

    Args:
        rows: The rows of a ``jaxq bench --only verdict`` record.

    Returns:
        A markdown table, one line per row: system, case (policy), n, replications (and the pilot's stages where
        the record has them, with the run's replications computed beside the first), relative standard error, J_n / V0, variance reduction, jaxq's wall time, the plain
        loop's replications, seconds per replication and time, and their ratio.
    """
    out = ["| system | case (policy) | n | reps (pilot) | rel. se | J_n / V0 | variance reduction | "
           "jaxq wall (pilot, compile, run) | plain loop: reps, s/rep, time | plain loop / jaxq |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        stages, ahead = r.get("pilot_stages"), r.get("pilot_ahead")
        beside = f"; {ahead} ahead" if ahead else ""  # the run's replications computed in the pilot's batch
        reps = f"{r['reps']:,}" + ("" if not stages else f" ({' + '.join(str(m) for m in stages)}{beside})")
        base = ("" if r["baseline_s"] is None else
                f"{r['baseline_reps']:,}, {_per_rep(r['baseline_s_per_rep'])}, {_secs(r['baseline_s'])}")
        ratio = "" if r["ratio"] is None else f"**{_vr(r['ratio'])}x**"
        out.append(f"| `{r['system']}` | {r['case']} ({r['policy']}) | {_n(r['n'])} | {reps} | "
                   f"{r['rel_se']:.3g} | {r['J_over_V0']:.4g} | {_vr(r['variance_reduction'])} | "
                   f"{_secs(r['wall_s'])} | {base} | {ratio} |")
    return "\n".join(out)


if __name__ == "__main__":  # python -m jaxq.bench.verdict RECORD.json: the page's table of a record
    import json
    import sys

    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)["sections"]["verdict"]["rows"]))
