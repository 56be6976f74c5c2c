"""Exact-reflection step: each step reflects the Brownian motion with drift exactly (Skorokhod map).

With the coefficients frozen at the start of the step, ``Y_t = b t + sigma B_t`` on [0, h] and the
reflected end point is ``Z_{n+1} = max(Z_n + Y_h, Y_h - min_{t <= h} Y_t)``. Given ``Y_h = g``, the path
is a Brownian bridge (the drift does not change the bridge), whose minimum is
``(g - sqrt(g^2 - 2 sigma^2 h log U)) / 2`` with U uniform. Hence

    Z_{n+1} = max(Z_n + g, (g + sqrt(g^2 - 2 sigma^2 h log U)) / 2),

which is the exact transition of the reflected Brownian motion with drift: for constant coefficients
the scheme has no time-discretisation error at all (any h). With jumps of b, sigma the steps that
cross a jump level use the coefficients of their starting side (an Euler-type treatment of the
interface). Converges weakly to the Ito solution; observed weak order of the discounted cost with a
jump of sigma (experiments/sde_convergence.py): 0.8 +/- 0.2 (pss_T2T2, pss_T2T1; +5% error at dt = 0.2,
+0.5% at dt = 0.00625); single mode: no step error beyond the O(dt) of the cost quadrature near 0.
"""

from __future__ import annotations

from functools import lru_cache, partial

import jax.numpy as jnp

from jaxq.sde.coefficients import piecewise_coefficients
from jaxq.sde.driver import Scheme

WEAK_ORDER = 0.5  # theory with a jump of sigma; exact in law for constant coefficients
OBSERVED_WEAK_ORDER = 0.8  # experiments/sde_convergence.py (dual mode)


def _identity(params, z):
    return z


def reflected_end(z, g, var_h, uniform):
    """Exact reflected end point from z for a free increment g of a BM with variance ``var_h`` over the step.

    ``(g + sqrt(g^2 + e)) / 2`` is written ``e / (2 (sqrt(g^2 + e) - g))`` for g < 0: the same number without
    the cancellation that made it 0 (or a few ulps of |g|) once ``g^2`` dwarfs ``e`` (a drift step far longer
    than the diffusion's length scale ``sigma^2 / |b|``).

    Args:
        z (jax.Array): The state at the start of the step.
        g (jax.Array): The free increment over the step.
        var_h (jax.Array): Its variance ``sigma^2 h``.
        uniform (jax.Array): A uniform in [0, 1) (``U = 1 - uniform``).

    Returns:
        (jax.Array): The reflected end point.
    """
    e = -2.0 * var_h * jnp.log1p(-uniform)  # -2 sigma^2 h log U, U = 1 - uniform in (0, 1]
    root = jnp.sqrt(g * g + e)
    neg = g < 0
    top = jnp.where(neg, 0.5 * e / jnp.where(neg, root - g, 1.0), 0.5 * (g + root))  # root - g > 0 for g < 0
    return jnp.maximum(z + g, top)


def _step(coef, params, z, h, normal, uniform):
    b, s = coef(params, z)
    dm = s * jnp.sqrt(h) * normal[:, 0]  # the martingale increment sigma dB (mean zero given z)
    return reflected_end(z, b * h + dm, s * s * h, uniform[:, 0]), dm


@lru_cache(maxsize=None)
def make(coef) -> Scheme:
    """The exact-reflection scheme for coefficients ``coef(params, z) -> (b, sigma)``.

    Args:
        coef (Callable): The coefficients (a hashable function).

    Returns:
        The scheme.
    """
    return Scheme("exact", 1, 1, _identity, partial(_step, coef), None, WEAK_ORDER)


SCHEME = make(piecewise_coefficients)
