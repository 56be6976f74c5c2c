"""Measuring throughput on noisy shared machines: repeat and take the median."""

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

    Returns:
      ``(rate, compile_s, estimates)``: the median of ``work / seconds``; the first call's overhead (its wall
      time minus the median ``seconds``; with ``warm``, the wall time of ``warm()``); the estimates of seed 1.
    """
    t0 = time.perf_counter()
    run(0) if warm is None else warm()
    first = time.perf_counter() - t0
    runs = [run(seed) for seed in range(1, repeats + 1)]
    rate = statistics.median(w / s for w, s, _ in runs if s > 0)
    wall = statistics.median(s for _, s, _ in runs)
    return rate, (first if warm is not None else max(0.0, first - wall)), runs[0][2]


def ratio(jaxq_rate: float | None, other: float | None) -> float | None:
    """``jaxq_rate / other`` (a row's ``jaxq_ratio``), None when either rate is missing (e.g. no numba)."""
    return jaxq_rate / other if jaxq_rate and other else None
