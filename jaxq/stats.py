"""Monte Carlo summaries shared by every engine: means with standard errors, t intervals."""

from __future__ import annotations

import math

import numpy as np


def mean_stderr(x, axis: int = 0):
    """Mean over replications (``axis``) and its standard error ``std(ddof=1) / sqrt(m)``.

    Returns two floats for a 1-D sample, two arrays otherwise.
    """
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=axis)
    se = x.std(axis=axis, ddof=1) / math.sqrt(x.shape[axis])
    if np.ndim(mean) == 0:
        return float(mean), float(se)
    return mean, se


def t_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval for the mean of a few independent values (e.g. tuning chains)."""
    from scipy import stats

    m, s = mean_stderr(values)
    q = float(stats.t.ppf(0.5 + level / 2, len(values) - 1))
    return m - q * s, m + q * s
