"""Observers: what a run accumulates along its path, as pure functions over a typed state (optax style).

A path of a queueing model is a sequence of *segments*: a state held over an interval, then the jump that
ends the interval. An :class:`Observer` folds the segments into a small per-replication state::

    init(params)                  -> state     # before the first segment
    update(state, segment, params) -> state    # after each segment
    finish(state, mass, params)   -> outputs   # per-replication results (a pytree of arrays)

The driver supplies each :class:`Segment` with the *weights* of the functional it integrates: ``weight``, the
integral of the weight function ``w(t)`` over the interval, and ``jump``, ``w`` at the jump's time when the
jump is a real event the run counts (0 otherwise); ``finish`` gets the functional's *mass*, the sum of every
segment's ``weight`` over the run, which the driver knows in closed form (so the observer need not add it up:
one accumulator less in the hot loop), to normalise by. An observer of the weights needs no clock (drivers that
have one also give it, ``Segment.interval``, for what needs it: snapshots at fixed times): the same observer serves
the event driver (exact times, ``w(t) = exp(-gamma t)`` up to the horizon) and the uniformised one (the Poisson
times integrated out: step k weighs ``E int_{T_k}^{T_{k+1}} exp(-gamma t) dt = r^k / (Lambda + gamma)`` and its
jump ``E exp(-gamma T_{k+1}) = r^(k+1)``), and the expectations of the two are equal up to where each run ends
(the event driver at the horizon T, the uniformised one after its K steps, whole pages of 64: at the K-th jump
of the Poisson clock, whose time has mean K / Lambda). ``held`` and ``after``
are the model's *view* of the states (a small NamedTuple each model defines once); :func:`viewed` adapts an
observer of views to a driver that holds the model's own state.

The weights are the functional's own, unscaled, on every driver: ``E sum weight f(held)`` is the discounted
integral ``E int_0^T exp(-gamma t) f(X_t) dt`` and ``E sum jump g(held, after)`` the discounted sum
``E sum_i exp(-gamma T_i) g(X_{T_i-}, X_{T_i})`` over the real events up to the horizon. So an observer that
returns its accumulators as they are estimates those discounted quantities, and one that divides by ``mass``
estimates averages under the discounted occupation measure, with the same expectation on both drivers.

Several observers run together as one (:func:`combine`: a dict of states, a dict of outputs). A user's observers
reach the drivers through ``jaxq.simulate(..., observers={"name": observer})``, on a
:class:`~jaxq.sim.markov.MarkovModel` (segments of its states) and on the 2x2 system (segments of
:class:`jaxq.sim.models.pss2x2_diagnostics.View`), where the diagnostics are an observer too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp

from jaxq.errors import InputError

State = Any
Params = Any


class Segment(NamedTuple):
    """One piece of a path, with the functional's weights (float64 scalars).

    A Markov chain's path is constant over the interval and ``weight_after`` is 0. A diffusion's step (the SDE
    driver) is the linear interpolation from ``held`` to ``after``, with no jump (``jump`` 0): ``weight`` and
    ``weight_after`` are the integrals of w against the two end points' shares, ``int w(t) (1 - s(t)) dt`` and
    ``int w(t) s(t) dt`` with s going from 0 to 1 over the step, so ``weight f(held) + weight_after f(after)``
    integrates a function f that is linear along the step exactly, any f to O(step) per unit time.

    The CTMC drivers add what martingales and event counts need: ``fired`` (which event type ended the interval),
    ``compensator[e]`` (event driver: ``rate_e(held) * weight``, the compensator of the weighted counting process
    of e; uniformised: ``E[jump * fired[e] | held]``, the step's exact event probability times the jump's weight),
    so that ``sum over segments of phi(held) (jump * fired[e] - compensator[e])`` has mean zero for any function
    phi of the held state, and ``record`` (the model's event record). The drivers with a clock give it as
    ``interval`` (the Markov event driver, the 2x2 event rule, the SDE driver's steps ``(k h, (k + 1) h)``, the
    network diffusion's Euler scheme); the uniformised driver integrates it out and so cannot give it. The SDE driver gives each
    step's ``martingale``: the increment dM of Z over the step (mean zero given ``held``) times w at the step's
    start, so that ``sum f(held) martingale`` (an Ito sum) has mean zero for any f.

    The clock, ``interval = (t0, t1)``, is the part of the path the segment covers: ``held`` over ``[t0, t1)``,
    ``after`` from ``t1`` on. ``t1`` is the time of the event that ends the interval or the end of the path,
    whichever comes first: the horizon T on the event drivers (the Markov event driver, the 2x2 event rule), whose
    last segment is ``[t0, T]`` with no jump (the first event past T never happens: ``after`` is ``held``), and the
    last step's end on the Euler scheme (T rounded to whole steps). So no interval extends past the path's end, the
    lengths ``t1 - t0`` add up to T, and the state at T is the last segment's ``after`` (the one after an event
    exactly at T).

    Attributes:
        held: The model's view of the state held over the interval (a diffusion: at the step's start).
        weight: Int over the interval of w(t) dt (a diffusion: the start point's share).
        after: The view of the state right after the jump that ends the interval (``held`` for no jump).
        jump: w(t) at the jump when it is a real event the run counts, else 0.
        weight_after: The end point's share of the integral (a diffusion's step; 0 for a jump process).
        fired: A CTMC's event types: a tuple of E bools, the event that ended the interval (None: no CTMC).
        compensator: Per event type e, the compensator of jump * fired[e] over the interval (see above).
        record: The model's record of the event that ended the interval (a CTMC; zeros for no event).
        interval: (t0, t1), t1 at most the horizon, where the driver has a clock (see above).
        martingale: A diffusion step's martingale increment of the state times w at the step's start.
    """

    held: Any  # the model's view of the state held over the interval (a diffusion: at the step's start)
    weight: Any  # int over the interval of w(t) dt (a diffusion: the start point's share)
    after: Any  # the view of the state right after the jump that ends the interval (``held`` for no jump)
    jump: Any  # w(t) at the jump when it is a real event the run counts, else 0
    weight_after: Any = 0.0  # the end point's share of the integral (a diffusion's step; 0 for a jump process)
    fired: Any = None  # a CTMC's event types: a tuple of E bools, the event that ended the interval (None: no CTMC)
    compensator: Any = None  # per event type e, the compensator of jump * fired[e] over the interval (see below)
    record: Any = None  # the model's record of the event that ended the interval (a CTMC; zeros for no event)
    interval: Any = None  # (t0, t1), t1 at most the horizon, where the driver has a clock (see above)
    martingale: Any = None  # a diffusion step's martingale increment of the state times w at the step's start


class Observer(NamedTuple):
    """What a run accumulates (see the module docstring); all functions pure, on one replication.

    Attributes:
        init: ``init(params) -> state``, before the first segment.
        update: ``update(state, segment, params) -> state``, after each segment.
        finish: ``finish(state, mass, params) -> outputs``, per-replication results (a pytree of arrays).
    """

    init: Callable[[Params], State]
    update: Callable[[State, Segment, Params], State]
    finish: Callable[[State, Any, Params], Any]


def viewed(observer: Observer, view: Callable[[Any, Params], Any]) -> Observer:
    """``observer`` (on views) for segments whose ``held``/``after`` are a model's own states.

    Args:
        observer: The observer of views.
        view: ``view(state, params)`` builds the view the observer reads.

    Returns:
        The observer of the model's own states.
    """

    def update(s, seg: Segment, p):
        return observer.update(s, seg._replace(held=view(seg.held, p), after=view(seg.after, p)), p)

    return Observer(observer.init, update, observer.finish)


def with_params(observer: Observer, select: Callable[[Params], Any]) -> Observer:
    """``observer`` run on ``select(params)`` instead of the driver's params.

    E.g. the model's parameters and the times of :func:`snapshots`. Define the result once (module level): a new one
    is a new compiled program.

    Args:
        observer: The observer.
        select: ``select(params)``, the params the observer gets.

    Returns:
        The observer on the selected params.
    """
    return Observer(lambda p: observer.init(select(p)),
                    lambda s, seg, p: observer.update(s, seg, select(p)),
                    lambda s, mass, p: observer.finish(s, mass, select(p)))


def per_mass(acc, mass, params):
    """A ``finish`` that divides every leaf of the state by the mass: averages under the weights' measure.

    Args:
        acc (typing.Any): The state (a pytree of accumulators).
        mass (typing.Any): The functional's mass.
        params (typing.Any): The params (unused).

    Returns:
        (typing.Any): The state with every leaf divided by ``mass``.
    """
    return jax.tree_util.tree_map(lambda v: v / mass, acc)


@lru_cache(maxsize=64)
def _combined(items: tuple) -> Observer:
    names = [k for k, _ in items]
    parts = [o for _, o in items]

    def init(p):
        return {k: o.init(p) for k, o in zip(names, parts)}

    def update(s, seg: Segment, p):
        return {k: _same_layout(k, s[k], o.update(s[k], seg, p)) for k, o in zip(names, parts)}

    def finish(s, mass, p):
        return {k: _numbers(k, o.finish(s[k], mass, p)) for k, o in zip(names, parts)}

    return Observer(init, update, finish)


def tree_layout(tree) -> tuple:
    """``(treedef, ((shape, dtype), ...))`` of a pytree: what a carried state must keep from step to step.

    Args:
        tree (typing.Any): The pytree.

    Returns:
        ``(treedef, ((shape, dtype), ...))``.
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(jnp.shape(v)), str(jnp.result_type(v))) for v in leaves)


def _same_layout(name: str, before, after):
    """``after`` (an observer's new state) if it has the layout of ``before``; else one InputError naming the
    observer (checked while the driver's program is traced, once)."""
    if tree_layout(after) != tree_layout(before):
        raise InputError(f"observers.{name}", f"update(state, segment, params) must return a state of the structure, "
                                              f"shapes and dtypes init(params) gave ({tree_layout(before)[1]}), got "
                                              f"{tree_layout(after)[1]} (structure {jax.tree_util.tree_structure(after)})")
    return after


def _numbers(name: str, out):
    """``out`` (an observer's outputs) if it is numbers: a number, an array or a dict of them; else one InputError
    naming the observer."""
    leaves = jax.tree_util.tree_leaves(out)
    ok = out is not None and all(isinstance(v, (int, float, complex, bool)) or hasattr(v, "dtype") for v in leaves)
    if not ok:
        raise InputError(f"observers.{name}", f"finish(state, mass, params) must return numbers (a number, an array "
                                              f"or a dict of them), got {out!r}")
    return out


def combine(observers: Mapping[str, Observer]) -> Observer:
    """The observers of a dict run as one: its state and its outputs are dicts by the same names.

    Cached on the observers themselves, so that the same dict gives the same (hashable) observer and a driver
    that caches its compiled program by observer compiles once.

    Args:
        observers: Name -> observer.

    Returns:
        The combined observer.
    """
    return _combined(tuple(observers.items()))


def check_observers(observers, key: str = "observers") -> dict[str, Observer]:
    """``observers`` as a dict of :class:`Observer` by name (None: empty).

    Args:
        observers (typing.Any): A dict of name -> :class:`Observer`, or None.
        key: The name a refusal gives.

    Returns:
        The observers by name.

    Raises:
        InputError: Naming ``key`` for anything else (not a mapping, a name that is not an identifier, a value that is
            not an Observer).
    """
    if observers is None:
        return {}
    if not isinstance(observers, Mapping):
        raise InputError(key, f"expected a dict of name -> jaxq.Observer, got {type(observers).__name__}")
    out = {}
    for name, obs in observers.items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise InputError(key, f"an observer's name must be an identifier, got {name!r}")
        if not isinstance(obs, Observer):
            raise InputError(f"{key}.{name}", f"expected a jaxq.Observer(init, update, finish), got "
                                              f"{type(obs).__name__}")
        out[name] = obs
    return out


def integral(f: Callable[[Any, Params], Any]) -> Observer:
    """The observer of ``int_0^T w(t) f(X_t) dt`` (returned as it is, not divided by the mass), on every driver.

    ``weight f(held) + weight_after f(after)`` per segment. Cached on ``f``: the same function gives the same observer.

    Args:
        f: ``f(view, params)`` returns a scalar.

    Returns:
        The observer.
    """
    return _integral(f)


@lru_cache(maxsize=64)
def _integral(f) -> Observer:

    def init(p):
        return jnp.zeros((), jnp.float64)

    def update(acc, seg: Segment, p):
        if isinstance(seg.weight_after, (int, float)) and seg.weight_after == 0:  # a jump process's segment
            return acc + seg.weight * f(seg.held, p)
        return acc + (seg.weight * f(seg.held, p) + seg.weight_after * f(seg.after, p))

    return Observer(init, update, lambda acc, mass, p: acc)


def supremum(f: Callable[[Any, Params], Any]) -> Observer:
    """The observer of ``sup_t f(X_t)`` over the path (the states held and reached; the weights play no part).

    Cached on ``f``.

    Args:
        f: ``f(view, params)`` returns a scalar.

    Returns:
        The observer.
    """
    return _supremum(f)


@lru_cache(maxsize=64)
def _supremum(f) -> Observer:

    def init(p):
        return jnp.full((), -jnp.inf, jnp.float64)

    def update(acc, seg: Segment, p):
        return jnp.maximum(acc, jnp.maximum(f(seg.held, p), f(seg.after, p)))

    return Observer(init, update, lambda acc, mass, p: acc)


def snapshots(f: Callable[[Any, Params], Any], start: Callable[[Params], Any]) -> Observer:
    """The observer of ``f(X_t)`` at fixed times, on the drivers with a clock (``Segment.interval``: the event
    drivers, the SDE driver, the network Euler scheme). Cached on ``(f, start)``.

    A segment gives the state at each time of ``[t0, t1)`` (``held``) and at ``t1`` (``after``: the path is
    right-continuous, and its last segment ends at the horizon T with ``after`` the state at T); a time the path
    does not reach (past its end) stays 0.

    Args:
        f: ``f(state, params)``, the value recorded (an array of any shape).
        start: ``start(params)``, a state to take the shape of ``f`` from.

    Returns:
        An :class:`Observer` whose params are ``(params, times)``, ``times`` an (S,) array, and whose output is
            ``f`` at each time, an ``(S,) + shape`` float64 array.
    """
    return _snapshots(f, start)


@lru_cache(maxsize=64)
def _snapshots(f, start) -> Observer:

    def init(pt):
        p, times = pt
        v = f(start(p), p)
        return jnp.zeros(jnp.shape(times) + jnp.shape(v), jnp.float64)

    def update(snap, seg: Segment, pt):
        p, times = pt
        t0, t1 = seg.interval
        held, after = f(seg.held, p), f(seg.after, p)
        shape = jnp.shape(times) + (1,) * jnp.ndim(held)
        now = ((times >= t0) & (times < t1)).reshape(shape)
        end = (times == t1).reshape(shape)  # the state at t1: the next segment's held, or the state at the horizon
        return jnp.where(now, held, jnp.where(end, after, snap))

    return Observer(init, update, lambda snap, mass, pt: snap)

