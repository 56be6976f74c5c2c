"""Throughput of the reflected-SDE schemes (path-steps per second) beside a compiled sequential Euler loop.

The reflected SDE ``dZ = b(Z) dt + sigma(Z) dB + dL`` with the WCP coefficients of the T2T1 system
(``C.wcp(*T2T1)``: lower mode on [0, z*], higher mode above), started at 0, discount rate 0.5,
step dt = 1e-3. Two implementations of the projected Euler scheme (:mod:`jaxq.sde.euler`), measured in
the same run and computing the same estimator (:func:`jaxq.sde.driver.run_paths`):
  * jaxq: ``jaxq.sde.driver.simulate`` (``lax.scan`` over steps, all paths of a chunk advanced together);
  * numba: one path at a time, a plain loop over steps, ``prange`` over paths (all cores), path r seeded
    with ``np.random.seed(seed * 1_000_003 + r)``.
Both integrate ``exp(-gamma t) Z_t`` exactly against the linear interpolation of Z within each step
(``step_weights(gamma, h)``, discount ``exp(-gamma h k)`` at step k; numba updates it by the factor
``exp(-gamma h)``, equal up to rounding) over the horizon rounded up to whole blocks of 64 steps, so their
mean discounted costs must agree within their standard errors (printed side by side).

The exact-reflection (``exact``) and skew (``skew``) schemes have no numba counterpart: their rows show
jaxq only. ``bench(quick)`` yields one row per scheme and size with keys engine, impl, scheme, paths,
steps, path_steps_per_s (median of 3 runs), compile_s (first-call overhead: about 0 once this process
has compiled the same shapes), mean_cost, mean_cost_stderr (of the last timed run), and after each jaxq
Euler row a numba row with ``jaxq_ratio`` = jaxq Euler rate / numba rate (None without numba).
Sizes (:func:`jaxq.bench.sizes.grid`): 10^4 and 10^6 paths (on a CPU with ``--quick``: 256 and 1024 paths
of 64 steps; ``JAXQ_BENCH_TINY=1``: 256 paths of 64 steps).
Run as a script to print them.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterator

import numpy as np

import jaxq  # noqa: F401  (float64)
from jaxq.bench.sizes import grid
from jaxq.bench.timing import median_rate, ratio
from jaxq.sde import coefficients as C
from jaxq.sde.driver import simulate, step_counts, step_weights
from jaxq.sde.estimators import SCHEMES
from jaxq.stats import mean_stderr

T2T1 = (0.2857142857142856, 1.6278820596099706, -0.7857142857142856, 2.073644135332772, 0.5471922382896093)
GAMMA = 0.5
DT = 1e-3
REPEATS = 3
JAXQ_IMPL = "jaxq (lax.scan, paths batched)"
NUMBA_IMPL = "numba (all cores)"


# ------------------------------------------------------------------------------- numba baseline
@functools.lru_cache(maxsize=1)
def _numba_kernel():
    """The compiled projected Euler loop (numba imported here, so this module imports without it).

    Returns:
      ``euler(levels, b, s, z0, h, w0, w1, q, steps, paths, seed) -> (paths,)`` discounted costs, with
      ``(w0, w1) = step_weights(gamma, h)`` and ``q = exp(-gamma h)``.
    """
    import numba

    @numba.njit(cache=False)
    def _one(levels, b, s, z0, h, w0, w1, q, steps):
        """One path: ``z <- max(z + b(z) h + sigma(z) sqrt(h) N, 0)``; its discounted cost (float64)."""
        sq = math.sqrt(h)
        z = z0
        cost = 0.0
        disc = 1.0  # exp(-gamma h k) at step k
        for _ in range(steps):
            k = 0
            for c in levels:  # a level belongs to the region below it
                if z > c:
                    k += 1
            z1 = max(z + b[k] * h + s[k] * sq * np.random.standard_normal(), 0.0)
            cost += disc * (w0 * z + w1 * z1)
            disc *= q
            z = z1
        return cost

    @numba.njit(parallel=True, cache=False)
    def euler(levels, b, s, z0, h, w0, w1, q, steps, paths, seed):
        costs = np.empty(paths)
        for r in numba.prange(paths):
            np.random.seed(seed * 1_000_003 + r)
            costs[r] = _one(levels, b, s, z0, h, w0, w1, q, steps)
        return costs

    return euler


def numba_euler(params: C.Piecewise, z0: float, gamma: float, dt: float, horizon: float, paths: int,
                seed: int = 0) -> dict:
    """The numba baseline of ``simulate(euler.SCHEME, params, z0, gamma, dt, horizon, paths, seed)``.

    Args:
      params: piecewise-constant coefficients; z0 >= 0: start; gamma > 0: discount rate; dt: step;
      horizon: truncation time (rounded up to whole blocks of 64 steps, as in jaxq); paths, seed: Monte Carlo.
    Returns:
      dict with ``cost`` (paths,), ``steps`` and ``wall_s`` (the first call also compiles).
    Raises:
      ImportError: numba is not installed.
    """
    kernel = _numba_kernel()
    n_blocks, block = step_counts(dt, horizon)
    steps = n_blocks * block
    w0, w1 = (float(w) for w in step_weights(gamma, dt))
    arrays = [np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape(-1)) for a in params]
    t = time.perf_counter()
    cost = kernel(*arrays, float(z0), float(dt), w0, w1, math.exp(-gamma * dt), int(steps), int(paths), int(seed))
    return {"cost": cost, "steps": steps, "wall_s": time.perf_counter() - t}


def _numba_row(params, paths: int, steps: int) -> dict:
    """Median path-steps/s of the numba baseline, its compile time and estimate (None without numba)."""
    t0 = time.perf_counter()
    try:
        numba_euler(params, 0.0, GAMMA, DT, DT, 2, seed=0)  # compiles once per process
    except ImportError:
        return {"path_steps_per_s": None, "note": "numba not installed (pip install 'jaxq[bench]')"}
    compile_s = time.perf_counter() - t0
    out = {}

    def once(seed):
        r = numba_euler(params, 0.0, GAMMA, DT, steps * DT, paths, seed=seed)
        out["steps"] = r["steps"]
        out["mean_cost"], out["mean_cost_stderr"] = mean_stderr(r["cost"])
        return paths * r["steps"], r["wall_s"]

    rate, _ = median_rate(once, REPEATS)
    return {"path_steps_per_s": rate, "compile_s": compile_s, **out}


# ----------------------------------------------------------------------------------------- bench
def _jaxq_row(scheme, params, paths: int, steps: int, chunk: int) -> dict:
    """Median path-steps/s of one jaxq scheme; ``compile_s`` = first call minus a second one-block call."""
    t0 = time.perf_counter()
    simulate(scheme, params, 0.0, GAMMA, DT, 64 * DT, min(paths, chunk), seed=0, chunk=chunk)  # compile + 1 block
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    simulate(scheme, params, 0.0, GAMMA, DT, 64 * DT, min(paths, chunk), seed=1, chunk=chunk)
    one_block = time.perf_counter() - t0
    out = {}

    def once(seed):
        t = time.perf_counter()
        r = simulate(scheme, params, 0.0, GAMMA, DT, steps * DT, paths, seed=seed, chunk=chunk)
        wall = time.perf_counter() - t
        out["steps"] = r["steps"]
        out["mean_cost"], out["mean_cost_stderr"] = mean_stderr(r["cost"])
        return paths * r["steps"], wall

    rate, _ = median_rate(once, REPEATS)
    return {"path_steps_per_s": rate, "compile_s": max(first - one_block, 0.0), **out}


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
    for name, scheme in SCHEMES.items():
        for paths in g["sde_paths"]:
            chunk = min(paths, g["sde_chunk"])
            steps = 64 if small else (2048 if paths <= 10000 else 256)
            base = {"engine": "sde", "scheme": name, "paths": paths}
            j = _jaxq_row(scheme, params, paths, steps, chunk)
            yield {**base, "impl": JAXQ_IMPL, **j}
            if name == "euler":
                b = _numba_row(params, paths, steps)
                yield {**base, "impl": NUMBA_IMPL, "steps": j["steps"], **b,
                       "jaxq_ratio": ratio(j["path_steps_per_s"], b["path_steps_per_s"])}


if __name__ == "__main__":
    for row in bench():
        print(row)
