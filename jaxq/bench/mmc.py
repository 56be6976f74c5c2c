"""M/M/c and a two-class priority queue: jaxq against Ciw and a compiled sequential loop (numba).

The same model in several implementations, measured in the same run:
  * jaxq: :func:`jaxq.sim.network.simulate_mmc` (the birth-death statement on the uniformised driver,
    lockstep) and :func:`jaxq.sim.network.simulate` on the M/M/N example network (event driver), vmapped;
  * numba (``benchmarks/baselines/mmc.py``): a sequential event loop per replication, ``prange`` over
    replications (all cores);
  * Ciw (same module): the discrete-event library, one replication at a time.
Events are arrivals plus service completions.

``priority2`` is a two-class non-preemptive priority M/M/c: the network's ``priority`` policy on a
2-class, 1-pool network (both classes served by the one pool, lambda 1/2 each so the total arrival rate
is n, mu 1, pool size n + 0.5 sqrt(n) rounded: 105 servers at n = 100, taken from the network's scaling
and passed to Ciw as ``number_of_servers``); class 0 has priority. Its numba row is the generic network
kernel of ``benchmarks/baselines/network.py`` on the same parameters, start state and estimator, and the
jaxq and numba rows print their estimates of the mean number in system per class, the mean idle servers
and the probability of wait side by side. The Ciw rows report throughput only (one replication started
empty, no estimate). The M/M/c rows of jaxq (uniformised) and numba print their mean number in system
over the run beside each other. ``jaxq_ratio`` of an M/M/c row is the uniformised jaxq engine's rate over
the row's rate; of a priority2 row, the jaxq priority2 uniformised rate over the row's rate.
"""

from __future__ import annotations

import math
from typing import Iterator

import jaxq.bench
from jaxq.bench import network as NB
from jaxq.bench.sizes import grid
from jaxq.bench.timing import REPEATS, measure, ratio
from jaxq.diffusion.network_analysis import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.network import from_dict
from jaxq.sim import network

MMC_IMPL = "jaxq (uniformised, lockstep)"
NUMBA_IMPL = NB.NUMBA_IMPL


def servers(n: float) -> int:
    """N = round(n + 0.5 sqrt(n)) (Halfin-Whitt, the M/M/N example).

    Args:
        n: The arrival rate.

    Returns:
        N.
    """
    return round(n + 0.5 * math.sqrt(n))


def jaxq_mmc(n: int, reps: int, horizon: float, repeats: int = REPEATS) -> dict:
    """The uniformised lockstep M/M/c engine (:func:`jaxq.sim.network.simulate_mmc`), started empty.

    Returns events/s, compile_s, the mean number in system over the window with its stderr, and the time span
    it averages (``round(Lambda T) / Lambda``: the window's uniformised steps over their rate).

    Args:
        n: The scale (arrival rate; mu = 1).
        reps: The replications.
        horizon: The simulated time of each replication.
        repeats: The timed runs (seeds 1..repeats).

    Returns:
        ``events_per_s``, ``compile_s``, ``mean_in_system``, ``mean_in_system_stderr`` and ``span``.
    """
    c = servers(n)

    def once(seed):
        r = network.simulate_mmc(float(n), 1.0, c, reps=reps, window=network.Window(0.0, horizon), seed=seed,
                                 engine="uniformized")
        est = {"mean_in_system": r["mean_in_system"], "mean_in_system_stderr": r["mean_in_system_stderr"],
               "span": max(1, round((n + c) * horizon)) / (n + c)}  # Lambda = n + c mu, mu = 1
        return r.events, r.wall_s - r.compile_s, est

    rate, compile_s, est = measure(once, repeats)
    return {"events_per_s": rate, "compile_s": compile_s, **est}


def jaxq_network_mmc(n: int, reps: int, horizon: float, repeats: int = REPEATS) -> dict:
    """The general network model on the event driver (:func:`jaxq.sim.network.simulate`) on the same M/M/c.

    Args:
        n: The scale (arrival rate; mu = 1).
        reps: The replications.
        horizon: The simulated time of each replication.
        repeats: The timed runs (seeds 1..repeats).

    Returns:
        ``events_per_s`` and ``compile_s``.
    """
    an = analyze(load(path("network_mmc")))

    def once(seed):
        r = network.simulate(an, n, "priority", reps=max(reps, 2), window=network.Window(0.0, horizon), seed=seed,
                             engine="event")
        return r.events, r.wall_s - r.compile_s, {}

    rate, compile_s, _ = measure(once, repeats)
    return {"events_per_s": rate, "compile_s": compile_s}


def _no_baseline(name: str) -> dict:
    return {"events_per_s": None, "note": jaxq.bench.baseline_note(name)}


def numba_mmc(n: int, reps: int, horizon: float, repeats: int = REPEATS) -> dict:
    """The numba M/M/c baseline, started empty: events/s, compile_s and the mean number in system over
    [0, horizon] with its stderr (a note without the baseline).

    Args:
        n: The scale (arrival rate; mu = 1).
        reps: The replications.
        horizon: The simulated time of each replication.
        repeats: The timed runs (seeds 1..repeats).

    Returns:
        The figures, or ``events_per_s`` None and a note.
    """
    base = jaxq.bench.baseline("mmc")
    if base is None:
        return _no_baseline("mmc")
    c = servers(n)

    def once(seed):
        r = base.run(float(n), 1.0, c, horizon, reps, seed)
        return r.pop("events"), r.pop("wall_s"), r

    rate, compile_s, est = measure(once, repeats, warm=lambda: base.run(float(n), 1.0, c, 1.0, 2, 0))
    return {"events_per_s": rate, "compile_s": compile_s, **est}


def ciw_mmc(n: int, horizon: float, repeats: int = REPEATS, priority: bool = False,
            num_servers: int | None = None) -> dict:
    """Ciw's median events/s (arrivals and completions per second of ``simulate_until_max_time``).

    Args:
        n: arrival rate (split in halves between two classes when ``priority``); mu = 1.
        horizon: simulated time of each run.
        repeats: runs (seeds 1..repeats).
        priority: two classes, class 0 with non-preemptive priority.
        num_servers: number of servers (default ``round(n + 0.5 sqrt(n))``).

    Returns:
        ``events_per_s`` (None and a note without the baseline).
    """
    base = jaxq.bench.baseline("mmc")
    if base is None:
        return _no_baseline("mmc")
    c = servers(n) if num_servers is None else int(num_servers)

    def once(seed):
        r = base.ciw(n, horizon, seed, priority, c)
        return r["events"], r["wall_s"], {}

    rate, _, _ = measure(once, repeats, warm=lambda: None)
    return {"events_per_s": rate}


def priority2_network():
    """The two-class, one-pool network of ``priority2`` (lambda 1/2 each, mu 1, pool n + 0.5 sqrt(n)), analysed."""
    return analyze(from_dict({"system": {"kind": "network", "lambda": [0.5, 0.5], "mu": [[1.0], [1.0]],
                                         "pool_size": [1.0], "pool_size_hat": [0.5]}}))


def priority2_rows(n: int, reps: int, warmup: float, horizon: float, ciw_h: float,
                   repeats: int = REPEATS) -> Iterator[dict]:
    """The two-class non-preemptive priority M/M/c in jaxq (event and uniformised engines), numba and Ciw, with
    ``jaxq_ratio`` against jaxq's uniformised row, each row yielded once measured.

    Args:
        n: scale (total arrival rate).
        reps: jaxq and numba runs (the same model, start state and estimator).
        warmup: jaxq and numba runs (the same model, start state and estimator).
        horizon: jaxq and numba runs (the same model, start state and estimator).
        ciw_h: Ciw's horizon (one replication).
        repeats: timed runs per row.

    Yields:
        Four rows (jaxq event engine, jaxq uniformised engine, numba, ciw) with ``engine = "priority2"``,
            ``servers`` and events/s; the jaxq and numba rows carry ``mean_in_system`` per class, ``mean_idle``
            and ``p_wait`` with standard errors.
    """
    an = priority2_network()
    c = int(NB.kernel_inputs(an, n)["big_n"][0])  # the pool size of the network's scaling, given to Ciw too
    head = {"engine": "priority2", "n": n, "servers": c}
    run = {**head, "reps": reps, "horizon": horizon}
    for engine in ("event", "uniformized"):
        lockstep = {**run, **NB.jaxq_row(an, n, "priority", reps, warmup, horizon, repeats, engine)}
        yield lockstep
    for row in ({**run, **NB.numba_row(an, n, reps, warmup, horizon, repeats)},
                {**head, "impl": "ciw", "reps": 1, "horizon": ciw_h, **ciw_mmc(n, ciw_h, repeats, True, c)}):
        yield {**row, "jaxq_ratio": ratio(lockstep["events_per_s"], row["events_per_s"])}


def bench(quick: bool) -> Iterator[dict]:
    """Rows for ``jaxq bench``: M/M/c events per second in jaxq, numba and Ciw, side by side.

    M/M/N in the Halfin-Whitt regime with n = 100 (N = 105 servers, arrival rate 100, mu = 1), and the
    uniformised engine beside numba for the sizes ``(n, reps)`` of the grid's ``mmc_scale`` (N = n +
    0.5 sqrt(n); the horizon shortened to about ``lockstep_target_events`` events); the two-class
    priority queue has the same servers and total load as the n = 100 system (see :func:`priority2_rows`).
    ``jaxq_ratio``: the uniformised jaxq engine's rate over the row's rate for the M/M/c rows, the jaxq
    priority2 uniformised row's rate over the row's rate for the priority2 rows. A generator: each row is
    yielded as soon as it is measured (``jaxq bench --out`` saves it).

    Args:
        quick: The quick sizes (:func:`jaxq.bench.sizes.grid`).

    Yields:
        The rows.
    """
    g = grid(quick)
    n = 100
    reps, horizon, ciw_h = g["mmc_reps"], g["mmc_horizon"], g["ciw_horizon"]
    j = jaxq_mmc(n, reps, horizon)
    yield {"engine": "mmc", "impl": MMC_IMPL, "n": n, "reps": reps, **j}
    others = (lambda: {"impl": NB.IMPL["event"], "reps": min(reps, 1000),
                       **jaxq_network_mmc(n, min(reps, 1000), horizon / 2)},
              lambda: {"impl": NUMBA_IMPL, "reps": min(reps, 10_000),
                       **numba_mmc(n, min(reps, 10_000), j["span"])},  # the span jaxq simulated
              lambda: {"impl": "ciw", "reps": 1, **ciw_mmc(n, ciw_h)})
    for other in others:
        row = {"engine": "mmc", "n": n, **other()}
        yield {**row, "jaxq_ratio": ratio(j["events_per_s"], row["events_per_s"])}
    for n2, reps2 in g["mmc_scale"]:  # the uniformised engine and numba as n and the replications grow
        h2 = min(horizon, g["lockstep_target_events"] / (reps2 * 2.0 * n2), (g["rep_events"] or math.inf) / (2.0 * n2))
        j2 = jaxq_mmc(n2, reps2, h2)
        yield {"engine": "mmc", "impl": MMC_IMPL, "n": n2, "reps": reps2, **j2}
        b2 = numba_mmc(n2, min(reps2, 10_000), j2["span"])
        yield {"engine": "mmc", "impl": NUMBA_IMPL, "n": n2, "reps": min(reps2, 10_000), **b2,
               "jaxq_ratio": ratio(j2["events_per_s"], b2["events_per_s"])}
    p_h = horizon / 2  # as the network model's M/M/c row
    yield from priority2_rows(n, min(reps, 1000), min(1.0, p_h / 4), p_h, ciw_h)
