"""Tuning the switching level z on Monte Carlo of the WCP diffusion, by pathwise gradients.

The objective is the sigmoid-blended cost of :func:`jaxq.sde.smoothed.smoothed_cost`: the modes are
mixed with weight ``sigmoid((Z - z)/tau)``, an admissible control of the WCP that tends to the
switching control as tau -> 0. Its Monte Carlo mean with common random numbers (a fixed key per
chain: sample-average approximation) is a smooth function of z, differentiated pathwise through the
exact-reflection scheme. L-BFGS (optax, zoom line search) minimises it for each of a decreasing
sequence of tau, warm-started from the previous stage. Independent chains (independent keys) give a confidence
interval for the tuned level. The price of the smoothing is measured, not assumed away: the exact cost J(0; z) of the
hard switching policy at the tuned level is compared with V_WCP(0), and the smoothed cost at z* with
the exact one.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxq.diffusion import hjb
from jaxq.mc.rng import EVALUATION, SEARCH, derived_seed
from jaxq.sde.estimators import default_horizon
from jaxq.sde.smoothed import smoothed_cost
from jaxq.stats import t_interval


class SdeTune(NamedTuple):
    """Tuned level (mean over chains) with its 95% confidence interval, and the trajectories.

    Attributes:
        z: The tuned level (mean over chains).
        z_ci: Its 95% confidence interval.
        chains: (chains, iterations + 1) iterates of z.
        costs: (chains, iterations) smoothed-cost estimates (workload units).
        smoothing_bias_at_z_star: Smoothed cost at z* (final tau) minus the exact V_WCP(0).
        smoothing_bias_stderr: The standard error of ``smoothing_bias_at_z_star``.
    """

    z: float
    z_ci: tuple[float, float]
    chains: np.ndarray  # (chains, iterations + 1) iterates of z
    costs: np.ndarray  # (chains, iterations) smoothed-cost estimates (workload units)
    smoothing_bias_at_z_star: float  # smoothed cost at z* (final tau) minus the exact V_WCP(0)
    smoothing_bias_stderr: float


def _objective(coeffs, gamma, paths, dt, horizon):
    return lambda z, tau, seed: smoothed_cost(z, tau, coeffs, gamma, seed, paths=paths, dt=dt, horizon=horizon)[0]


def tune_sde(
    coefficients: tuple[float, float, float, float],
    gamma: float,
    *,
    paths: int = 2000,
    dt: float = 0.02,
    chains: int = 4,
    seed: int = 0,
    z_init: float | None = None,
    taus: tuple[float, ...] = (0.3, 0.1, 0.03),
    iterations: int = 12,
    progress: Callable[[int], None] | None = None,
) -> SdeTune:
    """L-BFGS (optax) on the pathwise gradient of the smoothed SDE cost, tau annealed in stages.

    Args:
        coefficients: ``(bL, sL, bH, sH)``, the lower- and higher-mode drift and diffusion coefficients
            (:meth:`jaxq.diffusion.workload.Analysis.mode_coefficients`).
        gamma: The discount rate.
        paths: Paths per evaluation (common random numbers within a chain).
        dt: Time step.
        chains: Independent chains (>= 2) for the confidence interval.
        seed: Chain m uses the seed ``derived_seed(seed, SEARCH, m)`` throughout, the smoothing-bias check
            ``derived_seed(seed, EVALUATION)`` (:func:`jaxq.mc.rng.derived_seed`).
        z_init: Start (default: the problem's shortest decay length, as for the exact tuner).
        taus: Blending widths of the successive stages, each warm-started from the last.
        iterations: L-BFGS iterations per stage.
        progress: Called with 1 after each L-BFGS iteration (None: no progress).

    Returns:
        An :class:`SdeTune`: the mean over chains of their last iterate with a t-based 95% interval.
    """
    bL, sL, bH, sH = (float(x) for x in coefficients)
    coeffs = (bL, sL, bH, sH)
    horizon = default_horizon(0.0, max(abs(bL), abs(bH)), max(sL, sH), gamma)
    if z_init is None:
        z_init = float(hjb.shortest_length(bL, sL, bH, sH, gamma))
    f = _objective(coeffs, gamma, paths, dt, horizon)
    opt = optax.lbfgs()

    @jax.jit
    def step(theta, state, tau, seed):  # z = softplus(theta) > 0
        loss = lambda th: f(jax.nn.softplus(th), tau, seed)  # noqa: E731
        value, grad = optax.value_and_grad_from_state(loss)(theta, state=state)
        updates, state = opt.update(grad, state, theta, value=value, grad=grad, value_fn=loss)
        return optax.apply_updates(theta, updates), state, value

    total = len(taus) * iterations
    traj = np.zeros((chains, total + 1))
    costs = np.zeros((chains, total))
    for m in range(chains):  # a few sequential optimiser chains; every evaluation is vectorised over paths
        chain_seed = derived_seed(seed, SEARCH, m)
        theta = jnp.float64(z_init + math.log(-math.expm1(-z_init)))
        traj[m, 0] = z_init
        k = 0
        for tau in taus:
            state = opt.init(theta)
            for _ in range(iterations):
                theta, state, value = step(theta, state, jnp.float64(tau), jnp.uint32(chain_seed))
                k += 1
                traj[m, k] = float(jax.nn.softplus(theta))
                costs[m, k - 1] = float(value)
                if progress is not None:
                    progress(1)
    last = traj[:, -1]
    zt = float(last.mean())
    z_star = float(hjb.switching_point(bL, sL, bH, sH, gamma))
    sm, se = smoothed_cost(z_star, float(taus[-1]), coeffs, gamma, derived_seed(seed, EVALUATION), paths=4 * paths,
                           dt=dt, horizon=horizon)
    exact = float(hjb.switching_cost(0.0, z_star, bL, sL, bH, sH, gamma))
    return SdeTune(z=zt, z_ci=t_interval(last), chains=traj, costs=costs,
                   smoothing_bias_at_z_star=float(sm) - exact, smoothing_bias_stderr=float(se))
