"""Throughput of the fast/slow value iteration and CTMC simulator, each beside a compiled numba loop.

The system of the fast/slow-servers paper with K = 2 identical slow servers, lam = 1.2, mu1 = 1, mu2 = 0.3. Two pairs of
implementations, each pair measured in the same run and computing the same thing:
  * CTMC simulator (:func:`jaxq.sim.fastslow.simulate`, uniformised, replications in lockstep) against the
    baseline ``benchmarks/baselines/fastslow.py`` (numba): one replication at a time, a plain loop over the
    uniformised steps with the same event rates, the same threshold policy (thresholds q = (1, 2)) after
    every event, and the same estimators (discounted cost from empty, alpha = 0.1, and the average cost
    over the steps after the warm-up), ``prange`` over replications (all cores). The numba run takes the
    steps and warm-up jaxq ran (its steps a whole number of pages). The estimates with standard errors
    are printed side by side.
  * discounted value iteration (:mod:`jaxq.mdp.value_iteration`, alpha = 0.05, tolerance 0: at most
    4000 Bellman updates, fewer once the McQueen bounds meet in floating point) against numba: the same
    Bellman operator (12) on the truncated box x = 0..N, updates in sweeps of ``INNER + 1`` with the
    McQueen bounds checked after each sweep, one core. Only the discounted criterion with identical slow
    servers has a numba counterpart; both report the McQueen midpoint of ``(alpha + gamma) V*(0, 0)``,
    which agree to rounding.

``bench(quick)`` yields rows with keys engine, impl, size (states; steps per replication), reps,
updates_per_s (state updates done, or uniformised steps x replications, per second: the median of
``reps`` solves, of 3 simulation runs), compile_s (first-call overhead), the estimates, and on each
numba row ``jaxq_ratio`` = jaxq rate / numba rate (None without numba). Without the baseline the numba
rows carry a note instead of figures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import jax
import jax.numpy as jnp

import jaxq.bench
from jaxq.bench.sizes import grid, tiny
from jaxq.bench.timing import measure, ratio
from jaxq.mdp.layout import identical
from jaxq.mdp.value_iteration import VIParams, solver
from jaxq.sim import fastslow, uniformized

LAM, MU1, MU2, K = 1.2, 1.0, 0.3, 2
Q_THR = [1, 2]  # queue thresholds q_L, q_H (population thresholds q + 1)
CTMC_ALPHA, VI_ALPHA = 0.1, 0.05
VI_MAX_ITER = 4000
COSTS = ("value_empty", "value_empty_stderr", "average_cost", "average_cost_stderr")


def _no_baseline(row: dict) -> dict:
    return {**row, "updates_per_s": None, "note": jaxq.bench.baseline_note("fastslow")}


def vi_row(N: int, reps: int) -> dict:
    """jaxq value iteration: state updates per second (median of ``reps`` solves after a compiling one).

    Args:
        N: The truncation of the queue (x = 0..N).
        reps: The solves measured.

    Returns:
        The row.
    """
    lay = identical(K)
    f = jnp.float64
    p = VIParams(f(LAM), f(MU1), jnp.array([MU2]), f(VI_ALPHA), f(0.0), jnp.int64(VI_MAX_ITER))  # tol 0: fixed count
    run = solver(lay, N, False)

    def once(seed):
        t = time.perf_counter()
        r = jax.block_until_ready(run(p))
        est = {"value_00": float(0.5 * (r.lo + r.hi)), "value_00_bound": float(0.5 * (r.hi - r.lo))}
        return int(r.iterations) * (N + 1) * lay.C, time.perf_counter() - t, est

    rate, compile_s, est = measure(once, reps)
    return {"engine": "fastslow_vi", "impl": "jaxq (jit)", "size": (N + 1) * lay.C, "reps": reps,
            "updates_per_s": rate, "compile_s": compile_s, **est}


def numba_vi_row(N: int, reps: int) -> dict:
    """The numba value iteration beside :func:`vi_row` (same operator, updates and stopping rule).

    Args:
        N: The truncation of the queue (x = 0..N).
        reps: The solves measured.

    Returns:
        The row (a note instead of figures without the baseline).
    """
    row = {"engine": "fastslow_vi", "impl": "numba (1 core)", "size": (N + 1) * (K + 1), "reps": reps}
    base = jaxq.bench.baseline("fastslow")
    if base is None:
        return _no_baseline(row)

    def once(seed):
        r = base.vi(LAM, MU1, MU2, K, VI_ALPHA, N, max_iter=VI_MAX_ITER)
        est = {"value_00": 0.5 * (r["lo"] + r["hi"]), "value_00_bound": 0.5 * (r["hi"] - r["lo"])}
        return r["events"], r["wall_s"], est

    rate, compile_s, est = measure(once, reps, warm=lambda: base.vi(LAM, MU1, MU2, K, VI_ALPHA, 4, max_iter=1))
    return {**row, "updates_per_s": rate, "compile_s": compile_s, **est}


def ctmc_row(reps: int, steps: int) -> dict:
    """jaxq CTMC simulator: uniformised steps x replications per second (median of 3 after a compiling run).

    Also returns the ``steps`` and ``warmup`` run: ``steps`` rounded up to whole pages of uniformised steps, so
    that the discounted sum (every step of the pages) and the window (the steps after the warm-up) end together,
    as in the numba loop.

    Args:
        reps: The replications.
        steps: The uniformised steps per replication (rounded up to whole pages).

    Returns:
        The row.
    """
    steps = -(-steps // uniformized.PAGE) * uniformized.PAGE
    kw = {"alpha": CTMC_ALPHA, "window": fastslow.StepWindow(steps, steps // 10), "reps": reps}

    def once(seed):
        r = fastslow.simulate(LAM, MU1, MU2, Q_THR, seed=seed, **kw)
        est = {k: r[k] for k in COSTS} | {"steps": r["steps"], "warmup": r["warmup"]}
        return r.reps * r["steps"], r.wall_s - r.compile_s, est

    rate, compile_s, est = measure(once)
    return {"engine": "fastslow_ctmc", "impl": "jaxq (uniformised, lockstep)", "size": steps, "reps": reps,
            "updates_per_s": rate, "compile_s": compile_s, **est}


def numba_ctmc_row(reps: int, size: int, steps: int, warmup: int) -> dict:
    """The numba simulator beside :func:`ctmc_row` (same model, policy, estimators, steps and warm-up).

    Args:
        reps: The replications.
        size: The row's size (the steps asked of :func:`ctmc_row`).
        steps: The steps per replication that jaxq ran.
        warmup: The warm-up steps that jaxq ran.

    Returns:
        The row (a note instead of figures without the baseline).
    """
    row = {"engine": "fastslow_ctmc", "impl": "numba (all cores)", "size": size, "reps": reps}
    base = jaxq.bench.baseline("fastslow")
    if base is None:
        return _no_baseline(row)

    def once(seed):
        r = base.ctmc(LAM, MU1, MU2, Q_THR, alpha=CTMC_ALPHA, steps=steps, warmup=warmup, reps=reps, seed=seed)
        return r["events"], r["wall_s"], {k: r[k] for k in COSTS} | {"steps": steps, "warmup": warmup}

    rate, compile_s, est = measure(
        once, warm=lambda: base.ctmc(LAM, MU1, MU2, Q_THR, alpha=CTMC_ALPHA, steps=4, warmup=0, reps=2))
    return {**row, "updates_per_s": rate, "compile_s": compile_s, **est}


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
    vi = vi_row(N, vi_reps)
    yield vi
    nvi = numba_vi_row(N, vi_reps)
    yield {**nvi, "jaxq_ratio": ratio(vi["updates_per_s"], nvi["updates_per_s"])}
    for reps, steps in configs:
        ctmc = ctmc_row(reps, steps)
        yield ctmc
        nc = numba_ctmc_row(reps, steps, ctmc["steps"], ctmc["warmup"])
        yield {**nc, "jaxq_ratio": ratio(ctmc["updates_per_s"], nc["updates_per_s"])}


if __name__ == "__main__":
    for row in bench(quick=True):
        print(row)
