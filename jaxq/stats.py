"""Monte Carlo summaries shared by every engine: means with standard errors, t intervals, control variates."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np


def mean_stderr(x, axis: int = 0):
    """Mean over replications (``axis``) and its standard error ``std(ddof=1) / sqrt(m)``.

    Args:
        x (numpy.typing.ArrayLike): The sample.
        axis: The axis of the replications.

    Returns:
        (tuple): The mean and its standard error: two floats for a 1-D sample, two arrays otherwise; the standard error
            of a single replication is NaN (undefined), without a warning.
    """
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=axis)
    if x.shape[axis] < 2:
        se = np.full_like(mean, math.nan)
    else:
        se = x.std(axis=axis, ddof=1) / math.sqrt(x.shape[axis])
    if np.ndim(mean) == 0:
        return float(mean), float(se)
    return mean, se


def t95(count: int) -> float:
    """The 97.5% quantile of Student's t with ``count - 1`` degrees of freedom.

    The half-width of a 95% interval in standard errors of a mean of ``count`` independent values (1.96 for many, 12.7
    for two).

    Args:
        count: The number of independent values (at least 2 is used).

    Returns:
        The quantile.
    """
    from scipy import stats

    return float(stats.t.ppf(0.975, max(int(count), 2) - 1))


def t_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval for the mean of a few independent values (e.g. tuning chains).

    Args:
        values (numpy.typing.ArrayLike): The independent values.
        level: The confidence level.

    Returns:
        ``(low, high)``.
    """
    from scipy import stats

    m, s = mean_stderr(values)
    q = float(stats.t.ppf(0.5 + level / 2, len(values) - 1))
    return m - q * s, m + q * s


class Controlled(NamedTuple):
    """A control-variate estimate: the controlled mean and its standard error, the plain ones, the coefficients.

    Attributes:
        mean (typing.Any): The controlled mean.
        stderr (typing.Any): Its standard error.
        plain (typing.Any): The plain mean.
        plain_stderr (typing.Any): Its standard error.
        coefficients (typing.Any): (controls,) or (quantities, controls); None when too few replications to fit.
    """

    mean: Any
    stderr: Any
    plain: Any
    plain_stderr: Any
    coefficients: Any  # (controls,) or (quantities, controls); None when too few replications to fit


CROSS_FIT_FOLDS = 8  # replication r belongs to fold r mod 8


SPARSE_SHARE = 0.5  # a control enters a fit only where it is nonzero in at least this share of the fit's rows


def _fit(c, Y, rows):
    """Least-squares coefficients (controls, quantities) of ``Y`` on ``c`` over ``rows``, with an intercept;
    controls without spread there, or nonzero in fewer than :data:`SPARSE_SHARE` of them, get 0."""
    cf = c[rows] - c[rows].mean(axis=0)
    yf = Y[rows] - Y[rows].mean(axis=0)
    keep = (cf.std(axis=0) > 0) & ((c[rows] != 0).mean(axis=0) >= SPARSE_SHARE)
    beta = np.zeros((c.shape[1], Y.shape[1]))
    if keep.any():
        beta[keep] = np.linalg.lstsq(cf[:, keep], yf, rcond=None)[0]
    return beta


def _helps(c, Y, fold, train) -> np.ndarray:
    """Whether the controls reduce the variance on the folds ``train`` by their own cross-fit (per quantity).

    Each fold j of ``train`` is adjusted with coefficients fitted on the other folds of ``train`` (an inner
    cross-fit, the held-out fold never seen), and the variance of the adjusted values over ``train`` is
    compared with the plain variance there. False everywhere when a fit would see fewer than ``controls + 2``
    replications."""
    rows = np.isin(fold, train)
    if len(train) < 2 or min(int((rows & (fold != j)).sum()) for j in train) < c.shape[1] + 2:
        return np.zeros(Y.shape[1], bool)
    adjusted = Y.copy()
    for j in train:
        apply = fold == j
        adjusted[apply] = Y[apply] - c[apply] @ _fit(c, Y, rows & ~apply)
    return adjusted[rows].var(axis=0) < Y[rows].var(axis=0)


def _fits(fold, present, controls: int) -> bool:
    """Whether every fit of the cross-fit sees at least ``controls + 2`` replications."""
    return len(present) >= 2 and min(int((fold != k).sum()) for k in present) >= controls + 2


ROWS_PER_CONTROL = 4  # where a coarse set exists, a set of controls is used when each fit sees 4 rows per control


def _affords(fold, present, controls: int) -> bool:
    """Whether the replications afford ``controls`` controls: every fit of the cross-fit and of its gate
    (:func:`_helps`: the fits that leave out two folds) sees ``ROWS_PER_CONTROL`` replications per control."""
    counts = {int(k): int((fold == k).sum()) for k in present}
    total = sum(counts.values())
    need = max(controls + 2, ROWS_PER_CONTROL * controls)
    return len(present) >= 3 and all(total - counts[k] - counts[j] >= need for k in counts for j in counts if j != k)


def coarsen(controls, groups) -> np.ndarray:
    """The controls summed within ``groups``.

    A sum of mean-zero controls has mean zero, so a coarse set keeps the unbiasedness of the fine one.

    Args:
        controls (numpy.typing.ArrayLike): Per-replication controls, (R, c).
        groups (tuple[tuple[int, ...], ...]): A tuple of column-index tuples.

    Returns:
        ``(R, len(groups))``.
    """
    c = np.asarray(controls, dtype=np.float64)
    return np.stack([c[:, list(g)].sum(axis=1) for g in groups], axis=1)


def controlled_values(y, controls, index, folds: int = CROSS_FIT_FOLDS, coarse=None):
    """Per-replication values with the controls subtracted, cross-fitted by replication index.

    See :func:`controlled_mean`.

    Args:
        y (numpy.typing.ArrayLike): Per-replication values, (R,) or (R, m).
        controls (numpy.typing.ArrayLike): Per-replication controls, (R, c).
        index (numpy.typing.ArrayLike): The global replication indices, (R,).
        folds: The number of folds (replication r belongs to fold r mod ``folds``).
        coarse (tuple | Callable | None): Groups of control columns to fall back on, see :func:`controlled_mean`.

    Returns:
        (tuple): ``(adjusted (R,) or (R, m), coefficients)``; ``y`` itself and None when a fold's complement has too
            few replications to fit (after the ``coarse`` fallbacks, see :func:`controlled_mean`).
    """
    y = np.asarray(y, dtype=np.float64)
    c = np.asarray(controls, dtype=np.float64).reshape(y.shape[0], -1)
    if callable(coarse):  # the groups as a function of the number of control columns
        coarse = coarse(c.shape[1])
    Y = y[:, None] if y.ndim == 1 else y.reshape(y.shape[0], -1)
    fold = np.asarray(index) % folds
    present = np.unique(fold)
    # The set of controls is chosen from the number of replications alone, never from their values: the full
    # set where the replications afford it, else the coarse groups, else the first group alone.
    if coarse and not _affords(fold, present, c.shape[1]):
        for groups in (tuple(coarse), tuple(coarse)[:1]):
            if _affords(fold, present, len(groups)):
                c = coarsen(c, groups)
                break
    if not _fits(fold, present, c.shape[1]):
        return y, None
    adjusted = np.empty_like(Y)
    betas = []
    for k in present:
        fit, apply = fold != k, fold == k
        beta = _fit(c, Y, fit) * _helps(c, Y, fold, present[present != k])  # a quantity the controls do not help: 0
        adjusted[apply] = Y[apply] - c[apply] @ beta
        betas.append(beta)
    coef = np.mean(betas, axis=0).T  # (quantities, controls): the folds' average
    return adjusted.reshape(y.shape), (coef[0] if y.ndim == 1 else coef)


def controlled_mean(y, controls, index, coarse=None) -> Controlled:
    """The mean of ``y`` over replications with mean-zero controls subtracted, cross-fitted by replication index.

    K-fold cross-fitting by replication index (K = ``CROSS_FIT_FOLDS`` = 8, replication r in fold r mod K):
    the coefficients of the controls are fitted by least squares (with an intercept) on the replications of
    the other folds and applied to this fold's. A replication's adjusted value ``y_r - beta . C_r`` then uses
    coefficients fitted on other, independent replications, so when every control has mean zero the
    estimate is unbiased; and since the folds depend only on the replication index, not on chunks or
    devices, neither does the estimate. A fold's coefficients are used only where the controls help on the
    other folds by their own cross-fit (:func:`_helps`: an inner cross-fit within those folds, the variance of
    its adjusted values against the plain variance there; else that quantity's coefficients are 0): with few
    replications per control, or controls nonzero in a handful of replications, least squares can fit the
    other folds exactly and inflate the variance by orders of magnitude (a variance reduction of 6e-8 was seen
    at 64 replications, 11 controls and gamma = 1e3); the gate, like the fit, never sees the fold it is
    applied to, so unbiasedness is kept. For the same reason a control enters a fit only where it is nonzero in at
    least half of the fit's replications (:data:`SPARSE_SHARE`; the 2x2 renewal rule's control of an activity that a
    mode uses rarely is nonzero in a few replications: fitted on 5 of 128 it took a coefficient of -4,614 and
    left a variance reduction of 3.8 where 648 was there to have); the choice, too, sees the fit's rows only. Its
    standard error is the sample standard deviation of the adjusted values over sqrt(R) (the dependence through the fitted coefficients is O(1/R)). Eight folds rather than
    two: each fit sees 7/8 of the replications, which matters when there are few replications per control
    (at 64 replications and 10 controls a two-fold split lost up to 30x of the reduction on some points).

    Args:
        y (numpy.typing.ArrayLike): Per-replication values, (R,) or (R, m) for m quantities sharing the controls.
        controls (numpy.typing.ArrayLike): Per-replication controls, (R, c) (columns with no variance are ignored).
        index (numpy.typing.ArrayLike): The global replication indices, (R,).
        coarse (tuple | Callable | None): Optional groups of control columns (a tuple of index tuples, or a function of
            the number of control columns giving them) to sum when the replications
            do not afford the full set (a fit or a fit of the gate would see fewer than ``ROWS_PER_CONTROL`` = 4
            replications per control): the groups' sums are used where they are afforded, else the first group's alone,
            else none. The choice depends on the replication indices only, never on the values, and sums of mean-zero
            controls have mean zero, so the estimate stays unbiased and independent of chunking. ``coefficients`` are
            then the coarse set's. Why 4: on the 2x2 engines (eleven controls, three coarse) the coarse set gave the
            smaller standard error on 68% of 512 estimates at 32 replications, 56% at 48, 41% at 64 and 9% at 256; at 32
            replications the full set's worst standard error was 8-244 times the coarse set's (a control nonzero in one
            replication, fitted to a coefficient of -516).

    Returns:
        :class:`Controlled`; when no set of controls can be fitted the controlled estimate is the plain one and
            ``coefficients`` is None.
    """
    y = np.asarray(y, dtype=np.float64)
    vector = y.ndim == 1
    Y = y[:, None] if vector else y.reshape(y.shape[0], -1)
    plain, plain_se = mean_stderr(Y)
    adjusted, coef = controlled_values(Y, controls, index, coarse=coarse)
    if coef is None:
        m, s = (plain[0], plain_se[0]) if vector else (plain.reshape(y.shape[1:]), plain_se.reshape(y.shape[1:]))
        return Controlled(m, s, m, s, None)
    m, s = mean_stderr(adjusted)
    if vector:
        return Controlled(float(m[0]), float(s[0]), float(plain[0]), float(plain_se[0]), coef[0])
    shape = y.shape[1:]
    return Controlled(m.reshape(shape), s.reshape(shape), plain.reshape(shape), plain_se.reshape(shape), coef)
