"""Measuring throughput on noisy shared machines: repeat and take the median."""

from __future__ import annotations

import statistics
from typing import Callable


def median_rate(once: Callable[[int], tuple[float, float]], repeats: int = 3) -> tuple[float, float]:
    """Run ``once(seed) -> (count, seconds)`` ``repeats`` times; return the median rate and median time."""
    runs = [once(seed) for seed in range(1, repeats + 1)]
    rates = [c / w for c, w in runs if w > 0]
    return statistics.median(rates), statistics.median(w for _, w in runs)


def ratio(jaxq_rate: float | None, other: float | None) -> float | None:
    """``jaxq_rate / other`` (a row's ``jaxq_ratio``), None when either rate is missing (e.g. no numba)."""
    return jaxq_rate / other if jaxq_rate and other else None
