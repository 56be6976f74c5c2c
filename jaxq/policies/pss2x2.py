"""The six policies of the switched-policies paper for the 2x2 system (Definitions 2.7-2.10), as pure JAX functions.

Every function acts on one replication's state and is written with ``jnp.where`` (no Python branching
on traced values) so that it can be ``vmap``-ed. Indices are 0-based: class i, server k, mode m.

The state the policies see:

* ``x`` (2,) int: jobs of each class in the system (queue + service; the paper's "queue length");
* ``serving`` (2,) int: the class server k is serving, ``-1`` when idle;
* ``mode`` int: the current mode (an index into the two LP modes).

A mode m fixes the roles of Definition 2.8: single-activity class ``i1[m]`` and server ``k1[m]``
(the non-basic activity is (i1, k1)), dual-activity class ``i2[m]`` and server ``k2[m]``. The
single-activity server k1 is dedicated to the dual-activity class i2; the dual-activity server k2
prioritises a class chosen by the rule (P, T1 or T2) that the policy assigns to the current mode.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.model.policy_table import (  # noqa: F401  (the policy table, re-exported: pss2x2.POLICIES, FIXED, ...)
    CHOICES,
    FIXED,
    POLICIES,
    RULE_NAMES,
    RULE_P,
    RULE_T1,
    RULE_T2,
    SAMPLE_EVERY_EVENT,
    SAMPLE_K1_COMPLETION,
    SAMPLE_NEVER,
    PolicyRules,
    uses_threshold,
)

IDLE = -1


class Policy(NamedTuple):
    """A policy of the n-th system as traced data (0-based modes and roles).

    Attributes:
        rule: (2,) int32, ``rule[m]`` the rule (``RULE_P``, ``RULE_T1``, ``RULE_T2``) used while m is the current mode.
        sampling: int32, the mode's sampling times: ``SAMPLE_NEVER``, ``SAMPLE_K1_COMPLETION`` or
            ``SAMPLE_EVERY_EVENT``.
        lower: int32, the lower mode.
        higher: int32, the higher mode.
        level: float64, the switching level in unscaled workload units ``sqrt(n) z`` (inf: never).
        theta: int32, the threshold Theta_n.
        i1: (2,) int32, the single-activity class of each mode (Definition 2.8).
        i2: (2,) int32, the dual-activity class of each mode.
        k1: (2,) int32, the single-activity server of each mode.
        alpha_inv: (2,) float64, ``1 / alpha``: W = x_1/alpha_1 + x_2/alpha_2 (2.10).
    """

    rule: jnp.ndarray  # (2,) int32
    sampling: jnp.ndarray  # int32: SAMPLE_NEVER, SAMPLE_K1_COMPLETION or SAMPLE_EVERY_EVENT
    lower: jnp.ndarray  # int32
    higher: jnp.ndarray  # int32
    level: jnp.ndarray  # float64
    theta: jnp.ndarray  # int32
    i1: jnp.ndarray  # (2,) int32
    i2: jnp.ndarray  # (2,) int32
    k1: jnp.ndarray  # (2,) int32
    alpha_inv: jnp.ndarray  # (2,) float64: W = x_1/alpha_1 + x_2/alpha_2 (2.10)


class Resolved(NamedTuple):
    """What a policy name means for a system: its rules, modes and switching level (scaled workload).

    Attributes:
        name: The policy's name (``auto`` resolved).
        rules: The rules of its modes and its sampling times.
        lower: The lower mode.
        higher: The higher mode.
        z: The switching level in scaled workload units; inf: never switch.
    """

    name: str
    rules: PolicyRules
    lower: int
    higher: int
    z: float  # switching level in scaled workload units; inf: never switch


def resolve(analysis, policy: str, switch_at: float | None) -> Resolved:
    """The modes, rules and switching level a policy name means for a system (Theorem 2.11 for ``auto``).

    A single-mode policy (P, T2) on a dual-mode system uses the lower mode. A dual-mode policy on a
    single-mode system uses the active mode as the lower mode, the other mode as the higher one and
    switches at ``switch_at`` (default: never). ``RULE@m`` fixes the rule and mode m.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        policy: A policy name (one of :data:`CHOICES`).
        switch_at: The switching level z of a dual-mode policy (None: z* of the analysis, or never on a single-mode
            system).

    Returns:
        The resolved policy.

    Raises:
        InputError: Naming ``policy``: not a name (a :class:`~jaxq.policies.hook.Policy2x2`), or an unknown one.
    """
    if not isinstance(policy, str):  # a jaxq.Policy2x2: only the simulators run it
        raise InputError("policy", f"expected a policy name ({', '.join(CHOICES)}); a Policy2x2 runs in "
                                   "jaxq.simulate only")
    an = analysis
    name = an.policy if policy == "auto" else policy
    if name in FIXED:
        rule, m = FIXED[name]
        return Resolved(name, PolicyRules(rule, rule, SAMPLE_NEVER, False), m, m, math.inf)
    if name not in POLICIES:
        raise InputError("policy", f"unknown policy {policy!r}; choose one of {', '.join(CHOICES)}")
    rules = POLICIES[name]
    if an.case == "single":
        lo, hi, z = an.active, 1 - an.active, math.inf
    else:
        lo, hi, z = an.lower, an.higher, an.z_star
    if not rules.dual:
        return Resolved(name, rules, lo, lo, math.inf)
    if switch_at is not None:
        z = float(switch_at)
    return Resolved(name, rules, lo, hi, z)


def make(resolved: Resolved, modes, n: float, theta: int | None) -> Policy:
    """The traced :class:`Policy` of a resolved policy in the n-th system.

    Args:
        resolved: The resolved policy (:func:`resolve`).
        modes (jaxq.planning.modes.Modes): The LP modes.
        n: The scale n.
        theta: The threshold Theta_n (None: 0, no threshold).

    Returns:
        The policy as traced data.
    """
    rule = np.zeros(2, np.int32)
    rule[resolved.lower] = resolved.rules.lower
    rule[resolved.higher] = resolved.rules.higher
    return Policy(
        rule=jnp.asarray(rule), sampling=jnp.int32(resolved.rules.sampling), lower=jnp.int32(resolved.lower),
        higher=jnp.int32(resolved.higher), level=jnp.float64(math.sqrt(n) * resolved.z),
        theta=jnp.int32(0 if theta is None else theta), i1=jnp.asarray(modes.i1, jnp.int32),
        i2=jnp.asarray(modes.i2, jnp.int32), k1=jnp.asarray(modes.k1, jnp.int32),
        alpha_inv=jnp.asarray(1.0 / np.asarray(modes.alpha), jnp.float64))


def initial_mode(pol: Policy, level=None):
    """The current mode of the empty system: the lower mode when the switching level is above 0.

    Args:
        pol: The policy.
        level (jax.Array | None): The switching level (unscaled workload; None: the policy's).

    Returns:
        (jax.Array): The mode (int32).
    """
    level = pol.level if level is None else level
    return jnp.where(0.0 < level, pol.lower, pol.higher).astype(jnp.int32)


def resample(pol: Policy, x, mode, is_arrival, completed_server, level=None):
    """Definition 2.10 after an event: the current mode, resampled at the policy's sampling times.

    Args:
        pol: The policy.
        x (jax.Array): Jobs per class after the event (int, shape (2,)).
        mode (jax.Array): The current mode before the event.
        is_arrival (jax.Array): Whether the event is an arrival.
        completed_server (jax.Array): The server that completed (meaningful when not an arrival).
        level (jax.Array | None): Per-replication switching level (Gaussian-perturbed tuning); None: the policy's.

    Returns:
        (jax.Array): The new current mode (int32).
    """
    level = pol.level if level is None else level
    workload = pol.alpha_inv[0] * x[0].astype(jnp.float64) + pol.alpha_inv[1] * x[1].astype(jnp.float64)  # W (2.10)
    new = sample_mode(mode, pol.sampling, is_arrival, completed_server, pol.k1, workload, level, pol.lower, pol.higher)
    return new.astype(jnp.int32)


def assign(pol: Policy, x, serving_before, mode, theta=None):
    """Definitions 2.7-2.9 in the current mode: every idle server admits a job according to its role and the mode's
    rule.

    Args:
        pol: The policy.
        x (jax.Array): Jobs per class after the event (int, shape (2,)).
        serving_before (jax.Array): The assignment after the event (the completing server idle).
        mode (jax.Array): The current mode (after :func:`resample`).
        theta (jax.Array | None): Per-replication threshold; None: the policy's.

    Returns:
        (tuple): ``(serving, started, prio)``: the new assignment, the servers that start a job, and the class the
            dual-activity server prioritises.
    """
    theta = pol.theta if theta is None else theta
    i1, i2, k1 = pick(pol.i1, mode), pick(pol.i2, mode), pick(pol.k1, mode)
    prio = priority_class(pick(pol.rule, mode), x, i1, i2, theta)
    serving, started = dispatch(x, serving_before, k1, i2, prio)
    return serving, started, prio


def pick(a, i):
    """``a[i]`` for a 2-element array ``a`` and an index ``i`` in {0, 1}, as a select (no gather under vmap).

    Matches jnp indexing for every ``i >= -1``: 0 gives ``a[0]``, anything else ``a[1]`` (jnp wraps -1
    and clamps indices beyond the end).

    Args:
        a (jax.Array): A 2-element array.
        i (jax.Array): The index.

    Returns:
        (jax.Array): ``a[i]``.
    """
    return jnp.where(i == 0, a[0], a[1])


def priority_class(rule, x, i1, i2, theta):
    """Definition 2.8: the class the dual-activity server prioritises under ``rule``.

    P rule (2.8.1): the single-activity class i1. T1 rule (2.8.2): i1 when ``x[i1] >= theta``, else i2.
    T2 rule (2.8.3): i2 when ``x[i2] >= theta``, else i1.

    Args:
        rule (jax.Array): RULE_P, RULE_T1 or RULE_T2 (int, may be traced).
        x (jax.Array): Jobs of each class in the system, shape (2,).
        i1 (jax.Array): The single-activity class of the current mode.
        i2 (jax.Array): The dual-activity class of the current mode.
        theta (jax.Array): The threshold level Theta_n = ceil(n^a_bar) (2.29).

    Returns:
        (jax.Array): The prioritised class (int).
    """
    t1 = jnp.where(pick(x, i1) >= theta, i1, i2)  # x[i1] as a select (no gather under vmap)
    t2 = jnp.where(pick(x, i2) >= theta, i2, i1)
    return jnp.where(rule == RULE_P, i1, jnp.where(rule == RULE_T1, t1, t2))


def queues(x, serving):
    """Jobs waiting (not in service) per class: ``x_i - #{k: serving_k = i}``.

    Args:
        x (jax.Array): Jobs of each class in the system, shape (2,).
        serving (jax.Array): Class served by each server or IDLE, shape (2,).

    Returns:
        (jax.Array): The waiting jobs per class, shape (2,).
    """
    cls = jnp.arange(2)
    in_service = jnp.sum(serving[None, :] == cls[:, None], axis=1)
    return x - in_service


def dispatch(x, serving, k1, i2, prio):
    """Definition 2.7: every available (idle) server admits a job according to its role.

    The single-activity server k1 is dedicated to class i2 (2.7.1): if idle it admits a waiting
    class-i2 job (a new class-i2 arrival is waiting at this point). The dual-activity server
    k2 = 1 - k1 prioritises ``prio`` (2.7.2): if idle it admits a waiting job of class ``prio``,
    otherwise one of the other class. k1 decides first, which is the arrival rule of 2.7.2: an idle
    prioritising server leaves a new arrival to the other server when that one is free and dedicated
    to the arrival's class. Busy servers are not interrupted (non-preemptive).

    Args:
        x (jax.Array): Jobs of each class in the system (after the current event), shape (2,).
        serving (jax.Array): Class served by each server or IDLE, shape (2,).
        k1 (jax.Array): The single-activity (dedicated) server.
        i2 (jax.Array): The class it is dedicated to.
        prio (jax.Array): The class the dual-activity server prioritises (:func:`priority_class`).

    Returns:
        (tuple[jax.Array, jax.Array]): ``(serving, started)``: the new assignment and a bool (2,) marking servers that
            start a job.
    """
    # Component by component (selects on scalars): stacked two-element arrays indexed by traced
    # values become strided gathers under vmap, several times slower than the whole rest of a step.
    sv0, sv1 = serving[0], serving[1]
    q0 = x[0] - ((sv0 == 0).astype(x.dtype) + (sv1 == 0).astype(x.dtype))  # queues(x, serving), exact in x's dtype
    q1 = x[1] - ((sv0 == 1).astype(x.dtype) + (sv1 == 1).astype(x.dtype))
    s1 = jnp.where(k1 == 0, sv0, sv1)
    start1 = (s1 == IDLE) & (jnp.where(i2 == 0, q0, q1) > 0)
    q0 = q0 - jnp.where(start1 & (i2 == 0), 1, 0)
    q1 = q1 - jnp.where(start1 & (i2 == 1), 1, 0)
    k2 = 1 - k1
    s2 = jnp.where(k2 == 0, sv0, sv1)
    other = 1 - prio
    take_p = jnp.where(prio == 0, q0, q1) > 0
    take_o = jnp.where(other == 0, q0, q1) > 0
    start2 = (s2 == IDLE) & (take_p | take_o)
    c2 = jnp.where(take_p, prio, other)
    new1 = jnp.where(start1, i2, s1)
    new2 = jnp.where(start2, c2, s2)
    serving = jnp.stack([jnp.where(k1 == 0, new1, new2), jnp.where(k1 == 1, new1, new2)]).astype(serving.dtype)
    started = jnp.stack([jnp.where(k1 == 0, start1, start2), jnp.where(k1 == 1, start1, start2)])
    return serving, started


def sample_mode(mode, sampling, is_arrival, completed_server, k1, workload, level, lower, higher):
    """Definition 2.10: the current mode after an event.

    At a sampling time the workload W = X_1/alpha_1 + X_2/alpha_2 (2.10) is compared with the level
    ``sqrt(n) z*``: below it the current mode becomes the lower mode, otherwise the higher mode. The
    sampling times are the service completions of the current mode's single-activity server (PP,
    T2T2: 2.10.1-2) or every arrival and service completion (T1T2, T2T1: 2.10.3-4); single-mode
    policies never sample.

    Args:
        mode (jax.Array): The current mode before the event.
        sampling (jax.Array): SAMPLE_NEVER, SAMPLE_K1_COMPLETION or SAMPLE_EVERY_EVENT.
        is_arrival (jax.Array): Whether the event is an arrival.
        completed_server (jax.Array): The server that completed (meaningful when not an arrival).
        k1 (jax.Array): Single-activity server of each mode, shape (2,).
        workload (jax.Array): W after the event (unscaled).
        level (jax.Array): sqrt(n) z (unscaled workload units).
        lower (jax.Array): The lower mode.
        higher (jax.Array): The higher mode.

    Returns:
        (jax.Array): The new current mode.
    """
    at_k1 = jnp.logical_not(is_arrival) & (completed_server == pick(k1, mode))
    sampled = (sampling == SAMPLE_EVERY_EVENT) | ((sampling == SAMPLE_K1_COMPLETION) & at_k1)
    target = jnp.where(workload < level, lower, higher)
    return jnp.where(sampled, target, mode)
