"""Throughput of the fast/slow value iteration and CTMC simulator, each beside a compiled numba loop.

The system of seed 002 with K = 2 identical slow servers, lam = 1.2, mu1 = 1, mu2 = 0.3. Two pairs of
implementations, each pair measured in the same run and computing the same thing:
  * CTMC simulator (:mod:`jaxq.sim.fastslow_ctmc`, uniformised, replications in lockstep) against numba: one
    replication at a time, a plain loop over the uniformised steps with the same event rates, the same
    threshold policy (``decide``, thresholds q = (1, 2)) after every event, and the same estimators
    (discounted cost from empty, alpha = 0.1, ``sum_n rho^n c(S_n) / (alpha + gamma)``, and the average
    cost over steps ``n >= warmup = steps / 10``), ``prange`` over replications (all cores), replication
    r seeded with ``np.random.seed(seed * 1_000_003 + r)``. The estimates with standard errors are
    printed side by side.
  * discounted value iteration (:mod:`jaxq.mdp.value_iteration`, alpha = 0.05, tolerance 0: at most
    4000 Bellman updates, fewer once the McQueen bounds meet in floating point) against numba: the same
    Bellman operator (12) on the truncated box x = 0..N, updates in sweeps of ``INNER + 1`` with the
    McQueen bounds checked after each sweep, one core (a Jacobi update has no replications to spread
    over cores). Only the discounted criterion with identical slow servers has a numba counterpart
    (relative value iteration and heterogeneous slow servers do not); both report the McQueen midpoint
    of ``(alpha + gamma) V*(0, 0)``, which agree to rounding.

``bench(quick)`` yields rows with keys engine, impl, size (states; steps per replication), reps,
updates_per_s (state updates done, or uniformised steps x replications, per second: the median of
``reps`` solves, of 3 simulation runs), compile_s (first-call overhead), the estimates, and on each
numba row ``jaxq_ratio`` = jaxq rate / numba rate (None without numba). numba is optional: without it
the numba rows carry a note instead of figures.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.bench.sizes import grid, tiny
from jaxq.bench.timing import median_rate, ratio
from jaxq.mdp.layout import identical
from jaxq.mdp.value_iteration import INNER, VIParams, solver
from jaxq.sim.fastslow_ctmc import simulate_costs
from jaxq.stats import mean_stderr

LAM, MU1, MU2, K = 1.2, 1.0, 0.3, 2
Q_THR = [1, 2]  # queue thresholds q_L, q_H (population thresholds q + 1)
CTMC_ALPHA, VI_ALPHA = 0.1, 0.05
VI_MAX_ITER = 4000
REPEATS = 3
NUMBA_MISSING = "numba not installed (pip install 'jaxq[bench]')"


# ------------------------------------------------------------------------------- numba baselines
@functools.lru_cache(maxsize=1)
def _numba_kernels():
    """The compiled baselines (numba imported here, so this module imports without it).

    Returns:
      ``(ctmc, vi)``: ``ctmc(lam, mu1, mu2, n_thr, alpha, warmup, steps, reps, seed) -> (disc, total)``
      per replication; ``vi(lam, mu1, mu2, K, alpha, N, tol, max_iter, inner) -> (value, lo, hi, it, done)``.
    """
    import numba

    @numba.njit(cache=False)
    def _one(lam, mu1, mu2, n_thr, alpha, warmup, steps):
        """One replication from empty: (discounted sum, sum of costs over steps >= warmup), float64."""
        k_slow = n_thr.shape[0]
        gamma = lam + mu1 + k_slow * mu2
        rho = gamma / (alpha + gamma)
        x, y = 0, 0
        disc, weight, total = 0.0, 1.0, 0.0
        for n in range(steps):
            cost = float(x + y)
            disc += weight * cost / (alpha + gamma)
            if n >= warmup:
                total += cost
            u = np.random.random() * gamma
            if u < lam:
                x += 1
            elif u < lam + mu1:
                x = max(x - 1, 0)
            elif math.floor((u - lam - mu1) / mu2) < y:  # slow server j completes iff it is busy (j < y)
                y -= 1
            target = 0  # threshold policy (jaxq.sim.fastslow_ctmc.decide)
            for m in range(k_slow):
                if x + y >= n_thr[m]:
                    target += 1
            k = min(y + max(x - 1, 0), max(y, target))
            x -= k - y
            y = k
            weight *= rho
        return disc, total

    @numba.njit(parallel=True, cache=False)
    def ctmc(lam, mu1, mu2, n_thr, alpha, warmup, steps, reps, seed):
        disc = np.empty(reps)
        total = np.empty(reps)
        for r in numba.prange(reps):
            np.random.seed(seed * 1_000_003 + r)
            disc[r], total[r] = _one(lam, mu1, mu2, n_thr, alpha, warmup, steps)
        return disc, total

    @numba.njit(cache=False)
    def _bellman(f, g, out, lam, mu1, mu2, k_slow, gamma, rho):
        """``out = c + (rho / gamma) P Q f`` (12) on the box x = 0..N (arrivals at N lost); g: scratch."""
        n_max = f.shape[0] - 1
        for x in range(n_max + 1):  # assignment (7): hold y + a slow jobs, a <= (x - 1)^+
            free = max(x - 1, 0)
            for y in range(k_slow + 1):
                best = f[x, y]
                for a in range(1, min(k_slow - y, free) + 1):
                    best = min(best, f[x - a, y + a])
                g[x, y] = best
        for x in range(n_max + 1):  # events (9)-(11), fictitious ones included
            up, down = min(x + 1, n_max), max(x - 1, 0)
            for y in range(k_slow + 1):
                ev = lam * g[up, y] + mu1 * g[down, y] + (k_slow - y) * mu2 * g[x, y]
                if y:
                    ev += y * mu2 * g[x, y - 1]
                out[x, y] = (x + y) + (rho / gamma) * ev

    @numba.njit(cache=False)
    def vi(lam, mu1, mu2, k_slow, alpha, n_max, tol, max_iter, inner):
        gamma = lam + mu1 + k_slow * mu2
        rho = gamma / (alpha + gamma)
        w = rho / (1.0 - rho)
        f = np.zeros((n_max + 1, k_slow + 1))
        tf = np.empty_like(f)
        g = np.empty_like(f)
        it, lo, hi, done = 0, 0.0, np.inf, False
        while not done and it < max_iter:
            for _ in range(inner):
                _bellman(f, g, tf, lam, mu1, mu2, k_slow, gamma, rho)
                f, tf = tf, f
            _bellman(f, g, tf, lam, mu1, mu2, k_slow, gamma, rho)
            d_lo, d_hi = np.inf, -np.inf
            for x in range(n_max + 1):
                for y in range(k_slow + 1):
                    d = tf[x, y] - f[x, y]
                    d_lo = min(d_lo, d)
                    d_hi = max(d_hi, d)
            lo, hi = tf[0, 0] + w * d_lo, tf[0, 0] + w * d_hi
            done = w * (d_hi - d_lo) <= tol * abs(tf[0, 0])
            f, tf = tf, f
            it += inner + 1
        return f + (0.5 * (lo + hi) - f[0, 0]), lo, hi, it, done

    return ctmc, vi


def numba_costs(lam, mu1, mu2, q_thresholds, *, alpha=0.1, steps=20_000, warmup=2_000, reps=64, seed=0) -> dict:
    """The numba baseline of :func:`jaxq.sim.fastslow_ctmc.simulate_costs` (same arguments and estimates).

    Args:
      lam, mu1, mu2: rates (K = ``len(q_thresholds)`` identical slow servers); q_thresholds: queue
      thresholds (None = never); alpha: discount rate; steps, warmup: uniformised steps per replication
      and steps left out of the average; reps, seed: replications and base seed.
    Returns:
      dict with ``value_empty``, ``average_cost`` and their ``_stderr``, ``reps``, ``steps``, ``wall_s``
      (the first call also compiles).
    Raises:
      ImportError: numba is not installed.
    """
    ctmc, _ = _numba_kernels()
    n_thr = np.array([2**40 if q is None else int(q) + 1 for q in q_thresholds], dtype=np.int64)
    t = time.perf_counter()
    disc, total = ctmc(float(lam), float(mu1), float(mu2), n_thr, float(alpha), int(warmup), int(steps), int(reps),
                       int(seed))
    wall = time.perf_counter() - t
    (v, v_se), (g, g_se) = mean_stderr(disc), mean_stderr(total / (steps - warmup))
    return {"value_empty": v, "value_empty_stderr": v_se, "average_cost": g, "average_cost_stderr": g_se,
            "reps": reps, "steps": steps, "wall_s": wall}


def numba_vi(lam, mu1, mu2, k_slow: int, alpha: float, N: int, tol: float = 0.0, max_iter: int = VI_MAX_ITER) -> dict:
    """The numba baseline of ``solver(identical(K), N, False)`` (discounted value iteration, McQueen stop).

    Args:
      lam, mu1, mu2: rates; k_slow: identical slow servers; alpha: discount rate; N: truncation;
      tol: relative tolerance of the stopping rule (0: run ``max_iter`` updates, rounded up to sweeps);
      max_iter: cap on Bellman updates.
    Returns:
      dict with ``value`` (N+1, K+1) (McQueen midpoint estimate of ``(alpha+gamma) V*``), ``lo``, ``hi``,
      ``iterations``, ``converged``, ``wall_s`` (the first call also compiles).
    Raises:
      ImportError: numba is not installed.
    """
    _, vi = _numba_kernels()
    t = time.perf_counter()
    value, lo, hi, it, done = vi(float(lam), float(mu1), float(mu2), int(k_slow), float(alpha), int(N), float(tol),
                                 int(max_iter), INNER)
    return {"value": value, "lo": lo, "hi": hi, "iterations": int(it), "converged": bool(done),
            "wall_s": time.perf_counter() - t}


# ----------------------------------------------------------------------------------------- rows
def _ratio(jaxq_rate, row: dict) -> dict:
    return {**row, "jaxq_ratio": ratio(jaxq_rate, row.get("updates_per_s"))}


def _vi_row(N: int, reps: int) -> dict:
    """jaxq value iteration: state updates per second (median of ``reps`` solves after a compiling one)."""
    lay = identical(K)
    f = jnp.float64
    p = VIParams(f(LAM), f(MU1), jnp.array([MU2]), f(VI_ALPHA), f(0.0), jnp.int64(VI_MAX_ITER))  # tol 0: fixed count
    t = time.perf_counter()
    run = solver(lay, N, False)
    r = run(p)
    jax.block_until_ready(r)
    compile_s = time.perf_counter() - t

    def once(seed):
        t = time.perf_counter()
        out = run(p)
        jax.block_until_ready(out)
        return int(out.iterations) * (N + 1) * lay.C, time.perf_counter() - t

    rate, wall = median_rate(once, reps)
    return {"engine": "fastslow_vi", "impl": "jaxq (jit)", "size": (N + 1) * lay.C, "reps": reps,
            "updates_per_s": rate, "compile_s": max(compile_s - wall, 0.0),
            "value_00": float(0.5 * (r.lo + r.hi)), "value_00_bound": float(0.5 * (r.hi - r.lo))}


def _numba_vi_row(N: int, reps: int) -> dict:
    """The numba value iteration beside :func:`_vi_row` (same operator, updates and stopping rule)."""
    base = {"engine": "fastslow_vi", "impl": "numba (1 core)", "size": (N + 1) * (K + 1), "reps": reps}
    t0 = time.perf_counter()
    try:
        numba_vi(LAM, MU1, MU2, K, VI_ALPHA, 4, max_iter=1)  # compiles once per process
    except ImportError:
        return {**base, "updates_per_s": None, "note": NUMBA_MISSING}
    compile_s = time.perf_counter() - t0
    out = {}

    def once(seed):
        r = numba_vi(LAM, MU1, MU2, K, VI_ALPHA, N)
        out.update(value_00=0.5 * (r["lo"] + r["hi"]), value_00_bound=0.5 * (r["hi"] - r["lo"]))
        return r["iterations"] * (N + 1) * (K + 1), r["wall_s"]

    rate, _ = median_rate(once, reps)
    return {**base, "updates_per_s": rate, "compile_s": compile_s, **out}


def _ctmc_row(reps: int, steps: int) -> dict:
    """jaxq CTMC simulator: uniformised steps x replications per second (median of 3 after a compiling run)."""
    warmup = steps // 10
    kw = {"alpha": CTMC_ALPHA, "steps": steps, "warmup": warmup, "reps": reps}
    t = time.perf_counter()
    simulate_costs(LAM, MU1, MU2, Q_THR, seed=0, **kw)
    first = time.perf_counter() - t
    out = {}

    def once(seed):
        t = time.perf_counter()
        r = simulate_costs(LAM, MU1, MU2, Q_THR, seed=seed, **kw)
        wall = time.perf_counter() - t
        out.update({k: r[k] for k in ("value_empty", "value_empty_stderr", "average_cost", "average_cost_stderr")})
        return reps * steps, wall

    rate, wall = median_rate(once, REPEATS)
    return {"engine": "fastslow_ctmc", "impl": "jaxq (uniformised, lockstep)", "size": steps, "reps": reps,
            "updates_per_s": rate, "compile_s": max(first - wall, 0.0), **out}


def _numba_ctmc_row(reps: int, steps: int) -> dict:
    """The numba simulator beside :func:`_ctmc_row` (same model, policy, estimators and sizes)."""
    base = {"engine": "fastslow_ctmc", "impl": "numba (all cores)", "size": steps, "reps": reps}
    kw = {"alpha": CTMC_ALPHA, "steps": steps, "warmup": steps // 10, "reps": reps}
    t0 = time.perf_counter()
    try:
        numba_costs(LAM, MU1, MU2, Q_THR, alpha=CTMC_ALPHA, steps=4, warmup=0, reps=2, seed=0)  # compiles
    except ImportError:
        return {**base, "updates_per_s": None, "note": NUMBA_MISSING}
    compile_s = time.perf_counter() - t0
    out = {}

    def once(seed):
        r = numba_costs(LAM, MU1, MU2, Q_THR, seed=seed, **kw)
        out.update({k: r[k] for k in ("value_empty", "value_empty_stderr", "average_cost", "average_cost_stderr")})
        return reps * steps, r["wall_s"]

    rate, _ = median_rate(once, REPEATS)
    return {**base, "updates_per_s": rate, "compile_s": compile_s, **out}


def bench(quick: bool) -> Iterator[dict]:
    """State updates per second of value iteration (states x Bellman updates) and of the simulator
    (uniformised steps x replications), jaxq and numba side by side.

    A generator: each row is yielded as soon as it is measured (``jaxq bench --out`` saves it at once).

    Args:
      quick: small sizes (``JAXQ_BENCH_TINY=1`` implies it): N = 255 and 32 replications of 2000 steps
        (full: N = 1023, 256 replications of 20 000 steps and 10^4 of 2000; on an accelerator 10^4 and
        10^5 replications of 2000 steps, :func:`jaxq.bench.sizes.grid`).
    Yields:
      rows (see the module docstring); ``value_00`` is the McQueen midpoint of ``(alpha + gamma) V*(0, 0)``
      and ``value_00_bound`` its half-width.
    """
    configs = grid(quick)["fastslow_ctmc"]
    quick = quick or tiny()  # JAXQ_BENCH_TINY=1: a dry run
    N, vi_reps = (255, 2) if quick else (1023, 5)
    vi = _vi_row(N, vi_reps)
    yield vi
    yield _ratio(vi["updates_per_s"], _numba_vi_row(N, vi_reps))
    for reps, steps in configs:
        ctmc = _ctmc_row(reps, steps)
        yield ctmc
        yield _ratio(ctmc["updates_per_s"], _numba_ctmc_row(reps, steps))


if __name__ == "__main__":
    for row in bench(quick=True):
        print(row)
