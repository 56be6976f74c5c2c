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
one accumulator less in the hot loop), to normalise by. The observer never sees the clock: the same observer serves
the event driver (exact times, ``w(t) = exp(-gamma t)`` up to the horizon) and the uniformised one (the Poisson
times integrated out: step k weighs ``E int_{T_k}^{T_{k+1}} exp(-gamma t) dt = r^k / (Lambda + gamma)`` and its
jump ``E exp(-gamma T_{k+1}) = r^(k+1)``; a driver may scale every weight and the mass by one constant), and
the expectations of the two are equal. ``held`` and ``after``
are the model's *view* of the states (a small NamedTuple each model defines once); :func:`viewed` adapts an
observer of views to a driver that holds the model's own state.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

State = Any
Params = Any


class Segment(NamedTuple):
    """One piece of a path, with the functional's weights (float64 scalars)."""

    held: Any  # the model's view of the state held over the interval
    weight: Any  # int over the interval of w(t) dt
    after: Any  # the view of the state right after the jump that ends the interval (``held`` for no jump)
    jump: Any  # w(t) at the jump when it is a real event the run counts, else 0


class Observer(NamedTuple):
    """What a run accumulates (see the module docstring); all functions pure, on one replication."""

    init: Callable[[Params], State]
    update: Callable[[State, Segment, Params], State]
    finish: Callable[[State, Any, Params], Any]


def viewed(observer: Observer, view: Callable[[Any, Params], Any]) -> Observer:
    """``observer`` (on views) for segments whose ``held``/``after`` are a model's own states:
    ``view(state, params)`` builds the view the observer reads."""

    def update(s, seg: Segment, p):
        return observer.update(s, seg._replace(held=view(seg.held, p), after=view(seg.after, p)), p)

    return Observer(observer.init, update, observer.finish)
