"""A differentiable WCP cost for autodiff tuning of the switching level (pathwise gradients).

The mode is blended by ``w = sigmoid((Z - z) / tau)``: ``b = (1 - w) b_L + w b_H`` and
``sigma^2 = (1 - w) sigma_L^2 + w sigma_H^2``. Since ``xi -> (b(xi), sigma(xi)^2)`` is affine (2.13), this
is the control ``Xi = (1 - w) xi^L + w xi^H``, an admissible mixture of the two modes; as tau -> 0 it
tends to the switching control (2.25). The coefficients are smooth, so the exact-reflection scheme
(``jaxq.sde.exact_step``) applies and its end point is a differentiable function of z; the mean over
paths with common random numbers (the same seed) is a smooth function of z whose gradient is the
pathwise (IPA) derivative. Blocks are rematerialised, so memory does not grow with the horizon.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

from jaxq.errors import InputError
from jaxq.mc import rng
from jaxq.sde import exact_step
from jaxq.sde.driver import run_paths, step_counts


def blended_coefficients(params, z):
    """``(b, sigma)`` at state z of the sigmoid-blended control.

    Args:
        params (tuple): ``(z_switch, tau, b_L, s_L, b_H, s_H)``.
        z (jax.Array): The state.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(b, sigma)``.
    """
    zs, tau, bL, sL, bH, sH = params
    w = jax.nn.sigmoid((z - zs) / tau)
    return bL + w * (bH - bL), jnp.sqrt(sL * sL + w * (sH * sH - sL * sL))


SCHEME = exact_step.make(blended_coefficients)


@partial(jax.jit, static_argnames=("paths", "n_blocks", "block"))
def _smoothed(z, tau, coeffs, gamma, keys, paths, dt, n_blocks, block, z0):
    params = (z, tau) + tuple(coeffs)
    cost, _ = run_paths(SCHEME, params, z0, gamma, dt, keys, n_blocks, block, jnp.zeros((0,), jnp.int64), remat=True)
    mean = cost.mean()
    stderr = jax.lax.stop_gradient(cost.std(ddof=1) / jnp.sqrt(paths))
    return mean, stderr


def smoothed_cost(z, tau, coeffs, gamma, seed: int, paths: int = 1000, dt: float = 1e-2, horizon: float = 20.0, z0=0.0):
    """Mean discounted cost of the sigmoid-blended control, differentiable in z (and tau, coeffs).

    Args:
        z (jax.Array | float): The switching level (traced, differentiable).
        tau (jax.Array | float): The blending width, > 0.
        coeffs (Sequence): ``(b_L, s_L, b_H, s_H)``.
        gamma (jax.Array | float): The discount rate.
        seed: Path r uses ``fold_in(PRNGKey(seed), r)`` (:func:`jaxq.mc.rng.keys`; the same seed gives common random
            numbers across calls).
        paths: The number of paths (static).
        dt: The step (static).
        horizon: The horizon T (static).
        z0 (float): The start.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(mean, stderr)``: the estimate of ``E int_0^T exp(-gamma t) Z dt`` and its
            standard error (the standard error carries no gradient).

    Raises:
        InputError: Naming ``paths`` (fewer than 2), ``tau`` (not positive) or ``dt`` (not ``0 < dt <= horizon``).
    """
    if not paths >= 2:
        raise InputError("paths", "need at least 2 paths")
    if isinstance(tau, (int, float)) and not tau > 0:
        raise InputError("tau", "must be positive")
    if not (math.isfinite(dt) and 0 < dt <= horizon):
        raise InputError("dt", "need 0 < dt <= horizon")
    n_blocks, block = step_counts(dt, horizon, 64)
    coeffs = tuple(jnp.asarray(c, jnp.float64) for c in coeffs)
    return _smoothed(jnp.asarray(z, jnp.float64), jnp.asarray(tau, jnp.float64), coeffs, jnp.asarray(gamma, jnp.float64),
                     rng.keys(seed, 0, paths), paths, jnp.asarray(dt, jnp.float64), n_blocks, block, jnp.asarray(z0, jnp.float64))
