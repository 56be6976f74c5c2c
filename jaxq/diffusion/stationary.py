"""Exact stationary law of the reflected diffusion with piecewise-constant coefficients (speed measure).

The generator ``sigma^2/2 u'' + b u'`` with u, u' continuous at the jumps (the HJB convention of
``jaxq.diffusion.hjb``) is ``(d/dm)(d/ds)`` with scale density ``s'(x) = exp(-int_0^x 2 b / sigma^2)``
(continuous, because u' is) and speed density ``m(x) = 2 / (sigma(x)^2 s'(x))``, which jumps by the factor
``sigma_below^2 / sigma_above^2`` at a jump of sigma. With reflection at 0 and a negative drift on the top
region the stationary density is ``m / int m``:

    pi(x) proportional to sigma_k^-2 exp(A_k + theta_k (x - c_k)) on [c_k, c_{k+1}],
    theta_k = 2 b_k / sigma_k^2,  A_k = sum_{j<k} theta_j (c_{j+1} - c_j).

Levels ``c_1 < ... < c_m`` (``c_0 = 0``), drifts ``b`` and coefficients ``s`` as in ``jaxq.sde.coefficients``.
"""

from __future__ import annotations

import numpy as np

from jaxq.errors import InputError


def _pieces(levels, b, s):
    levels = np.atleast_1d(np.asarray(levels, float)).reshape(-1)
    b = np.atleast_1d(np.asarray(b, float)).reshape(-1)
    s = np.atleast_1d(np.asarray(s, float)).reshape(-1)
    if b.size != levels.size + 1 or s.size != b.size or np.any(s <= 0):
        raise InputError("coefficients", "need m levels, m + 1 drifts and m + 1 positive diffusion coefficients")
    if b[-1] >= 0:
        raise InputError("b", "no stationary law: the drift above the top level must be negative")
    lo = np.concatenate([[0.0], levels])
    theta = 2.0 * b / s**2
    widths = np.diff(lo)
    logA = np.concatenate([[0.0], np.cumsum(theta[:-1] * widths)])
    # log of the mass of each region: sigma_k^-2 e^{A_k} (e^{theta_k w_k} - 1) / theta_k
    w = np.concatenate([widths, [np.inf]])
    with np.errstate(over="ignore", invalid="ignore"):
        tw = theta * w
        frac = np.where(np.abs(theta) > 1e-300, np.expm1(np.minimum(tw, 700.0)) / np.where(theta == 0, 1, theta), w)
        frac[-1] = -1.0 / theta[-1]
    logmass = -2 * np.log(s) + logA + np.log(frac)
    shift = logmass.max()
    mass = np.exp(logmass - shift)
    total = mass.sum()
    return lo, theta, logA - shift - 2 * np.log(s), mass / total, total


def stationary_density(x, levels, b, s):
    """The stationary density pi(x) at points x >= 0 (0 for x < 0).

    Args:
        x (numpy.typing.ArrayLike): The points.
        levels (numpy.typing.ArrayLike): The levels ``c_1 < ... < c_m``.
        b (numpy.typing.ArrayLike): The m + 1 drifts.
        s (numpy.typing.ArrayLike): The m + 1 positive diffusion coefficients.

    Returns:
        (numpy.ndarray): pi(x).

    Raises:
        InputError: Naming ``coefficients`` when the sizes do not match or a coefficient is not positive, or ``b`` when
            the drift above the top level is not negative (no stationary law).
    """
    x = np.asarray(x, float)
    lo, theta, logc, _, total = _pieces(levels, b, s)
    k = np.clip(np.searchsorted(lo, x, side="left") - 1, 0, lo.size - 1)  # a level belongs below
    dens = np.exp(logc[k] + theta[k] * (x - lo[k])) / total
    return np.where(x < 0, 0.0, dens)


def stationary_cdf(x, levels, b, s):
    """The stationary distribution function ``P(Z <= x)``.

    Args:
        x (numpy.typing.ArrayLike): The points.
        levels (numpy.typing.ArrayLike): The levels ``c_1 < ... < c_m``.
        b (numpy.typing.ArrayLike): The m + 1 drifts.
        s (numpy.typing.ArrayLike): The m + 1 positive diffusion coefficients.

    Returns:
        (numpy.ndarray): ``P(Z <= x)``.

    Raises:
        InputError: Naming ``coefficients`` when the sizes do not match or a coefficient is not positive, or ``b`` when
            the drift above the top level is not negative (no stationary law).
    """
    x = np.asarray(x, float)
    lo, theta, logc, mass, total = _pieces(levels, b, s)
    k = np.clip(np.searchsorted(lo, x, side="left") - 1, 0, lo.size - 1)
    before = np.concatenate([[0.0], np.cumsum(mass)])[k]
    t = theta[k]
    y = np.maximum(x - lo[k], 0.0)
    part = np.where(np.abs(t) > 0, np.expm1(t * y) / np.where(t == 0, 1, t), y)
    out = before + np.exp(logc[k]) * part / total
    return np.where(x < 0, 0.0, np.minimum(out, 1.0))


def stationary_mean(levels, b, s, upper=None, points=200001):
    """``E_pi Z`` by the trapezoidal rule on the exact density (a check of the density, not a closed form).

    Args:
        levels (numpy.typing.ArrayLike): The levels ``c_1 < ... < c_m``.
        b (numpy.typing.ArrayLike): The m + 1 drifts.
        s (numpy.typing.ArrayLike): The m + 1 positive diffusion coefficients.
        upper (float | None): The upper end of the grid (default the top level plus 60 over ``|theta|`` of the top
            region).
        points (int): The grid points.

    Returns:
        (float): ``E_pi Z``.

    Raises:
        InputError: Naming ``coefficients`` when the sizes do not match or a coefficient is not positive, or ``b`` when
            the drift above the top level is not negative (no stationary law).
    """
    lo, theta, *_ = _pieces(levels, b, s)
    top = upper if upper is not None else lo[-1] + 60.0 / abs(theta[-1])
    x = np.linspace(0.0, top, points)
    return float(np.trapezoid(x * stationary_density(x, levels, b, s), x))


def ks_distance(samples, levels, b, s):
    """Kolmogorov-Smirnov distance ``sup_x |F_n(x) - F(x)|`` between samples and the stationary law.

    Args:
        samples (numpy.typing.ArrayLike): The samples.
        levels (numpy.typing.ArrayLike): The levels ``c_1 < ... < c_m``.
        b (numpy.typing.ArrayLike): The m + 1 drifts.
        s (numpy.typing.ArrayLike): The m + 1 positive diffusion coefficients.

    Returns:
        (float): The distance.

    Raises:
        InputError: Naming ``coefficients`` when the sizes do not match or a coefficient is not positive, or ``b`` when
            the drift above the top level is not negative (no stationary law).
    """
    z = np.sort(np.asarray(samples, float).reshape(-1))
    n = z.size
    f = stationary_cdf(z, levels, b, s)
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def ks_threshold(n: int, level: float = 1e-3) -> float:
    """Critical value of the KS distance for n independent samples (asymptotic Kolmogorov law).

    Args:
        n: The samples.
        level: The significance level.

    Returns:
        The critical value ``sqrt(-log(level / 2) / (2 n))``.
    """
    return float(np.sqrt(-0.5 * np.log(level / 2.0) / n))
