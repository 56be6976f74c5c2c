"""Tuning the switching level z on the exact WCP cost J(0; z).

``J(0; z)`` is the closed-form cost of switching at z (:func:`jaxq.diffusion.hjb.switching_cost`), a
smooth function of z. L-BFGS (optax, zoom line search) on ``z = softplus(theta)`` (so z stays
positive) converges to the smooth-fit root z*, a check that the exact cost and the smooth-fit
condition agree.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxq.diffusion import hjb


class TuneResult(NamedTuple):
    """z_tuned, its cost J(0; z_tuned) in workload units, the iterations used and the trajectory."""

    z: float
    cost: float
    iterations: int
    trajectory: list[tuple[float, float]]  # (z, J(0; z)) after each iteration


def _softplus_inv(z):
    return z + jnp.log(-jnp.expm1(-z))


def _loss(theta, coef):
    return hjb.switching_cost(0.0, jax.nn.softplus(theta), *coef)


_OPT = optax.lbfgs()


@jax.jit
def _step(theta, state, coef):
    """One L-BFGS iteration (compiled once for every system: the coefficients are traced)."""
    loss = lambda th: _loss(th, coef)  # noqa: E731
    value, grad = optax.value_and_grad_from_state(loss)(theta, state=state)
    updates, state = _OPT.update(grad, state, theta, value=value, grad=grad, value_fn=loss)
    return optax.apply_updates(theta, updates), state, value, grad


def tune_exact(bL, sL, bH, sH, gamma, z_init: float | None = None, max_iter: int = 200, tol: float = 1e-12) -> TuneResult:
    """Minimise ``J(0; z)`` over z > 0 with optax L-BFGS.

    Args:
      bL, sL, bH, sH, gamma: coefficients of the lower and higher mode, discount rate.
      z_init: starting level (default: the shortest decay length of the exponentials, where the
        cost still varies; far out J(0; z) is exponentially flat).
      max_iter: iteration cap.
      tol: stop when the gradient in theta is below this.
    Returns:
      A :class:`TuneResult`.
    """
    coef = tuple(jnp.float64(c) for c in (bL, sL, bH, sH, gamma))
    z0 = float(hjb.shortest_length(*coef)) if z_init is None else z_init

    coef = jnp.stack(coef)
    theta = _softplus_inv(jnp.float64(z0))
    state = _OPT.init(theta)
    traj = []
    it = 0
    for it in range(1, max_iter + 1):  # a handful of optimiser iterations, not a loop over events
        theta, state, value, grad = _step(theta, state, coef)
        z = float(jax.nn.softplus(theta))
        traj.append((z, float(_loss(theta, coef))))
        if abs(float(grad)) < tol:
            break
    return TuneResult(z=traj[-1][0], cost=traj[-1][1], iterations=it, trajectory=traj)
