"""Measuring throughput on noisy shared machines: repeat and take the median (or, for intrinsic costs, the best)."""

from __future__ import annotations

import statistics
import time
from typing import Callable

REPEATS = 3


def measure(run: Callable[[int], tuple[float, float, dict]], repeats: int = REPEATS,
            warm: Callable[[], object] | None = None) -> tuple[float, float, dict]:
    """Time ``run(seed) -> (work, seconds, estimates)`` for seeds ``1 .. repeats`` after a first call.

    The first call is ``run(0)`` (the same size: it compiles) or ``warm()`` (e.g. a tiny call of a numba
    kernel, which compiles it).

    Args:
        run: The measured call.
        repeats: The measured calls after the first.
        warm: The first call instead of ``run(0)``.

    Returns:
        ``(rate, compile_s, estimates)``: the median of ``work / seconds``; the first call's overhead (its wall
            time minus the median ``seconds``; with ``warm``, the wall time of ``warm()``); the estimates of seed 1.
    """
    return measure_interleaved([(run, warm)], repeats)[0]


def measure_interleaved(jobs: list, repeats: int = REPEATS, best: bool = False) -> list[tuple[float, float, dict]]:
    """:func:`measure` for several jobs at once, in rounds: every job's first call, then ``repeats`` rounds
    in which each job runs once (seed = the round), so that a slow spell of a shared machine (the rate of
    one process drifts by 20-30% over tens of seconds) falls on every job alike and the ratios of their
    medians stay comparable.

    Args:
        jobs: ``(run, warm)`` pairs as the arguments of :func:`measure` (``warm`` may be None).
        repeats: The rounds after the first calls.
        best: take each job's fastest round (rate and wall time) instead of the median: the estimator of an
            intrinsic cost on a shared machine, where other load only ever slows a run (as ``timeit`` takes the
            minimum); a median of three still moved cost ratios by 30-50% when two rounds were disturbed.

    Returns:
        One ``(rate, compile_s, estimates)`` per job, as :func:`measure`.
    """
    first = []
    for run, warm in jobs:
        t0 = time.perf_counter()
        run(0) if warm is None else warm()
        first.append(time.perf_counter() - t0)
    runs = [[] for _ in jobs]
    for seed in range(1, repeats + 1):
        for j, (run, _) in enumerate(jobs):
            runs[j].append(run(seed))
    out = []
    for (_, warm), f, rj in zip(jobs, first, runs):
        pick = max if best else statistics.median
        rate = pick(w / s for w, s, _ in rj if s > 0)
        wall = (min if best else statistics.median)(s for _, s, _ in rj)
        out.append((rate, f if warm is not None else max(0.0, f - wall), rj[0][2]))
    return out


def ratio(jaxq_rate: float | None, other: float | None) -> float | None:
    """``jaxq_rate / other`` (a row's ``jaxq_ratio``), None when either rate is missing (e.g. no numba).

    Args:
        jaxq_rate: The jaxq row's rate.
        other: The baseline's rate.

    Returns:
        The ratio, or None.
    """
    return jaxq_rate / other if jaxq_rate and other else None
