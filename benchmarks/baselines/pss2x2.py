"""The 2x2 system of seed 000 as a sequential numba event loop: what a competent user would write.

One replication at a time, a plain event loop over the four clocks (two arrival streams, two servers) with
its state in scalars (nothing allocated or indexed per event), ``prange`` over replications on all cores, the
P rule of the active mode (Definition 2.8.1 with Definition 2.7's servers), the same renewal primitives as jaxq
(families and parameters of :func:`jaxq.sim.sampling.param_table`), the discounted cost
``int_0^T exp(-gamma t) h.X_hat dt`` integrated exactly between events up to the horizon T. :func:`run` is the
entry point.
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
    """One replication of the P rule (Definition 2.8.1) with Definition 2.7's servers.

    The state lives in scalars (no array is touched, let alone allocated, per event): the two class counts
    ``x0, x1``; the two servers by their role in the P rule, server A = k1 (class i2 only) and server B = k2
    (class i1 first, then i2), each with the class it serves (-1: idle) and its completion time. Events are
    taken in the physical order (arrival 0, arrival 1, completion at server 0, at server 1; ties to the first),
    and variates are drawn in the same order as the array version of this loop, so that the two give the same
    numbers from the same seed.
    """
    np.random.seed(seed)
    k2 = 1 - k1
    sa, sb = 2 + 2 * i2 + k1, 2 + 2 * i1 + k2  # the service streams: A serves i2, B serves i1 or i2
    sb2 = 2 + 2 * i2 + k2
    code_l0, a_l0, il0 = code[0], a[0], inv_lam[0]
    code_l1, a_l1, il1 = code[1], a[1], inv_lam[1]
    code_a, a_a, im_a = code[sa], a[sa], inv_mu[i2, k1]
    code_b1, a_b1, im_b1 = code[sb], a[sb], inv_mu[i1, k2]
    code_b2, a_b2, im_b2 = code[sb2], a[sb2], inv_mu[i2, k2]
    h0, h1 = h_hat[0], h_hat[1]
    ta0 = _unit(code_l0, a_l0) * il0
    ta1 = _unit(code_l1, a_l1) * il1
    x0, x1 = 0, 0
    cls_a, cls_b = -1, -1
    tc_a, tc_b = np.inf, np.inf
    t, disc, cost, events = 0.0, 1.0, 0.0, 0
    while t < horizon:
        tc0, tc1 = (tc_a, tc_b) if k1 == 0 else (tc_b, tc_a)  # completion times by physical server
        e, t1 = 0, ta0
        if ta1 < t1:
            e, t1 = 1, ta1
        if tc0 < t1:
            e, t1 = 2, tc0
        if tc1 < t1:
            e, t1 = 3, tc1
        d1 = math.exp(-gamma * min(t1, horizon))
        cost += (h0 * x0 + h1 * x1) * (disc - d1) / gamma
        disc, t = d1, t1
        if t1 > horizon:
            break
        events += 1
        if e == 0:
            x0 += 1
            ta0 = t1 + _unit(code_l0, a_l0) * il0
        elif e == 1:
            x1 += 1
            ta1 = t1 + _unit(code_l1, a_l1) * il1
        else:
            if (e - 2) == k1:  # server A finished
                done, cls_a, tc_a = cls_a, -1, np.inf
            else:
                done, cls_b, tc_b = cls_b, -1, np.inf
            if done == 0:
                x0 -= 1
            else:
                x1 -= 1
        if cls_a == -1:  # server A takes a waiting class-i2 job
            q_i2 = (x1 if i2 == 1 else x0) - (cls_b == i2)
            if q_i2 > 0:
                cls_a = i2
                tc_a = t1 + _unit(code_a, a_a) * im_a
        if cls_b == -1:  # server B: class i1 first, then class i2
            q_i1 = (x1 if i1 == 1 else x0) - (cls_a == i1)
            q_i2 = (x1 if i2 == 1 else x0) - (cls_a == i2)
            if q_i1 > 0:
                cls_b = i1
                tc_b = t1 + _unit(code_b1, a_b1) * im_b1
            elif q_i2 > 0:
                cls_b = i2
                tc_b = t1 + _unit(code_b2, a_b2) * im_b2
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
