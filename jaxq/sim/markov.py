"""A continuous-time Markov chain stated once, for both drivers.

A Markovian model (the network of seeds 001/003, the fast/slow servers of seed 002, the 2x2 system with
exponential primitives) is a :class:`Markov`: a fixed list of event types ``e = 0 .. E-1`` whose rate in
state ``s`` is ``counts(s)[e] * rates(p)[e]`` (an integer multiplicity times a unit rate: busy servers
of an activity times its service rate, 1 times an arrival rate), and a ``transition`` that applies the
event that fired (including the policy's decisions after it). Both drivers sample the same chain from
this one statement:

* the event driver (:mod:`jaxq.sim.event`) draws the exponential holding time of the total rate and
  the event in proportion to its rate;
* the uniformised driver (:mod:`jaxq.sim.uniformized`) draws the event from one 32-bit word with the
  self-loop as the remainder of the uniformisation rate ``bound(p)`` (a bound on the total rate over
  every reachable state).

What is estimated is a :class:`Functional` of the path, ``int w(t) observe(X_t) dt``: a discounted
integral (``gamma``; cost (2.6) of seed 000, cost (6) of seed 002) and/or a time average over a window
(stationary averages of seeds 001-003). ``transition`` also returns an *event record* (e.g. an arrival
found no server) that the drivers count over the window.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

State = Any
Params = Any


class Markov(NamedTuple):
    """A CTMC (see the module docstring). All functions are pure and act on one replication.

    Attributes:
      name: a label for messages and benchmarks.
      init: ``init(p) -> state``, the deterministic start state.
      counts: ``counts(state, p) -> tuple of E int32 scalars``, the multiplicity of every event (a Python
        ``1`` for an event whose rate does not depend on the state: the drivers then skip a multiplication).
      rates: ``rates(p) -> (E,) float64``, the unit rate of every event.
      bound: ``bound(p) -> float`` (on the host): a bound on ``sum_e counts[e] rates[e]`` over every
        reachable state (the uniformisation rate).
      transition: ``transition(state, fired, p) -> (state, record)`` with ``fired`` a tuple of E bools,
        at most one True (none: a self-loop of the uniformised chain, which must leave the state as it is).
      observe: ``observe(state, p) -> pytree of float64 scalars``: the integrand of the functional.
      snapshot: optional ``snapshot(state, p) -> array``, recorded at fixed times by the event driver.
      controls: optional ``controls(state, p) -> tuple over controls c of tuples over events e`` of
        ``phi[c][e]`` (float64 scalars, or a Python 0 for a term that is always zero): the drivers accumulate
        the approximating martingales ``sum_k w_k sum_e phi[c][e](X_k) (1{e fires at k} - p_e(X_k))``
        (uniformised; ``p_e`` the exact probability of event e in the step) or their continuous-time form
        ``sum_jumps w(t) phi[c][e](X_t-) - int w(t) sum_e phi[c][e](X_t) rate_e(X_t) dt`` (event driver), with
        ``w`` the functional's weight. Each has mean exactly zero, whatever phi (it is evaluated before the
        step's randomness): control variates. With ``phi[c][e] = g_c(x + d_e) - g_c(x)`` they are the
        martingales ``g_c(X_K) - g_c(X_0) - sum (P g_c - g_c)(X_k)`` of Henderson and Glynn.
    """

    name: str
    init: Callable[[Params], State]
    counts: Callable[[State, Params], tuple]
    rates: Callable[[Params], Any]
    bound: Callable[[Params], float]
    transition: Callable[[State, tuple, Params], tuple]
    observe: Callable[[State, Params], Any]
    snapshot: Callable[[State, Params], Any] | None = None
    controls: Callable[[State, Params], tuple] | None = None


def control_increment(phi, fired, prob):
    """``sum_e phi[c][e] (1{e fired} - prob[e])`` for every control c (skipping terms that are a Python 0)."""
    out = []
    for row in phi:
        acc = jnp.float64(0.0)
        for e, v in enumerate(row):
            if isinstance(v, (int, float)) and v == 0:
                continue
            acc = acc + v * (fired[e].astype(jnp.float64) - prob[e])
        out.append(acc)
    return tuple(out)


def difference_controls(transition, g, num_events: int):
    """Henderson-Glynn controls from functions of the state: ``phi[c][e] = g_c(T_e(s)) - g_c(s)`` with ``T_e``
    the (deterministic) transition of event e, policy decisions included.

    ``g(state, p) -> tuple of float64 scalars``; returns a ``controls(state, p)`` for :class:`Markov`. With g
    close to the solution of Poisson's equation of the functional the martingales absorb most of its noise.
    """

    def controls(s, p):
        g0 = g(s, p)
        rows = [[None] * num_events for _ in g0]
        for e in range(num_events):
            fired = tuple(jnp.bool_(k == e) for k in range(num_events))
            ge = g(transition(s, fired, p)[0], p)
            for c in range(len(g0)):
                rows[c][e] = ge[c] - g0[c]
        return tuple(tuple(r) for r in rows)

    return controls


def stack_controls(functional: "Functional", ctl, ctlw, window_scale: float) -> dict:
    """A driver's accumulated controls as per-functional (reps, C) arrays: ``"discounted"`` as accumulated,
    ``"window"`` divided by ``window_scale`` (the window's length or steps), the units of the estimates."""
    out = {}
    if functional.discounted:
        out["discounted"] = np.stack([np.asarray(v) for v in ctl], axis=1)
    if functional.window:
        out["window"] = np.stack([np.asarray(v) / window_scale for v in ctlw], axis=1)
    return out


class Functional(NamedTuple):
    """Which integrals of ``observe`` a run estimates (static: part of the compiled program).

    ``discounted``: ``int_0^T exp(-gamma t) observe dt`` (event driver, T = horizon) or the unbiased
    Rao-Blackwellised ``sum_{k<K} r^k observe(X_k) / (Lambda + gamma)``, ``r = Lambda/(Lambda + gamma)``
    (uniformised driver: the Poisson event times are integrated out).
    ``window``: the time average ``int_{T0}^{T} observe dt / (T - T0)`` (event driver) or the average
    over the uniformised steps standing for [T0, T] (each stands for a mean time ``1/Lambda``).
    """

    discounted: bool = False
    window: bool = False


class Horizon(NamedTuple):
    """The traced numbers of a functional (float64 scalars): discount rate, warm-up and horizon times."""

    gamma: Any
    warmup: Any
    horizon: Any
