"""Renewal primitives: distributions with mean 1 and a given squared coefficient of variation (SCV).

A distribution is written ``name`` or ``name:scv`` (SPEC.md). This module parses and validates the
specification; sampling in JAX lives in :mod:`jaxq.sim.sampling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from jaxq.errors import InputError
from jaxq.model.validate import MAX_MAGNITUDE, MIN_POSITIVE

MAX_ERLANG_PHASES = 1000  # an Erlang draw sums k uniforms' logarithms

# name -> (default SCV or None when the SCV must be given)
_DEFAULT_SCV = {
    "exponential": 1.0,
    "erlang": None,
    "gamma": None,
    "lognormal": None,
    "hyperexponential": None,
    "deterministic": 0.0,
}
NAMES = tuple(_DEFAULT_SCV)


@dataclass(frozen=True)
class Dist:
    """A mean-1 distribution: ``name`` and its SCV (for Erlang, ``k = 1/scv`` phases).

    Attributes:
        name: One of :data:`NAMES`.
        scv: Its squared coefficient of variation.
    """

    name: str
    scv: float

    @property
    def k(self) -> int:
        """Number of phases of an Erlang distribution."""
        return int(round(1.0 / self.scv)) if self.name == "erlang" else 1

    def __str__(self) -> str:
        return f"{self.name}:{self.scv:g}"


def parse(spec: str, key: str) -> Dist:
    """Parse ``name`` or ``name:scv``; raise :class:`InputError` naming ``key`` when invalid.

    Args:
        spec: ``name`` or ``name:scv``.
        key: The key of the errors.

    Returns:
        The distribution.

    Raises:
        InputError: Naming ``key``: not a string, an unknown name, an SCV that is not a number, missing where the
            distribution needs one, not finite, outside the supported range, or not one the distribution can have.
    """
    if not isinstance(spec, str):
        raise InputError(key, f"expected a string like 'erlang:0.5', got {spec!r}")
    name, _, scv_text = spec.strip().partition(":")
    name = name.strip().lower()
    if name not in _DEFAULT_SCV:
        raise InputError(key, f"unknown distribution {name!r}; choose one of {', '.join(NAMES)}")
    if scv_text.strip():
        try:
            scv = float(scv_text)
        except ValueError:
            raise InputError(key, f"SCV {scv_text!r} is not a number") from None
    elif _DEFAULT_SCV[name] is None:
        raise InputError(key, f"{name} needs its SCV, written '{name}:scv'")
    else:
        scv = _DEFAULT_SCV[name]
    if not math.isfinite(scv):
        raise InputError(key, f"SCV must be finite, got {scv}")
    if scv != 0.0 and not MIN_POSITIVE <= abs(scv) <= MAX_MAGNITUDE:
        raise InputError(key, f"SCV {scv:g} is outside the supported range [{MIN_POSITIVE:g}, {MAX_MAGNITUDE:g}]")
    _check_scv(name, scv, key)
    return Dist(name, scv)


def _check_scv(name: str, scv: float, key: str) -> None:
    if name == "exponential" and abs(scv - 1.0) > 1e-12:
        raise InputError(key, f"an exponential distribution has SCV 1, not {scv:g}")
    if name == "deterministic" and scv != 0.0:
        raise InputError(key, f"a deterministic distribution has SCV 0, not {scv:g}")
    if name == "erlang":
        k = 1.0 / scv if scv > 0 else math.inf
        if not (scv > 0 and abs(k - round(k)) < 1e-9 and round(k) >= 1):
            raise InputError(key, f"an Erlang distribution has SCV 1/k for an integer k >= 1, not {scv:g}")
        if round(k) > MAX_ERLANG_PHASES:
            raise InputError(key, f"an Erlang distribution with {round(k)} phases (more than {MAX_ERLANG_PHASES}); "
                                  f"use 'gamma:{scv:g}' for the same mean and SCV")
    if name in ("gamma", "lognormal") and not scv > 0:
        raise InputError(key, f"a {name} distribution needs SCV > 0, not {scv:g}")
    if name == "hyperexponential" and not scv > 1:
        raise InputError(key, f"a hyperexponential distribution needs SCV > 1, not {scv:g}")
