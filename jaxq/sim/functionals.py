"""What the CTMC drivers estimate, written as observers (:mod:`jaxq.mc.observer`) of a
:class:`~jaxq.sim.markov.Markov`.

A run of a Markov model estimates up to two functionals of its path (:class:`~jaxq.sim.markov.Functional`): the
discounted integral ``int_0^T exp(-gamma t) observe(X_t) dt`` and the time average over the window ``[T0, T]``.
Each functional is a group of observers that the drivers fold with that functional's segment weights:

* :func:`observed`: the integral of the model's ``observe`` (as it is for the discounted functional, divided by
  the weights' mass, i.e. averaged, for the window);
* :func:`records`: the event records of the model's transition, summed over the window's jumps;
* :func:`martingales`: the model's control variates ``sum phi_e(X) (jump 1{e fired} - compensator_e)`` (mean zero
  exactly, on each driver with its own compensator), in the units of the functional's estimate;
* a user's observer (under the discounted functional when the run has one, else under the window);

and :func:`snapshots` records ``markov.snapshot`` at fixed times (the event driver's clock). :func:`groups` builds
the groups of a run once (cached, so a driver's compiled program is reused), :func:`results` turns their outputs
into the drivers' per-replication arrays. The drivers themselves own only time, the random stream and the model's
state.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.sim.markov import Functional, Markov
from jaxq.mc.observer import Observer, Segment, combine, per_mass
from jaxq.mc.observer import snapshots as snapshots_of


def _zeros(tree):
    return jax.tree_util.tree_map(lambda v: jnp.zeros(jnp.shape(v), jnp.float64), tree)


def _record_shape(markov: Markov, s, p):
    none = tuple(jnp.bool_(False) for _ in markov.counts(s, p))
    return markov.transition(s, none, p)[1]


def _per_mass(average: bool):
    return per_mass if average else (lambda acc, mass, p: acc)


@lru_cache(maxsize=64)
def observed(markov: Markov, average: bool) -> Observer:
    """``sum weight * observe(held)``: the integral of ``observe`` (a pytree), divided by the mass if ``average``.

    Args:
        markov: The model.
        average: Divide by the weights' mass (the window's average).

    Returns:
        The observer.
    """

    def init(p):
        return _zeros(markov.observe(markov.init(p), p))

    def update(acc, seg: Segment, p):
        return jax.tree_util.tree_map(lambda a, o: a + seg.weight * o, acc, markov.observe(seg.held, p))

    return Observer(init, update, _per_mass(average))


@lru_cache(maxsize=64)
def records(markov: Markov) -> Observer:
    """``sum jump * record``: the model's event records, each weighted as its jump (1 over the window).

    Args:
        markov: The model.

    Returns:
        The observer.
    """

    def init(p):
        s = markov.init(p)
        return _zeros(_record_shape(markov, s, p))

    def update(acc, seg: Segment, p):
        return jax.tree_util.tree_map(lambda a, r: a + seg.jump * r, acc, seg.record)

    return Observer(init, update, lambda acc, mass, p: acc)


def _control_increment(phi, fired, jump, compensator):
    """``sum_e phi[c][e] (jump 1{e fired} - compensator[e])`` for every control c (a Python 0 term skipped)."""
    out = []
    for row in phi:
        acc = jnp.float64(0.0)
        for e, v in enumerate(row):
            if isinstance(v, (int, float)) and v == 0:
                continue
            acc = acc + v * (jnp.where(fired[e], jump, 0.0) - compensator[e])
        out.append(acc)
    return tuple(out)


@lru_cache(maxsize=64)
def martingales(markov: Markov, average: bool) -> Observer:
    """The model's controls (:attr:`Markov.controls`) as martingales of the functional's weights.

    Per segment ``sum_e phi[c][e](held) (jump 1{e fired} - compensator[e])``; the driver's compensator makes each
    mean exactly zero (the event driver's ``rate_e * weight``, the uniformised driver's exact event probabilities).
    Averaged by the mass for the window, as the estimate is.

    Args:
        markov: The model.
        average: Divide by the weights' mass (the window).

    Returns:
        The observer.
    """

    def init(p):
        return tuple(jnp.float64(0.0) for _ in markov.controls(markov.init(p), p))

    def update(acc, seg: Segment, p):
        inc = _control_increment(markov.controls(seg.held, p), seg.fired, seg.jump, seg.compensator)
        return tuple(a + v for a, v in zip(acc, inc))

    return Observer(init, update, _per_mass(average))


def snapshots(markov: Markov) -> Observer:
    """``markov.snapshot`` of the state held at each of the times ``params[1]`` (params: ``(model params, times)``).

    It needs the driver's clock (``Segment.interval``: the event driver).

    Args:
        markov: The model.

    Returns:
        The observer.
    """
    return snapshots_of(markov.snapshot, markov.init)


class Groups(NamedTuple):
    """The observers of a run, by functional (None: not run).

    Attributes:
        discounted: The discounted functional's observers.
        window: The window's observers.
        snapshots: The snapshots' observer.
    """

    discounted: Observer | None
    window: Observer | None
    snapshots: Observer | None


@lru_cache(maxsize=64)
def groups(markov: Markov, functional: Functional, observer: Observer | None = None,
           snapshot: bool = False) -> Groups:
    """The observers a run of ``markov`` folds (cached).

    Per functional the integral of ``observe`` and the controls (window: and the records), a user's ``observer``
    (output ``user``) under the discounted functional if the run has one, else under the window, and the snapshots.

    Args:
        markov: The model.
        functional: Which functionals the run estimates.
        observer: A user's observer (None: none).
        snapshot: Record the snapshots (the event driver with snapshot times).

    Returns:
        The groups.
    """
    ctl = markov.controls is not None
    user = {"user": observer} if observer is not None else {}
    disc = win = None
    if functional.discounted:
        parts = {"integral": observed(markov, False), **({"controls": martingales(markov, False)} if ctl else {}),
                 **user}
        disc = combine(parts)
    if functional.window:
        win = combine({"integral": observed(markov, True), "records": records(markov),
                       **({"controls": martingales(markov, True)} if ctl else {}),
                       **({} if functional.discounted else user)})
    snaps = snapshots(markov) if snapshot and markov.snapshot is not None else None
    return Groups(disc, win, snaps)


def results(markov: Markov, functional: Functional, out: dict) -> dict:
    """The drivers' per-replication results from the groups' outputs.

    Args:
        markov: The model.
        functional: Which functionals the run estimated.
        out: The groups' outputs (``"disc"``, ``"win"``, ``"snap"`` where run).

    Returns:
        ``discounted``, ``window`` (averages), ``records`` (window sums), ``controls`` (per functional a (reps, C)
            numpy array in the units of its estimate), ``observed`` (a user's observer), ``snap``.
    """
    res: dict[str, Any] = {}
    controls = {}
    if functional.discounted:
        d = out["disc"]
        res["discounted"] = d["integral"]
        if "user" in d:
            res["observed"] = d["user"]
        if "controls" in d:
            controls["discounted"] = np.stack([np.asarray(v) for v in d["controls"]], axis=1)
    if functional.window:
        w = out["win"]
        res["window"], res["records"] = w["integral"], w["records"]
        if "user" in w:
            res["observed"] = w["user"]
        if "controls" in w:
            controls["window"] = np.stack([np.asarray(v) for v in w["controls"]], axis=1)
    if markov.controls is not None:
        res["controls"] = controls
    if "snap" in out:
        res["snap"] = out["snap"]
    return res
