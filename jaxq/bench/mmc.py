"""M/M/c and a two-class priority queue: jaxq against Ciw and a compiled sequential loop (numba).

The same model in three implementations, measured in the same run:
  * jaxq: the many-server CTMC (:mod:`jaxq.sim.network_ctmc`) on the M/M/N example, vmapped;
  * numba: a sequential event loop per replication, ``prange`` over replications (all cores);
  * Ciw: the discrete-event library, one replication at a time.
Events are arrivals plus service completions.

``priority2`` is a two-class non-preemptive priority M/M/c: network_ctmc's ``priority`` policy on a
2-class, 1-pool network (both classes served by the one pool, lambda 1/2 each so the total arrival rate
is n, mu 1, pool size n + 0.5 sqrt(n) rounded: 105 servers at n = 100, taken from the network's scaling
and passed to Ciw as ``number_of_servers``); class 0 has priority. Its numba row is the generic network
kernel of :mod:`jaxq.bench.network` on the same parameters, start state and estimator, and the jaxq and
numba rows print their estimates of the mean number in system per class, the mean idle servers and the
probability of wait side by side. In Ciw 3.2 a ``priority_classes`` dict (no ``(dict, preempt)``
tuple) gives non-preemptive priorities (lower value first): the same model. The Ciw rows report
throughput only (one replication started empty, no estimate); their events are the completed records
(one arrival and one completion each) plus the arrivals of the jobs still in the system at the horizon.
The M/M/c rows of jaxq (uniformised) and numba print their mean number in system over the run beside
each other. ``jaxq_ratio`` of an M/M/c row is the uniformised jaxq engine's rate over the row's rate;
of a priority2 row, the jaxq priority2 rate over the row's rate.
"""

from __future__ import annotations

import math
import time

import numpy as np

from jaxq.bench.sizes import grid
from jaxq.bench.timing import median_rate, ratio


def jaxq_mmc(n: int, reps: int, horizon: float, repeats: int) -> dict:
    """The uniformised lockstep M/M/c engine (:mod:`jaxq.sim.birth_death`), started empty.

    Returns events/s, compile_s, the mean number in system over the run with its stderr, and the time
    span actually simulated (``steps / Lambda``: whole pages of uniformised steps).
    """
    from jaxq.sim.birth_death import simulate_mmc

    c = round(n + 0.5 * math.sqrt(n))
    t0 = time.perf_counter()
    simulate_mmc(float(n), 1.0, c, reps=reps, warmup=0.0, horizon=horizon, seed=0)
    first = time.perf_counter() - t0
    out = {}

    def once(seed):
        r = simulate_mmc(float(n), 1.0, c, reps=reps, warmup=0.0, horizon=horizon, seed=seed)
        out.update(mean_in_system=r["mean_in_system"], mean_in_system_stderr=r["mean_in_system_stderr"],
                   span=r["steps"] / (n + c))
        return r["events"], r["wall_s"]

    rate, wall = median_rate(once, repeats)
    return {"events_per_s": rate, "compile_s": max(0.0, first - wall), **out}


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
        """Events and the time integral of the number in system over [0, horizon], started empty."""
        t = 0.0
        x = 0
        k = 0
        area = 0.0
        rate = lam
        dt = np.random.exponential(1.0 / rate)
        while t + dt < horizon:
            area += x * dt
            t += dt
            if np.random.random() * rate < lam:
                x += 1
            else:
                x -= 1
            k += 1
            rate = lam + mu * min(x, c)
            dt = np.random.exponential(1.0 / rate)
        return k, area + x * (horizon - t)

    @numba.njit(parallel=True, cache=False)
    def mmc(lam, mu, c, horizon, reps, seed):
        events = np.zeros(reps, dtype=np.int64)
        mean_x = np.zeros(reps)
        for r in numba.prange(reps):
            np.random.seed(seed * 1_000_003 + r)
            events[r], area = one(lam, mu, c, horizon)
            mean_x[r] = area / horizon
        return events, mean_x

    return mmc


def numba_mmc(n: int, reps: int, horizon: float, repeats: int) -> dict:
    """A sequential M/M/c event loop per replication, ``prange`` over replications, started empty.

    Returns events/s, compile_s and the mean number in system over [0, horizon] with its stderr.
    """
    from jaxq.stats import mean_stderr

    try:
        kernel = _numba_kernel()
    except ImportError:
        return {"events_per_s": None, "note": "numba not installed (pip install 'jaxq[bench]')"}
    c = round(n + 0.5 * math.sqrt(n))
    t0 = time.perf_counter()
    kernel(float(n), 1.0, c, 1.0, 2, 0)
    compile_s = time.perf_counter() - t0
    out = {}

    def once(seed):
        t = time.perf_counter()
        ev, mean_x = kernel(float(n), 1.0, c, horizon, reps, seed)
        wall = time.perf_counter() - t
        out["mean_in_system"], out["mean_in_system_stderr"] = mean_stderr(mean_x)
        return ev.sum(), wall

    rate, _ = median_rate(once, repeats)
    return {"events_per_s": rate, "compile_s": compile_s, **out}


def ciw_mmc(n: int, horizon: float, repeats: int, priority: bool = False, servers: int | None = None) -> dict:
    """Ciw's median events/s (arrivals and completions per second of ``simulate_until_max_time``).

    Args:
      n: arrival rate (split in halves between two classes when ``priority``); mu = 1.
      horizon: simulated time of each run; repeats: runs (seeds 1..repeats).
      priority: two classes, class 0 with non-preemptive priority (Ciw's default for a dict).
      servers: number of servers (default ``round(n + 0.5 sqrt(n))``).

    Returns:
      ``events_per_s`` (None and a note without Ciw).
    """
    try:
        import ciw
    except ImportError:
        return {"events_per_s": None, "note": "ciw not installed (pip install 'jaxq[bench]')"}
    c = round(n + 0.5 * math.sqrt(n)) if servers is None else int(servers)

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
        done = len(sim.get_all_records())  # each completed job: one arrival and one completion
        present = sum(len(node.all_individuals) for node in sim.nodes[1:-1])  # arrived, not yet completed
        return 2 * done + present, wall

    rate, _ = median_rate(once, repeats)
    return {"events_per_s": rate}


def priority2_setup():
    """The two-class, one-pool network of ``priority2`` (lambda 1/2 each, mu 1, pool n + 0.5 sqrt(n))."""
    from jaxq.model.network import from_dict
    from jaxq.sim import network_ctmc as C

    net = from_dict({"system": {"kind": "network", "lambda": [0.5, 0.5], "mu": [[1.0], [1.0]],
                                "pool_size": [1.0], "pool_size_hat": [0.5]}})
    return C.setup(net)


def priority2_rows(n: int, reps: int, warmup: float, horizon: float, ciw_h: float, repeats: int) -> list[dict]:
    """The two-class non-preemptive priority M/M/c in jaxq (event and lockstep engines), numba and Ciw, with
    ``jaxq_ratio`` against jaxq's lockstep row.

    Args:
      n: scale (total arrival rate); reps, warmup, horizon: jaxq and numba runs (the same model, start
        state and estimator); ciw_h: Ciw's horizon (one replication); repeats: timed runs per row.

    Returns:
      Four rows (jaxq event engine, jaxq lockstep engine, numba, ciw) with ``engine = "priority2"``,
      ``servers`` and events/s; the jaxq and numba rows carry ``mean_in_system`` per class, ``mean_idle`` and ``p_wait`` with standard errors.
    """
    from jaxq.bench import network as NB
    from jaxq.sim import network_ctmc as C

    st = priority2_setup()
    p = C.make_params(st, n, "priority", warmup, horizon)
    servers = int(p["N"][0])  # the pool size of the network's scaling, given to Ciw too
    head = {"engine": "priority2", "n": n, "servers": servers}
    event = {**head, "reps": reps, "horizon": horizon, **NB.jaxq_row(st, n, "priority", reps, warmup, horizon, repeats)}
    jrow = {**head, "reps": reps, "horizon": horizon,
            **NB.jaxq_row(st, n, "priority", reps, warmup, horizon, repeats, engine="uniformized")}
    rows = [
        event,
        jrow,
        {**head, "reps": reps, "horizon": horizon, **NB.numba_row(p, reps, repeats)},
        {**head, "impl": "ciw", "reps": 1, "horizon": ciw_h, **ciw_mmc(n, ciw_h, repeats, True, servers)},
    ]
    for row in rows[2:]:
        row["jaxq_ratio"] = ratio(jrow["events_per_s"], row["events_per_s"])
    return rows


def bench(quick: bool) -> list[dict]:
    """Rows for ``jaxq bench``: M/M/c events per second in jaxq, numba and Ciw, side by side.

    M/M/N in the Halfin-Whitt regime with n = 100 (N = 105 servers, arrival rate 100, mu = 1), and the
    lockstep engine beside numba for the sizes ``(n, reps)`` of the grid's ``mmc_scale`` (N = n +
    0.5 sqrt(n); the horizon shortened to about ``lockstep_target_events`` events); the two-class
    priority queue has the same servers and total load as the n = 100 system (see :func:`priority2_rows`).
    ``jaxq_ratio``: the uniformised jaxq engine's rate over the row's rate for the M/M/c rows, the jaxq
    priority2 row's rate over the row's rate for the priority2 rows.
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
         **numba_mmc(n, min(reps, 10_000), j["span"], repeats)},  # the span jaxq simulated
        {"engine": "mmc", "impl": "ciw", "n": n, "reps": 1, **ciw_mmc(n, ciw_h, repeats)},
    ]
    for row in rows[1:]:
        row["jaxq_ratio"] = ratio(j["events_per_s"], row["events_per_s"])
    for n2, reps2 in g["mmc_scale"]:  # the lockstep engine and numba as n and the replications grow
        h2 = min(horizon, g["lockstep_target_events"] / (reps2 * 2.0 * n2), (g["rep_events"] or math.inf) / (2.0 * n2))
        j2 = jaxq_mmc(n2, reps2, h2, repeats)
        b2 = numba_mmc(n2, min(reps2, 10_000), j2["span"], repeats)
        rows += [{"engine": "mmc", "impl": "jaxq (uniformised, lockstep)", "n": n2, "reps": reps2, **j2},
                 {"engine": "mmc", "impl": "numba (all cores)", "n": n2, "reps": min(reps2, 10_000), **b2,
                  "jaxq_ratio": ratio(j2["events_per_s"], b2["events_per_s"])}]
    p_h = horizon / 2  # as the network CTMC's M/M/c row
    rows += priority2_rows(n, min(reps, 1000), min(1.0, p_h / 4), p_h, ciw_h, repeats)
    return rows
