"""A continuous-time Markov chain stated once, for both drivers.

A Markovian model (the network of the uniform-stability and LAP-tightness papers, the fast/slow servers of the
fast/slow-servers paper, the 2x2 system with exponential primitives) is a :class:`Markov`: a fixed list of event types
``e = 0 .. E-1`` whose rate in state ``s`` is ``counts(s)[e] * rates(p)[e]`` (an integer multiplicity times a unit rate:
busy servers of an activity times its service rate, 1 times an arrival rate), and a ``transition`` that applies the
event that fired (including the policy's decisions after it). Both drivers sample the same chain from this one
statement:

* the event driver (:mod:`jaxq.sim.event`) draws the exponential holding time of the total rate and
  the event in proportion to its rate;
* the uniformised driver (:mod:`jaxq.sim.uniformized`) draws the event from one 32-bit word with the
  self-loop as the remainder of the uniformisation rate ``bound(p)`` (a bound on the total rate over
  every reachable state).

What is estimated is a :class:`Functional` of the path, ``int w(t) observe(X_t) dt``: a discounted
integral (``gamma``; cost (2.6) of the switched-policies paper, cost (6) of the fast/slow-servers paper) and/or a time
average over a window (stationary averages of the uniform-stability, fast/slow-servers and LAP-tightness papers).
``transition`` also returns an *event record* (e.g. an arrival found no server) that the drivers count over the window.

The public statement is :class:`MarkovModel` (``jaxq.MarkovModel``): the same chain in a form for users (rates
in the state or multiplicities times unit rates, the event that fired as an index, optional records, bound and
controls), converted once into a :class:`Markov` by :func:`as_markov`. The built-in models are stated as
MarkovModels in the drivers' own form (structured rates, ``one_hot``, ``records``), which converts to the very
functions they give.
"""

from __future__ import annotations

import functools
from functools import lru_cache
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError

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
        reachable state (the uniformisation rate); None: the event driver only.
      transition: ``transition(state, fired, p) -> (state, record)`` with ``fired`` a tuple of E bools,
        at most one True (none: a self-loop of the uniformised chain, which must leave the state as it is).
      observe: ``observe(state, p) -> pytree of float64 scalars``: the integrand of the functional.
      snapshot: optional ``snapshot(state, p) -> array``, recorded at fixed times by the event driver.
      controls: optional ``controls(state, p) -> tuple over controls c of tuples over events e`` of
        ``phi[c][e]`` (float64 scalars, or a Python 0 for a term that is always zero): the drivers accumulate
        the approximating martingales ``sum_k w_k sum_e phi[c][e](X_k) (1{e fires at k} - p_e(X_k))``
        (uniformised; ``p_e`` the exact probability of event e in the step, ``w_k`` the weight of the step's
        jump: ``r^(k+1)`` discounted, 1 on the window's steps) or their continuous-time form
        ``sum_jumps w(t) phi[c][e](X_t-) - int w(t) sum_e phi[c][e](X_t) rate_e(X_t) dt`` (event driver), with
        ``w`` the functional's weight; the window's are divided by its length (per unit time), as its estimates
        (:mod:`jaxq.sim.functionals`). Each has mean exactly zero, whatever phi (it is evaluated before the
        step's randomness): control variates. With ``phi[c][e] = g_c(x + d_e) - g_c(x)`` they are the
        martingales ``g_c(X_K) - g_c(X_0) - sum (P g_c - g_c)(X_k)`` of Henderson and Glynn.
      wrap_check: whether the drivers check every event for an integer leaf of the state that wrapped around its
        dtype (:func:`wraps`; a user's model): such a replication stops there, the state before the event kept,
        and the run is refused after (:func:`wrapped_message`); and every event of a structured model for a
        multiplicity below 0 (:func:`invalid_rates` with ``ints``; the uniformised driver, also for a total rate
        above ``bound``): the state in which it was invalid kept, the run refused after
        (:func:`invalid_rates_message`). The built-in models, whose multiplicities are counts of servers, skip both.
    """

    name: str
    init: Callable[[Params], State]
    counts: Callable[[State, Params], tuple]
    rates: Callable[[Params], Any]
    bound: Callable[[Params], float] | None
    transition: Callable[[State, tuple, Params], tuple]
    observe: Callable[[State, Params], Any]
    snapshot: Callable[[State, Params], Any] | None = None
    controls: Callable[[State, Params], tuple] | None = None
    wrap_check: bool = False


def difference_phi(transition, g, num_events: int):
    """Henderson-Glynn controls from functions of the state: ``phi[c][e] = g_c(T_e(s)) - g_c(s)`` with ``T_e``
    the (deterministic) transition of event e, policy decisions included.

    With g close to the solution of Poisson's equation of the functional the martingales absorb most of its noise.

    Args:
        transition (Callable): The transition in the form of :class:`Markov` (a tuple of bools).
        g (Callable): ``g(state, p) -> tuple of float64 scalars``.
        num_events: The number of events E.

    Returns:
        (typing.Callable): A ``controls(state, p)`` for :class:`Markov`.
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


def invalid_rates(counts, ints: bool = False) -> jax.Array | None:
    """Whether a rate in a state is not a finite number >= 0 (a bool).

    The float rates of a model that states them in the state (``MarkovModel.rates``) and, with ``ints`` (a user's
    model in the structured form), the signed integer multiplicities below 0 (a Python int below 0 too; their unit
    rates are checked once, before the run, so every rate ``counts[e] * rates[e]`` is then a finite number >= 0).
    One comparison an event: the drivers call it at every event.

    Args:
        counts (tuple): The multiplicities (or rates) of the events in the state.
        ints: Also check the signed integer multiplicities.

    Returns:
        The flag; None when nothing is checked (the built-in models' multiplicities).
    """
    bad = None
    for m in counts:
        if isinstance(m, int):  # a Python constant (bool included): known when the program is traced
            b = jnp.bool_(True) if ints and m < 0 else None
        elif jnp.issubdtype(jnp.asarray(m).dtype, jnp.floating):
            b = ~(m >= 0) | (m == jnp.inf)
        elif ints and jnp.issubdtype(jnp.asarray(m).dtype, jnp.signedinteger):
            b = m < 0
        else:  # unsigned or bool: never below 0
            b = None
        if b is not None:
            bad = b if bad is None else bad | b
    return bad


def invalid_rates_message(markov: Markov, flags, states, params, plain: bool) -> str | None:
    """The sentence for the flags of :func:`invalid_rates` over the replications, naming the event and its rate or
    multiplicity.

    Found again from the state a flagged replication stopped in (the drivers keep the state in which the rate was
    invalid).

    Args:
        markov: The model.
        flags (array_like): The flag of each replication.
        states (typing.Any): The replications' states (axis 0 replications).
        params (typing.Any): The model's parameters.
        plain: The rates are ``MarkovModel.rates`` in the state (else multiplicities, ``counts``).

    Returns:
        The sentence; None when no flag is set.
    """
    hit = np.flatnonzero(np.asarray(flags))
    if not hit.size:
        return None
    reps = np.size(flags)
    s = jax.tree_util.tree_map(lambda v: jnp.asarray(v[hit[0]]), states)
    where = ""
    for e, m in enumerate(markov.counts(s, params)):
        b = invalid_rates((m,), ints=True)
        if b is not None and bool(b):
            where = f"event {e} has {'rate' if plain else 'multiplicity'} {np.asarray(m).item()!r}"
            break
    if plain:
        return (f"rates(state, params) returned a negative, NaN or infinite rate in a state reached by {hit.size} "
                f"of {reps} replications{f' ({where})' if where else ''}; every rate must be a finite number >= 0 "
                "in every reachable state")
    return (f"counts(state, params) returned a negative (or NaN or infinite) multiplicity in a state reached by "
            f"{hit.size} of {reps} replications{f' ({where})' if where else ''}; the multiplicity of every event must "
            "be a non-negative integer in every reachable state (the rate of event e is counts[e] * rates(params)[e])")


def _wrap(old, new):
    """:func:`wraps` for one leaf (None: not an integer of at most 32 bits)."""
    dtype = jnp.result_type(old)
    if not jnp.issubdtype(dtype, jnp.integer) or dtype.itemsize > 4:
        return None
    wide = jnp.int64 if dtype.itemsize == 4 else jnp.int32
    return jnp.abs(jnp.asarray(new).astype(wide) - jnp.asarray(old).astype(wide)) > 2 ** (8 * dtype.itemsize - 1)


def wraps(old, new) -> jax.Array | None:
    """Whether an event moved an integer leaf of the state by more than half its dtype's range (a bool).

    The mark of a value that passed the end of its dtype and wrapped around (int8: ``127 + 1 = -128``; uint8:
    ``0 - 1 = 255``). Exact for a change of less than half the range (every wrap of such a change is a jump of more
    than half of it); a single event that really moves a leaf by more than half its range is taken for a wrap too.
    Leaves of 8, 16 and 32 bits are checked, in a wider integer (int64 leaves are not checked). A few integer
    operations a leaf: the drivers call it at every event of a model with ``wrap_check``.

    Args:
        old (typing.Any): The state before the event.
        new (typing.Any): The state after it.

    Returns:
        The flag; None for a state without such leaves.
    """
    bad = None
    for o, n in zip(jax.tree_util.tree_leaves(old), jax.tree_util.tree_leaves(new)):
        w = _wrap(o, n)
        if w is not None:
            w = jnp.any(w)
            bad = w if bad is None else bad | w
    return bad


def wrapped_message(markov: Markov, flags, before, after, params) -> str | None:
    """The sentence for the flags of :func:`wraps` over the replications, naming the event and the leaf.

    Found again from the states a flagged replication stopped in, ``before`` and ``after`` its last event (the event
    whose transition gives ``after``).

    Args:
        markov: The model.
        flags (array_like): The flag of each replication.
        before (typing.Any): The replications' states before their last event (axis 0 replications).
        after (typing.Any): Their states after it.
        params (typing.Any): The model's parameters.

    Returns:
        The sentence; None when no flag is set.
    """
    hit = np.flatnonzero(np.asarray(flags))
    if not hit.size:
        return None
    s, end = (jax.tree_util.tree_map(lambda v: jnp.asarray(v[hit[0]]), x) for x in (before, after))
    events = len(markov.counts(s, params))
    found = []
    for e in range(events):
        new = markov.transition(s, tuple(jnp.bool_(k == e) for k in range(events)), params)[0]
        flat, _ = jax.tree_util.tree_flatten_with_path(s)
        for (path, o), n, m in zip(flat, jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(end)):
            w = _wrap(o, n)
            if w is not None and bool(jnp.any(w)):
                i = tuple(np.argwhere(np.asarray(w))[0])
                name = "the state" + jax.tree_util.keystr(path) + "".join(f"[{k}]" for k in i)
                fired = np.array_equal(np.asarray(n), np.asarray(m))  # the event that ended the path
                values = f"({jnp.result_type(o)}) from {np.asarray(o)[i]} to {np.asarray(n)[i]}"
                found.append((not fired, e, f": event {e} takes {name} {values}"))
                break
    where = min(found)[2] if found else ""
    return (f"the integer state wrapped around its dtype in {hit.size} of {np.size(flags)} replications{where} "
            "(an event moved an integer leaf by more than half its dtype's range); give the state a wider integer "
            "dtype")


class Functional(NamedTuple):
    """Which integrals of ``observe`` a run estimates (static: part of the compiled program).

    Attributes:
        discounted: ``int_0^T exp(-gamma t) observe dt`` (event driver, T = horizon) or the unbiased
            Rao-Blackwellised ``sum_{k<K} r^k observe(X_k) / (Lambda + gamma)``, ``r = Lambda/(Lambda + gamma)``
            (uniformised driver: the Poisson event times are integrated out).
        window: The time average ``int_{T0}^{T} observe dt / (T - T0)`` (event driver) or the average
            over the uniformised steps standing for [T0, T] (each stands for a mean time ``1/Lambda``).
    """

    discounted: bool = False
    window: bool = False


class Horizon(NamedTuple):
    """The traced numbers of a functional (float64 scalars): discount rate, warm-up and horizon times.

    Attributes:
        gamma: The discount rate.
        warmup: The start T0 of the window.
        horizon: The horizon T.
    """

    gamma: Any
    warmup: Any
    horizon: Any


# ------------------------------------------------------------------------------------------ the public statement
class DifferenceControls(NamedTuple):
    """Controls ``phi[c][e] = g_c(T_e(s)) - g_c(s)`` of a :class:`MarkovModel` (see :func:`difference_controls`).

    Attributes:
        g: ``g(state, params) -> tuple of float64 scalars`` (one per control).
    """

    g: Callable[[State, Params], tuple]


def difference_controls(g: Callable[..., tuple]) -> DifferenceControls:
    """Control variates of a :class:`MarkovModel` from functions of its state (Henderson and Glynn).

    For every ``g_c`` of ``g(state, params) -> tuple of float64 scalars`` the drivers accumulate the
    martingale ``sum_jumps w(t) (g_c(X_t) - g_c(X_t-)) - int w(t) (Q g_c)(X_t) dt`` (``Q`` the generator,
    ``w`` the weight of the estimated integral; its discrete form on the uniformised chain), whose mean is exactly
    zero whatever ``g``. The estimates are then controlled by these martingales with coefficients fitted by
    cross-fitting over replication index (:func:`jaxq.stats.controlled_mean`), so they stay unbiased; the closer
    ``g`` is to the solution of Poisson's equation of the observed quantity, the larger the variance reduction.

    Args:
        g: ``g(state, params) -> tuple of float64 scalars`` (one per control).

    Returns:
        A value for the ``controls`` field of :class:`MarkovModel`.

    Raises:
        InputError: Naming ``controls``: ``g`` is not a function.
    """
    if not callable(g):
        raise InputError("controls", f"difference_controls needs a function g(state, params), got {g!r}")
    return DifferenceControls(g)


class MarkovModel(NamedTuple):
    """A continuous-time Markov chain for :func:`jaxq.simulate`, stated by pure functions of one replication.

    Events ``e = 0 .. E-1`` fire at rate ``rate_e(state)``; the event that fires changes the state by
    ``transition``. Two forms of the rates:

    * plain: ``rates(state, params) -> (E,) float64``, the rate of every event in the state;
    * structured (faster on the uniformised driver, which then draws with exact integer thresholds):
      ``counts(state, params) -> tuple of E int32 scalars`` (a multiplicity: busy servers, or a Python ``1``)
      and ``rates(params) -> (E,) float64`` unit rates, the rate of event e being ``counts[e] * rates[e]``. The
      unit rates must be finite numbers >= 0 (checked before the run), the multiplicities integers >= 0 in every
      reachable state: one below 0 ends the run with an InputError naming ``counts`` and the event.

    Attributes:
      init: ``init(params) -> state``, the start state (a pytree of JAX scalars or arrays).
      transition: ``transition(state, event, params) -> state``: ``event`` is the int32 index of the event
        that fired. With ``records=True`` it returns ``(state, record)``, a dict of scalars counted over the
        averaging window (e.g. an arrival that was lost; zeros on the uniformised chain's self-loop, which is
        no event). With ``one_hot=True`` ``event`` is instead a tuple of E
        bools, at most one True (none: a self-loop of the uniformised chain, which must leave the state as it is).
        An event that moves an integer leaf of the state (8 to 32 bits) by more than half its dtype's range, the
        mark of a count that wrapped around (int8: ``127 + 1 = -128``), ends the run with an InputError naming
        ``transition``, the event and the values (:func:`wraps`).
      observe: ``observe(state, params) -> dict of float64 (or integer) scalars``: the quantities whose
        discounted integral and/or time average are estimated.
      rates: the rates, plain or structured (see above).
      counts: the multiplicities of the structured form (None: the plain form).
      rate_bound: ``rate_bound(params) -> float`` (on the host), a bound on the total rate over every reachable
        state: the uniformisation rate. Without it only the event driver runs. A model whose rates exceed it in a
        replication is refused after the run (an InputError naming ``rate_bound``).
      controls: ``difference_controls(g)``, or None (the built-in models may give a function in the form of
        :attr:`Markov.controls`).
      records: whether ``transition`` returns ``(state, record)``.
      one_hot: whether ``transition`` takes a tuple of bools instead of the index.
      snapshot: optional ``snapshot(state, params) -> array`` (the built-in models' state at fixed times).
      name: a label for messages.
    """

    init: Callable[[Params], State]
    transition: Callable
    observe: Callable[[State, Params], Any]
    rates: Callable
    counts: Callable | None = None
    rate_bound: Callable[[Params], float] | None = None
    controls: Any = None
    records: bool = False
    one_hot: bool = False
    snapshot: Callable | None = None
    name: str = "markov"


@lru_cache(maxsize=None)
def as_markov(model: MarkovModel, wrap_check: bool = False) -> Markov:
    """The one internal statement (:class:`Markov`) of a :class:`MarkovModel`, built once per model.

    Cached, so the drivers' compiled programs are reused. A structured model with ``one_hot`` and ``records``
    passes its functions through unchanged.

    Args:
        model: The user's statement.
        wrap_check: :attr:`Markov.wrap_check` (a user's model).

    Returns:
        The internal statement.

    Raises:
        InputError: Naming ``model``, the field or ``controls``: not a MarkovModel, a field that is not a function,
            or controls that are not ``difference_controls(g)`` or None.
    """
    if not isinstance(model, MarkovModel):
        raise InputError("model", f"expected a jaxq.MarkovModel, got {type(model).__name__}")
    for key in ("init", "transition", "observe", "rates"):
        if not callable(getattr(model, key)):
            raise InputError(key, f"the model's {key} must be a function, got {getattr(model, key)!r}")
    if model.counts is not None:
        counts, rates = model.counts, model.rates
    else:
        def counts(s, p):
            r = jnp.asarray(model.rates(s, p), jnp.float64)
            return tuple(r[e] for e in range(r.shape[0]))

        def rates(p):
            shape = jax.eval_shape(lambda: model.rates(model.init(p), p)).shape
            if len(shape) != 1:
                raise InputError("rates", f"rates(state, params) must be a vector (E,), got shape {shape}")
            return jnp.ones(shape, jnp.float64)

    transition = model.transition if model.one_hot else _indexed(model.transition, model.records)
    if not model.records:
        transition = _recorded(transition)
    phi = model.controls
    if isinstance(phi, DifferenceControls):
        g = phi.g

        def phi(s, p):
            return difference_phi(transition, g, len(jax.eval_shape(counts, s, p)))(s, p)
    elif phi is not None and not callable(phi):
        raise InputError("controls", f"expected difference_controls(g) or None, got {phi!r}")
    return Markov(name=model.name, init=model.init, counts=counts, rates=rates,
                  bound=model.rate_bound, transition=transition,
                  observe=model.observe, snapshot=model.snapshot, controls=phi, wrap_check=wrap_check)


def _indexed(transition, records: bool):
    """A transition taking the event's index as one taking a tuple of bools (none: the state unchanged)."""

    def one_hot(s, fired, p):
        idx = sum(jnp.where(f, jnp.int32(e), jnp.int32(0)) for e, f in enumerate(fired))
        anyf = functools.reduce(jnp.logical_or, fired)
        out = transition(s, jnp.asarray(idx, jnp.int32), p)
        new, rec = out if records else (out, None)
        keep = lambda n, o: jnp.where(anyf, n, o).astype(jnp.asarray(o).dtype)  # noqa: E731
        new = jax.tree_util.tree_map(keep, new, s)
        if rec is None:
            return new
        return new, jax.tree_util.tree_map(lambda r: jnp.where(anyf, r, jnp.zeros_like(r)), rec)

    return one_hot


def _recorded(transition):
    """A transition returning the state alone as one returning ``(state, {})``."""
    return lambda s, fired, p: (transition(s, fired, p), {})
