"""One fast and K identical slow servers (seed 002) in numba: the threshold policy's CTMC and value iteration.

* :func:`ctmc`: one replication at a time, a plain loop over the uniformised steps (rate
  ``Gamma = lambda + mu1 + K mu2``, fictitious fast completions when x = 0, slow completions at rate
  ``y mu2``), the threshold policy after every event, ``prange`` over replications (all cores), replication
  r seeded with ``np.random.seed(seed * 1_000_003 + r)``. Estimates: the discounted cost from empty,
  ``sum_n rho^n c(S_n) / (alpha + Gamma)`` with ``rho = Gamma / (alpha + Gamma)``, and the average cost
  over the steps ``n >= warmup``.
* :func:`vi`: discounted value iteration with the Bellman operator (12) on the truncated box x = 0..N
  (arrivals at N lost), updates in sweeps of ``INNER + 1`` with the McQueen bounds checked after each
  sweep, one core (a Jacobi update has no replications to spread over cores).
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from jaxq.mdp.value_iteration import INNER
from jaxq.stats import mean_stderr


@numba.njit(cache=True)
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
        target = 0  # threshold policy: hold one slow job per population threshold reached
        for m in range(k_slow):
            if x + y >= n_thr[m]:
                target += 1
        k = min(y + max(x - 1, 0), max(y, target))
        x -= k - y
        y = k
        weight *= rho
    return disc, total


@numba.njit(parallel=True, cache=True)
def _ctmc(lam, mu1, mu2, n_thr, alpha, warmup, steps, reps, seed):
    disc = np.empty(reps)
    total = np.empty(reps)
    for r in numba.prange(reps):
        np.random.seed(seed * 1_000_003 + r)
        disc[r], total[r] = _one(lam, mu1, mu2, n_thr, alpha, warmup, steps)
    return disc, total


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def _vi(lam, mu1, mu2, k_slow, alpha, n_max, tol, max_iter, inner):
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


def ctmc(lam, mu1, mu2, q_thresholds, *, alpha=0.1, steps=20_000, warmup=2_000, reps=64, seed=0) -> dict:
    """Discounted cost from empty and average cost of the threshold policy (uniformised steps).

    Args:
      lam, mu1, mu2: rates (K = ``len(q_thresholds)`` identical slow servers); q_thresholds: queue
      thresholds (None = never); alpha: discount rate; steps, warmup: uniformised steps per replication
      and steps left out of the average; reps, seed: replications and base seed.
    Returns:
      ``value_empty``, ``average_cost`` and their ``_stderr``, ``reps``, ``steps``, ``events`` (steps x
      replications), ``wall_s`` (the first call also compiles).
    """
    n_thr = np.array([2**40 if q is None else int(q) + 1 for q in q_thresholds], dtype=np.int64)
    t = time.perf_counter()
    disc, total = _ctmc(float(lam), float(mu1), float(mu2), n_thr, float(alpha), int(warmup), int(steps), int(reps),
                        int(seed))
    wall = time.perf_counter() - t
    (v, v_se), (g, g_se) = mean_stderr(disc), mean_stderr(total / (steps - warmup))
    return {"value_empty": v, "value_empty_stderr": v_se, "average_cost": g, "average_cost_stderr": g_se,
            "reps": reps, "steps": steps, "events": int(reps) * int(steps), "wall_s": wall}


def vi(lam, mu1, mu2, k_slow: int, alpha: float, N: int, tol: float = 0.0, max_iter: int = 4000) -> dict:
    """Discounted value iteration (McQueen stopping rule) on x = 0..N with ``k_slow`` identical slow servers.

    Args:
      lam, mu1, mu2: rates; alpha: discount rate; N: truncation; tol: relative tolerance of the stopping
      rule (0: run ``max_iter`` updates, rounded up to sweeps); max_iter: cap on Bellman updates.
    Returns:
      ``value`` (N+1, K+1) (McQueen midpoint estimate of ``(alpha + gamma) V*``), ``lo``, ``hi``,
      ``iterations``, ``converged``, ``events`` (state updates), ``wall_s`` (the first call also compiles).
    """
    t = time.perf_counter()
    value, lo, hi, it, done = _vi(float(lam), float(mu1), float(mu2), int(k_slow), float(alpha), int(N), float(tol),
                                  int(max_iter), INNER)
    return {"value": value, "lo": lo, "hi": hi, "iterations": int(it), "converged": bool(done),
            "events": int(it) * (int(N) + 1) * (int(k_slow) + 1), "wall_s": time.perf_counter() - t}
