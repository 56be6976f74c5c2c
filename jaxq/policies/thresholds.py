"""The threshold Theta_n = ceil(c n^a_bar) of the T1/T2 rules (the switched-policies paper, (2.28)-(2.29)) and the rules
for c.

(2.28) asks for an exponent ``a_bar`` in ``(1/2 - zeta(m), 1/2)``, ``(1/3, 1/2)`` when every moment is finite (every
family jaxq samples); any constant ``c > 0`` keeps the policy asymptotically optimal, and (2.29) takes c = 1. At a
finite n the constant decides how J_n compares with V0: the held jobs cost the limit's threshold term, linear in
``Theta_n / sqrt(n)`` (:mod:`jaxq.diffusion.threshold`), while a threshold too small for the primitives' variability
lets the protected queue run empty and its dedicated server idle (Proposition 5.5 fails at that n). The rules here
choose c from the system; :func:`theta_rule_constant` states each in closed form. One rule, ``excursion``, also moves
the switching level: it minimises a model of J_n over (z, Theta_n) at each n (:mod:`jaxq.policies.excursion`,
:func:`rule_levels`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from jaxq.errors import InputError

# a_bar of Theta_n = ceil(c n^a_bar): near the lower end of (2.28)'s interval (1/3, 1/2). The best threshold of the
# n-th system grows more slowly than n^(1/3) on the random systems (docs/results/random_systems.md), so the smallest
# exponent (2.28) allows tracks it best.
DEFAULT_THETA_EXPONENT = 0.34
THETA_RULES = ("paper", "scv", "depth", "lean", "root", "case", "excursion")
EXCURSION_RULE = "excursion"  # Theta_n and z_n minimise the excursion model of J_n (jaxq.policies.excursion)
LEAN_FACTOR = 0.125  # "lean": c = D / 8, about 3 excursion depths at n = 10^4 with a_bar = 0.34 (n^0.34 = 23)
ROOT_FACTOR = 1.0 / 3.0  # "root": c = sqrt(D) / 3
# "case": root's constant times a factor per kind of policy: the geometric mean, per kind, of the tuned threshold over
# root's on the tuned subset of the random systems at n = 10^4 (docs/results/random_systems.md)
SWITCHED_FACTOR = 0.4  # T1T2, T2T1: one mode holds no threshold; the tuned Theta_n is 0.11-0.95 x root's
SINGLE_T2_FACTOR = 1.3  # T2 (one mode): the tuned Theta_n is 0.6-2.4 x root's
DEFAULT_THETA_RULE = "excursion"  # the rule that holds best across the random systems (docs/results/random_systems.md)
ABSOLUTE_RULE = "paper"  # the rule whose constant is 1: with it, theta_constant is c of Theta_n = ceil(c n^a_bar) itself


class Levels(NamedTuple):
    """The levels of Theorem 2.11's policy in the n-th system: where it switches modes and how many jobs it holds.

    The threshold is Theta_n = ceil(c n^a_bar) (2.28)-(2.29), c = ``theta_constant`` times the rule's constant
    (:func:`rule_levels`; ``excursion`` chooses Theta_n itself and the exponent does not change it).

    Attributes:
        switch_at: The switching level z in scaled workload (None: the rule's, z* of the analysis for every rule but
            ``excursion``; refused for a policy that never switches).
        theta_exponent: The exponent a_bar of Theta_n.
        theta_rule: The threshold rule (one of :data:`THETA_RULES`).
        theta_constant: The factor of the rule's constant c.
        perturb: ``(sign, tau_z, tau_c)``, z and c perturbed per replication by Gaussians (the smoothed gradient of
            :mod:`jaxq.tuning.prelimit`; event driver only); None: not perturbed.
    """

    switch_at: float | None = None
    theta_exponent: float = DEFAULT_THETA_EXPONENT
    theta_rule: str = DEFAULT_THETA_RULE
    theta_constant: float = 1.0
    perturb: tuple[float, float, float] | None = None

    @classmethod
    def absolute(cls, switch_at: float | None, theta_exponent: float, theta_constant: float | None) -> "Levels":
        """The levels of a tuned policy: z and the threshold's constant c itself.

        Args:
            switch_at: The switching level z (scaled workload; None: the rule's).
            theta_exponent: The exponent a_bar of Theta_n = ceil(c n^a_bar).
            theta_constant: The constant c itself (rule :data:`ABSOLUTE_RULE`); None, for a policy without a threshold,
                is 1.

        Returns:
            The levels.
        """
        return cls(switch_at, theta_exponent, ABSOLUTE_RULE, 1.0 if theta_constant is None else theta_constant)


THETA_MAX = 2**31 - 1  # the simulators hold Theta_n in an int32


def theta_level(n: float, exponent: float, constant: float = 1.0) -> int:
    """Threshold Theta_n = ceil(c n^a_bar) ((2.29) has c = 1).

    Args:
        n: The scale n.
        exponent: The exponent a_bar.
        constant: The constant c.

    Returns:
        Theta_n.

    Raises:
        InputError: Naming ``theta_constant``: Theta_n beyond the simulators' int32 (:data:`THETA_MAX`).
    """
    level = constant * n**exponent
    if not level <= THETA_MAX:
        raise InputError("theta_constant", f"Theta_n = c n^a = {level:.3g} (c = {constant:g}, n = {n:g}, a = "
                                           f"{exponent:g}) is beyond the threshold's range (at most {THETA_MAX})")
    return int(math.ceil(round(level, 9)))


def excursion_depth(system, p: int, k1: int) -> float:
    """The mean depth D (in jobs) of the excursions of class p's queue below the threshold under a T2 rule.

    ``D = (lambda_p C_a,p^2 + mu_{p k1} C_s,p k1^2) / (2 (lambda_p - mu_{p k1}))``, under the T2 rule of a mode
    whose dedicated server k1 serves p.

    While p's queue is below Theta_n the dual-activity server serves the other class, so p's queue is a random walk
    pushed up at the rate ``n (lambda_p - mu_{p k1}) > 0`` with variance rate ``n (lambda_p C_a,p^2 + mu_{p k1}
    C_s,p k1^2)``: the depth of its excursions below Theta_n is about exponential with mean D, which does not depend
    on n; an excursion deeper than Theta_n empties the queue and idles server k1. Rates are the first-order
    ``lambda``, ``mu``.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        p: The protected class (0-based).
        k1: Its dedicated server (0-based).

    Returns:
        The mean depth D.
    """
    lam, mu = float(system.lam[p]), float(system.mu[p, k1])
    var = lam * float(system.ca2[p]) + mu * float(system.cs2[p, k1])
    return var / (2.0 * (lam - mu))


def theta_rule_constant(rule: str, analysis, resolved) -> float:
    """The constant c of ``Theta_n = ceil(c n^a_bar)`` that a threshold rule gives this system and policy.

    With D the excursion depth of the protected queue (:func:`excursion_depth`; under the T2 rule of mode m the
    protected class is the dual-activity class p = i2(m), the HPC, and k1 = k1(m)):

    * ``paper``: c = 1 ((2.29)).
    * ``scv``: c = D / D_exp = ``(lambda_p C_a,p^2 + mu_{p k1} C_s,p k1^2) / (lambda_p + mu_{p k1})``, the
      rate-weighted SCV of p's arrivals and of its service at the dedicated server: 1 for exponential
      primitives (the paper's threshold), larger with variable ones.
    * ``depth``: c = D itself.
    * ``lean``: c = D / 8 (:data:`LEAN_FACTOR`): Theta_n about 3 D at n = 10^4 with a_bar = 0.34.
    * ``root``: c = sqrt(D) / 3 (:data:`ROOT_FACTOR`). The best threshold of the n-th system, found by a search
      on 24 random systems at n = 10^3 and 10^4, grows like D^0.5-0.64 (a regression of log Theta* on log D and
      log n); this rule minimises the worst J_n / V0 at n = 10^4 over them and halves the median gap of ``paper``
      (docs/results/random_systems.md).
    * ``case``: root's constant times :data:`SWITCHED_FACTOR` for a dual-mode policy with a T1 rule in one mode
      (T1T2, T2T1), :data:`SINGLE_T2_FACTOR` for the single-mode T2 policy, 1 otherwise (T2T2): the tuned
      thresholds of the random systems sit below root's where one mode holds none and above it under T2 alone.

    Dual-mode policies with a T2 rule in both modes take the larger constant; a policy without a T2 rule
    (P, PP, the fixed ``P@m``, ``T1@m``) gets c = 1. ``excursion`` depends on n: :func:`rule_levels`.

    Args:
        rule: The threshold rule (one of :data:`THETA_RULES` but ``excursion``).
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis (system and modes).
        resolved (jaxq.policies.pss2x2.Resolved): The resolved policy (its modes and rules).

    Returns:
        The constant c.

    Raises:
        InputError: Naming ``theta_rule``: an unknown rule, or ``excursion``.
    """
    from jaxq.policies.pss2x2 import RULE_T1, RULE_T2

    check_rule(rule)
    if rule == EXCURSION_RULE:
        raise InputError("theta_rule", "the excursion rule's constant depends on n: use rule_levels")
    if rule == "paper":
        return 1.0
    system, md = analysis.system, analysis.modes
    t2 = {m for m, r in ((resolved.lower, resolved.rules.lower), (resolved.higher, resolved.rules.higher))
          if r == RULE_T2}
    depths = [excursion_depth(system, int(md.i2[m]), int(md.k1[m])) for m in sorted(t2)]
    if not depths:
        return 1.0
    d = max(depths)
    if rule == "scv":
        return max(_scv_constant(system, int(md.i2[m]), int(md.k1[m])) for m in sorted(t2))
    if rule == "lean":
        return LEAN_FACTOR * d
    if rule == "root":
        return ROOT_FACTOR * math.sqrt(d)
    if rule == "case":
        rules = resolved.rules
        factor = (SWITCHED_FACTOR if rules.dual and RULE_T1 in (rules.lower, rules.higher)
                  else SINGLE_T2_FACTOR if not rules.dual else 1.0)
        return factor * ROOT_FACTOR * math.sqrt(d)
    return d


def check_rule(rule: str) -> None:
    """Refuse a threshold rule that is not one of :data:`THETA_RULES`.

    Args:
        rule: The threshold rule.

    Raises:
        InputError: Naming ``theta_rule``: an unknown rule.
    """
    if rule not in THETA_RULES:
        raise InputError("theta_rule", f"unknown threshold rule {rule!r}; choose one of {', '.join(THETA_RULES)}")


def rule_levels(rule: str, analysis, resolved, n: float, exponent: float,
                switch_at: float | None = None) -> tuple[float, float | None]:
    """The constant c of ``Theta_n = ceil(c n^a_bar)`` and the switching level a threshold rule gives the n-th system.

    Every rule but ``excursion`` gives :func:`theta_rule_constant` and keeps z. ``excursion`` gives the pair
    ``(Theta_n, z_n)`` that minimises the excursion model of J_n (:func:`jaxq.policies.excursion.levels`; z fixed
    at ``switch_at`` when given), written as ``c = Theta_n / n^a_bar`` so that ``ceil(c n^a_bar) = Theta_n``. The
    model is that of Theorem 2.11's policy, whose held class is the HPC; for another policy (a baseline such as
    ``T2`` on a P system, or ``T1@1``), and at an n where the held jobs alone would reach every switching level the
    model tries or the given ``switch_at`` (it does not describe that n), ``excursion`` gives ``root``'s constant
    and keeps z. A policy without a threshold (P, PP) gets c = 1 and keeps z under every rule.

    Args:
        rule: The threshold rule (one of :data:`THETA_RULES`).
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        resolved (jaxq.policies.pss2x2.Resolved): The resolved policy.
        n: The scale n.
        exponent: The exponent a_bar.
        switch_at: The switching level z the excursion model keeps fixed (None: it searches z).

    Returns:
        ``(c, z)``: the constant and the switching level (None: the resolved policy's).

    Raises:
        InputError: Naming ``theta_rule``: an unknown rule.
    """
    from jaxq.policies import excursion
    from jaxq.policies.pss2x2 import uses_threshold

    check_rule(rule)
    if not uses_threshold(resolved.rules):
        return 1.0, None
    if rule != EXCURSION_RULE:
        return theta_rule_constant(rule, analysis, resolved), None

    found = excursion.levels(analysis, resolved, n, switch_at) if resolved.name == analysis.policy else None
    if found is None:
        return theta_rule_constant("root", analysis, resolved), None
    return found.theta / float(n) ** exponent, (found.z if switch_at is None else None)


def _scv_constant(system, p: int, k1: int) -> float:
    lam, mu = float(system.lam[p]), float(system.mu[p, k1])
    return (lam * float(system.ca2[p]) + mu * float(system.cs2[p, k1])) / (lam + mu)
