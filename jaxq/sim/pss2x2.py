"""Simulating the n-th 2x2 system of the switched-policies paper: the discounted cost J_n (2.6) under a policy.

:func:`simulate` resolves the policy (:func:`jaxq.policies.pss2x2.resolve`: ``auto`` is Theorem 2.11's),
builds the typed parameters of :mod:`jaxq.sim.models.pss2x2`, picks the driver (by the rule of every simulator,
:func:`jaxq.sim.simulate_markov.choose_engine`) and returns a
:class:`~jaxq.mc.result.SimResult`:

* ``event`` (:mod:`jaxq.sim.event`): any renewal primitives; the cost integrated exactly between events up
  to a horizon T whose neglected tail is bounded rigorously (``truncation_bound``);
* ``uniformized`` (:mod:`jaxq.sim.uniformized`): exponential primitives only; one 32-bit word a step and
  the discounted cost Rao-Blackwellised over the Poisson event times, ``sum_k c(X_k) r^k/(Lambda + gamma)``
  (unbiased, no time draws), truncated after K steps with a rigorous tail bound;
* ``auto``: uniformized for exponential primitives unless the run needs the event rule (a fixed horizon,
  invariant counters, recorded paths, perturbed parameters) or its replications are long and few
  (:func:`jaxq.sim.simulate_markov.slow_lockstep`: from about n = 5 x 10^4 with fewer than 256 replications, where a
  precision target's runs are; so under ``auto`` the driver depends on ``reps``), event otherwise.

Replication r uses ``fold_in(PRNGKey(seed), r)``: results do not depend on ``chunk`` or devices.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.value import value_function
from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2, ScaledPSS2x2, system_of
from jaxq.model.validate import (check_float, check_path_times, check_pss_horizon, check_work, pss_cost_scale,
                                 pss_default_horizon)
from jaxq.options import grouped as options_grouped
from jaxq.policies import pss2x2 as pol
from jaxq.policies import hook as hk
from jaxq.policies.hook import Policy2x2
from jaxq.policies import thresholds
from jaxq.precision import float64
from jaxq.sim import diagnostics as diag
from jaxq.mc import replications
from jaxq.sim import event, sampling, uniformized
from jaxq.sim.markov import Functional
from jaxq.sim.models import pss2x2 as model
from jaxq.sim.simulate_markov import choose_engine, slow_lockstep
from jaxq.mc.observer import check_observers, combine, tree_layout
from jaxq.mc.result import Estimate, SimResult, TruncatedEstimate, add_observed, timed, with_work_of

DEFAULT_THETA_EXPONENT = thresholds.DEFAULT_THETA_EXPONENT  # jaxq.policies.thresholds
DEFAULT_THETA_RULE = thresholds.DEFAULT_THETA_RULE
coarse_controls = model.coarse_controls  # the coarse groups by the number of control columns (either engine)
THETA_RULES = thresholds.THETA_RULES
POLICY_CHOICES = pol.CHOICES
DISCOUNTED = Functional(discounted=True)
# The default truncation must leave a bound on the neglected tail of at most this share of max(J_hat, stderr):
# :func:`simulate_bounded` extends it (at most EXTENSIONS times, aiming at rel_tol) or refuses naming the horizon.
TRUNCATION_SHARE = 1e-3
EXTENSIONS = 2
# ... and aims at a bound of at most this share of the standard error (after the control variates): what remains
# above it is said in the result's warnings; the interval ci95 is widened by whatever bound remains.
STDERR_SHARE = 0.1
# The second-order controls cap a variate at 1 + SECOND_ORDER_CAP sqrt(n) (jaxq.sim.models.pss2x2: its effect on
# the cost is quadratic in v - 1 while the jobs it moves, about v - 1, are few against sqrt(n)).
SECOND_ORDER_CAP = 2.0


Levels = thresholds.Levels  # jaxq.policies.thresholds: z, Theta_n's exponent, rule and constant, perturbation
Batching = replications.Batching  # jaxq.mc.replications: first replication, chunk, devices, progress


class Truncation(NamedTuple):
    """Which driver runs and where it truncates the discounted integral (2.6).

    Attributes:
        engine: ``auto``, ``event`` or ``uniformized`` (module docstring).
        horizon: The event driver's truncation time T (default: the tail bound about ``rel_tol`` V0,
            :func:`default_horizon`).
        steps: The uniformised driver's number of steps K (default: the tail bound about ``rel_tol`` V0,
            :func:`ctmc_steps`).
        rel_tol: The default truncation's tail bound relative to V0.
        block: Events per block of the event driver (how often it checks that every replication is done).
        se_floor: The standard error, relative to J_hat, below which the default truncation is not lengthened:
            :func:`simulate_bounded` holds the tail bound to a share of ``max(stderr, se_floor J_hat)``. A precision
            target sets it to its ``rel_se`` (a standard error below the one asked for does not buy a longer
            horizon); None: the precision target's ``rel_se`` under a target, else the run's own standard error; 0:
            always the run's own.
    """

    engine: str = "auto"
    horizon: float | None = None
    steps: int | None = None
    rel_tol: float = 1e-4
    block: int = 128
    se_floor: float | None = None


class Outputs(NamedTuple):
    """What a run records besides J per replication.

    Attributes:
        record_times: Fixed times in [0, horizon] at which W_hat(t) is recorded (event driver).
        cv: The control variates from the diffusion limit (:mod:`jaxq.sim.models.pss2x2`), cross-fitted by
            replication index.
        diagnostics: The diagnostics of :mod:`jaxq.sim.diagnostics` and their warning.
        debug: The Definition 2.7 invariant counters (event driver; a :class:`jaxq.Policy2x2` is checked in every
            run).
        observers: A user's statistics of the path, a dict of name -> :class:`jaxq.Observer` of
            :class:`~jaxq.sim.models.pss2x2_diagnostics.View` segments (both drivers; each output is an estimate named
            ``<name>`` or ``<name>_<key>``, docs/guides/observers.md).
    """

    record_times: tuple = ()
    cv: bool = True
    diagnostics: bool = True
    debug: bool = False
    observers: Any = None


GROUPS = {"truncation": Truncation, "levels": Levels, "outputs": Outputs, "batching": Batching}


def grouped(options: dict) -> dict:
    """Flat keyword options as the typed arguments of :func:`simulate` (:func:`jaxq.options.grouped`).

    ``policy``, ``seed`` and ``analysis`` pass through, and a typed argument given whole (``levels=Levels(...)``) is
    kept.

    Args:
        options: The flat options (those of ``jaxq.simulate`` for a 2x2 system: ``horizon``, ``theta_exponent``,
            ``chunk``, ...).

    Returns:
        The keyword arguments of :func:`simulate`.

    Raises:
        InputError: Naming an unknown key.
    """
    return options_grouped(options, GROUPS, ("policy", "seed", "analysis"), "the 2x2 simulator")


class Setup(NamedTuple):
    """Everything a run of the n-th system needs besides randomness.

    Attributes:
        params: The simulator's parameters.
        spec: The sampling spec of the primitives.
        analysis: The system's analysis.
        policy: The policy actually used (``auto`` resolved).
        theta: The threshold level used (None: the policy has none).
        switch_at: The switching level (scaled workload; None: never switches).
        modes_used: The modes used, 1-based.
        horizon: The event driver's truncation time.
        policy2x2: The policy that decides, without its parameters (``params.policy_params``).
    """

    params: model.Params
    spec: sampling.Spec
    analysis: Analysis
    policy: str  # the policy actually used (``auto`` resolved)
    theta: int | None  # threshold level used (None: the policy has none)
    switch_at: float | None  # switching level (scaled workload; None: never switches)
    modes_used: list[int]  # 1-based
    horizon: float
    nth: ScaledPSS2x2  # the n-th system: its rates, computed once for the run
    policy2x2: Policy2x2 = hk.BUILTIN  # the policy that decides, without its parameters (params.policy_params)


def default_horizon(system: PSS2x2 | ScaledPSS2x2, n: float, rel_tol: float = 1e-4, scale: float = 1.0) -> float:
    """Horizon T at which the state-free part of the tail bound is ``rel_tol`` times ``min(scale, the no-departure
    cost)`` (:func:`jaxq.model.validate.pss_default_horizon`).

    Args:
        system: The 2x2 system, or its n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`).
        n: The scale n.
        rel_tol: The tail bound's share.
        scale: The size of the value (V0 for the default).

    Returns:
        The horizon T.
    """
    return pss_default_horizon(system, n, scale, rel_tol)


class Plan(NamedTuple):
    """The numbers of a run of the n-th system, validated, without the simulator's parameters (:func:`plan`).

    Attributes:
        analysis: The system's analysis.
        resolved: The policy with its switching level (the rule's, for ``excursion``).
        policy: The policy actually used (``auto`` resolved; a Policy2x2's name).
        theta: The threshold level used (None: the policy has none).
        theta_constant: c of Theta_n = ceil(c n^a_bar): the levels' constant times the rule's.
        switch_at: The switching level (scaled workload; None: never switches).
        modes_used: The modes used, 1-based.
        horizon: The event driver's truncation time.
        record_times: The times at which W_hat(t) is recorded, checked.
        given: The Policy2x2 the caller gave (None: a policy name, the built-in of that name).
    """

    analysis: Analysis
    resolved: pol.Resolved  # the policy with its switching level (the rule's, for ``excursion``)
    policy: str  # the policy actually used (``auto`` resolved; a Policy2x2's name)
    theta: int | None  # threshold level used (None: the policy has none)
    theta_constant: float  # c of Theta_n = ceil(c n^a_bar): the levels' constant times the rule's
    switch_at: float | None  # switching level (scaled workload; None: never switches)
    modes_used: list[int]  # 1-based
    horizon: float
    record_times: np.ndarray
    nth: ScaledPSS2x2  # the n-th system: its rates, computed once for the run
    given: Policy2x2 | None = None  # the Policy2x2 the caller gave (None: a policy name, the built-in of that name)


def plan(system: PSS2x2 | ScaledPSS2x2, n: float, *, policy: str | Policy2x2 = "auto", levels: Levels = Levels(),
         horizon: float | None = None, record_times=(), analysis: Analysis | None = None,
         rel_tol: float = 1e-4) -> Plan:
    """What :func:`setup` checks and chooses (the policy, its threshold and switching level, the horizon).

    With the same one-line InputErrors, without building the simulator's parameters: what an experiment file's
    validation needs of each grid point (:func:`setup` is this plus the parameters). The n-th system
    (``system.at(n)``, :class:`~jaxq.model.pss2x2.ScaledPSS2x2`) is built here, after the checks of n, or taken as
    given when ``system`` is already it; the plan carries it as ``nth``.

    Args:
        system: The 2x2 system, or its n-th system.
        n: The scale n.
        policy: A policy name or a :class:`jaxq.Policy2x2`.
        levels: The switching level, threshold and perturbation (:class:`Levels`).
        horizon: The event driver's truncation time (default :func:`default_horizon`).
        record_times (array_like): The times at which W_hat(t) is recorded.
        analysis: The system's analysis (computed when not given).
        rel_tol: The default horizon's tail bound relative to V0 (:attr:`Truncation.rel_tol`).

    Returns:
        The plan.

    Raises:
        InputError: Naming the argument out of range (``n``, ``theta_exponent``, ``switch_at``, ``theta_constant``,
            ``horizon``, ``record_times``, ``policy``, ``theta_rule``, ``perturb``).
    """
    switch_at, theta_exponent, theta_rule, theta_constant, perturb = levels
    check_float(n, "n", ge=1)
    check_float(rel_tol, "rel_tol", gt=0.0, lt=1.0)
    check_float(theta_exponent, "theta_exponent", ge=0.0, le=1.0)  # (2.28) asks for (1/3, 1/2)
    if switch_at is not None:
        check_float(switch_at, "switch_at", ge=0.0)
    check_float(theta_constant, "theta_constant", gt=0.0)
    an = analysis if analysis is not None else analyze(system_of(system))
    own = _given(policy, switch_at, perturb)
    res = pol.resolve(an, "auto" if own is not None else policy, switch_at)
    if switch_at is not None and not res.rules.dual:
        raise InputError("switch_at", f"policy {res.name} never switches (one mode throughout), so a switching "
                                      "level would be ignored; drop it or choose a switching policy "
                                      "(PP, T2T2, T1T2, T2T1)")
    nth = system.at(n)
    given = horizon is not None
    if horizon is None:
        horizon = default_horizon(nth, n, rel_tol, scale=an.V0)
    if not (math.isfinite(horizon) and horizon > 0):
        raise InputError("horizon", f"must be a positive number, got {horizon}")
    expected_events = 2.0 * float(np.sum(nth.lam_n)) * horizon
    if expected_events > 2.0**31:  # the per-event counter of the random stream is 32-bit
        raise InputError("horizon" if given else "n", f"about {expected_events:.3g} events per replication (n = {n:g}, "
                                                      f"horizon {horizon:g}) exceed the 2^31 supported")
    rec = check_path_times(record_times, "record_times", horizon)  # a time never reached (NaN too) read 0
    if own is None:  # a name: the rule sets the built-in's levels
        rule_c, rule_z = thresholds.rule_levels(theta_rule, an, res, n, theta_exponent, switch_at)
        res = res if rule_z is None else res._replace(z=rule_z)
    else:  # the user's policy decides alone: the rule is only checked
        thresholds.check_rule(theta_rule)
        rule_c = 1.0
    theta_constant = theta_constant * rule_c
    theta = thresholds.theta_level(n, theta_exponent, theta_constant) if own is None and pol.uses_threshold(
        res.rules) else None
    if perturb is not None:
        sign, tau_z, tau_c = perturb
        if not (tau_z >= 0 and tau_c >= 0 and sign in (1, -1)):
            raise InputError("perturb", f"need sign +-1 and tau >= 0, got {perturb}")
    if own is not None:
        return Plan(an, res, own.name, None, theta_constant, None, [], float(horizon), rec, nth, own)
    return Plan(an, res, res.name, theta, theta_constant, None if not res.rules.dual or math.isinf(res.z) else res.z,
                sorted({res.lower + 1, res.higher + 1}), float(horizon), rec, nth)


def setup(system: PSS2x2 | ScaledPSS2x2, n: float, *, policy: str | Policy2x2 = "auto", levels: Levels = Levels(),
          horizon: float | None = None, record_times=(), analysis: Analysis | None = None,
          rel_tol: float = 1e-4) -> Setup:
    """Parameters of the n-th system under a policy (validated; one-line InputErrors).

    A :class:`jaxq.Policy2x2` ``policy`` decides alone: it takes no threshold, switching level or perturbation (the
    control variates use Theorem 2.11's value function). The checks and levels are :func:`plan`'s; the setup
    carries the n-th system as ``nth`` (the parameters' rates are its rates).

    Args:
        system: The 2x2 system, or its n-th system (:class:`~jaxq.model.pss2x2.ScaledPSS2x2`).
        n: The scale n.
        policy: A policy name or a :class:`jaxq.Policy2x2`.
        levels: The switching level and the threshold ``Theta_n = ceil(c n^a_bar)``, c its ``theta_constant`` times
            the constant of its ``theta_rule`` (:func:`jaxq.policies.thresholds.rule_levels`: ``paper`` is (2.29)'s
            c = 1; ``excursion``, the default, also sets the switching level), and the per-replication perturbation
            of z and c (:func:`jaxq.sim.models.pss2x2.perturbed_parameters`).
        horizon: The event driver's truncation time (default :func:`default_horizon`).
        record_times (array_like): The times at which W_hat(t) is recorded.
        analysis: The system's analysis (computed when not given).
        rel_tol: The default horizon's tail bound relative to V0 (:attr:`Truncation.rel_tol`).

    Returns:
        The setup.

    Raises:
        InputError: As :func:`plan`, or naming ``policy`` where a Policy2x2's functions fail their check
            (:func:`jaxq.policies.hook.check`).
    """
    pl = plan(system, n, policy=policy, levels=levels, horizon=horizon, record_times=record_times,
              analysis=analysis, rel_tol=rel_tol)
    an, res, theta, theta_constant = pl.analysis, pl.resolved, pl.theta, pl.theta_constant
    theta_exponent, perturb = levels.theta_exponent, levels.perturb
    nth = pl.nth
    system, lam_n, mu_n, rn = nth.system, nth.lam_n, nth.mu_n, nth.sqrt_n
    dists = list(system.interarrival) + [system.service[i][k] for i in range(2) for k in range(2)]
    q = None
    if perturb is not None:
        sign, tau_z, tau_c = perturb
        scale = float(n) ** theta_exponent
        q = hk.Perturb(jnp.float64(sign), jnp.float64(tau_z * rn), jnp.float64(theta_constant * scale),
                          jnp.float64(tau_c * scale))
    alpha = np.asarray(an.modes.alpha)
    cv_scale = np.concatenate([-1.0 / alpha, [1.0 / alpha[i] for i in range(2) for _ in range(2)]]) / rn
    cap = 1.0 + SECOND_ORDER_CAP * rn  # a variate's second-order effect saturates once its delay moves X by sqrt(n)
    named = pol.make(res, an.modes, n, theta)
    # a policy name is the built-in Policy2x2 of that name (its parameters: the policy as data)
    chosen = hk.builtin(named, perturb=q) if pl.given is None else pl.given
    params = model.Params(
        inv_lam=jnp.asarray(1.0 / lam_n), inv_mu=jnp.asarray(1.0 / mu_n), lam=jnp.asarray(lam_n),
        mu=jnp.asarray(mu_n), h_hat=jnp.asarray(nth.h_hat), inv_sqrt_n=jnp.float64(1.0 / rn),
        gamma=jnp.float64(system.gamma), horizon=jnp.float64(pl.horizon),
        policy=named, t_rec=jnp.asarray(pl.record_times),
        table={k: jnp.asarray(v) for k, v in sampling.param_table(dists).items()},
        value=policy_value(an, res), cv_scale=jnp.asarray(cv_scale),
        cv_cap=jnp.float64(cap), cv_m2=jnp.asarray([sampling.capped_variance(d, cap) for d in dists]),
        hpc=jnp.int32(an.p),
        policy_params=jax.tree_util.tree_map(jnp.asarray, chosen.params))
    _checked(chosen.static(), params.policy_params)  # its functions' results, before any run (one InputError)
    return Setup(params, sampling.spec_of(dists), an, pl.policy, pl.theta, pl.switch_at, pl.modes_used, pl.horizon,
                 nth, chosen.static())


def _checked(policy: Policy2x2, params) -> None:
    """:func:`jaxq.policies.hook.check` once per policy and layout of its parameters (the abstract trace)."""
    _check_layout(policy, tree_layout(params), jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), params))


_CHECKED: dict = {}


def _check_layout(policy, layout, abstract) -> None:
    key = (policy, layout)
    if key not in _CHECKED:
        hk.check(policy, abstract)
        if len(_CHECKED) > 256:
            _CHECKED.clear()
        _CHECKED[key] = True


def _given(policy, switch_at, perturb) -> Policy2x2 | None:
    """The :class:`Policy2x2` the caller gave (None for a policy name, whose built-in :func:`setup` builds), refusing
    the options that set a named policy's levels."""
    if isinstance(policy, str):
        return None
    if not (callable(getattr(policy, "init", None)) and callable(getattr(policy, "decide", None))):
        raise InputError("policy", f"expected a policy name ({', '.join(pol.CHOICES)}) or a Policy2x2 with callable "
                                   "init(params) and decide(queues, serving, memory, event, params)")
    for key, value in (("switch_at", switch_at), ("perturb", perturb)):
        if value is not None:
            raise InputError(key, f"applies to the built-in policies only; the Policy2x2 {policy.name!r} decides "
                                  "alone (put its parameters in its params)")
    return policy


def refused(bad: np.ndarray | None, name: str) -> None:
    """Fail a run in which a :class:`Policy2x2` made assignments the engine refused.

    Args:
        bad: The invalid assignments per replication (None for a policy that is not ``checked``).
        name: The policy's name.

    Raises:
        InputError: Naming ``policy``: some replication made an invalid assignment.
    """
    bad = np.asarray(0 if bad is None else bad)
    if np.any(bad > 0):
        raise InputError("policy", f"the Policy2x2 {name!r} made {int(bad.sum())} invalid assignments in "
                                   f"{int(np.count_nonzero(bad))} of {bad.size} replications: an idle server was "
                                   "given a class with no waiting job (two idle servers taking one class need two "
                                   "waiting jobs), a class it cannot serve (anything but -1, 0, 1) or, on the event "
                                   "driver, both servers a job at an arrival (two variates an event)")


def policy_value(an: Analysis, res: pol.Resolved):
    """The value function V of the policy's diffusion limit: its lower and higher modes, switching at its level.

    Args:
        an: The system's analysis.
        res: The resolved policy.

    Returns:
        (jaxq.diffusion.value.ValueFunction): The value function (:func:`jaxq.diffusion.value.value_function`).
    """
    return value_function(float(an.b[res.lower]), float(an.sigma[res.lower]), float(an.b[res.higher]),
                          float(an.sigma[res.higher]), an.system.gamma, res.z)


NOT_EXPONENTIAL = "the uniformized engine needs exponential primitives; use the event engine"
"""The refusal of the uniformised driver for a system whose primitives are not all exponential."""
NEEDS_EVENT = ("engine", "the uniformized engine sets its own number of steps and records no paths, invariant "
                         "counters or perturbations: use the event engine")
"""The refusal of the uniformised driver for a run that needs the event driver: ``(key, message)``."""


@float64
def builtin_policy(system: PSS2x2 | ScaledPSS2x2, n: float, policy: str = "auto", *, rules: tuple[str, str] | None = None,
                   levels: Levels = Levels(), name: str | None = None) -> Policy2x2:
    """A policy of the 2x2 system built from the rules of Definition 2.8, as a :class:`jaxq.Policy2x2` for the n-th
    system.

    ``policy`` names the policy whose modes, sampling times, switching level and threshold Theta_n are taken (the
    six of Theorem 2.11, ``RULE@m`` or ``auto``, resolved for this system and n as :func:`simulate` resolves it);
    ``rules`` replaces the rule used in its lower and its higher mode, for example ``("P", "T2")`` on a T2T2 system:
    P below the switching level, T2 above it, a policy that is not in the table. The result runs through
    :func:`simulate` like any user's policy, with the built-ins' speed and debug counters, at this n (its level and
    threshold are the n-th system's).

    Args:
        system: The 2x2 system, or its n-th system.
        n: The scale n.
        policy: The policy whose modes, sampling, level and threshold are used.
        rules: The rule (``"P"``, ``"T1"``, ``"T2"``) in the lower and in the higher mode (None: the policy's own).
        levels: The switching level and threshold rule (:class:`Levels`, as :func:`simulate`).
        name: The name results report (default: the policy's, or ``"LOWER/HIGHER"`` with ``rules``).

    Returns:
        The policy.

    Raises:
        InputError: As :func:`plan`; naming ``rules`` for a rule not in ``P``, ``T1``, ``T2`` or not two of them.
    """
    pl = plan(system, n, policy=policy, levels=levels)
    data = pol.make(pl.resolved, pl.analysis.modes, n, pl.theta)
    if rules is not None:
        if (not isinstance(rules, (tuple, list)) or len(rules) != 2
                or any(r not in pol.RULE_NAMES for r in rules)):
            raise InputError("rules", f"expected two of {', '.join(pol.RULE_NAMES)} (lower mode, higher mode), "
                                      f"got {rules!r}")
        codes = [pol.RULE_NAMES.index(r) for r in rules]
        rule = np.asarray(data.rule).copy()
        rule[int(data.higher)] = codes[1]
        rule[int(data.lower)] = codes[0]  # a single-mode policy: its one mode takes the lower mode's rule
        data = data._replace(rule=jnp.asarray(rule, jnp.int32))
    return hk.builtin(data, name=name or (pl.policy if rules is None else "/".join(rules)))


def ctmc_steps(nth: ScaledPSS2x2, big: float, v0: float, rel_tol: float = 1e-4) -> int:
    """Uniformised steps K of the n-th system ``nth`` that make the state-free part of the tail bound ``rel_tol``
    times :func:`jaxq.model.validate.pss_cost_scale` (V0, or the no-departure cost bounding J_n where that is
    smaller).

    Args:
        nth: The n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`).
        big: The uniformisation rate Lambda.
        v0: V0.
        rel_tol: The tail bound's share.

    Returns:
        K (at least 1).
    """
    g = nth.system.gamma
    r = big / (big + g)
    state_free = float(np.sum(nth.system.h * nth.lam_n)) / g**2 / nth.sqrt_n
    target = rel_tol * pss_cost_scale(nth, nth.n, v0)
    if state_free <= target:
        return 1
    return math.ceil(math.log(target / state_free) / math.log(r))


@float64
@timed
def simulate(system: PSS2x2 | ScaledPSS2x2, n: float, reps: int, *, policy: str | Policy2x2 = "auto", seed: int = 0,
             truncation: Truncation = Truncation(), levels: Levels = Levels(), outputs: Outputs = Outputs(),
             batching: Batching = Batching(), analysis: Analysis | None = None) -> SimResult:
    """Monte Carlo estimate of the discounted cost J_n (2.6) of the n-th system under a policy.

    Args:
        system: The 2x2 system, or its n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`: its rates are then read,
            not computed again).
        n: The index of the system (rates n lambda + sqrt(n) lambda_hat, ...).
        reps: Independent replications (each starts empty).
        policy: ``auto`` (Theorem 2.11), one of P, T2, PP, T2T2, T1T2, T2T1, a fixed-mode rule ``P@1``, ..., or a
            :class:`jaxq.Policy2x2` (docs/guides/policy-hook.md; a run in which it makes an invalid assignment fails
            with an InputError naming ``policy``).
        seed: Replication r uses ``fold_in(PRNGKey(seed), r)``.
        truncation: The driver and where it truncates (:class:`Truncation`).
        levels: The policy's switching level, threshold and perturbation (:class:`Levels`).
        outputs: What is recorded besides J (:class:`Outputs`). The control variates (``cv``, on by default) have
            mean zero under any non-anticipating policy, a Policy2x2 included (for one, V is that of Theorem 2.11's
            policy: all the controls are kept, their gain depends on the fit); the estimate is cross-fitted by
            replication index (:func:`jaxq.stats.controlled_mean`) and the plain one is reported beside it.
            ``diagnostics`` warns when J_hat is far above V0 at n >= 10^3.
        batching: How the replications are executed (:class:`jaxq.mc.replications.Batching`); any value gives the
            same numbers.
        analysis: The system's analysis (computed when not given).

    Returns:
        A :class:`SimResult` with primary estimate ``J_hat``; ``samples``: per replication ``J`` and (event
            engine) ``W_hat_t`` (reps, len(record_times)), ``sup_X_hat`` (reps, 2), ``X_hat_T`` (reps, 2),
            ``switches``, ``eps`` (perturbed runs), ``tail_bound``; ``info``: ``n``, ``policy``, ``theta``,
            ``switch_at``, ``modes_used``, ``V0``, ``horizon``, ``truncation_bound``, ``hpc`` (1-based) and
            ``violations`` (debug) or ``steps`` (uniformised), ``diagnostics`` (the object of
            :func:`jaxq.sim.diagnostics.summarize`; per replication in ``samples`` as ``diag_*``); ``warnings``.

    Raises:
        InputError: Naming the argument out of range (as :func:`setup` and :func:`choose_engine`, ``reps``,
            ``horizon``, ``steps``, ``observers``), a job beyond the work limits, or ``policy`` for a Policy2x2 that
            made invalid assignments.
    """
    engine, horizon, steps, rel_tol, block, se_floor = truncation  # se_floor: simulate_bounded's, checked here
    if se_floor is not None:
        check_float(se_floor, "se_floor", ge=0.0, lt=1.0)
    record_times, cv, diagnostics, debug, observers = outputs
    observers = check_observers(observers)
    if "diagnostics" in observers:
        raise InputError("observers", "the name 'diagnostics' is the built-in diagnostics' own: choose another")
    watch = combine({**({"diagnostics": model.DIAGNOSTICS} if diagnostics else {}), **observers}) \
        if diagnostics or observers else None
    batching = batching.checked()
    perturb = levels.perturb
    if not (isinstance(reps, (int, np.integer)) and reps >= 1):
        raise InputError("reps", f"need at least 1 replication, got {reps!r}")
    if horizon is not None:  # a horizon in which nothing happens: the same rule as ``jaxq run``'s grid.horizon
        horizon_checked = check_float(horizon, "horizon", gt=0.0)
        system = system.at(float(n))  # the n-th system, computed once: handed to the setup below
        check_pss_horizon(system, n, horizon_checked, "horizon")
    smoothed = perturb is not None or getattr(policy, "perturb", None) is not None  # Levels' or a Policy2x2's own
    needs_event = horizon is not None or debug or smoothed or len(np.atleast_1d(record_times)) > 0
    exponential = system_of(system).exponential
    st = setup(system, n, policy=policy, levels=levels, horizon=horizon, record_times=record_times,
               analysis=analysis, rel_tol=rel_tol)
    an, nth = st.analysis, st.nth
    system, rn, lam_n = nth.system, nth.sqrt_n, nth.lam_n
    info = {"n": n, "policy": st.policy, "theta": st.theta, "switch_at": st.switch_at, "modes_used": st.modes_used,
            "V0": an.V0, "hpc": an.p + 1}
    k = None  # the uniformised steps of a replication, where the lockstep driver may run
    if exponential and not needs_event and engine in ("auto", "uniformized"):
        big = model.MARKOV.bound(st.params)
        if steps is not None and not (isinstance(steps, (int, np.integer)) and steps >= 1):
            raise InputError("steps", f"need a positive whole number of steps, got {steps!r}")
        k = ctmc_steps(nth, big, an.V0, rel_tol) if steps is None else int(steps)
    used = choose_engine(engine, exponential, needs_event, no_rate_bound=NOT_EXPONENTIAL, event_only=NEEDS_EVENT,
                         long_and_few=k is not None and steps is None and slow_lockstep(reps, k))
    if used == "uniformized":
        check_work("n", reps, float(k), unit="steps", per_replication_limit=uniformized.MAX_STEPS, reps_key="reps")
        out, timing, uinfo = uniformized.run(model.markov(st.policy2x2, bool(cv)), st.params, DISCOUNTED, reps, seed,
                                             gamma=system.gamma, steps=k, batching=batching,
                                             observer=None if watch is None else model.markov_observer(watch))
        refused(out["state"].bad, st.policy)
        observed = out.get("observed")
        J = out["discounted"]["cost"]
        controls = out["controls"]["discounted"] if cv else None
        x_K = np.stack([out["state"].x0, out["state"].x1], axis=1)
        bound = model.ctmc_tail_bound(nth, uinfo["r"], uinfo["steps"], x_K)
        samples = {"J": J, "switches": out["state"].switches, "tail_bound": bound, "events": out["events"]}
        info.update(steps=uinfo["steps"], horizon=uinfo["steps"] / big)
    else:
        check_work("n", reps, 2.0 * float(np.sum(lam_n)) * st.horizon, unit="events", reps_key="reps")
        work = float(reps) * 2.0 * float(np.sum(lam_n)) * st.horizon
        replications.announce(batching.progress, work, "events")
        out, timing = event.run(model.event_model(st.spec, bool(debug), bool(cv), watch, st.policy2x2),
                                st.params, reps, seed, block=block, batching=batching, work=work)
        refused(out["bad"], st.policy)
        observed = out.get("observed")
        J = out["cost"]
        controls = out["cv"] if cv else None
        bound = model.tail_bound(nth, st.horizon, out["x_T"])
        samples = {"J": J, "W_hat_t": out["w_rec"], "sup_X_hat": out["sup_x"] / rn, "X_hat_T": out["x_T"] / rn,
                   "switches": out["switches"], "tail_bound": bound, "events": out["events"]}
        if st.policy2x2.perturb is not None:
            samples["eps"] = out["eps"]
        if debug:  # the policy's own invariants (the built-ins': Definition 2.7)
            info["violations"] = dict(zip(st.policy2x2.invariants, np.asarray(out["viol"]).sum(axis=0).tolist()))
        info["horizon"] = st.horizon
    info["truncation_bound"] = float(np.mean(bound))
    if controls is not None:
        samples["controls"] = controls
    est = {"J_hat": TruncatedEstimate.of_estimate(Estimate.with_controls(J, controls, batching.start + np.arange(len(J)),
                                                                         coarse=coarse_controls),
                                                  info["truncation_bound"])}  # ci95 widened by the tail left out
    if diagnostics:
        samples.update(diag.samples(observed["diagnostics"]))
        info["diagnostics"] = diag.summarize(samples, dual=len(st.modes_used) > 1, hpc=an.p + 1)
    if observers:
        add_observed({k: observed[k] for k in observers}, est, samples, info)
    note = diag.warning(info.get("diagnostics"), J_hat=est["J_hat"].value, V0=an.V0, n=n, gamma=system.gamma,
                        h=system.h, hpc=an.p + 1, theta=st.theta, policy=st.policy,
                        threshold_term=diag.limit_threshold_term(an, st.policy, st.theta, n, st.switch_at))
    warnings = () if note is None else (note,)
    return SimResult("J_hat", est, int(reps), int(np.sum(out["events"])), timing.wall_s, timing.compile_s, used,
                     samples, info, warnings)


@float64
@timed
def simulate_bounded(system: PSS2x2 | ScaledPSS2x2, n: float, reps: int, **args) -> SimResult:
    """:func:`simulate` whose default truncation is checked against the estimate it truncates.

    The default horizon (or number of uniformised steps) is sized before the run against V0 or, where that is
    smaller, the no-departure cost that bounds J_n (:func:`jaxq.model.validate.pss_cost_scale`); neither is J_n
    itself, nor its standard error, which the control variates can make tiny. So after the run the bound on the
    neglected tail (``truncation_bound``) must be at most :data:`STDERR_SHARE` of the standard error (held to at least
    ``Truncation.se_floor`` J_hat: a precision target's ``rel_se``, set by ``jaxq.simulate``) and at most
    :data:`TRUNCATION_SHARE` (or ``10 rel_tol``) of ``max(J_hat, stderr)``: if it is not, the run is repeated
    (same seeds) with the truncation extended to where the bound is about ``rel_tol`` of ``max(J_hat, stderr)``
    and at most half :data:`STDERR_SHARE` standard errors, at most :data:`EXTENSIONS` times and within the work
    limits. Whatever bound remains widens ``ci95`` (the bias is one-sided: ``[J_hat - 1.96 stderr, J_hat + 1.96
    stderr + bound]``), and a bound still above :data:`STDERR_SHARE` standard errors is said in the result's
    ``warnings``. A horizon or ``steps`` given by the caller is used as given (its bound is reported and widens
    ``ci95``). The analysis's warnings (a tie in the high-priority class) come first in the result's ``warnings``.
    The result's ``wall_s``, ``compile_s`` and ``events`` count every run, the repeated ones too
    (``info["truncation_reruns"]``, absent when there was none).

    Args:
        system: The 2x2 system.
        n: The index of the system.
        reps: Independent replications.
        **args (typing.Any): The keyword arguments of :func:`simulate`.

    Returns:
        The result of the last run.

    Raises:
        InputError: Naming ``horizon`` with the horizon needed: a bound above :data:`TRUNCATION_SHARE` (or
            ``10 rel_tol``, when a looser ``rel_tol`` is asked for) of ``max(J_hat, stderr)``; or as
            :func:`simulate`.
    """
    an = args.get("analysis") or analyze(system_of(system))  # once: every run below (and its reruns) is given it
    res = _bounded(system, n, reps, **{**args, "analysis": an})
    return dataclasses.replace(res, warnings=tuple(an.warnings) + res.warnings) if an.warnings else res


def _bounded(system: PSS2x2 | ScaledPSS2x2, n: float, reps: int, **args) -> SimResult:
    res = simulate(system, n, reps, **args)
    tr = args.get("truncation", Truncation())
    if tr.horizon is not None or tr.steps is not None:
        return res
    rel_tol = tr.rel_tol
    first = res.info["horizon"]
    refused = None
    for attempt in range(EXTENSIONS + 1):
        longer = _longer_truncation(res, system_of(system).gamma, rel_tol, tr.se_floor)
        if longer is None:
            return res
        key, value, horizon = longer
        if attempt == EXTENSIONS or not math.isfinite(horizon):
            break
        system = system.at(n)  # the first run accepted n: its n-th system, once for every rerun
        try:
            longer = simulate(system, n, reps, **{**args, "truncation": tr._replace(**{key: value})})
            res = with_work_of(longer, res, truncation_reruns=attempt + 1)  # the shorter runs' work counts too
        except InputError as e:  # the longer run does not fit the work limits
            refused = f"the horizon {horizon:.4g} it needs is refused: {e.reason}"
            break
    if _within_share(res, rel_tol):  # a small share of J_hat, not yet of the standard error: said, and in ci95
        bound, se = res.info["truncation_bound"], _held_se(res, tr.se_floor)
        why = refused or f"after {EXTENSIONS} longer runs"
        of = "standard errors" if se == res.stderr else f"times the standard error asked for ({se:.3g})"
        note = (f"the truncation bound {bound:.3g} on the tail left out at horizon {res.info['horizon']:.4g} is "
                f"{bound / se:.2g} {of} ({why}); ci95 is widened by it, the estimate may be low by up to "
                "that much (pass a longer horizon to shrink it)")
        return dataclasses.replace(res, warnings=res.warnings + (note,))
    if refused is not None:
        raise InputError("horizon", f"{_too_short(res, first, rel_tol)}; {refused}")
    if not math.isfinite(horizon):
        raise InputError("horizon", f"{_too_short(res, first, rel_tol)}; no horizon makes the bound a share of J_hat = 0")
    raise InputError("horizon", f"{_too_short(res, first, rel_tol)}; pass horizon >= {horizon:.4g}")


def _too_short(res: SimResult, first: float, rel_tol: float) -> str:
    return (f"the default horizon {first:.4g} leaves a truncation bound {res.info['truncation_bound']:.3g} at horizon "
            f"{res.info['horizon']:.4g}, more than {max(TRUNCATION_SHARE, 10.0 * rel_tol):g} of J_hat = {res.value:.4g} (stderr "
            f"{res.stderr:.2g})")


def _scale(res: SimResult) -> float:
    return max(abs(res.value), res.stderr if math.isfinite(res.stderr) else 0.0)


def _within_share(res: SimResult, rel_tol: float) -> bool:
    """``truncation_bound <= max(TRUNCATION_SHARE, 10 rel_tol) max(J_hat, stderr)`` (a looser rel_tol asked for is
    a looser check)."""
    return res.info["truncation_bound"] <= max(TRUNCATION_SHARE, 10.0 * rel_tol) * _scale(res)


def held_to(target, options: dict) -> dict:
    """The flat options of a precision target's runs: their truncation held to the standard error asked for
    (``se_floor = target.rel_se``, unless given), so that a standard error far below it, as the control variates
    and the pilot's floor of replications often reach, does not lengthen the horizon.

    Args:
        target (jaxq.mc.target.Target | None): The precision target (None: the options as given).
        options: Flat options of :func:`simulate_bounded` (``jaxq.simulate``'s).

    Returns:
        The options.
    """
    if target is not None and options.get("se_floor") is None:
        options = {**options, "se_floor": target.rel_se}
    return options


def _held_se(res: SimResult, se_floor: float | None) -> float:
    """The standard error the truncation is held to: ``max(stderr, se_floor |J_hat|)`` (:class:`Truncation`)."""
    se = res.stderr
    floor = (se_floor or 0.0) * abs(res.value) if math.isfinite(res.value) else 0.0
    if not math.isfinite(se):  # no standard error (one replication): the floor where there is one
        return floor if floor > 0.0 else se
    return max(se, floor)


def _longer_truncation(res: SimResult, gamma: float, rel_tol: float, se_floor: float | None = None):
    """None when ``truncation_bound`` is within :func:`_within_share` and at most ``STDERR_SHARE stderr`` (where
    there is a standard error; ``stderr`` at least ``se_floor |J_hat|``, :func:`_held_se`); else ``(option, value,
    horizon)``: the ``horizon`` (event engine) or ``steps`` (uniformised) at which the bound, shrinking like
    ``exp(-gamma T)`` (``r^K``), would be ``rel_tol max(J_hat, stderr)`` and at most half ``STDERR_SHARE stderr``."""
    bound, se = res.info["truncation_bound"], _held_se(res, se_floor)
    has_se = math.isfinite(se) and se > 0
    if bound <= 0.0 or (_within_share(res, rel_tol) and (bound <= STDERR_SHARE * se or not has_se)):
        return None
    target = rel_tol * _scale(res)
    if has_se:
        target = min(target, 0.5 * STDERR_SHARE * se) if target > 0 else 0.5 * STDERR_SHARE * se
    factor = bound / target if target > 0 else math.inf  # > 2: the rerun's truncation is longer
    horizon = res.info["horizon"] + math.log(factor) / gamma
    if res.engine == "uniformized":
        if not math.isfinite(factor):
            return "steps", math.inf, horizon
        big = res.info["steps"] / res.info["horizon"]  # the uniformisation rate
        steps = res.info["steps"] + math.ceil(math.log(factor) / math.log1p(gamma / big))
        return "steps", steps, horizon
    return "horizon", horizon, horizon
