"""The sampling method of each law (:func:`_method`): gamma with an integer or a half-integer shape and Erlang with
many phases take another method of the same law (``erlang``, ``gammahalf``, ``gamma``); every other law its family's.
"""

from __future__ import annotations

from jaxq.model.distributions import NAMES, Dist

__all__ = ["FAMILY_CODE", "METHOD_CODE", "NORMAL_METHODS", "SHAPE_TOL", "ERLANG_DIRECT_MAX"]


FAMILY_CODE = {name: c for c, name in enumerate(NAMES)}


# A stream's sampling method is named after the family it samples, or "gammahalf" (gamma with a half-integer
# shape k + 1/2: an Erlang-k sum plus Z^2/2); a gamma with an integer shape k <= ERLANG_DIRECT_MAX is sampled
# by the "erlang" method and an Erlang with more phases by the "gamma" method (the same laws).
METHOD_CODE = {**FAMILY_CODE, "gammahalf": len(NAMES)}
NORMAL_METHODS = {"lognormal", "gammahalf", "gamma"}  # methods that take a standard normal (proposal 0's for gamma)
SHAPE_TOL = 1e-9  # a gamma shape within this (relative) of an integer or half-integer is that number (as Erlang k)
ERLANG_DIRECT_MAX = 12  # Erlang-k with larger k is sampled as gamma(k): fewer words
GAMMA_FIXED_MAX = 50.0  # gamma shapes up to this take mean_residual's fixed-depth Q (rel. error < 1e-12); above,
# the iterative igammac (Spec.large_gamma)


def _method(d: Dist) -> str:
    if d.name == "erlang":
        return "gamma" if d.k > ERLANG_DIRECT_MAX else "erlang"
    if d.name == "gamma":
        a = 1.0 / d.scv
        if abs(a - round(a)) <= SHAPE_TOL * a and 1 <= round(a) <= ERLANG_DIRECT_MAX:
            return "erlang"
        if abs(2 * a - round(2 * a)) <= SHAPE_TOL * a and round(2 * a) % 2 == 1 and round(2 * a) <= 2 * ERLANG_DIRECT_MAX:
            return "gammahalf"
    return d.name


def _shape(d: Dist) -> float:
    return float(d.k) if d.name == "erlang" else 1.0 / d.scv


def _phases(d: Dist) -> int:
    """Erlang phases of a stream sampled by the "erlang" method, or the integer part of a "gammahalf" shape."""
    return int(round(_shape(d))) if _method(d) == "erlang" else int(round(2 * _shape(d))) // 2
