"""The mean residual life ``m(u) = E[v - u | v > u]`` of a stream's mean-1 law as sampled, at age ``u >= 0``.

It is what a renewal clock of age ``u`` still owes: the age-filtration controls of the 2x2 event rule
(:mod:`jaxq.sim.models.pss2x2`) weight a clock by it, and their compensator over an interval of age ``[u0, u1]``
is ``int m h du = (u1 - u0) + m(u1) - m(u0)`` (``h`` the hazard rate: ``m' = h m - 1``), exact with the law's
``m``. Per family (a unit-mean law; ``Q`` the regularised upper incomplete gamma function):

* exponential: 1;
* gamma with shape ``a`` (Erlang-k: ``a = k``, by its finite sum; gammahalf and gamma: ``Q`` by 60 terms of its
  series and continued fraction, to a relative 1e-12 for shapes up to ``GAMMA_FIXED_MAX`` = 50; above, by XLA's
  iterative ``igammac``), ``x = a u``:
  ``m = 1 - u + x^a e^-x / (Gamma(a + 1) Q(a, x))``;
* lognormal with ``s^2 = log(1 + c)``, ``d = log(u)/s + s/2``: ``m = Phi(s - d) / Phi(-d) - u``;
* hyperexponential with phases ``(p, M_1)``, ``(1 - p, M_2)`` as sampled (``M_j = 1/(2 p_j)``):
  ``m = (p M_1 e^{-u/M_1} + (1-p) M_2 e^{-u/M_2}) / (p e^{-u/M_1} + (1-p) e^{-u/M_2})``;
* deterministic: ``max(1 - u, 0)``.

The stream is a traced index; the methods of the streams it can be (``streams``; all the spec's by default) are
evaluated and the stream's is selected (as the samplers do, :mod:`jaxq.sim.sampling`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from jax.scipy.special import erfc, gammaincc, gammaln

from jaxq.sim.sampling.methods import GAMMA_FIXED_MAX, METHOD_CODE
from jaxq.sim.sampling.kernels import log
from jaxq.sim.sampling.spec import Spec, _lookup, _stream_eq

_SQRT_HALF = math.sqrt(0.5)

__all__ = ["mean_residual", "memoryless", "random_stream"]


def _erlang(u, k, kmax: int):
    """``1 - u + (x^k/k!) / sum_{j<k} x^j/j!`` with ``x = k u`` (the finite sums of Q(k, x), no exponential), for
    ``k <= kmax`` (static: the terms past every stream's k add nothing)."""
    x = k * u
    term, below, top = jnp.ones_like(u), jnp.ones_like(u), jnp.zeros_like(u)
    for j in range(1, kmax + 1):
        term = term * x / j
        below = below + jnp.where(j < k, term, 0.0)
        top = jnp.where(j == k, term, top)
    return 1.0 - u + top / below


GAMMA_TERMS = 60  # terms of the series and depth of the continued fraction of Q (relative error below 1e-12)


def _gamma(u, a, large: bool = False):
    """``1 - u + x^a e^-x / (Gamma(a+1) Q(a, x))``, ``x = a u``: below ``x = a + 1`` by the series of ``P = 1 - Q``,
    above by the continued fraction of ``Q`` (Numerical Recipes' ``gser``/``gcf``) at a fixed depth, as a loop
    of the vectorised step costs a quarter of the iterative ``gammaincc`` (measured 28 against 108 ns an element)."""
    x = a * u
    safe = jnp.where(x > 0.0, x, 1.0)
    log_g = a * log(safe) - x - gammaln(a + 1.0)
    g = jnp.exp(log_g)  # x^a e^-x / Gamma(a + 1)
    term, total = jnp.ones_like(x), jnp.ones_like(x)
    for j in range(1, GAMMA_TERMS + 1):  # unrolled: one fused loop over the replications (a fori_loop: 2.3x slower)
        term = term * x / (a + j)
        total = total + term
    series = jnp.where(x > 0.0, g / (1.0 - g * total), 0.0)  # P = g * total
    tail = x + (2 * GAMMA_TERMS + 1) - a
    for i in range(GAMMA_TERMS - 1, -1, -1):
        tail = (x + (2 * i + 1) - a) - (i + 1) * (i + 1 - a) / tail
    fraction = tail / a  # Q = g Gamma(a + 1) / (a tail)
    r = jnp.where(x < a + 1.0, series, fraction)
    if large:  # shapes beyond the fixed depth's reach: XLA's iterative igammac (about 4x the cost)
        iterated = jnp.where(x > 0.0, jnp.exp(log_g - log(gammaincc(a, x))), 0.0)
        r = jnp.where(a > GAMMA_FIXED_MAX, iterated, r)
    return 1.0 - u + r


def _lognormal(u, s):
    safe = jnp.where(u > 0.0, u, 1.0)
    d = (log(safe) / s + 0.5 * s) * _SQRT_HALF
    ratio = erfc(d - s * _SQRT_HALF) / erfc(d)  # Phi(s - d) / Phi(-d); no underflow where a sampled v reaches
    return jnp.where(u > 0.0, ratio - u, 1.0)


def _hyperexponential(u, m1, m2):
    p = 0.5 / m1  # the sampled phase probability (the means are balanced: p M_1 = (1 - p) M_2 = 1/2)
    top = jnp.maximum(m1, m2)
    # each phase's exp(u / top - u / M_j): exactly 1 for the phase of the larger mean, one exp for the other's
    e = jnp.exp(u / top - u / jnp.minimum(m1, m2))
    first = m1 >= m2
    e1, e2 = jnp.where(first, 1.0, e), jnp.where(first, e, 1.0)
    return (0.5 * e1 + 0.5 * e2) / (p * e1 + (1.0 - p) * e2)


def _methods(spec: Spec, streams: tuple[int, ...] | None) -> tuple[str, ...]:
    """The sampling methods ``streams`` can have (static; all of the spec's where it does not say per stream)."""
    if streams is None or not spec.stream_methods:
        return spec.methods
    present = {spec.stream_methods[j] for j in streams}
    return tuple(m for m in spec.methods if m in present)


def memoryless(spec: Spec, streams: tuple[int, ...] | None = None) -> bool:
    """Whether every law ``streams`` can have is exponential, so that :func:`mean_residual` is 1 at every age (static).

    Args:
        spec: The streams' static spec.
        streams: The streams (default all).

    Returns:
        True where ``m(u) = 1`` whatever the stream and age.
    """
    return all(m == "exponential" for m in _methods(spec, streams))


def mean_residual(u, spec: Spec, table: dict, stream, streams: tuple[int, ...] | None = None):
    """``E[v - u | v > u]`` of stream ``stream``'s mean-1 law (module docstring).

    Args:
        u (jax.Array): The age in units of the stream's mean (>= 0; within the law's support).
        spec: The streams' static spec (the methods present, per stream).
        table: The streams' parameters (:func:`jaxq.sim.sampling.param_table`).
        stream (int | jax.Array): The stream.
        streams: The streams ``stream`` can be (static; default all): only their methods are evaluated.

    Returns:
        (jax.Array): m(u), float64.
    """
    eq = _stream_eq(stream, len(table["code"]))
    methods = _methods(spec, streams)
    method = _lookup(table, "method", eq) if len(methods) > 1 else None
    c0, c1, c3 = (_lookup(table, f"c{j}", eq) for j in (0, 1, 3))
    out = jnp.ones_like(u)  # exponential
    for name in methods:
        if name == "exponential":
            continue
        if name == "erlang":
            m = _erlang(u, c0, spec.kdirect)
        elif name == "gammahalf":
            m = _gamma(u, c0 + 0.5)
        elif name == "gamma":
            m = _gamma(u, 1.0 / jnp.where(c3 > 0.0, c3, 1.0), spec.large_gamma)
        elif name == "lognormal":
            m = _lognormal(u, jnp.where(c0 > 0.0, c0, 1.0))
        elif name == "hyperexponential":
            m = _hyperexponential(u, jnp.where(c0 > 0.0, c0, 2.0), jnp.where(c1 > 0.0, c1, 2.0))
        elif name == "deterministic":
            m = jnp.maximum(1.0 - u, 0.0)
        else:  # a method without its m here would silently weight by 1
            raise ValueError(f"no mean residual life for the sampling method {name!r}")
        out = m if method is None else jnp.where(method == METHOD_CODE[name], m, out)
    return out


def random_stream(spec: Spec, table: dict, stream):
    """Whether stream ``stream`` draws random variates (not deterministic): a control of a deterministic clock is 0.

    Args:
        spec: The streams' static spec.
        table: The streams' parameters.
        stream (int | jax.Array): The stream.

    Returns:
        (bool | jax.Array): ``True`` where the spec has no deterministic stream.
    """
    if "deterministic" not in spec.methods:
        return True
    return _lookup(table, "method", _stream_eq(stream, len(table["code"]))) != METHOD_CODE["deterministic"]
