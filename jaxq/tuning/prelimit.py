"""Tuning the policy of the n-th 2x2 system: switching level z and threshold constant c.

The cost J_n(z, c) of the prelimit policy (switching at ``sqrt(n) z``, threshold
``Theta_n = ceil(c n^a_bar)``) is piecewise constant along any sample path, so pathwise derivatives
are zero almost everywhere and the derivative of J_n is not an expectation of one. jaxq differentiates
the Gaussian-smoothed cost instead,

    J_tau(theta) = E J_n(theta + tau eps),   eps ~ N(0, I),   theta = (z, c),

whose gradient is ``E[J_n(theta + tau eps) eps] / tau`` (the likelihood ratio of the perturbation:
the score of N(theta, tau^2) is eps/tau). Every replication draws its own eps
(:func:`jaxq.sim.models.pss2x2.perturbed_parameters`); it is run twice, at ``theta + tau eps`` and
``theta - tau eps``, with common random numbers, and ``(J+ - J-) eps / (2 tau)`` is the
(antithetic) gradient estimate, unbiased for grad J_tau. Adam (optax) follows these estimates; the
tuned value of a chain is the average of its second half of iterates (Polyak-Ruppert), and
independent chains give a confidence interval. The tuned policy is finally evaluated with the exact,
unsmoothed simulator against the theoretical one (z*, c = 1) with common random numbers, so the
smoothing bias is measured, not assumed away.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
import optax

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.policies import pss2x2 as pol
from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, simulate
from jaxq.stats import controlled_values, mean_stderr, t_interval


class PrelimitTune(NamedTuple):
    """Result of :func:`tune_prelimit` (``None`` for a parameter the policy does not have)."""

    z: float | None
    z_ci: tuple[float, float] | None
    c: float | None
    c_ci: tuple[float, float] | None
    chains: np.ndarray  # (chains, iterations + 1, 2): the iterates (z, c) of every chain
    smoothed_cost: np.ndarray  # (chains, iterations): J_tau estimates along the way
    evaluation: dict


def smoothed_gradient(system, n, z, c, reps, seed, tau, policy, theta_exponent, analysis,
                      cv: bool = True) -> tuple[np.ndarray, np.ndarray, float]:
    """Antithetic Gaussian-smoothing gradient of J_n at (z, c): (mean (2,), stderr (2,), J_tau estimate).

    With ``cv`` each run's costs are controlled by the diffusion limit's control variates, cross-fitted by
    replication index (:func:`jaxq.stats.controlled_values`): each control has mean zero given the
    replication's perturbation eps, and the coefficients come from other replications, so the gradient
    estimate stays unbiased while its variance falls.
    """
    kw = dict(policy=policy, switch_at=z, theta_constant=c, theta_exponent=theta_exponent, seed=seed, analysis=analysis,
              cv=cv)
    plus = simulate(system, n, reps, perturb=(1, tau[0], tau[1]), **kw)
    minus = simulate(system, n, reps, perturb=(-1, tau[0], tau[1]), **kw)
    jp, jm = (_costs(r) for r in (plus, minus))
    half = 0.5 * (jp - jm)
    g = half[:, None] * plus.samples["eps"] / np.asarray(tau)
    return g.mean(axis=0), g.std(axis=0, ddof=1) / math.sqrt(reps), float(0.5 * (jp + jm).mean())


def _costs(r):
    """Per-replication costs, controlled (cross-fitted) when the run recorded controls."""
    if "controls" not in r.samples:
        return r.samples["J"]
    adjusted, _ = controlled_values(r.samples["J"], r.samples["controls"], np.arange(len(r.samples["J"])))
    return adjusted


def tunable(a: Analysis, policy: str) -> tuple[str, bool, bool, float]:
    """``(policy name, tune z?, tune c?, z*)``; refuses a policy with nothing to tune."""
    res = pol.resolve(a, policy, None)
    name, rules, z_star = res.name, res.rules, res.z
    tune_z = rules.dual and a.case == "dual"
    tune_c = pol.uses_threshold(rules)
    if not (tune_z or tune_c):
        raise InputError("policy", f"{name} has neither a switching level nor a threshold to tune")
    return name, tune_z, tune_c, z_star


def tune_prelimit(
    system: PSS2x2,
    n: float,
    *,
    policy: str = "auto",
    iterations: int = 20,
    reps: int = 256,
    chains: int = 4,
    seed: int = 0,
    z_init: float | None = None,
    c_init: float = 1.0,
    tau: tuple[float, float] = (0.2, 0.3),
    learning_rate: float = 0.1,
    eval_reps: int | None = None,
    theta_exponent: float = DEFAULT_THETA_EXPONENT,
    progress: Callable[[int], None] | None = None,
    analysis: Analysis | None = None,
) -> PrelimitTune:
    """Tune (z, c) of the n-th system's policy by Adam on smoothed-gradient estimates.

    Args:
      system, n: the 2x2 system and the index of the prelimit system.
      policy: ``auto`` (Theorem 2.11) or a policy name; z is tuned for dual-mode policies, c for
        policies with a threshold (T1/T2 rules); a policy with neither is refused.
      iterations, reps, chains: Adam steps per chain, antithetic pairs per gradient, chains.
      seed: base seed; every (chain, iteration) uses its own seed, the evaluation another.
      z_init, c_init: the start (default: z* and c = 1, the theoretical policy).
      tau: smoothing scales for z (scaled workload) and c.
      learning_rate: Adam's step size (in the units of z and c).
      eval_reps: replications of the final paired evaluation (default ``4 * reps``).
    Returns:
      A :class:`PrelimitTune`; ``evaluation`` holds ``J_tuned``, ``J_theory`` (z*, c = 1), their
      paired difference, each with a standard error, and ``V0``.
    """
    a = analysis if analysis is not None else analyze(system)
    name, tune_z, tune_c, z_star = tunable(a, policy)
    if chains < 2 or reps < 2 or iterations < 2:
        raise InputError("tune", "need at least 2 chains, 2 replications and 2 iterations")
    z0 = (z_star if z_init is None else z_init) if tune_z else 0.0
    mask = np.array([tune_z, tune_c], dtype=float)
    opt = optax.adam(learning_rate)
    paths = np.zeros((chains, iterations + 1, 2))
    costs = np.zeros((chains, iterations))
    for m in range(chains):  # a few sequential chains of optimiser steps; each step is vectorised
        theta = np.array([z0, c_init], dtype=float)
        state = opt.init(theta)
        paths[m, 0] = theta
        for k in range(iterations):
            s = int(np.random.SeedSequence((seed, m, k)).generate_state(1)[0])  # distinct for every (chain, step)
            g, _, j = smoothed_gradient(system, n, theta[0] if tune_z else None, theta[1], reps, s, tau, name,
                                        theta_exponent, a)
            updates, state = opt.update(g * mask, state, theta)
            theta = np.asarray(optax.apply_updates(theta, updates))
            theta = np.maximum(theta, [0.0, 0.05])  # z >= 0, c > 0
            paths[m, k + 1] = theta
            costs[m, k] = j
            if progress is not None:
                progress(1)
    tail = paths[:, iterations // 2 + 1 :, :].mean(axis=1)  # Polyak-Ruppert average per chain
    z_t, c_t = float(tail[:, 0].mean()), float(tail[:, 1].mean())
    ev_reps = eval_reps or 4 * reps
    kw = dict(policy=name, theta_exponent=theta_exponent, seed=seed + 7_777_777, analysis=a)
    tuned = simulate(system, n, ev_reps, switch_at=z_t if tune_z else None, theta_constant=c_t, engine="event", **kw)
    theory = simulate(system, n, ev_reps, switch_at=None, theta_constant=1.0, engine="event", **kw)
    d_mean, d_se = mean_stderr(tuned.samples["J"] - theory.samples["J"])
    evaluation = {
        "J_tuned": tuned.value, "J_tuned_stderr": tuned.stderr,
        "J_theory": theory.value, "J_theory_stderr": theory.stderr,
        "difference": d_mean, "difference_stderr": d_se,
        "V0": a.V0, "reps": ev_reps, "theta_tuned": tuned.info["theta"], "theta_theory": theory.info["theta"],
    }
    return PrelimitTune(
        z=z_t if tune_z else None, z_ci=t_interval(tail[:, 0]) if tune_z else None,
        c=c_t if tune_c else None, c_ci=t_interval(tail[:, 1]) if tune_c else None,
        chains=paths, smoothed_cost=costs, evaluation=evaluation,
    )
