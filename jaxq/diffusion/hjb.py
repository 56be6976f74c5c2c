"""The HJB equation (2.17)-(2.18) of the workload control problem (WCP), solved exactly.

With piecewise-constant coefficients the HJB is a linear ODE on each side of the switching point:
``gamma u = b u' + sigma^2 u'' / 2 + z``. Its solutions are ``z/gamma + b/gamma^2`` plus exponentials
``exp(r z)`` with ``sigma^2 r^2 / 2 + b r - gamma = 0``. The cost of the policy that uses the lower mode
(b_L, s_L) on [0, z] and the higher mode (b_H, s_H) above z is the solution with ``u'(0) = 0``,
linear growth (no growing exponential above z), and u, u' continuous at z. The optimal switching point
z* is where u'' is continuous too (smooth fit); it minimises the cost from every starting point.

Precision at any scale. The constants of that solution are of order ``b / gamma^2`` while the value is
of order ``1 / gamma``: written that way, u(0) loses ``eps / gamma`` of relative precision (2e-4 at
gamma = 1e-12). We therefore solve for the bounded marginal cost ``W = gamma u'`` instead, which obeys
``gamma W = b W' + sigma^2 W''/2 + gamma`` with ``W(0) = 0``, ``W -> 1`` at infinity, W continuous at z
and ``b W + sigma^2 W'/2`` continuous at z (that is u continuous). Written as
``W = B(x) + a exp(p (x - z)) + c exp(q x)`` below z, with ``B = -expm1(q x)`` if b_L < 0 and
``B = -expm1(p (x - z))`` if b_L >= 0 (the constant 1 paired with the exponential of the small root),
and ``-expm1(r (x - z)) + f exp(r (x - z))`` above, the right-hand side of the 3x3 system for (a, c, f)
is as small as the solution, and
``u = x / gamma + (b W + sigma^2 W' / 2) / gamma^2`` has no cancellation of large terms:
the relative error stays at the level of machine precision for any gamma in the supported range
(checked against a 50-digit computation in the tests).

Every exponential has a non-positive exponent, so nothing overflows for large z or small gamma. All
functions are pure JAX (float64), differentiable in z and in the coefficients, and can be ``vmap``-ed.
Appendix A of the switched-policies paper, as transcribed, is not used (SPEC.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def char_roots(b, s, gamma):
    """Roots ``r_plus > 0 > r_minus`` of ``s^2 r^2 / 2 + b r - gamma = 0``, without cancellation.

    Args:
        b (jax.typing.ArrayLike): Drift.
        s (jax.typing.ArrayLike): Diffusion coefficient.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (tuple): ``(r_plus, r_minus)``.
    """
    d = jnp.sqrt(b * b + 2.0 * gamma * s * s)
    s2 = s * s
    pos = b >= 0
    r_plus = jnp.where(pos, 2.0 * gamma / (b + d), (d - b) / s2)
    r_minus = jnp.where(pos, -(b + d) / s2, -2.0 * gamma / (d - b))
    return r_plus, r_minus


def rbm_value(z0, b, s, gamma):
    """Discounted cost ``E int exp(-gamma t) Z_t dt`` of a reflected BM started at z0 (single mode).

    ``u(z) = z/gamma + b/gamma^2 - exp(r_minus z) / (gamma r_minus)``; at z = 0 this is
    ``b/gamma^2 + s^2 / (gamma (b + sqrt(b^2 + 2 gamma s^2)))`` (SPEC.md). Evaluated as
    ``z/gamma + (b W + s^2 W'/2) / gamma^2`` with ``W = -expm1(r_minus z)``: at z = 0 it is
    ``-s^2 r_minus / (2 gamma^2)``, free of the cancellation of ``b/gamma^2`` for b < 0.

    Args:
        z0 (jax.typing.ArrayLike): Starting point (>= 0).
        b (jax.typing.ArrayLike): Drift.
        s (jax.typing.ArrayLike): Diffusion coefficient.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): The discounted cost ``u(z0)``.
    """
    _, rm = char_roots(b, s, gamma)
    e = jnp.exp(rm * z0)
    w = -jnp.expm1(rm * z0)
    dw = -rm * e
    return z0 / gamma + (b * w + 0.5 * s * s * dw) / gamma**2


def _lower_exponent(x, z, p, q, bL):
    """The exponent ``e`` of the bounded part ``B = -expm1(e)`` of W on the lower side: ``q x`` when b_L < 0 (q is
    then the small root) and ``p (x - z)`` when b_L >= 0 (p small)."""
    return jnp.where(bL < 0, q * x, p * jnp.minimum(x - z, 0.0))


def _lower_slope(eq, ep, p, q, bL):
    """``B'`` from the lower side's exponentials ``eq = exp(q x)`` and ``ep = exp(p (x - z))``."""
    return jnp.where(bL < 0, -q * eq, -p * ep)


def _lower_base(x, z, p, q, bL):
    """The bounded part ``B`` of W on the lower side and ``B'``: ``-expm1(q x)`` when b_L < 0 (q is then the
    small root) and ``-expm1(p (x - z))`` when b_L >= 0 (p small). Both are ``1 +`` a homogeneous solution;
    the one built on the small root is itself small where W is, so (a, c) stay as small as W."""
    base = -jnp.expm1(_lower_exponent(x, z, p, q, bL))
    return base, _lower_slope(jnp.exp(q * x), jnp.exp(p * jnp.minimum(x - z, 0.0)), p, q, bL)


def _coefficients(z, bL, sL, bH, sH, gamma):
    """Constants (a, c, f) of the marginal cost ``W = gamma u'`` (module docstring) and the roots (p, q, r).

    Lower side ``W = B(x) + a exp(p (x - z)) + c exp(q x)`` (``B`` from :func:`_lower_base`), upper side
    ``W = -expm1(r (x - z)) + f exp(r (x - z))``.
    """
    p, q = char_roots(bL, sL, gamma)  # lower side: exp(p (x - z)) and exp(q x)
    _, r = char_roots(bH, sH, gamma)  # upper side: exp(r (x - z))
    P = jnp.exp(-p * z)
    E = jnp.exp(q * z)
    one = jnp.ones_like(z)
    zero = jnp.zeros_like(z)
    sL2, sH2 = 0.5 * sL * sL, 0.5 * sH * sH
    b0, _ = _lower_base(zero, z, p, q, bL)
    bz, dbz = _lower_base(z, z, p, q, bL)
    # W(0) = 0;  W(z-) = W(z+);  b_L W(z) + s_L^2 W'(z-)/2 = b_H W(z) + s_H^2 W'(z+)/2
    m = jnp.stack(
        [
            jnp.stack([P, one, zero], -1),
            jnp.stack([one, E, -one], -1),
            jnp.stack([sL2 * p * one, sL2 * q * E, (bL - bH - sH2 * r) * one], -1),
        ],
        -2,
    )
    rhs = jnp.stack([-b0 * one, -bz * one, (-sL2 * dbz - sH2 * r) * one], -1)
    acf = jnp.linalg.solve(m, rhs[..., None])[..., 0]
    return acf[..., 0], acf[..., 1], acf[..., 2], p, q, r


def _marginal(z0, z, bL, a, c, f, p, q, r):
    """``(W, W')`` at z0 on the side of z it lies on (``W = gamma u'``).

    Each point needs one side's exponentials, so one ``exp`` and one ``expm1`` serve both sides, their side's
    exponent selected first (the same numbers as both sides' computed and one selected, at half the cost).
    """
    lower = z0 < z
    above = r * jnp.maximum(z0 - z, 0.0)
    e = jnp.exp(jnp.where(lower, p * jnp.minimum(z0 - z, 0.0), above))
    eq = jnp.exp(q * z0)
    em = jnp.expm1(jnp.where(lower, _lower_exponent(z0, z, p, q, bL), above))
    # below z: e = exp(p (z0 - z)), B = -em (_lower_base); above: e = exp(r (z0 - z)), -em = -expm1(r (z0 - z))
    w_lo = -em + a * e + c * eq
    dw_lo = _lower_slope(eq, e, p, q, bL) + a * p * e + c * q * eq
    w_hi = -em + f * e
    dw_hi = r * (f - 1.0) * e
    return jnp.where(lower, w_lo, w_hi), jnp.where(lower, dw_lo, dw_hi), lower


def switching_cost(z0, z, bL, sL, bH, sH, gamma):
    """Cost J(z0; z) of using the lower mode below z and the higher mode above it.

    Args:
        z0 (jax.typing.ArrayLike): Starting point (>= 0).
        z (jax.typing.ArrayLike): Switching level (>= 0); z = 0 means the higher mode throughout.
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): ``E int_0^inf exp(-gamma t) Z_t dt`` for the switched reflected diffusion (2.24) started at z0.
    """
    a, c, f, p, q, r = _coefficients(z, bL, sL, bH, sH, gamma)
    w, dw, lower = _marginal(z0, z, bL, a, c, f, p, q, r)
    b = jnp.where(lower, bL, bH)
    s2 = jnp.where(lower, sL * sL, sH * sH)
    return z0 / gamma + (b * w + 0.5 * s2 * dw) / gamma**2


def smooth_fit_gap(z, bL, sL, bH, sH, gamma):
    """``u''(z+) - u''(z-)`` for the policy switching at z; zero at the optimal switching point z*.

    Args:
        z (jax.typing.ArrayLike): Switching level.
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): The gap ``u''(z+) - u''(z-)``.
    """
    a, c, f, p, q, r = _coefficients(z, bL, sL, bH, sH, gamma)
    E = jnp.exp(q * z)
    _, dbz = _lower_base(z, z, p, q, bL)
    dw_lo = dbz + a * p + c * q * E
    dw_hi = r * (f - 1.0)
    return (dw_hi - dw_lo) / gamma


def _decay_lengths(bL, sL, bH, sH, gamma):
    p, q = char_roots(bL, sL, gamma)
    _, r = char_roots(bH, sH, gamma)
    return 1.0 / p, -1.0 / q, -1.0 / r


def length_scale(bL, sL, bH, sH, gamma):
    """A natural length of the problem: the largest decay length of the exponentials.

    Args:
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): The largest decay length.
    """
    a, b, c = _decay_lengths(bL, sL, bH, sH, gamma)
    return jnp.maximum(jnp.maximum(a, b), c)


def shortest_length(bL, sL, bH, sH, gamma):
    """The shortest decay length of the exponentials: where the switched cost still varies with z.

    Args:
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): The shortest decay length.
    """
    a, b, c = _decay_lengths(bL, sL, bH, sH, gamma)
    return jnp.minimum(jnp.minimum(a, b), c)


def _bracket_and_bisect(bL, sL, bH, sH, gamma, grid_points=1201, iters=200):
    # A log grid from 1e-8 of the shortest decay length to 1e4 of the longest: wide enough for any
    # separation of scales (small gamma stretches the longest length like 1/gamma while z* stays put).
    lo_z = 1e-8 * shortest_length(bL, sL, bH, sH, gamma)
    hi_z = 1e4 * length_scale(bL, sL, bH, sH, gamma)
    zs = jnp.exp(jnp.linspace(jnp.log(lo_z), jnp.log(hi_z), grid_points))
    g = jax.vmap(lambda z: smooth_fit_gap(z, bL, sL, bH, sH, gamma))(zs)
    change = jnp.sign(g[:-1]) * jnp.sign(g[1:]) <= 0
    j = jnp.argmax(change)
    found = jnp.any(change)
    lo, hi = zs[j], zs[j + 1]
    glo = g[j]

    def body(_, c):
        lo, hi, glo = c
        mid = 0.5 * (lo + hi)
        gm = smooth_fit_gap(mid, bL, sL, bH, sH, gamma)
        left = jnp.sign(gm) == jnp.sign(glo)
        return jnp.where(left, mid, lo), jnp.where(left, hi, mid), jnp.where(left, gm, glo)

    lo, hi, _ = jax.lax.fori_loop(0, iters, body, (lo, hi, glo))
    return jnp.where(found, 0.5 * (lo + hi), jnp.nan)


@jax.custom_jvp
def switching_point(bL, sL, bH, sH, gamma):
    """The optimal switching point z* (smooth fit, continuous u'') of the dual-mode case (2.20).

    Found by a log-spaced bracket from 1e-8 of the shortest decay length to 1e4 of the longest and
    bisection to machine precision. NaN when no sign change exists (then the single-mode case (2.19) holds).
    Differentiable: the derivative comes from the implicit function theorem on ``smooth_fit_gap``.

    Args:
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): z*, or NaN when no sign change exists.
    """
    return _bracket_and_bisect(bL, sL, bH, sH, gamma)


@switching_point.defjvp
def _switching_point_jvp(primals, tangents):
    z = switching_point(*primals)
    gz, gtheta = jax.jvp(lambda zz, *th: smooth_fit_gap(zz, *th), (z, *primals), (jnp.zeros_like(z), *tangents))
    dg_dz = jax.grad(lambda zz: smooth_fit_gap(zz, *primals))(z)
    return z, -gtheta / dg_dz


def wcp_value(z0, bL, sL, bH, sH, gamma):
    """V_WCP(z0) in the dual-mode case: the switched cost at the optimal switching point.

    Args:
        z0 (jax.typing.ArrayLike): Starting point (>= 0).
        bL (jax.typing.ArrayLike): Drift of the lower-workload mode.
        sL (jax.typing.ArrayLike): Diffusion coefficient of the lower-workload mode.
        bH (jax.typing.ArrayLike): Drift of the higher-workload mode.
        sH (jax.typing.ArrayLike): Diffusion coefficient of the higher-workload mode.
        gamma (jax.typing.ArrayLike): Discount rate.

    Returns:
        (jax.Array): V_WCP(z0).
    """
    return switching_cost(z0, switching_point(bL, sL, bH, sH, gamma), bL, sL, bH, sH, gamma)
