"""Events per second of the 2x2 system in jaxq (both engines) beside a sequential numba event loop.

Three implementations of the same model, measured in the same run:
  * ``jaxq.sim.pss2x2``: the event-driven engine (general renewal primitives, one core);
  * ``jaxq.sim.pss2x2_ctmc``: the uniformised lockstep engine (exponential primitives only; all cores);
  * numba: what a competent user would write: one replication at a time, a plain event loop over the
    four clocks (two arrival streams, two servers), ``prange`` over replications on all cores, the P
    rule of the active mode, the same renewal primitives.
All integrate the same discounted cost, so their estimates must agree (printed beside). Rates are
medians of 3 repeats; compile time is separate. numba is optional: without it the baseline columns
are empty. ``bench(quick)`` returns rows with keys engine, n, reps, dist, events_per_s, compile_s,
baseline_events_per_s, ratio (jaxq / numba). Run ``python -m jaxq.bench.pss2x2 [--quick]``.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from typing import Iterator

import numpy as np

import jaxq  # noqa: F401  (float64)
from jaxq.bench.sizes import grid
from jaxq.bench.timing import median_rate, ratio
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2_ctmc, sampling
from jaxq.sim.pss2x2 import simulate_cost

SYSTEMS = {"exponential": "pss_P", "general": "pss_spec"}  # pss_spec: Erlang and hyperexponential services
_EXP, _ERL, _HYP, _GAM, _LOGN = (
    sampling.FAMILY_CODE[f] for f in ("exponential", "erlang", "hyperexponential", "gamma", "lognormal")
)
REPEATS = 3


# ------------------------------------------------------------------------------- numba baseline
@functools.lru_cache(maxsize=1)
def _numba_kernels():
    """The compiled baseline (numba imported here, so this module imports without it)."""
    import numba

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

    return _many


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
    many = _numba_kernels()
    t = time.perf_counter()
    costs, events = many(reps, seed, *args)
    return float(costs.mean()), int(events.sum()), time.perf_counter() - t


# ----------------------------------------------------------------------------------------- bench
def _numba_row(system, n, reps, horizon) -> dict:
    """Median events/s of the numba baseline (None when numba is missing)."""
    try:
        numba_run(system, n, 2, 1e-3)  # compiles once per process (and per argument types)
    except ImportError:
        return {"baseline_events_per_s": None, "baseline_J_hat": None, "note": "numba not installed"}
    means = []

    def once(seed):
        mean, events, wall = numba_run(system, n, reps, horizon, seed=seed)
        means.append(mean)
        return events, wall

    rate, _ = median_rate(once, REPEATS)
    return {"baseline_events_per_s": rate, "baseline_J_hat": float(np.mean(means))}


def _event_row(system, n, reps, horizon, chunk=10_000) -> dict:
    """The event-driven engine: median events/s of REPEATS runs after a first (compiling) one."""
    chunk = min(reps, chunk)
    t0 = time.perf_counter()
    simulate_cost(system, n, reps, policy="P", horizon=horizon, chunk=chunk, seed=0)
    first = time.perf_counter() - t0
    out = {}

    def once(seed):
        r = simulate_cost(system, n, reps, policy="P", horizon=horizon, chunk=chunk, seed=seed)
        out.update(J_hat=r["J_hat"], J_hat_stderr=r["stderr"])
        return r["events"], r["wall_s"]

    rate, wall = median_rate(once, REPEATS)
    return {"events_per_s": rate, "compile_s": max(0.0, first - wall), **out}


def _ctmc_row(system, n, reps, steps, chunk=1 << 16) -> dict:
    """The uniformised engine (discounted cost truncated after ``steps`` steps, ``chunk`` replications a call)."""
    reps = max(reps, 2)  # a standard error needs two replications
    chunk = min(reps, chunk)
    r = pss2x2_ctmc.simulate_cost(system, n, reps, policy="P", steps=steps, chunk=chunk, seed=0)
    out = {"compile_s": r["compile_s"]}

    def once(seed):
        r = pss2x2_ctmc.simulate_cost(system, n, reps, policy="P", steps=steps, chunk=chunk, seed=seed)
        out.update(J_hat=r["J_hat"], J_hat_stderr=r["stderr"], truncation_bound=r["truncation_bound"])
        return r["events"], r["wall_s"]

    rate, _ = median_rate(once, REPEATS)
    return {"reps": reps, "events_per_s": rate, **out}


def bench(quick: bool = False) -> Iterator[dict]:
    """jaxq (both engines) and numba events/s for n in {1e2, 1e4} and a growing number of replications.

    A generator: each row is yielded as soon as it is measured (``jaxq bench --out`` saves it at once).

    Each configuration runs about ``target`` events (the horizon, or the uniformised engine's number of
    steps, is shortened to fit); the uniformised engine, which needs exponential primitives, is
    measured on the exponential system with more replications where the backend is an accelerator.
    """
    g = grid(quick)
    for dist, name in SYSTEMS.items():
        system = load(path(name))
        for n in (100, 10_000):
            lam_n, mu_n = system.rates(n)
            rate = 2.0 * float(lam_n.sum())  # events per unit time, about
            for reps in g["pss2x2_event_reps"]:
                horizon = min(25.0, g["target_events"] / (reps * rate), (g["rep_events"] or math.inf) / rate)
                row = {"engine": "jaxq.sim.pss2x2", "n": n, "reps": reps, "dist": dist, "horizon": horizon}
                row.update(_event_row(system, n, reps, horizon, g["event_chunk"]))
                if reps in g["pss2x2_numba_reps"]:
                    row.update(_numba_row(system, n, reps, horizon))
                    row["ratio"] = ratio(row["events_per_s"], row.get("baseline_events_per_s"))
                yield row
            if dist != "exponential":
                continue
            big, _ = pss2x2_ctmc.uniformization(lam_n, mu_n)
            for reps in g["pss2x2_ctmc_reps"]:  # the numba rows beside it run the same mean time span
                steps = min(max(g["lockstep_target_events"] / (max(reps, 2) * 0.74), 64), 25.0 * big)  # 0.74 ev/step
                steps = int(min(steps, (g["rep_events"] or math.inf) / 0.74))
                row = {"engine": "jaxq.sim.pss2x2_ctmc", "n": n, "reps": reps, "dist": dist, "steps": steps}
                row.update(_ctmc_row(system, n, reps, steps, g["lockstep_chunk"]))
                if reps in g["pss2x2_numba_reps"]:
                    horizon = steps / big  # the same mean time span as the uniformised steps
                    row.update(_numba_row(system, n, reps, horizon))
                    row["ratio"] = ratio(row["events_per_s"], row.get("baseline_events_per_s"))
                yield row


def main(argv=None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    rows = bench(quick)
    print(f"{'engine':22s} {'dist':12s} {'n':>6s} {'reps':>7s} {'jaxq ev/s':>11s} {'numba ev/s':>11s} {'ratio':>6s} {'compile':>8s}")
    for r in rows:
        b, q = r.get("baseline_events_per_s"), r.get("ratio")
        print(
            f"{r['engine']:22s} {r['dist']:12s} {r['n']:6d} {r['reps']:7d} {r['events_per_s']:11.3g} "
            f"{'-' if b is None else format(b, '.3g'):>11} {'-' if q is None else format(q, '.2f'):>6} {r['compile_s']:8.2f}"
        )


if __name__ == "__main__":
    main()
