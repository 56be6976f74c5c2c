"""Events per second of the network CTMC (:func:`jaxq.sim.network.simulate`) beside a compiled sequential loop.

Implementations of the same model, measured in the same run:
  * jaxq, both drivers of :func:`jaxq.sim.network.simulate`: ``event`` (exact holding times) and
    ``uniformized`` (lockstep), replications vmapped;
  * the baseline ``benchmarks/baselines/network.py`` (numba): one replication at a time, a plain event
    loop over ``q[i]`` and ``z[i, j]``, ``prange`` over replications on all cores, with the semantics of
    the ``priority`` policy. It takes every rate, pool size, activity and the start state from jaxq's
    :func:`jaxq.sim.network.make_params` (:func:`kernel_inputs`), so the n-scaling is identical, and
    computes the same estimator: time averages over [warmup, horizon] of the number in system per class
    and of the idle servers per pool, and the probability of wait; the rows print both side by side.

There is no numba baseline for ``swc`` (the Markov policy z = z(x) re-solved after every event): its
jaxq rows are kept, without a baseline. Without the baseline the numba rows carry a note and
``events_per_s = None``. Events are arrivals plus service completions (numba also counts the one that
crosses the horizon). ``compile_s`` of the numba row is its first call in this process (about 0 when
another section already compiled the kernel).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

import jaxq.bench
from jaxq.bench.sizes import grid, tiny
from jaxq.bench.timing import REPEATS, measure, ratio
from jaxq.diffusion.network_analysis import NetworkAnalysis, analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import network

NUMBA_IMPL = "numba (all cores)"
IMPL = {"event": "jaxq (network CTMC, event-driven)", "uniformized": "jaxq (network CTMC, uniformised, lockstep)"}


def kernel_inputs(an: NetworkAnalysis, n: float) -> dict:
    """The baseline's arrays for the n-th system under ``priority``, from :func:`jaxq.sim.network.make_params`.

    Returns ``lam`` (I,), ``mu`` (I, J), ``big_n`` (J,), ``edge`` (I, J) and ``z0`` (I, J) as numpy arrays.

    Args:
        an: the network's analysis.
        n: scale.

    Returns:
        The arrays by name.
    """
    lay, p = network.make_params(an, n, "priority")
    edge = np.zeros(np.shape(p.mu), bool)
    for i, j in lay.edges:
        edge[i, j] = True
    return {"lam": np.asarray(p.lam), "mu": np.asarray(p.mu), "big_n": np.asarray(p.N), "edge": edge,
            "z0": np.asarray(p.z0)}


def jaxq_row(an: NetworkAnalysis, n: float, policy: str, reps: int, warmup: float, horizon: float,
             repeats: int = REPEATS, engine: str = "event") -> dict:
    """A jaxq row: median events/s of ``repeats`` runs after a first (compiling) one, and the estimates.

    Args:
        an: the network's analysis.
        n: scale.
        policy: one of :data:`jaxq.sim.network.POLICIES`.
        reps: as in :func:`jaxq.sim.network.simulate`.
        warmup: as in :func:`jaxq.sim.network.simulate`.
        horizon: as in :func:`jaxq.sim.network.simulate`.
        repeats: timed runs (seeds 1..).
        engine: ``event`` or ``uniformized``.

    Returns:
        ``impl``, ``events_per_s``, ``compile_s`` (first call minus the median run), ``mean_in_system``
            per class, ``mean_idle`` per pool and ``p_wait`` (each with ``_stderr``) of the seed-1 run.
    """

    def once(seed):
        r = network.simulate(an, n, policy, reps=reps, window=network.Window(warmup, horizon), seed=seed,
                             engine=engine)
        est = {}
        for key in ("mean_in_system", "mean_idle"):
            est[key] = [float(v) for v in np.atleast_1d(r[key])]
            est[key + "_stderr"] = [float(v) for v in np.atleast_1d(r[key + "_stderr"])]
        est.update(p_wait=float(r["p_wait"]), p_wait_stderr=float(r["p_wait_stderr"]))
        return r.events, r.wall_s - r.compile_s, est

    rate, compile_s, est = measure(once, repeats)
    return {"impl": IMPL[engine], "events_per_s": rate, "compile_s": compile_s, **est}


def numba_row(an: NetworkAnalysis, n: float, reps: int, warmup: float, horizon: float,
              repeats: int = REPEATS) -> dict:
    """The numba row (policy ``priority``): median events/s, compile_s and the estimates of the seed-1 run.

    Returns ``impl``, ``events_per_s``, ``compile_s`` and the estimates, or ``events_per_s = None`` and a
    note without the baseline.

    Args:
        an: the network's analysis.
        n: scale.
        reps: as in :func:`jaxq.sim.network.simulate`.
        warmup: as in :func:`jaxq.sim.network.simulate`.
        horizon: as in :func:`jaxq.sim.network.simulate`.
        repeats: timed runs (seeds 1..).

    Returns:
        The row.
    """
    base = jaxq.bench.baseline("network")
    if base is None:
        return {"impl": NUMBA_IMPL, "events_per_s": None, "compile_s": None,
                "note": jaxq.bench.baseline_note("network")}
    k = kernel_inputs(an, n)

    def once(seed):
        r = base.run(**k, warmup=warmup, horizon=horizon, reps=reps, seed=seed)
        return r.pop("events"), r.pop("wall_s"), r

    rate, compile_s, est = measure(once, repeats, warm=lambda: base.run(**k, warmup=0.0, horizon=1e-3, reps=2))
    return {"impl": NUMBA_IMPL, "events_per_s": rate, "compile_s": compile_s, **est}


def compare_rows(an: NetworkAnalysis, n: float, policy: str, reps: int, warmup: float, horizon: float,
                 repeats: int = REPEATS) -> Iterator[dict]:
    """The jaxq rows (event engine, uniformised engine) of one configuration and, for ``priority``, the numba
    row with ``jaxq_ratio`` against the uniformised engine (the faster jaxq engine), each yielded once measured.

    Args:
        an: the network's analysis.
        n: scale.
        policy: one of :data:`jaxq.sim.network.POLICIES`.
        reps: as in :func:`jaxq.sim.network.simulate`.
        warmup: as in :func:`jaxq.sim.network.simulate`.
        horizon: as in :func:`jaxq.sim.network.simulate`.
        repeats: timed runs (seeds 1..).

    Yields:
        ``event, uniformized`` or ``event, uniformized, numba`` rows with ``engine = "network_ctmc[<policy>]"``;
            ``jaxq_ratio`` = the uniformised engine's rate / numba's (None without numba).
    """
    head = {"engine": f"network_ctmc[{policy}]", "n": n, "reps": reps, "horizon": horizon}
    for engine in ("event", "uniformized"):
        lockstep = {**head, **jaxq_row(an, n, policy, reps, warmup, horizon, repeats, engine)}
        yield lockstep
    if policy == "priority":
        row = {**head, **numba_row(an, n, reps, warmup, horizon, repeats)}
        row["jaxq_ratio"] = ratio(lockstep["events_per_s"], row["events_per_s"])
        yield row


def bench(quick: bool) -> Iterator[dict]:
    """Rows for ``jaxq bench`` on the N network (the uniform-stability paper): jaxq for priority and swc, numba for
    priority.

    Every row has engine, impl, n, reps, horizon, events_per_s (median of 3), compile_s, mean_in_system
    (per class), mean_idle (per pool) and p_wait with standard errors over replications; numba rows add
    ``jaxq_ratio``. The horizon is shortened where the size grid caps the events of one replication
    (``rep_events``). A generator: each row is yielded as soon as it is measured (``jaxq bench --out`` saves it).

    Args:
        quick: The quick sizes (:func:`jaxq.bench.sizes.grid`).

    Yields:
        The rows.
    """
    g = grid(quick)
    cap = g["rep_events"]
    quick = quick or tiny()  # JAXQ_BENCH_TINY=1: a dry run
    an = analyze(load(path("network_N")))
    small, large = g["network_reps"]
    cases = [(100, small, "priority"), (100, small, "swc")] if quick else [
        (100, small, "priority"), (100, large, "priority"), (1600, small, "priority"), (100, small, "swc"),
        (1600, small, "swc")]
    for n, reps, policy in cases:
        horizon = 10.0 if quick else 40.0
        if cap:
            lam_n = an.network.at(n, an.scaling).lam_n
            horizon = min(horizon, cap / (2.0 * float(lam_n.sum())))  # about 2 events per arrival
        yield from compare_rows(an, n, policy, reps, min(1.0, horizon / 4), horizon)


if __name__ == "__main__":
    for row in bench(quick=False):
        print(row)
