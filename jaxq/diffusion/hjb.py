"""The HJB equation (2.17)-(2.18) of the workload control problem (WCP), solved exactly.

With piecewise-constant coefficients the HJB is a linear ODE on each side of the switching point:
``gamma u = b u' + sigma^2 u'' / 2 + z``. Its solutions are ``z/gamma + b/gamma^2`` plus exponentials
``exp(r z)`` with ``sigma^2 r^2 / 2 + b r - gamma = 0``. The cost of the policy that uses the lower mode
(b_L, s_L) on [0, z] and the higher mode (b_H, s_H) above z is the solution with ``u'(0) = 0``,
linear growth (no growing exponential above z), and u, u' continuous at z. The optimal switching point
z* is where u'' is continuous too (smooth fit); it minimises the cost from every starting point.

Every exponential is written as ``exp(r (z - z_ref))`` with a non-positive exponent, so nothing overflows
for large z or small gamma. All functions are pure JAX (float64), differentiable in z and in the
coefficients, and can be ``vmap``-ed. Appendix A of seed 000, as transcribed, is not used (SPEC.md).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def char_roots(b, s, gamma):
    """Roots ``r_plus > 0 > r_minus`` of ``s^2 r^2 / 2 + b r - gamma = 0``, without cancellation."""
    d = jnp.sqrt(b * b + 2.0 * gamma * s * s)
    s2 = s * s
    pos = b >= 0
    r_plus = jnp.where(pos, 2.0 * gamma / (b + d), (d - b) / s2)
    r_minus = jnp.where(pos, -(b + d) / s2, -2.0 * gamma / (d - b))
    return r_plus, r_minus


def rbm_value(z0, b, s, gamma):
    """Discounted cost ``E int exp(-gamma t) Z_t dt`` of a reflected BM started at z0 (single mode).

    ``u(z) = z/gamma + b/gamma^2 - exp(r_minus z) / (gamma r_minus)``; at z = 0 this is
    ``b/gamma^2 + s^2 / (gamma (b + sqrt(b^2 + 2 gamma s^2)))`` (SPEC.md).
    """
    _, rm = char_roots(b, s, gamma)
    return z0 / gamma + b / gamma**2 - jnp.exp(rm * z0) / (gamma * rm)


def _coefficients(z, bL, sL, bH, sH, gamma):
    """Constants (A, B, C) of the switched solution (see ``switching_cost``)."""
    p, q = char_roots(bL, sL, gamma)  # lower side: exp(p (x - z)) and exp(q x)
    _, r = char_roots(bH, sH, gamma)  # upper side: exp(r (x - z))
    eqz = jnp.exp(q * z)
    epz = jnp.exp(-p * z)
    one = jnp.ones_like(z)
    zero = jnp.zeros_like(z)
    # u'(0) = 0;  u(z-) = u(z+);  u'(z-) = u'(z+)
    m = jnp.stack(
        [
            jnp.stack([p * epz, q * one, zero], -1),
            jnp.stack([one, eqz, -one], -1),
            jnp.stack([p * one, q * eqz, -r * one], -1),
        ],
        -2,
    )
    rhs = jnp.stack([-one / gamma, (bH - bL) / gamma**2 * one, zero], -1)
    abc = jnp.linalg.solve(m, rhs[..., None])[..., 0]
    return abc[..., 0], abc[..., 1], abc[..., 2], p, q, r


def switching_cost(z0, z, bL, sL, bH, sH, gamma):
    """Cost J(z0; z) of using the lower mode below z and the higher mode above it.

    Args:
      z0: starting point (>= 0).
      z: switching level (>= 0); z = 0 means the higher mode throughout.
      bL, sL: drift and diffusion coefficient of the lower-workload mode.
      bH, sH: the same for the higher-workload mode.
      gamma: discount rate.
    Returns:
      ``E int_0^inf exp(-gamma t) Z_t dt`` for the switched reflected diffusion (2.24) started at z0.
    """
    A, B, C, p, q, r = _coefficients(z, bL, sL, bH, sH, gamma)
    lower = z0 / gamma + bL / gamma**2 + A * jnp.exp(p * jnp.minimum(z0 - z, 0.0)) + B * jnp.exp(q * z0)
    upper = z0 / gamma + bH / gamma**2 + C * jnp.exp(r * jnp.maximum(z0 - z, 0.0))
    return jnp.where(z0 < z, lower, upper)


def smooth_fit_gap(z, bL, sL, bH, sH, gamma):
    """``u''(z+) - u''(z-)`` for the policy switching at z; zero at the optimal switching point z*."""
    A, B, C, p, q, r = _coefficients(z, bL, sL, bH, sH, gamma)
    return C * r * r - (A * p * p + B * q * q * jnp.exp(q * z))


def _decay_lengths(bL, sL, bH, sH, gamma):
    p, q = char_roots(bL, sL, gamma)
    _, r = char_roots(bH, sH, gamma)
    return 1.0 / p, -1.0 / q, -1.0 / r


def length_scale(bL, sL, bH, sH, gamma):
    """A natural length of the problem: the largest decay length of the exponentials."""
    a, b, c = _decay_lengths(bL, sL, bH, sH, gamma)
    return jnp.maximum(jnp.maximum(a, b), c)


def shortest_length(bL, sL, bH, sH, gamma):
    """The shortest decay length of the exponentials: where the switched cost still varies with z."""
    a, b, c = _decay_lengths(bL, sL, bH, sH, gamma)
    return jnp.minimum(jnp.minimum(a, b), c)


def _bracket_and_bisect(bL, sL, bH, sH, gamma, grid_points=241, iters=200):
    ell = length_scale(bL, sL, bH, sH, gamma)
    zs = ell * jnp.logspace(-8.0, 4.0, grid_points)
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

    Found by a log-spaced bracket over 12 decades of the problem's length scale and bisection to
    machine precision. NaN when no sign change exists (then the single-mode case (2.19) holds).
    Differentiable: the derivative comes from the implicit function theorem on ``smooth_fit_gap``.
    """
    return _bracket_and_bisect(bL, sL, bH, sH, gamma)


@switching_point.defjvp
def _switching_point_jvp(primals, tangents):
    z = switching_point(*primals)
    gz, gtheta = jax.jvp(lambda zz, *th: smooth_fit_gap(zz, *th), (z, *primals), (jnp.zeros_like(z), *tangents))
    dg_dz = jax.grad(lambda zz: smooth_fit_gap(zz, *primals))(z)
    return z, -gtheta / dg_dz


def wcp_value(z0, bL, sL, bH, sH, gamma):
    """V_WCP(z0) in the dual-mode case: the switched cost at the optimal switching point."""
    return switching_cost(z0, switching_point(bL, sL, bH, sH, gamma), bL, sL, bH, sH, gamma)
