"""Small statistics for the studies: means with standard errors, KS distances, log-log rates."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from jaxq.stats import controlled_mean, mean_stderr


def ks_distance(a, b) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov distance ``sup_x |F_a(x) - F_b(x)|`` and its p-value.

    Args:
        a (numpy.typing.ArrayLike): The first sample.
        b (numpy.typing.ArrayLike): The second sample.

    Returns:
        ``(distance, p-value)``.
    """
    r = sps.ks_2samp(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    return float(r.statistic), float(r.pvalue)


def ks_noise_level(m: int, m2: int, level: float = 0.05) -> float:
    """The KS distance two samples of sizes m and m2 of one law exceed with probability ``level``.

    Asymptotic Kolmogorov critical value ``c(level) sqrt((m + m2) / (m m2))``, c(0.05) = 1.358.

    Args:
        m: The size of the first sample.
        m2: The size of the second sample.
        level: The probability of exceeding it.

    Returns:
        The KS distance.
    """
    c = math.sqrt(-0.5 * math.log(level / 2.0))
    return c * math.sqrt((m + m2) / (m * m2))


def loglog_rate(n, y, y_stderr=None, errors_floor: bool = False) -> tuple[float, float, float]:
    """Least-squares fit ``log y = log C + rate * log n``; returns ``(rate, rate_stderr, C)``.

    Points are weighted by ``y / y_stderr`` when standard errors are given (the delta method:
    ``sd(log y) ~ y_stderr / y``). Needs at least two positive y; with two points the stderr is nan. With
    ``errors_floor`` (standard errors given) the residual scale never shrinks the covariance below what the errors
    alone give (a factor ``max(1, chi^2 / dof)``), and with two points the stderr is the errors' alone.

    Args:
        n (numpy.typing.ArrayLike): The abscissae.
        y (numpy.typing.ArrayLike): The values (those not positive or not finite are left out).
        y_stderr (numpy.typing.ArrayLike | None): Their standard errors (None: unweighted).
        errors_floor: The residual scale never shrinks the covariance below what the errors alone give.

    Returns:
        ``(rate, rate_stderr, C)``; NaN with fewer than two positive y.
    """
    n = np.asarray(n, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = (y > 0) & np.isfinite(y)
    n, y = n[ok], y[ok]
    if y.size < 2:
        return math.nan, math.nan, math.nan
    w = np.ones_like(y)
    if y_stderr is not None:
        se = np.asarray(y_stderr, dtype=np.float64)[ok]
        w = np.where(se > 0, y / np.maximum(se, 1e-300), 1.0)
    X = np.stack([np.ones_like(n), np.log(n)], axis=1) * w[:, None]
    Y = np.log(y) * w
    coef, res, *_ = np.linalg.lstsq(X, Y, rcond=None)
    dof = y.size - 2
    s2 = float(np.sum((Y - X @ coef) ** 2)) / dof if dof > 0 else math.nan
    if errors_floor and y_stderr is not None:
        s2 = max(1.0, s2) if dof > 0 else 1.0
    se_rate = float(math.sqrt(s2 * np.linalg.inv(X.T @ X)[1, 1])) if math.isfinite(s2) else math.nan
    return float(coef[1]), se_rate, float(math.exp(coef[0]))


def controls_of(rec: dict) -> np.ndarray | None:
    """The control columns ``cv_0, cv_1, ...`` of a point's records as an array (replications, controls), or None.

    Args:
        rec: A point's records.

    Returns:
        The controls, (replications, controls); None without control columns.
    """
    keys = sorted((k for k in rec if k.startswith("cv_")), key=lambda k: int(k[3:]))
    return np.stack([rec[k] for k in keys], axis=1) if keys else None


def controlled_estimate(rec: dict, key: str, coarse=None) -> tuple[float, float, dict]:
    """Mean and standard error of ``rec[key]`` over replications, controlled when the records carry controls
    (cross-fitted by the replication index ``rec["rep"]``, :func:`jaxq.stats.controlled_mean`, with its
    ``coarse`` fallback for few replications), and the plain estimate as extra table columns (``<key>_plain``,
    ``<key>_plain_stderr``, ``variance_reduction``).

    Args:
        rec: A point's records (the controls ``cv_0, cv_1, ...`` and the replication index ``rep``, when controlled).
        key: The column.
        coarse (tuple | Callable | None): The coarse groups of control columns, or a function of their number that
            gives them (:func:`jaxq.stats.controlled_mean`; :func:`jaxq.sim.models.pss2x2.coarse_controls`).

    Returns:
        ``(mean, stderr, extra columns)``; the extra columns are empty without controls.
    """
    c = controls_of(rec)
    if c is None:
        m, se = mean_stderr(rec[key])
        return m, se, {}
    r = controlled_mean(rec[key], c, rec["rep"], coarse=coarse)
    vr = (r.plain_stderr / r.stderr) ** 2 if r.stderr > 0 else None
    return r.mean, r.stderr, {f"{key}_plain": r.plain, f"{key}_plain_stderr": r.plain_stderr, "variance_reduction": vr}


def limit_fit(n, y, y_stderr) -> dict:
    """Weighted least-squares fit ``y_n = L + C n^(-r)`` with standard errors (the delta method of the fit).

    Returns ``L``, ``L_stderr``, ``C``, ``r``, ``r_stderr``, ``chi2`` and ``dof``; NaN entries when there
    are fewer than four points or the fit does not converge (three parameters need at least one degree of
    freedom to say anything about the fit).

    Args:
        n (numpy.typing.ArrayLike): The n of the points.
        y (numpy.typing.ArrayLike): The values ``y_n``.
        y_stderr (numpy.typing.ArrayLike): Their standard errors.

    Returns:
        ``{"L", "L_stderr", "C", "r", "r_stderr", "chi2", "dof"}``.
    """
    from scipy.optimize import curve_fit

    n = np.asarray(n, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    se = np.maximum(np.asarray(y_stderr, dtype=np.float64), 1e-300)
    nan = {"L": math.nan, "L_stderr": math.nan, "C": math.nan, "r": math.nan, "r_stderr": math.nan,
           "chi2": math.nan, "dof": max(0, int(n.size) - 3)}
    if n.size < 4:
        return nan
    m = n / n.min()  # scale-free in n: C is the gap at the smallest n
    model = lambda x, L, C, r: L + C * x ** (-r)  # noqa: E731
    p0 = (float(y[-1]), float(y[0] - y[-1]), 0.25)
    try:
        popt, pcov = curve_fit(model, m, y, p0=p0, sigma=se, absolute_sigma=True, maxfev=20000,
                               bounds=([-np.inf, -np.inf, 0.0], [np.inf, np.inf, 5.0]))
    except (RuntimeError, ValueError):
        return nan
    resid = (y - model(m, *popt)) / se
    perr = np.sqrt(np.clip(np.diag(pcov), 0.0, np.inf))
    return {"L": float(popt[0]), "L_stderr": float(perr[0]), "C": float(popt[1]), "r": float(popt[2]),
            "r_stderr": float(perr[2]), "chi2": float(np.sum(resid**2)), "dof": int(n.size - 3)}


def threshold_rate(picked: bool, a: float, n, theta) -> float | None:
    """The rate at which ``Theta_n / sqrt(n)`` vanishes along a study's n: ``a - 1/2`` for a closed-form rule
    (``Theta_n = ceil(c n^a)``, (2.29)); for a rule that picks Theta_n at each n (``picked``: the excursion rule)
    the least-squares slope of ``log(Theta_n / sqrt(n))`` on ``log n``; None without a threshold or, when picked,
    with fewer than two n.

    Args:
        picked: The rule picks Theta_n at each n (the excursion rule).
        a: The exponent of a closed-form rule.
        n (typing.Sequence[float]): The n of the study.
        theta (typing.Sequence[float | None]): Theta_n at each n (None first: no threshold).

    Returns:
        The rate; None without a threshold or, when picked, with fewer than two n.
    """
    if theta[0] is None:
        return None
    if not picked:
        return a - 0.5
    if len(n) < 2:
        return None
    x = np.log(np.asarray(n, dtype=np.float64))
    return float(np.polyfit(x, np.log(np.asarray(theta, dtype=np.float64)) - 0.5 * x, 1)[0])


def groups_by(rows, keys) -> dict[tuple, list[dict]]:
    """Rows (dicts) grouped by the values of ``keys``, in order of first appearance.

    Args:
        rows (typing.Iterable[dict]): The rows.
        keys (typing.Sequence[str]): The keys to group by.

    Returns:
        The rows by the tuple of their values of ``keys``.
    """
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out
