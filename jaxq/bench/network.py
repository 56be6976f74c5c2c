"""Events per second of the network CTMC (jaxq.sim.network_ctmc) beside a compiled sequential loop (numba).

Two implementations of the same model, measured in the same run:
  * jaxq: the event-driven network CTMC (:mod:`jaxq.sim.network_ctmc`), replications vmapped;
  * numba: what a competent user would write: one replication at a time, a plain event loop over the
    state ``q[i]`` (queued per class) and ``z[i, j]`` (busy servers per activity), ``prange`` over
    replications on all cores, per-replication ``np.random.seed(seed * 1_000_003 + r)``.

The numba kernel (:func:`numba_network`) is generic over the shape (I, J) of the network and has the
semantics of ``static_transition`` with ``policy="priority"`` (non-preemptive): an arriving class-i job takes
an idle server in the lowest-index pool j with an activity (i, j) and ``y_j > 0``, else it queues; a
freed pool-j server takes the queued job of the lowest-index class i' with an activity (i', j) and
``q_i' > 0``. It takes every rate, pool size, activity and the start state ``z0`` (``q = 0``) from
:func:`jaxq.sim.network_ctmc.make_params`, so the n-scaling is identical, and computes the same
estimator: per-replication time averages over [warmup, horizon] of the number in system per class
and of the idle servers per pool (float64), and the fraction of arrivals after the warm-up that queue
(probability of wait), then means and standard errors over replications. The rows print both
estimates side by side.

There is no numba baseline for ``swc`` (the Markov policy z = z(x) re-solved after every event): its
jaxq rows are kept, without a baseline. numba is optional: without it the numba rows carry a note and
``events_per_s = None``. Events are arrivals plus service completions (every event, including the one
that crosses the horizon, in both implementations). ``compile_s`` of the numba row is the first call in
this process (about 0 when another section already compiled the kernel).
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import numpy as np

import jaxq
from jaxq.bench.sizes import grid, tiny
from jaxq.bench.timing import median_rate, ratio
from jaxq.model import load
from jaxq.sim import network_ctmc as C
from jaxq.stats import mean_stderr

EX = Path(jaxq.__file__).parent / "examples"
REPEATS = 3
NO_NUMBA = "numba not installed (pip install 'jaxq[bench]')"
NUMBA_IMPL = "numba (all cores)"
JAXQ_IMPL = "jaxq (network CTMC, event-driven)"
LOCKSTEP_IMPL = "jaxq (network CTMC, uniformised, lockstep)"


# ------------------------------------------------------------------------------- numba baseline
@functools.lru_cache(maxsize=1)
def _numba_kernel():
    """The compiled baseline (numba imported here, so this module imports without it)."""
    import numba

    @numba.njit(cache=False)
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

    @numba.njit(parallel=True, cache=False)
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

    return _many


def kernel_args(p: dict) -> tuple:
    """The kernel's arrays from :func:`jaxq.sim.network_ctmc.make_params` (fixed dtypes: one compilation).

    Args:
      p: parameters of the n-th system (policy ``priority``).

    Returns:
      ``(lam, mu, N, edge, z0, warmup, horizon)`` as float64 / int64 / bool numpy arrays and floats.
    """
    c = np.ascontiguousarray
    return (
        c(np.asarray(p["lam"], np.float64)),
        c(np.asarray(p["mu"], np.float64)),
        c(np.asarray(p["N"], np.int64)),
        c(np.asarray(p["edge"], np.bool_)),
        c(np.asarray(p["z0"], np.int64)),
        float(p["warmup"]),
        float(p["horizon"]),
    )


def numba_network(p: dict, reps: int, seed: int = 0) -> dict:
    """Run the numba baseline (raises ImportError without numba; the first call also compiles).

    Args:
      p: parameters from ``make_params(st, n, "priority", warmup, horizon)``.
      reps: replications (``prange`` over them); seed: base seed.

    Returns:
      Per-replication time integrals ``acc_x`` (reps, I) of the class counts and ``acc_y`` (reps, J) of the
      idle servers over [warmup, horizon], ``arrivals`` and ``waited`` (reps, I) after the warm-up,
      ``events`` (reps,), and ``wall_s``.
    """
    many = _numba_kernel()
    args = kernel_args(p)
    t = time.perf_counter()
    acc_x, acc_y, arrivals, waited, events = many(*args, int(reps), int(seed))
    wall = time.perf_counter() - t
    return {"acc_x": acc_x, "acc_y": acc_y, "arrivals": arrivals, "waited": waited, "events": events, "wall_s": wall}


def estimates(acc_x, acc_y, arrivals, waited, span: float) -> dict:
    """The estimator of :func:`jaxq.sim.network_ctmc.summarize` for the number in system, idleness and p_wait.

    Args:
      acc_x: per-replication time integrals of the class counts over [warmup, horizon], (reps, I).
      acc_y: the same for the idle servers per pool, (reps, J).
      arrivals, waited: per-replication arrivals after the warm-up and those that queued, (reps, I).
      span: horizon - warmup.

    Returns:
      ``mean_in_system`` (per class), ``mean_idle`` (per pool) and ``p_wait`` (all classes), each with
      ``_stderr``: lists of floats and floats.
    """
    out: dict = {}
    for key, acc in (("mean_in_system", acc_x), ("mean_idle", acc_y)):
        m, se = mean_stderr(np.asarray(acc, np.float64) / span)
        out[key] = [float(v) for v in np.atleast_1d(m)]
        out[key + "_stderr"] = [float(v) for v in np.atleast_1d(se)]
    pw = np.asarray(waited).sum(axis=1) / np.maximum(np.asarray(arrivals).sum(axis=1), 1.0)
    out["p_wait"], out["p_wait_stderr"] = mean_stderr(pw)
    return out


def numba_row(p: dict, reps: int, repeats: int = REPEATS) -> dict:
    """The numba row's measurements: median events/s, compile_s and the estimates of the seed-1 run.

    Args:
      p: parameters from ``make_params(st, n, "priority", warmup, horizon)``.
      reps: replications; repeats: timed runs (seeds 1..repeats), the median rate is reported.

    Returns:
      ``impl``, ``events_per_s``, ``compile_s`` and the estimates, or ``events_per_s = None`` and a note
      when numba is missing.
    """
    try:
        t0 = time.perf_counter()
        numba_network({**p, "warmup": 0.0, "horizon": 1e-3}, 2, 0)  # compiles once per process
        compile_s = time.perf_counter() - t0
    except ImportError:
        return {"impl": NUMBA_IMPL, "events_per_s": None, "compile_s": None, "note": NO_NUMBA}
    span = float(p["horizon"]) - float(p["warmup"])
    est: dict = {}

    def once(seed):
        r = numba_network(p, reps, seed)
        if not est:
            est.update(estimates(r["acc_x"], r["acc_y"], r["arrivals"], r["waited"], span))
        return int(r["events"].sum()), r["wall_s"]

    rate, _ = median_rate(once, repeats)
    return {"impl": NUMBA_IMPL, "events_per_s": rate, "compile_s": compile_s, **est}


# ------------------------------------------------------------------------------------ jaxq rows
def jaxq_row(st: C.NetworkSetup, n: float, policy: str, reps: int, warmup: float, horizon: float,
             repeats: int = REPEATS, engine: str = "event") -> dict:
    """The jaxq row: median events/s of ``repeats`` runs after a first (compiling) one, and the estimates.

    Args:
      st: the network setup; n: scale; policy: a policy of :data:`jaxq.sim.network_ctmc.POLICIES`.
      reps, warmup, horizon: as in :func:`jaxq.sim.network_ctmc.run`; repeats: timed runs (seeds 1..);
      engine: ``event`` (:mod:`jaxq.sim.network_ctmc`) or ``uniformized`` (:mod:`jaxq.sim.network_lockstep`).

    Returns:
      ``impl``, ``events_per_s``, ``compile_s`` (first call minus the median run), ``mean_in_system``
      per class, ``mean_idle`` per pool and ``p_wait`` (each with ``_stderr``) of the seed-1 run.
    """
    kw = dict(reps=reps, warmup=warmup, horizon=horizon, engine=engine)
    t0 = time.perf_counter()
    C.run(st, n, policy, seed=0, **kw)
    first = time.perf_counter() - t0
    est: dict = {}

    def once(seed):
        r = C.run(st, n, policy, seed=seed, **kw)
        if not est:
            for key in ("mean_in_system", "mean_idle"):
                est[key] = [float(v) for v in r[key]]
                est[key + "_stderr"] = [float(v) for v in r[key + "_stderr"]]
            est.update(p_wait=float(r["p_wait"]), p_wait_stderr=float(r["p_wait_stderr"]))
        return r["events"], r["wall_s"]

    rate, wall = median_rate(once, repeats)
    impl = JAXQ_IMPL if engine == "event" else LOCKSTEP_IMPL
    return {"impl": impl, "events_per_s": rate, "compile_s": max(0.0, first - wall), **est}


def compare_rows(st: C.NetworkSetup, n: float, policy: str, reps: int, warmup: float, horizon: float,
                 repeats: int = REPEATS) -> list[dict]:
    """The jaxq rows (event engine, uniformised lockstep engine) of one configuration and, for
    ``priority``, the numba row with ``jaxq_ratio`` against the lockstep engine (the faster jaxq engine).

    Args:
      st, n, policy, reps, warmup, horizon, repeats: as in :func:`jaxq_row`.

    Returns:
      ``[event, lockstep]`` or ``[event, lockstep, numba]`` rows with ``engine = "network_ctmc[<policy>]"``;
      ``jaxq_ratio`` = the lockstep engine's rate / numba's (None without numba).
    """
    head = {"engine": f"network_ctmc[{policy}]", "n": n, "reps": reps, "horizon": horizon}
    rows = [{**head, **jaxq_row(st, n, policy, reps, warmup, horizon, repeats, engine)}
            for engine in ("event", "uniformized")]
    if policy == "priority":
        p = C.make_params(st, n, policy, warmup, horizon)
        row = {**head, **numba_row(p, reps, repeats)}
        row["jaxq_ratio"] = ratio(rows[1]["events_per_s"], row["events_per_s"])
        rows.append(row)
    return rows


def bench(quick: bool) -> list[dict]:
    """Rows for ``jaxq bench`` on the N network (seed 001): jaxq for priority and swc, numba for priority.

    Every row has engine, impl, n, reps, horizon, events_per_s (median of 3), compile_s, mean_in_system
    (per class), mean_idle (per pool) and p_wait with standard errors over replications; numba rows add
    ``jaxq_ratio``. The horizon is shortened where the size grid caps the events of one replication
    (``rep_events``).
    """
    g = grid(quick)
    cap = g["rep_events"]
    quick = quick or tiny()  # JAXQ_BENCH_TINY=1: a dry run
    st = C.setup(load(EX / "network_N.toml"))
    small, large = g["network_reps"]
    cases = [(100, small, "priority"), (100, small, "swc")] if quick else [
        (100, small, "priority"), (100, large, "priority"), (1600, small, "priority"), (100, small, "swc"),
        (1600, small, "swc")]
    rows = []
    for n, reps, policy in cases:
        horizon = 10.0 if quick else 40.0
        if cap:
            lam_n, _, _ = st.net.rates(n, st.scaling)
            horizon = min(horizon, cap / (2.0 * float(lam_n.sum())))  # about 2 events per arrival
        rows += compare_rows(st, n, policy, reps, min(1.0, horizon / 4), horizon)
    return rows


if __name__ == "__main__":
    for row in bench(quick=False):
        print(row)
