"""The policies of the 2x2 system as one table (the switched-policies paper, Definitions 2.8-2.10 and Theorem 2.11).

Every list of policies, cases, rules or sampling times in the package derives from :data:`POLICY_TABLE`: the
simulators' rules (:mod:`jaxq.policies.pss2x2` re-exports the names here), the diffusion's choice of a policy
(:func:`jaxq.diffusion.workload.policy_name`) and its threshold term (:mod:`jaxq.diffusion.threshold`), the exact
CTMC (:mod:`jaxq.sim.exact_ctmc`), the random systems drawn per case (:mod:`jaxq.studies.random_draw`,
:mod:`jaxq.studies.random_systems`) and the command line's choices. A policy added to the table is a policy
everywhere. It lives with the model, the lowest layer that needs it (the diffusion's analysis names the policy).

One row per policy: its name, the rule of Definition 2.8 (P, T1 or T2) in the lower and in the higher mode, when the
current mode is sampled (Definition 2.10), whether it is dual-mode (Definition 2.10) or single-mode (Definition
2.9), and the role that the high-priority class p plays in the modes Theorem 2.11 reads (the active mode of the
single case; the lower and the higher mode of the dual case): the single-activity class i1 (:data:`ROLE_I1`) or the
dual-activity class i2 (:data:`ROLE_I2`). What follows from a row (:class:`PolicySpec`'s properties):

* ``threshold``: the rules involve Theta_n (T1 or T2 in some mode);
* ``switching``: the kind of LP modes a dual-mode case needs: p keeps its role in server-switched modes (one
  single-activity class) and changes it in class-switched ones (Lemma 3.3); None for a single-mode policy;
* ``tunable``: something to tune, a switching level (dual-mode) or a threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

# Rules of Definition 2.8.
RULE_P, RULE_T1, RULE_T2 = 0, 1, 2
RULE_NAMES = ("P", "T1", "T2")

# Sampling times of the current mode (Definition 2.10).
SAMPLE_NEVER = 0  # single-mode and fixed-mode policies: the mode never changes
SAMPLE_K1_COMPLETION = 1  # PP, T2T2: service completions of the current mode's single-activity server
SAMPLE_EVERY_EVENT = 2  # T1T2, T2T1: every arrival and every service completion
SAMPLING_NAMES = ("never", "k1", "every")  # by code: the names jaxq.sim.exact_ctmc.Switching takes

# The role of the high-priority class p in a mode (Theorem 2.11).
ROLE_I1, ROLE_I2 = 1, 2  # p is the mode's single-activity class i1 / its dual-activity class i2


class PolicyRules(NamedTuple):
    """A policy as data: the rule in the lower / higher mode and when the current mode is sampled.

    Attributes:
        lower: The rule (``RULE_*``) in the lower mode.
        higher: The rule in the higher mode.
        sampling: When the current mode is sampled (``SAMPLE_*``).
        dual: Whether the policy is dual-mode.
    """

    lower: int
    higher: int
    sampling: int
    dual: bool


def uses_threshold(rules) -> bool:
    """True when the policy's rules involve the threshold Theta_n (T1 or T2 in some mode).

    Args:
        rules (PolicyRules | PolicySpec): The policy's rules (anything with ``lower`` and ``higher``).

    Returns:
        Whether a rule is T1 or T2.
    """
    return rules.lower != RULE_P or rules.higher != RULE_P


@dataclass(frozen=True)
class PolicySpec:
    """One policy of the table (module docstring): name, rules, sampling times, single or dual mode, roles of p.

    Attributes:
        name: The policy's name.
        lower: The rule (RULE_*) in the lower mode: the active mode of a single-mode policy.
        higher: The rule in the higher mode (a single-mode policy: the lower mode's).
        sampling: SAMPLE_*.
        dual: Whether the policy is dual-mode.
        roles: p's role (ROLE_*) in the active mode (single) or in the lower and higher modes (dual).

    Raises:
        ValueError: Roles that do not fit a single- or dual-mode policy, a single-mode policy that samples the mode or
            has two rules, or a dual-mode one that never samples it.
    """

    name: str
    lower: int  # the rule (RULE_*) in the lower mode: the active mode of a single-mode policy
    higher: int  # the rule in the higher mode (a single-mode policy: the lower mode's)
    sampling: int  # SAMPLE_*
    dual: bool
    roles: tuple[int, ...]  # p's role (ROLE_*) in the active mode (single) or in the lower and higher modes (dual)

    def __post_init__(self):
        if len(self.roles) != (2 if self.dual else 1) or not set(self.roles) <= {ROLE_I1, ROLE_I2}:
            raise ValueError(f"{self.name}: roles {self.roles} do not fit a {'dual' if self.dual else 'single'}-mode "
                             "policy")
        if (self.sampling == SAMPLE_NEVER) == self.dual or not (self.dual or self.lower == self.higher):
            raise ValueError(f"{self.name}: a single-mode policy never samples the mode and has one rule; a dual-mode "
                             "one samples it")

    @property
    def rules(self) -> PolicyRules:
        return PolicyRules(self.lower, self.higher, self.sampling, self.dual)

    @property
    def threshold(self) -> bool:
        return uses_threshold(self)

    @property
    def switching(self) -> str | None:
        return ("server" if self.roles[0] == self.roles[1] else "class") if self.dual else None

    @property
    def tunable(self) -> bool:
        return self.dual or self.threshold


POLICY_TABLE: dict[str, PolicySpec] = {spec.name: spec for spec in (
    # Definition 2.9 (single mode): one rule at all times, w.r.t. the active mode.
    PolicySpec("P", RULE_P, RULE_P, SAMPLE_NEVER, False, (ROLE_I1,)),
    PolicySpec("T2", RULE_T2, RULE_T2, SAMPLE_NEVER, False, (ROLE_I2,)),
    # Definition 2.10 (dual mode).
    PolicySpec("PP", RULE_P, RULE_P, SAMPLE_K1_COMPLETION, True, (ROLE_I1, ROLE_I1)),
    PolicySpec("T2T2", RULE_T2, RULE_T2, SAMPLE_K1_COMPLETION, True, (ROLE_I2, ROLE_I2)),
    PolicySpec("T1T2", RULE_T1, RULE_T2, SAMPLE_EVERY_EVENT, True, (ROLE_I1, ROLE_I2)),
    PolicySpec("T2T1", RULE_T2, RULE_T1, SAMPLE_EVERY_EVENT, True, (ROLE_I2, ROLE_I1)),
)}

# What the table says, in the forms the package reads.
POLICIES: dict[str, PolicyRules] = {name: spec.rules for name, spec in POLICY_TABLE.items()}
BY_ROLES: dict[tuple[int, ...], str] = {spec.roles: name for name, spec in POLICY_TABLE.items()}  # Theorem 2.11
# Fixed-mode baselines "RULE@m": rule P, T1 or T2 w.r.t. mode m (1-based) at all times.
FIXED = {f"{r}@{m}": (rule, m - 1) for rule, r in enumerate(RULE_NAMES) for m in (1, 2)}
CHOICES = ("auto",) + tuple(POLICIES) + tuple(FIXED)

if len(BY_ROLES) != len(POLICY_TABLE):  # pragma: no cover: Theorem 2.11 picks one policy per role pattern
    raise ValueError("two policies of the table have the same roles of p")
