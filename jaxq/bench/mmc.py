"""M/M/c and a two-class priority queue: jaxq against Ciw and a compiled sequential loop (numba).

The same model in three implementations, measured in the same run:
  * jaxq: the many-server CTMC (:mod:`jaxq.sim.network_ctmc`) on the M/M/N example, vmapped;
  * numba: a sequential event loop per replication, ``prange`` over replications (all cores);
  * Ciw: the discrete-event library, one replication at a time.
Events are arrivals plus service completions.
"""

from __future__ import annotations

import math
import time

import numpy as np

from jaxq.bench.sizes import grid
from jaxq.bench.timing import median_rate


def jaxq_mmc(n: int, reps: int, horizon: float, repeats: int) -> dict:
    """The uniformised lockstep M/M/c engine (:mod:`jaxq.sim.birth_death`)."""
    from jaxq.sim.birth_death import simulate_mmc

    c = round(n + 0.5 * math.sqrt(n))
    t0 = time.perf_counter()
    simulate_mmc(float(n), 1.0, c, reps=reps, warmup=0.0, horizon=horizon, seed=0)
    first = time.perf_counter() - t0

    def once(seed):
        r = simulate_mmc(float(n), 1.0, c, reps=reps, warmup=0.0, horizon=horizon, seed=seed)
        return r["events"], r["wall_s"]

    rate, wall = median_rate(once, repeats)
    return {"events_per_s": rate, "compile_s": max(0.0, first - wall)}


def jaxq_network_mmc(n: int, reps: int, horizon: float, repeats: int) -> dict:
    """The general many-server network CTMC (:mod:`jaxq.sim.network_ctmc`) on the same M/M/c."""
    from jaxq.examples import path
    from jaxq.model import load
    from jaxq.sim import network_ctmc as C

    st = C.setup(load(path("network_mmc")))
    t0 = time.perf_counter()
    C.run(st, n, "priority", reps=max(reps, 2), warmup=0.0, horizon=horizon, seed=0)
    first = time.perf_counter() - t0

    def once(seed):
        r = C.run(st, n, "priority", reps=max(reps, 2), warmup=0.0, horizon=horizon, seed=seed)
        return r["events"], r["wall_s"]

    rate, wall = median_rate(once, repeats)
    return {"events_per_s": rate, "compile_s": max(0.0, first - wall)}


def _numba_kernel():
    import numba

    @numba.njit(cache=False)
    def one(lam, mu, c, horizon):
        t = 0.0
        x = 0
        k = 0
        rate = lam
        t += np.random.exponential(1.0 / rate)
        while t < horizon:
            if np.random.random() * rate < lam:
                x += 1
            else:
                x -= 1
            k += 1
            rate = lam + mu * min(x, c)
            t += np.random.exponential(1.0 / rate)
        return k

    @numba.njit(parallel=True, cache=False)
    def mmc(lam, mu, c, horizon, reps, seed):
        events = np.zeros(reps, dtype=np.int64)
        for r in numba.prange(reps):
            np.random.seed(seed * 1_000_003 + r)
            events[r] = one(lam, mu, c, horizon)
        return events

    return mmc


def numba_mmc(n: int, reps: int, horizon: float, repeats: int) -> dict:
    try:
        kernel = _numba_kernel()
    except ImportError:
        return {"events_per_s": None, "note": "numba not installed (pip install 'jaxq[bench]')"}
    c = round(n + 0.5 * math.sqrt(n))
    t0 = time.perf_counter()
    kernel(float(n), 1.0, c, 1.0, 2, 0)
    compile_s = time.perf_counter() - t0

    def once(seed):
        t = time.perf_counter()
        ev = kernel(float(n), 1.0, c, horizon, reps, seed).sum()
        return ev, time.perf_counter() - t

    rate, _ = median_rate(once, repeats)
    return {"events_per_s": rate, "compile_s": compile_s}


def ciw_mmc(n: int, horizon: float, repeats: int, priority: bool = False) -> dict:
    try:
        import ciw
    except ImportError:
        return {"events_per_s": None, "note": "ciw not installed (pip install 'jaxq[bench]')"}
    c = round(n + 0.5 * math.sqrt(n))

    def once(seed):
        ciw.seed(seed)
        if priority:  # two classes, class 0 has non-preemptive priority; half the load each
            net = ciw.create_network(
                arrival_distributions={"Class 0": [ciw.dists.Exponential(n / 2)], "Class 1": [ciw.dists.Exponential(n / 2)]},
                service_distributions={"Class 0": [ciw.dists.Exponential(1.0)], "Class 1": [ciw.dists.Exponential(1.0)]},
                priority_classes={"Class 0": 0, "Class 1": 1},
                number_of_servers=[c],
            )
        else:
            net = ciw.create_network(
                arrival_distributions=[ciw.dists.Exponential(float(n))],
                service_distributions=[ciw.dists.Exponential(1.0)],
                number_of_servers=[c],
            )
        sim = ciw.Simulation(net)
        t = time.perf_counter()
        sim.simulate_until_max_time(horizon)
        wall = time.perf_counter() - t
        recs = sim.get_all_records()
        return 2 * len(recs), wall  # each completed job: one arrival and one completion

    rate, _ = median_rate(once, repeats)
    return {"events_per_s": rate}


def bench(quick: bool) -> list[dict]:
    """Rows for ``jaxq bench``: M/M/c events per second in jaxq, numba and Ciw, side by side.

    M/M/N in the Halfin-Whitt regime with n = 100 (N = 105 servers, arrival rate 100, mu = 1); the
    two-class priority queue has the same servers and total load. ``jaxq_ratio`` is the uniformised
    jaxq engine's rate divided by the row's rate.
    """
    g = grid(quick)
    n = 100
    reps, horizon, ciw_h = g["mmc_reps"], g["mmc_horizon"], g["ciw_horizon"]
    repeats = 3
    j = jaxq_mmc(n, reps, horizon, repeats)
    rows = [
        {"engine": "mmc", "impl": "jaxq (uniformised, lockstep)", "n": n, "reps": reps, **j},
        {"engine": "mmc", "impl": "jaxq (network CTMC, event-driven)", "n": n, "reps": min(reps, 1000),
         **jaxq_network_mmc(n, min(reps, 1000), horizon / 2, repeats)},
        {"engine": "mmc", "impl": "numba (all cores)", "n": n, "reps": min(reps, 10_000),
         **numba_mmc(n, min(reps, 10_000), horizon, repeats)},
        {"engine": "mmc", "impl": "ciw", "n": n, "reps": 1, **ciw_mmc(n, ciw_h, repeats)},
        {"engine": "priority2", "impl": "ciw", "n": n, "reps": 1, **ciw_mmc(n, ciw_h, repeats, True)},
    ]
    for row in rows[1:]:
        other = row["events_per_s"]
        row["jaxq_ratio"] = j["events_per_s"] / other if other else None
    return rows
