"""M/M/c as a sequential numba event loop, and M/M/c and a two-class priority M/M/c in Ciw.

* :func:`run` (numba): one replication at a time, a plain loop over the events of the birth-death chain
  (exponential holding times of the total rate), ``prange`` over replications (all cores), started empty;
  it estimates the mean number in system over [0, horizon].
* :func:`ciw` (Ciw): the discrete-event library, one replication started empty, throughput only (no
  estimate). Its events are the completed records (one arrival and one completion each) plus the arrivals
  of the jobs still in the system at the horizon. With ``priority``: two classes with half the load each,
  class 0 with non-preemptive priority (in Ciw 3.2 a ``priority_classes`` dict, without a
  ``(dict, preempt)`` tuple, gives non-preemptive priorities, lower value first).

The two-class priority queue's numba baseline is the generic network kernel of
:mod:`benchmarks.baselines.network` (one pool serving both classes).
"""

from __future__ import annotations

import time

import ciw as _ciw
import numba
import numpy as np

from jaxq.stats import mean_stderr


@numba.njit(cache=True)
def _one(lam, mu, c, horizon):
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


@numba.njit(parallel=True, cache=True)
def _many(lam, mu, c, horizon, reps, seed):
    events = np.zeros(reps, dtype=np.int64)
    mean_x = np.zeros(reps)
    for r in numba.prange(reps):
        np.random.seed(seed * 1_000_003 + r)
        events[r], area = _one(lam, mu, c, horizon)
        mean_x[r] = area / horizon
    return events, mean_x


def run(lam: float, mu: float, c: int, horizon: float, reps: int, seed: int = 0) -> dict:
    """M/M/c (arrival rate ``lam``, ``c`` servers of rate ``mu``) started empty, over [0, horizon].

    Returns ``mean_in_system`` (time average over [0, horizon]) with ``mean_in_system_stderr`` over
    replications, ``events`` (all replications) and ``wall_s`` (the first call also compiles).
    """
    t = time.perf_counter()
    events, mean_x = _many(float(lam), float(mu), int(c), float(horizon), int(reps), int(seed))
    wall = time.perf_counter() - t
    m, se = mean_stderr(mean_x)
    return {"mean_in_system": m, "mean_in_system_stderr": se, "events": int(events.sum()), "wall_s": wall}


def ciw(n: float, horizon: float, seed: int, priority: bool = False, servers: int = 1) -> dict:
    """One Ciw run started empty: total arrival rate ``n``, mu = 1, ``servers`` servers, over [0, horizon].

    Args:
      priority: two classes (arrival rate n/2 each), class 0 with non-preemptive priority.
    Returns:
      ``events`` (arrivals and completions) and ``wall_s`` of ``simulate_until_max_time``.
    """
    _ciw.seed(seed)
    if priority:  # two classes, class 0 has non-preemptive priority; half the load each
        net = _ciw.create_network(
            arrival_distributions={"Class 0": [_ciw.dists.Exponential(n / 2)],
                                   "Class 1": [_ciw.dists.Exponential(n / 2)]},
            service_distributions={"Class 0": [_ciw.dists.Exponential(1.0)],
                                   "Class 1": [_ciw.dists.Exponential(1.0)]},
            priority_classes={"Class 0": 0, "Class 1": 1},
            number_of_servers=[int(servers)],
        )
    else:
        net = _ciw.create_network(
            arrival_distributions=[_ciw.dists.Exponential(float(n))],
            service_distributions=[_ciw.dists.Exponential(1.0)],
            number_of_servers=[int(servers)],
        )
    sim = _ciw.Simulation(net)
    t = time.perf_counter()
    sim.simulate_until_max_time(horizon)
    wall = time.perf_counter() - t
    done = len(sim.get_all_records())  # each completed job: one arrival and one completion
    present = sum(len(node.all_individuals) for node in sim.nodes[1:-1])  # arrived, not yet completed
    return {"events": 2 * done + present, "wall_s": wall}
