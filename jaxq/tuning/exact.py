"""Tuning the switching level z on the exact WCP cost J(0; z).

``J(0; z)`` is the closed-form cost of switching at z (:func:`jaxq.diffusion.hjb.switching_cost`), a
smooth function of z. L-BFGS (optax, zoom line search) on ``z = l softplus(theta)`` (so z stays
positive) converges to the smooth-fit root z*, a check that the exact cost and the smooth-fit
condition agree.

The optimiser works free of the problem's units: on ``z = l softplus(theta)`` with ``l`` the shortest decay
length and on ``J(0; z) / J(0; z_init)``, so a system whose workload or time is rescaled (J of order 1e-45 at
gamma = 1e30, z of order 1e-20 for tiny drifts) takes the same iterations as the unscaled one. Convergence
is tested on z itself: at the last iterate the Newton step ``|J'(z) / J''(z)|`` must be positive-curvature
and below ``rtol * z``.

Two kinds of refusal, :class:`jaxq.errors.InputError`, never a silent answer:

* the system (:func:`check_resolvable`): where the smooth-fit level z* lies so far out (in decay lengths)
  that J(0; z) is flat to float64 around it (its dimensionless curvature ``J'' z*^2 / J`` below
  ``eps / rtol``, e.g. gamma = 1e30 against drifts of order 1: the switching level changes the cost only in
  its 29th digit), no method on the float64 cost can locate the minimum to ``rtol``; refused naming
  ``cost.gamma`` (z* itself comes from smooth fit, ``jaxq analyze``);
* the start: one where J(0; z) is flat to float64 (far below the shortest or far beyond the longest decay
  length of the problem) gives no gradient to follow; such a start, a run that does not converge within
  ``max_iter`` iterations or ``time_limit`` seconds, and a run that stalls, name ``--z-init`` or
  ``--max-iter``.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxq.diffusion import hjb
from jaxq.errors import InputError

MAX_ITER_LIMIT = 100_000
TIME_LIMIT = 60.0  # seconds
RTOL = 1e-8  # Newton step relative to z at convergence
STALL = 10  # iterations without any change of z before giving up


class TuneResult(NamedTuple):
    """z_tuned, its cost J(0; z_tuned) in workload units, the iterations used and the trajectory.

    Attributes:
        z: z_tuned.
        cost: J(0; z_tuned) in workload units.
        iterations: The iterations used.
        trajectory: (z, J(0; z)) after each iteration.
        newton_step: |J'/J''| at z_tuned (convergence: <= RTOL z).
    """

    z: float
    cost: float
    iterations: int
    trajectory: list[tuple[float, float]]  # (z, J(0; z)) after each iteration
    newton_step: float = 0.0  # |J'/J''| at z_tuned (convergence: <= RTOL z)


def _softplus_inv(z):
    return z + jnp.log(-jnp.expm1(-z))


def _level(theta, coef):
    """The switching level ``z = l softplus(theta)`` (``coef = (bL, sL, bH, sH, gamma, l, J_ref)``)."""
    return coef[5] * jax.nn.softplus(theta)


def _loss(theta, coef):
    """``J(0; z) / J_ref``: of order 1 whatever the units of the workload and of time."""
    return hjb.switching_cost(0.0, _level(theta, coef), *coef[:5]) / coef[6]


_OPT = optax.lbfgs()


@jax.jit
def _step(theta, state, coef):
    """One L-BFGS iteration (compiled once for every system: the coefficients are traced)."""
    loss = lambda th: _loss(th, coef)  # noqa: E731
    value, grad = optax.value_and_grad_from_state(loss)(theta, state=state)
    updates, state = _OPT.update(grad, state, theta, value=value, grad=grad, value_fn=loss)
    return optax.apply_updates(theta, updates), state, value, grad


@jax.jit
def _newton(z, coef):
    """``(J(0; z), J'(z), J''(z))`` by automatic differentiation (``coef = (bL, sL, bH, sH, gamma)``)."""
    f = lambda zz: hjb.switching_cost(0.0, zz, *coef)  # noqa: E731
    return f(z), jax.grad(f)(z), jax.grad(jax.grad(f))(z)


def check_resolvable(bL, sL, bH, sH, gamma, rtol: float = RTOL) -> None:
    """Refuse (naming ``cost.gamma``) a system whose cost J(0; z) is flat to float64 around its smooth-fit level z*.

    Near z*, J(0; z*(1 + d)) - J(0; z*) = kappa J d^2 / 2 with ``kappa = J''(z*) z*^2 / J(0; z*)``. The gradient
    J'(z) is known to about ``eps J / z``; the Newton test ``|J'/J''| <= rtol z`` then needs ``kappa >= eps / rtol``.
    Far out in decay lengths (a discount rate huge against the modes' drifts) kappa is exponentially small and
    no optimiser on the float64 cost can find the minimum; that is the system, not the start.

    Args:
        bL (float): Drift of the lower mode.
        sL (float): Diffusion coefficient of the lower mode.
        bH (float): Drift of the higher mode.
        sH (float): Diffusion coefficient of the higher mode.
        gamma (float): Discount rate.
        rtol: The relative tolerance of the Newton test.

    Raises:
        InputError: Naming ``cost.gamma`` when ``|kappa| < eps / rtol``.
    """
    coef = tuple(jnp.float64(c) for c in (bL, sL, bH, sH, gamma))
    z = float(hjb.switching_point(*coef))
    if not (math.isfinite(z) and z > 0):
        return
    j, _, h = (float(v) for v in _newton(jnp.float64(z), coef))
    kappa = h * z * z / j
    floor = float(np.finfo(np.float64).eps) / rtol
    if not abs(kappa) >= floor:
        lengths = z / float(hjb.shortest_length(*coef))
        raise InputError(
            "cost.gamma",
            f"J(0; z) is flat to float64 around the smooth-fit level z* = {z:.4g} ({lengths:.3g} decay lengths "
            f"out): its curvature |J'' z*^2 / J| = {abs(kappa):.2g} is below eps / rtol = {floor:.2g}, so no "
            f"gradient method on the exact cost can locate z* (at gamma = {float(gamma):g} against drifts "
            f"{float(bL):g}, {float(bH):g} the switching level changes the cost only beyond float64 precision); "
            "use z* from smooth fit (jaxq analyze)")


def start_range(bL, sL, bH, sH, gamma) -> tuple[float, float]:
    """Starting levels from which the gradient is informative: 1e-8 of the shortest decay length to
    1e4 of the longest (the bracket of :func:`jaxq.diffusion.hjb.switching_point`).

    Args:
        bL (float): Drift of the lower mode.
        sL (float): Diffusion coefficient of the lower mode.
        bH (float): Drift of the higher mode.
        sH (float): Diffusion coefficient of the higher mode.
        gamma (float): Discount rate.

    Returns:
        ``(lo, hi)``.
    """
    return (1e-8 * float(hjb.shortest_length(bL, sL, bH, sH, gamma)),
            1e4 * float(hjb.length_scale(bL, sL, bH, sH, gamma)))


def tune_exact(bL, sL, bH, sH, gamma, z_init: float | None = None, max_iter: int = 200, tol: float = 1e-12,
               rtol: float = RTOL, time_limit: float = TIME_LIMIT) -> TuneResult:
    """Minimise ``J(0; z)`` over z > 0 with optax L-BFGS.

    Args:
        bL (float): Drift of the lower mode.
        sL (float): Diffusion coefficient of the lower mode.
        bH (float): Drift of the higher mode.
        sH (float): Diffusion coefficient of the higher mode.
        gamma (float): Discount rate.
        z_init: Starting level (default: the shortest decay length of the exponentials, where the
            cost still varies; far out J(0; z) is exponentially flat).
        max_iter: Iteration cap (1 .. 100000).
        tol: Also stop when the gradient in theta is below this (then the Newton test decides).
        rtol: Convergence: Newton step ``|J'/J''| <= rtol z`` with ``J'' > 0``.
        time_limit: Seconds.

    Returns:
        A converged :class:`TuneResult`.

    Raises:
        InputError: A bad or uninformative start, or no convergence within the caps (naming ``--max-iter`` or
            ``--z-init``); a system whose cost is flat around z* (naming ``cost.gamma``, :func:`check_resolvable`).
    """
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or not 1 <= max_iter <= MAX_ITER_LIMIT:
        raise InputError("--max-iter", f"must be an integer in [1, {MAX_ITER_LIMIT}], got {max_iter!r}")
    coef = tuple(jnp.float64(c) for c in (bL, sL, bH, sH, gamma))
    lo, hi = start_range(*coef)
    ell = float(hjb.shortest_length(*coef))
    if z_init is None:
        z0 = ell
    else:
        if isinstance(z_init, bool) or not isinstance(z_init, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(z_init) and z_init > 0):
            raise InputError("--z-init", f"must be a positive finite number, got {z_init!r}")
        z0 = float(z_init)
        if not lo <= z0 <= hi:
            raise InputError("--z-init", f"{z0:g} lies outside [{lo:.3g}, {hi:.3g}]: J(0; z) is flat there to "
                                         "float64, so gradient descent cannot move (start near the problem's "
                                         "decay lengths)")
    check_resolvable(*coef, rtol=rtol)

    scaled = jnp.stack([*coef, jnp.float64(ell), hjb.switching_cost(0.0, jnp.float64(z0), *coef)])
    coef = jnp.stack(coef)
    theta = _softplus_inv(jnp.float64(z0 / ell))
    state = _OPT.init(theta)
    traj = []
    it, step_size, last_z, same = 0, math.inf, None, 0
    deadline = time.monotonic() + time_limit
    converged = False
    for it in range(1, max_iter + 1):  # a handful of optimiser iterations, not a loop over events
        theta_in = theta
        theta, state, value, grad = _step(theta, state, scaled)  # grad: the gradient at theta_in
        z = float(_level(theta, scaled))
        j, g, h = (float(v) for v in _newton(jnp.float64(z), coef))
        # J(0; z) is concave beyond its inflection point (J' > 0, J'' < 0): a curvature pair with s y <= 0
        # (s = the step in theta, y = the change of the gradient over it: J'(z) dz/dtheta at the new theta)
        # makes L-BFGS's scaled direction an ascent direction and it creeps uphill; restart its memory.
        grad_new = g * ell * float(jax.nn.sigmoid(theta)) / float(scaled[6])
        if not float(theta - theta_in) * (grad_new - float(grad)) > 0:
            state = _OPT.init(theta)
        traj.append((z, j))
        step_size = abs(g / h) if h > 0 else math.inf
        if not (math.isfinite(z) and z > 0 and math.isfinite(j)):
            break
        if h > 0 and step_size <= rtol * z:
            converged = True
            break
        same = same + 1 if z == last_z else 0
        last_z = z
        if same >= STALL or abs(float(grad)) < tol and not h > 0 or time.monotonic() > deadline:
            break
    if not converged:
        if time.monotonic() > deadline:
            why = f"did not converge within the time limit ({time_limit:g} s)"
        elif it >= max_iter and abs(traj[-1][0] - z0) <= 1e-3 * z0:  # crept: J' tiny, J'' <= 0 (beyond the inflection)
            why = f"barely moved in {it} iterations: J(0; z) is nearly flat and not convex there"
        elif it >= max_iter:
            why = f"did not converge within {it} iterations (raise --max-iter)"
        else:
            why = f"stopped after {it} iterations: J(0; z) is flat or not convex there"
        raise InputError(
            "--max-iter" if why.endswith("(raise --max-iter)") else "--z-init",
            f"L-BFGS from z = {z0:g} {why} (last z = {traj[-1][0]:.6g}, Newton step {step_size:.3g}); "
            f"start nearer the problem's decay lengths [{lo * 1e8:.3g}, {hi * 1e-4:.3g}]",
        )
    return TuneResult(z=traj[-1][0], cost=traj[-1][1], iterations=it, trajectory=traj, newton_step=step_size)
