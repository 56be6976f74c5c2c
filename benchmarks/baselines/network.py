"""The many-server network CTMC under non-preemptive static priority, as a sequential numba event loop.

One replication at a time, a plain event loop over the state ``q[i]`` (queued per class) and ``z[i, j]``
(busy servers per activity), ``prange`` over replications on all cores, replication r seeded with
``np.random.seed(seed * 1_000_003 + r)``. The kernel is generic over the shape (I, J) of the network and
has the semantics of jaxq's ``priority`` policy: an arriving class-i job takes an idle server in the
lowest-index pool j with an activity (i, j) and ``y_j > 0``, else it queues; a freed pool-j server takes
the queued job of the lowest-index class i' with an activity (i', j) and ``q_i' > 0``.

It takes every rate, pool size, activity and the start state ``z0`` (``q = 0``) as arrays (the caller
passes jaxq's, so the n-scaling is identical) and computes jaxq's estimator: per-replication time
averages over [warmup, horizon] of the number in system per class and of the idle servers per pool, and
the fraction of arrivals after the warm-up that queue (probability of wait), then means and standard
errors over replications. Events are arrivals plus service completions, every one, including the one
that crosses the horizon.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from jaxq.stats import mean_stderr


@numba.njit(cache=True)
def _one(lam, mu, big_n, edge, z0, warmup, horizon, acc_x, acc_y, arrivals, waited):
    """One replication of the non-preemptive priority rule; fills the four accumulators, returns events."""
    num_i, num_j = mu.shape
    z = z0.copy()
    q = np.zeros(num_i, np.int64)
    x = np.zeros(num_i, np.int64)
    y = big_n.copy()
    for i in range(num_i):
        for j in range(num_j):
            x[i] += z[i, j]
            y[j] -= z[i, j]
    lam_tot = 0.0
    for i in range(num_i):
        lam_tot += lam[i]
    t = 0.0
    events = 0
    while t < horizon:
        total = lam_tot
        for i in range(num_i):
            for j in range(num_j):
                total += mu[i, j] * z[i, j]
        dt = -math.log1p(-np.random.random()) / total
        target = np.random.random() * total
        t1 = t + dt
        w = min(t1, horizon) - max(t, warmup)
        if w > 0.0:
            for i in range(num_i):
                acc_x[i] += w * x[i]
            for j in range(num_j):
                acc_y[j] += w * y[j]
        after = t >= warmup
        # the event: the first index whose cumulative rate exceeds target (the last one on round-off)
        cum = 0.0
        kind = -1
        for i in range(num_i):
            cum += lam[i]
            if cum > target:
                kind = i
                break
        if kind < 0:
            for k in range(num_i * num_j):
                cum += mu[k // num_j, k % num_j] * z[k // num_j, k % num_j]
                if cum > target:
                    kind = num_i + k
                    break
            if kind < 0:
                kind = num_i + num_i * num_j - 1
        if kind < num_i:  # arrival of class i: the lowest-index idle pool that can serve it, else queue
            i = kind
            x[i] += 1
            served = False
            for j in range(num_j):
                if edge[i, j] and y[j] > 0:
                    z[i, j] += 1
                    y[j] -= 1
                    served = True
                    break
            if not served:
                q[i] += 1
            if after:
                arrivals[i] += 1.0
                if not served:
                    waited[i] += 1.0
        else:  # completion of (i, j): the freed server takes the lowest-index queued class it serves
            k = kind - num_i
            i, j = k // num_j, k % num_j
            z[i, j] -= 1
            x[i] -= 1
            taken = False
            for i2 in range(num_i):
                if edge[i2, j] and q[i2] > 0:
                    q[i2] -= 1
                    z[i2, j] += 1
                    taken = True
                    break
            if not taken:
                y[j] += 1
        t = t1
        events += 1
    return events


@numba.njit(parallel=True, cache=True)
def _many(lam, mu, big_n, edge, z0, warmup, horizon, reps, seed):
    num_i, num_j = mu.shape
    acc_x = np.zeros((reps, num_i))
    acc_y = np.zeros((reps, num_j))
    arrivals = np.zeros((reps, num_i))
    waited = np.zeros((reps, num_i))
    events = np.zeros(reps, np.int64)
    for r in numba.prange(reps):
        np.random.seed(seed * 1_000_003 + r)
        events[r] = _one(lam, mu, big_n, edge, z0, warmup, horizon, acc_x[r], acc_y[r], arrivals[r], waited[r])
    return acc_x, acc_y, arrivals, waited, events


def accumulate(lam, mu, big_n, edge, z0, warmup: float, horizon: float, reps: int, seed: int = 0) -> dict:
    """Run the kernel (fixed dtypes: one compilation); the per-replication accumulators.

    Args:
      lam: (I,) arrival rates; mu: (I, J) service rates; big_n: (J,) pool sizes; edge: (I, J) activities;
      z0: (I, J) busy servers at the start (queues empty); warmup, horizon: the window; reps, seed.
    Returns:
      ``acc_x`` (reps, I) and ``acc_y`` (reps, J): time integrals of the class counts and idle servers over
      [warmup, horizon]; ``arrivals`` and ``waited`` (reps, I) after the warm-up; ``events`` (reps,);
      ``wall_s`` (the first call also compiles).
    """
    c = np.ascontiguousarray
    args = (c(np.asarray(lam, np.float64)), c(np.asarray(mu, np.float64)), c(np.asarray(big_n, np.int64)),
            c(np.asarray(edge, np.bool_)), c(np.asarray(z0, np.int64)), float(warmup), float(horizon))
    t = time.perf_counter()
    acc_x, acc_y, arrivals, waited, events = _many(*args, int(reps), int(seed))
    wall = time.perf_counter() - t
    return {"acc_x": acc_x, "acc_y": acc_y, "arrivals": arrivals, "waited": waited, "events": events, "wall_s": wall}


def run(lam, mu, big_n, edge, z0, warmup: float, horizon: float, reps: int, seed: int = 0) -> dict:
    """The estimates of :func:`accumulate`'s run (same arguments).

    Returns:
      ``mean_in_system`` (per class), ``mean_idle`` (per pool) and ``p_wait`` (all classes), each with
      ``_stderr``, ``events`` (all replications) and ``wall_s``.
    """
    r = accumulate(lam, mu, big_n, edge, z0, warmup, horizon, reps, seed)
    span = float(horizon) - float(warmup)
    out: dict = {}
    for key, acc in (("mean_in_system", r["acc_x"]), ("mean_idle", r["acc_y"])):
        m, se = mean_stderr(acc / span)
        out[key] = [float(v) for v in np.atleast_1d(m)]
        out[key + "_stderr"] = [float(v) for v in np.atleast_1d(se)]
    pw = r["waited"].sum(axis=1) / np.maximum(r["arrivals"].sum(axis=1), 1.0)
    out["p_wait"], out["p_wait_stderr"] = mean_stderr(pw)
    return {**out, "events": int(r["events"].sum()), "wall_s": r["wall_s"]}
