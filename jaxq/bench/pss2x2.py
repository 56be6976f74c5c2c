"""Events per second of the 2x2 simulator (jaxq, JAX) beside a sequential numba event loop.

The baseline is what a competent user would write: one replication at a time, a plain event loop
over the four clocks (two arrival streams, two servers) compiled with numba, ``prange`` over
replications on all cores, the P rule of the active mode, the same renewal primitives. Both
engines integrate the same discounted cost, so their estimates must agree (printed beside).

``bench(quick)`` returns rows with keys engine, n, reps, dist, events_per_s, compile_s,
baseline_events_per_s, ratio (jaxq / numba). Run ``python benchmarks/bench_pss2x2.py [--quick]``.
"""

from __future__ import annotations

import math
import sys
import time

import numba
import numpy as np

import jaxq  # noqa: F401  (float64)
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import sampling
from jaxq.sim.pss2x2 import simulate_cost

SYSTEMS = {"exponential": "pss_P", "general": "pss_spec"}  # pss_spec: Erlang and hyperexponential services
_EXP, _ERL, _HYP, _GAM, _LOGN = (
    sampling.FAMILY_CODE[f] for f in ("exponential", "erlang", "hyperexponential", "gamma", "lognormal")
)
TARGET_EVENTS = 2e7  # per configuration (quick: 2e6); the horizon is shortened to fit


# ------------------------------------------------------------------------------- numba baseline
@numba.njit(cache=False)
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


@numba.njit(cache=False)
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


@numba.njit(parallel=True, cache=False)
def _many(reps, seed, inv_lam, inv_mu, h_hat, gamma, horizon, i1, i2, k1, code, a):
    costs = np.empty(reps)
    events = np.empty(reps, np.int64)
    for r in numba.prange(reps):
        costs[r], events[r] = _one(seed * 1_000_003 + r, inv_lam, inv_mu, h_hat, gamma, horizon, i1, i2, k1, code, a)
    return costs, events


def numba_run(system, n, reps, horizon, seed=0):
    """The baseline: (mean cost, events, wall seconds); the first call also compiles."""
    an = analyze(system)
    m = an.active if an.case == "single" else an.lower
    lam_n, mu_n = system.rates(n)
    dists = list(system.interarrival) + [system.service[i][k] for i in range(2) for k in range(2)]
    tab = sampling.param_table(dists)
    md = an.modes
    args = (1.0 / lam_n, 1.0 / mu_n, system.h / math.sqrt(n), system.gamma, horizon)
    args += (int(md.i1[m]), int(md.i2[m]), int(md.k1[m]), tab["code"].astype(np.int64), tab["a"])
    t = time.perf_counter()
    costs, events = _many(reps, seed, *args)
    return float(costs.mean()), int(events.sum()), time.perf_counter() - t


# ----------------------------------------------------------------------------------------- bench
def bench(quick: bool = False) -> list[dict]:
    """jaxq and numba events/s for n in {1e2, 1e4}, reps in {1, 1e2, 1e4}, both kinds of primitives."""
    ns = (100, 10_000)
    reps_list = (1, 100) if quick else (1, 100, 10_000)
    target = TARGET_EVENTS / 10 if quick else TARGET_EVENTS
    rows = []
    warmed = set()
    for dist, name in SYSTEMS.items():
        system = load(path(name))
        for n in ns:
            lam_n, _ = system.rates(n)
            rate = 2.0 * float(lam_n.sum())  # events per unit time, about
            for reps in reps_list:
                horizon = min(25.0, target / (reps * rate))
                r = simulate_cost(system, n, reps, policy="P", horizon=horizon, chunk=min(reps, 10_000))
                if dist not in warmed:  # compile the numba loop once per process
                    numba_run(system, n, 2, 1e-3)
                    warmed.add(dist)
                t = time.perf_counter()
                b_mean, b_events, b_wall = numba_run(system, n, reps, horizon)
                b_wall = time.perf_counter() - t
                row = {
                    "engine": "jaxq.sim.pss2x2",
                    "n": n,
                    "reps": reps,
                    "dist": dist,
                    "horizon": horizon,
                    "events_per_s": r["events_per_s"],
                    "compile_s": r["compile_s"],
                    "baseline_events_per_s": b_events / b_wall,
                    "ratio": r["events_per_s"] / (b_events / b_wall),
                    "J_hat": r["J_hat"],
                    "J_hat_stderr": r["stderr"],
                    "baseline_J_hat": b_mean,
                }
                rows.append(row)
    return rows


def main(argv=None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    rows = bench(quick)
    print(f"{'dist':12s} {'n':>6s} {'reps':>6s} {'jaxq ev/s':>11s} {'numba ev/s':>11s} {'ratio':>6s} {'compile':>8s}")
    for r in rows:
        print(
            f"{r['dist']:12s} {r['n']:6d} {r['reps']:6d} {r['events_per_s']:11.3g} "
            f"{r['baseline_events_per_s']:11.3g} {r['ratio']:6.2f} {r['compile_s']:8.2f}"
        )


if __name__ == "__main__":
    main()
