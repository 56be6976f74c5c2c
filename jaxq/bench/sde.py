"""Throughput of the reflected-SDE schemes (path-steps per second) beside a compiled sequential Euler loop.

The reflected SDE ``dZ = b(Z) dt + sigma(Z) dB + dL`` with the WCP coefficients of the T2T1 system
(``C.wcp(*T2T1)``: lower mode on [0, z*], higher mode above), started at 0, discount rate 0.5,
step dt = 1e-3. Two implementations of the projected Euler scheme (:mod:`jaxq.sde.euler`), measured in
the same run and computing the same estimator:
  * jaxq: :func:`jaxq.sde.estimators.discounted_cost` (``lax.scan`` over steps, all paths of a chunk
    advanced together, paths on the replication layer);
  * the baseline ``benchmarks/baselines/sde.py`` (numba): one path at a time, a plain loop over steps,
    ``prange`` over paths (all cores).
Both integrate ``exp(-gamma t) Z_t`` exactly against the linear interpolation of Z within each step over
the horizon rounded up to whole blocks of 64 steps, so their mean discounted costs must agree within
their standard errors (printed side by side).

The exact-reflection (``exact``) and skew (``skew``) schemes have no numba counterpart: their rows show
jaxq only. ``bench(quick)`` yields one row per scheme and size with keys engine, impl, scheme, paths,
steps, path_steps_per_s (median of 3 runs), compile_s (first-call overhead: about 0 once this process
has compiled the same shapes), mean_cost, mean_cost_stderr (of the seed-1 run), and after each jaxq
Euler row a numba row with ``jaxq_ratio`` = jaxq Euler rate / numba rate (None without numba).
Sizes (:func:`jaxq.bench.sizes.grid`): 10^4 and 10^6 paths (on a CPU with ``--quick``: 256 and 1024 paths
of 64 steps; ``JAXQ_BENCH_TINY=1``: 256 paths of 64 steps). Run as a script to print them.
"""

from __future__ import annotations

from collections.abc import Iterator

import jaxq.bench
from jaxq.bench.sizes import grid
from jaxq.bench.timing import measure, ratio
from jaxq.sde import coefficients as C
from jaxq.sde.estimators import SCHEMES, SdeTruncation, discounted_cost
from jaxq.mc.replications import Batching

T2T1 = (0.2857142857142856, 1.6278820596099706, -0.7857142857142856, 2.073644135332772, 0.5471922382896093)
GAMMA = 0.5
DT = 1e-3
JAXQ_IMPL = "jaxq (lax.scan, paths batched)"
NUMBA_IMPL = "numba (all cores)"


def jaxq_row(scheme: str, params, paths: int, steps: int, chunk: int) -> dict:
    """Median path-steps/s of one jaxq scheme after a compiling run, and its estimate.

    Args:
        scheme: The scheme (one of :data:`jaxq.sde.estimators.SCHEMES`).
        params (jaxq.sde.coefficients.Piecewise): The diffusion's coefficients.
        paths: The paths.
        steps: The steps of dt per path.
        chunk: The paths per compiled call.

    Returns:
        ``path_steps_per_s``, ``compile_s``, ``steps``, ``mean_cost`` and ``mean_cost_stderr``.
    """

    def once(seed):
        r = discounted_cost(params, GAMMA, 0.0, DT, SdeTruncation(steps * DT), paths, seed, scheme_name=scheme,
                            batching=Batching(chunk=chunk))
        est = {"steps": r["steps"], "mean_cost": r.value, "mean_cost_stderr": r.stderr}
        return r.events, r.wall_s - r.compile_s, est

    rate, compile_s, est = measure(once)
    return {"path_steps_per_s": rate, "compile_s": compile_s, **est}


def numba_row(params, paths: int, steps: int) -> dict:
    """Median path-steps/s of the numba baseline, its compile time and estimate (a note without it).

    Args:
        params (jaxq.sde.coefficients.Piecewise): The diffusion's coefficients.
        paths: The paths.
        steps: The steps of dt per path.

    Returns:
        The row's figures, or ``path_steps_per_s`` None and a note.
    """
    base = jaxq.bench.baseline("sde")
    if base is None:
        return {"path_steps_per_s": None, "note": jaxq.bench.baseline_note("sde")}

    def once(seed):
        r = base.euler(params, 0.0, GAMMA, DT, steps * DT, paths, seed=seed)
        return r["events"], r["wall_s"], {k: r[k] for k in ("steps", "mean_cost", "mean_cost_stderr")}

    rate, compile_s, est = measure(once, warm=lambda: base.euler(params, 0.0, GAMMA, DT, DT, 2))
    return {"path_steps_per_s": rate, "compile_s": compile_s, **est}


def bench(quick: bool = False) -> Iterator[dict]:
    """Path-steps per second of each scheme on the T2T1 WCP diffusion (dt = 1e-3), numba Euler beside.

    A generator: each row is yielded as soon as it is measured (``jaxq bench --out`` saves it at once).

    Args:
        quick: small sizes on a CPU (``JAXQ_BENCH_TINY=1`` implies them).

    Yields:
        rows (see the module docstring); the estimates of one size differ between schemes by their bias.
    """
    params = C.wcp(*T2T1)
    g = grid(quick)
    small = g["sde_paths"][-1] < 10_000
    for name in SCHEMES:
        for paths in g["sde_paths"]:
            chunk = min(paths, g["sde_chunk"])
            steps = 64 if small else (2048 if paths <= 10000 else 256)
            base = {"engine": "sde", "scheme": name, "paths": paths}
            j = jaxq_row(name, params, paths, steps, chunk)
            yield {**base, "impl": JAXQ_IMPL, **j}
            if name == "euler":
                b = numba_row(params, paths, steps)
                yield {**base, "impl": NUMBA_IMPL, "steps": j["steps"], **b,
                       "jaxq_ratio": ratio(j["path_steps_per_s"], b["path_steps_per_s"])}


if __name__ == "__main__":
    for row in bench():
        print(row)
