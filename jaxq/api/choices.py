"""The choices and defaults of the simulators' options, as the library defines them (the ``jaxq`` command's
``--policy``, ``--engine``, ``--theta-rule``, ``--scheme`` and their defaults are these).

``jaxq.api`` gives each name on first use (``jaxq.api.POLICY_CHOICES``): this module imports the simulators,
which ``import jaxq.api`` does not.
"""

from __future__ import annotations

from jaxq.sde import estimators
from jaxq.sim import ENGINES, pss2x2
from jaxq.tuning import prelimit

__all__ = ["DEFAULT_SDE_SCHEME", "DEFAULT_THETA_EXPONENT", "DEFAULT_THETA_RULE", "ENGINES", "POLICY_CHOICES",
           "SDE_SCHEMES", "THETA_RULES", "TUNE_GRADIENT_REPS", "TUNE_SEARCH_REPS"]

POLICY_CHOICES: tuple[str, ...] = tuple(pss2x2.POLICY_CHOICES)
"""The policies of a 2x2 system by name: ``auto`` (Theorem 2.11's), the six of the switched-policies paper (``P``,
``T2``, ``PP``, ``T2T2``, ``T1T2``, ``T2T1``) and the fixed rules ``RULE@m`` with respect to mode m."""

THETA_RULES: tuple[str, ...] = tuple(pss2x2.THETA_RULES)
"""The rules for the constant c of the threshold ``Theta_n = ceil(c n^a)`` (:mod:`jaxq.policies.thresholds`)."""

DEFAULT_THETA_EXPONENT: float = pss2x2.DEFAULT_THETA_EXPONENT
"""The exponent a of ``Theta_n = ceil(c n^a)`` unless given ((2.28) asks for a in (1/3, 1/2))."""

DEFAULT_THETA_RULE: str = pss2x2.DEFAULT_THETA_RULE
"""The rule for c unless given (one of :data:`THETA_RULES`)."""

SDE_SCHEMES: tuple[str, ...] = tuple(estimators.SCHEMES)
"""The schemes of the workload diffusion (:func:`jaxq.api.simulate_sde`): ``skew``, ``exact``, ``euler``."""

DEFAULT_SDE_SCHEME: str = estimators.DEFAULT_SCHEME
"""The scheme unless given."""

TUNE_SEARCH_REPS: int = prelimit.SEARCH_REPS
"""Replications per candidate of the prelimit search (``jaxq.tune(target="prelimit")``) unless given."""

TUNE_GRADIENT_REPS: int = prelimit.GRADIENT_REPS
"""Antithetic pairs per gradient step of the prelimit tuner's gradient method unless given."""
