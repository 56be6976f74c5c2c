"""The 2x2 system of seed 000 as a sequential numba event loop: what a competent user would write.

One replication at a time, a plain event loop over the four clocks (two arrival streams, two servers),
``prange`` over replications on all cores, the P rule of the active mode (Definition 2.8.1 with
Definition 2.7's servers), the same renewal primitives as jaxq (families and parameters of
:func:`jaxq.sim.sampling.param_table`), the discounted cost ``int_0^T exp(-gamma t) h.X_hat dt`` integrated
exactly between events up to the horizon T. :func:`run` is the entry point.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from jaxq.diffusion.workload import analyze
from jaxq.sim import sampling
from jaxq.stats import mean_stderr

_EXP, _ERL, _HYP, _GAM, _LOGN = (
    sampling.FAMILY_CODE[f] for f in ("exponential", "erlang", "hyperexponential", "gamma", "lognormal")
)


@numba.njit(cache=True)
def _unit(code, a):
    """Unit-mean variate (same families and parameters as jaxq.sim.sampling.param_table)."""
    if code == _EXP:
        return -math.log(1.0 - np.random.random())
    if code == _ERL:
        k = int(a)
        s = 0.0
        for _ in range(k):
            s -= math.log(1.0 - np.random.random())
        return s / k
    if code == _HYP:
        rate = 2.0 * a if np.random.random() < a else 2.0 * (1.0 - a)
        return -math.log(1.0 - np.random.random()) / rate
    if code == _GAM:
        return np.random.gamma(a, 1.0 / a)
    if code == _LOGN:
        return math.exp(a * np.random.standard_normal() - 0.5 * a * a)
    return 1.0


@numba.njit(cache=True)
def _one(seed, inv_lam, inv_mu, h_hat, gamma, horizon, i1, i2, k1, code, a):
    """One replication of the P rule (Definition 2.8.1) with Definition 2.7's servers."""
    np.random.seed(seed)
    x = np.zeros(2, np.int64)
    serving = np.array([-1, -1])
    ta = np.empty(2)
    tc = np.array([np.inf, np.inf])
    for i in range(2):
        ta[i] = _unit(code[i], a[i]) * inv_lam[i]
    t, disc, cost, events = 0.0, 1.0, 0.0, 0
    k2 = 1 - k1
    while t < horizon:
        e = 0
        t1 = ta[0]
        for j, c in ((1, ta[1]), (2, tc[0]), (3, tc[1])):
            if c < t1:
                e, t1 = j, c
        tt = min(t1, horizon)
        d1 = math.exp(-gamma * tt)
        cost += (h_hat[0] * x[0] + h_hat[1] * x[1]) * (disc - d1) / gamma
        disc, t = d1, t1
        if t1 > horizon:
            break
        events += 1
        if e < 2:
            x[e] += 1
            ta[e] = t1 + _unit(code[e], a[e]) * inv_lam[e]
        else:
            k = e - 2
            x[serving[k]] -= 1
            serving[k] = -1
            tc[k] = np.inf
        q0 = x[0] - (serving[0] == 0) - (serving[1] == 0)
        q1 = x[1] - (serving[0] == 1) - (serving[1] == 1)
        q = np.array([q0, q1])
        if serving[k1] == -1 and q[i2] > 0:
            serving[k1] = i2
            q[i2] -= 1
            s = 2 + 2 * i2 + k1
            tc[k1] = t1 + _unit(code[s], a[s]) * inv_mu[i2, k1]
        if serving[k2] == -1:
            c = -1
            if q[i1] > 0:
                c = i1
            elif q[i2] > 0:
                c = i2
            if c >= 0:
                serving[k2] = c
                s = 2 + 2 * c + k2
                tc[k2] = t1 + _unit(code[s], a[s]) * inv_mu[c, k2]
    return cost, events


@numba.njit(parallel=True, cache=True)
def _many(reps, seed, inv_lam, inv_mu, h_hat, gamma, horizon, i1, i2, k1, code, a):
    costs = np.empty(reps)
    events = np.empty(reps, np.int64)
    for r in numba.prange(reps):
        costs[r], events[r] = _one(seed * 1_000_003 + r, inv_lam, inv_mu, h_hat, gamma, horizon, i1, i2, k1, code, a)
    return costs, events


def run(system, n: float, reps: int, horizon: float, seed: int = 0) -> dict:
    """The discounted cost of the n-th system under the P rule, truncated at ``horizon``, started empty.

    Args:
      system: a parsed 2x2 system (:func:`jaxq.model.load`); n: its index; reps: replications;
      horizon: truncation time T; seed: base seed.
    Returns:
      ``J_hat`` and ``J_hat_stderr`` (mean and standard error over replications), ``events`` (arrivals and
      completions before T, all replications) and ``wall_s`` (the first call also compiles).
    """
    an = analyze(system)
    m = an.active if an.case == "single" else an.lower
    lam_n, mu_n = system.rates(n)
    dists = list(system.interarrival) + [system.service[i][k] for i in range(2) for k in range(2)]
    tab = sampling.param_table(dists)
    md = an.modes
    args = (1.0 / lam_n, 1.0 / mu_n, system.h / math.sqrt(n), system.gamma, horizon)
    args += (int(md.i1[m]), int(md.i2[m]), int(md.k1[m]), tab["code"].astype(np.int64), tab["a"])
    t = time.perf_counter()
    costs, events = _many(int(reps), int(seed), *args)
    wall = time.perf_counter() - t
    mean, se = mean_stderr(costs) if reps > 1 else (float(costs[0]), math.nan)
    return {"J_hat": float(mean), "J_hat_stderr": float(se), "events": int(events.sum()), "wall_s": wall}
