"""The event driver: one event per step, blocks of events, masking past the horizon.

A model supplies an :class:`EventModel`, pure functions over an explicit state pytree (in the style of optax's
``GradientTransformation``)::

    init(key, params)   -> state        # one replication's initial state (key: its own PRNG key)
    step(state, params) -> state        # advance by exactly one event
    done(state, params) -> bool         # True once the replication has passed its horizon
    output(state, params) -> outputs    # what is returned per replication
    events(state)       -> int          # events so far (progress)

The driver runs ``step`` in blocks of ``block`` events (``lax.scan``), a few blocks per call, over a batch
of replications (``vmap``). Within a block a finished replication is masked (its state is frozen), so the
result never depends on the block size, on the chunking or on how replications are batched or sharded:
replication ``r`` always uses the key ``fold_in(PRNGKey(seed), r)``. :func:`markov_event_model` turns a
:class:`~jaxq.sim.markov.Markov` statement into an EventModel (exponential holding times), so a Markovian model
is written once for this driver and the uniformised one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.mc import replications, rng
from jaxq.sim.functionals import groups, results
from jaxq.sim.markov import Functional, Horizon, Markov, invalid_rates, wraps
from jaxq.mc.observer import Observer, Segment

State = Any
Params = Any


class EventModel(NamedTuple):
    """A model's event rule, the program the event driver runs (see the module docstring).

    Attributes:
        init: ``init(key, params) -> state``: one replication's initial state (key: its own PRNG key).
        step: ``step(state, params) -> state``: advance by exactly one event.
        done: ``done(state, params) -> bool``: True once the replication has passed its horizon.
        output: ``output(state, params) -> outputs``: what is returned per replication.
        events: ``events(state) -> int``: events so far (progress).
        frozen_when_done: ``step`` leaves ``done``, ``events`` and every output unchanged once done: no masking.
    """

    init: Callable[[jax.Array, Params], State]
    step: Callable[[State, Params], State]
    done: Callable[[State, Params], jax.Array]
    output: Callable[[State, Params], Any]
    events: Callable[[State], jax.Array]
    frozen_when_done: bool = False  # step leaves done, events and every output unchanged once done: no masking


def masked_step(model: EventModel, state: State, params: Params) -> State:
    """``step`` for a replication that is not done; a finished one keeps its state (a select per state leaf).

    A model with ``frozen_when_done`` guarantees this itself (its finished replications may keep stepping,
    their outputs frozen), so it is stepped as it is.

    Args:
        engine: The event rule.
        state: One replication's state.
        params: The model's parameters.

    Returns:
        The state after the step.
    """
    if model.frozen_when_done:
        return model.step(state, params)
    fin = model.done(state, params)
    new = model.step(state, params)
    return jax.tree_util.tree_map(lambda a, b: jnp.where(fin, a, b), state, new)


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def program(model: EventModel, block: int, blocks_per_call: int) -> replications.Program:
    """The :class:`~jaxq.mc.replications.Program` of an event model (cached: compiled once per shape).

    Args:
        model: The event rule.
        block: Events per block (``lax.scan``).
        blocks_per_call: Blocks per ``advance`` call at most.

    Returns:
        The program.
    """

    def blocks(s, params):
        def body(c):
            s, b = c
            s, _ = jax.lax.scan(lambda x, _: (masked_step(model, x, params), None), s, None, length=block)
            return s, b + 1

        def cond(c):
            s, b = c
            return jnp.logical_not(model.done(s, params)) & (b < blocks_per_call)

        s, _ = jax.lax.while_loop(cond, body, (s, jnp.int32(0)))
        return s

    @jax.jit
    def start(keys, params):
        return jax.vmap(lambda k: model.init(k, params))(keys)

    @jax.jit
    def advance(states, params):
        before = jnp.sum(jax.vmap(model.events)(states))
        states = jax.vmap(lambda s: blocks(s, params))(states)
        done = jnp.all(jax.vmap(lambda s: model.done(s, params))(states))
        return states, done, jnp.sum(jax.vmap(model.events)(states)) - before

    @jax.jit
    def finish(states, params):
        return jax.vmap(lambda s: model.output(s, params))(states)

    return replications.Program(start, advance, finish, unit="events", same=("event", model, block))


def blocks_per_call(size: int, block: int) -> int:
    """Blocks per ``advance`` call for a batch of ``size``: about 2^21 events a call (progress within seconds).

    Args:
        size: The replications of a batch.
        block: Events per block.

    Returns:
        The blocks per call (1 to 4096).
    """
    return int(max(1, min(1 << 12, (1 << 21) // (block * max(size, 1)))))


def run(model: EventModel, params, reps: int, seed: int, *, block: int = 128,
        batching: replications.Batching = replications.Batching(), max_slice: int | None = None,
        work: float | None = None):
    """Run ``reps`` replications of an event model; returns ``(outputs, timing)`` (numpy, axis 0 replications).

    Args:
        engine: The event rule.
        params (typing.Any): The model's parameters.
        reps: The replications.
        seed: Replication r is keyed by ``fold_in(PRNGKey(seed), r)``.
        block: Events per block.
        batching: How the replications are executed (:class:`~jaxq.mc.replications.Batching`).
        max_slice: Caps the replications of a slice on a single CPU device (default None: no cap).
        work: The events expected in all (None: not known; :func:`jaxq.mc.replications.run`).

    Returns:
        (tuple): ``(outputs, timing)`` of :func:`jaxq.mc.replications.run`.
    """
    p = replications.plan(reps, batching.chunk, batching.devices, max_slice, work)
    prog = program(model, int(block), blocks_per_call(p.size, int(block)))
    return replications.run(prog, params, reps, seed, batching=batching, max_slice=max_slice, work=work)


# ------------------------------------------------------------------------------------ Markov chains
class MarkovArgs(NamedTuple):
    """Parameters of a Markov model on the event driver: the model's own and the functional's.

    Attributes:
        params: The model's parameters.
        horizon: The discount rate, warm-up and horizon.
        snap_times: (S,) times at which ``markov.snapshot`` is recorded (S may be 0).
    """

    params: Any
    horizon: Horizon
    snap_times: jax.Array  # (S,) times at which ``markov.snapshot`` is recorded (S may be 0)


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def markov_event_model(markov: Markov, functional: Functional, observer: Observer | None = None,
                       snapshot: bool = False) -> EventModel:
    """The event rule of a Markov model: exponential holding time of the total rate, event in proportion
    to its rate, then the model's transition; what is estimated are observers (:mod:`jaxq.sim.functionals`).

    The state holds the model's state, the time, the observers' states and a key; event j draws two 52-bit
    uniforms from draw j of the replication's stream (:func:`jaxq.mc.rng.uniforms`). Each holding interval
    ``[t0, t1)`` is a :class:`~jaxq.mc.observer.Segment` (its clock ``(t0, min(t1, T))``: the last one, ended by
    the horizon T, is ``[t0, T]`` with no jump) folded into each functional's observers with its weights:
    discounted, ``int exp(-gamma t) dt`` over the interval (up to the horizon) and ``exp(-gamma t1)`` at a jump
    before the horizon; window, the interval's overlap with ``[T0, T)`` and 1 at a jump inside it. The
    compensator of event e is its rate times the interval's weight.

    Args:
        markov: The converted model.
        functional: What to estimate (discounted integral, window average).
        observer: A user's observer (under the discounted functional, else the window's), output ``observed``;
            None: none.
        snapshot: Record ``markov.snapshot`` at the times ``MarkovArgs.snap_times``.

    Returns:
        The engine (its params a :class:`MarkovArgs`).
    """
    disc, win, snaps = groups(markov, functional, observer, snapshot)

    def init(key, a: MarkovArgs):
        p = a.params
        s = markov.init(p)
        # rates in the state (a user's multiplicities too): checked at every event
        checked = invalid_rates(markov.counts(s, p), markov.wrap_check) is not None
        ints = markov.wrap_check and wraps(s, s) is not None  # integers in the state: checked at every event
        return {"key": key, "j": jnp.uint32(0), "t": jnp.float64(0.0), "state": s,
                "events": jnp.int64(0), "disc": disc.init(p) if disc else (), "win": win.init(p) if win else (),
                "snap": snaps.init((p, a.snap_times)) if snaps else (),
                **({"invalid": jnp.bool_(False)} if checked else {}), **({"before": s} if ints else {})}

    def step(c, a: MarkovArgs):
        p, hz = a.params, a.horizon
        s = c["state"]
        u = rng.uniforms(c["key"], c["j"], 2)  # draw j: the holding time's and the event's uniforms
        rates = markov.rates(p)
        counts = markov.counts(s, p)
        cum, tot, each = [], jnp.float64(0.0), []
        for e, m in enumerate(counts):
            each.append(jnp.asarray(m).astype(jnp.float64) * rates[e])
            tot = tot + each[-1]
            cum.append(tot)
        t0 = c["t"]
        t1 = t0 - jnp.log1p(-u[0]) / tot
        if "invalid" in c:  # a rate that is not a finite number >= 0 (a multiplicity below 0) ends the path in that
            # state (done; the run is refused after, naming the event found again from it)
            bad = invalid_rates(counts, markov.wrap_check)
        target = u[1] * tot
        fired = tuple((target < cum[e]) & (target >= (cum[e - 1] if e else 0.0)) for e in range(len(cum)))
        s_new, record = markov.transition(s, fired, p)
        inside = t1 <= hz.horizon  # the state at the horizon is the one before the first event past it
        if "invalid" in c:
            inside = inside & ~bad
        s_new = jax.tree_util.tree_map(lambda a, b: jnp.where(inside, a, b), s_new, s)
        # past the horizon the path ends in the state held: no event fired, no record (the observers never see it)
        seg = Segment(s, 0.0, s_new, 0.0, fired=tuple(f & inside for f in fired),
                      record=jax.tree_util.tree_map(lambda r: jnp.where(inside, r, jnp.zeros_like(r)), record),
                      interval=(t0, jnp.minimum(t1, hz.horizon)))  # the path ends at the horizon
        out = dict(c, state=s_new, t=t1, j=c["j"] + 1, events=c["events"] + inside.astype(jnp.int64))
        if "invalid" in c:
            out["invalid"] = c["invalid"] | bad
        if "before" in c:  # the state before the event, for done
            out["before"] = s

        def weighted(w_int, w_jump):
            return seg._replace(weight=w_int, jump=w_jump, compensator=tuple(m * w_int for m in each))

        if disc:  # w(t) = exp(-gamma t) up to the horizon
            d_int = (jnp.exp(-hz.gamma * t0) - jnp.exp(-hz.gamma * jnp.minimum(t1, hz.horizon))) / hz.gamma
            d_jump = jnp.where(inside, jnp.exp(-hz.gamma * t1), 0.0)
            out["disc"] = disc.update(c["disc"], weighted(d_int, d_jump), p)
        if win:  # w(t) = 1 on [T0, T)
            w_int = jnp.maximum(0.0, jnp.minimum(t1, hz.horizon) - jnp.maximum(t0, hz.warmup))
            w_jump = ((t1 >= hz.warmup) & (t1 < hz.horizon)).astype(jnp.float64)
            out["win"] = win.update(c["win"], weighted(w_int, w_jump), p)
        if snaps:
            out["snap"] = snaps.update(c["snap"], seg, (p, a.snap_times))
        return out

    def done(c, a: MarkovArgs):
        ended = c["t"] >= a.horizon.horizon
        if "invalid" in c:
            ended = ended | c["invalid"]
        if "before" in c:  # an integer that wrapped around its dtype at the last event ends the path there (the
            # state before it kept: the run is refused after); checked on the carried states, not in the step
            ended = ended | wraps(c["before"], c["state"])
        return ended

    def output(c, a: MarkovArgs):
        p, hz = a.params, a.horizon
        out = {"state": c["state"], "events": c["events"], "invalid": c.get("invalid", jnp.bool_(False)),
               "wrapped": wraps(c["before"], c["state"]) if "before" in c else jnp.bool_(False),
               "before": c.get("before", ())}
        if disc:  # the weights' mass: int_0^T exp(-gamma t) dt
            out["disc"] = disc.finish(c["disc"], -jnp.expm1(-hz.gamma * hz.horizon) / hz.gamma, p)
        if win:
            out["win"] = win.finish(c["win"], hz.horizon - hz.warmup, p)
        if snaps:
            out["snap"] = snaps.finish(c["snap"], 0.0, (p, a.snap_times))
        return out

    return EventModel(init, step, done, output, lambda c: c["events"])


def run_markov(markov: Markov, params, functional: Functional, reps: int, seed: int, *, times: Horizon,
               snap_times=(), block: int = 256, batching: replications.Batching = replications.Batching(),
               observer: Observer | None = None):
    """Simulate a Markov model with exact holding times up to ``times.horizon``.

    Args:
        markov: The converted model.
        params (typing.Any): Its parameters.
        functional: What to estimate (discounted integral, window average).
        reps: The replications.
        seed: Replication r is keyed by ``fold_in(PRNGKey(seed), r)``.
        times: A :class:`~jaxq.sim.markov.Horizon` of numbers: the discount rate ``gamma`` of the discounted
            integral and the window ``[warmup, horizon]`` of the time average.
        snap_times (array_like): Times at which ``markov.snapshot`` is recorded.
        block: Events per block.
        batching: How the replications are executed (:class:`~jaxq.mc.replications.Batching`).
        observer: A user's observer (:func:`markov_event_model`; None: none).

    Returns:
        (tuple[dict, typing.Any]): ``(out, timing)`` with per-replication numpy arrays: ``state`` (at the horizon),
            ``discounted`` (``int_0^T exp(-gamma t) observe dt``), ``window`` (average of ``observe`` over [warmup,
            horizon]), ``records`` (event records over the window), ``snap`` (snapshots at ``snap_times``), ``events``,
            ``invalid_rates`` and ``wrapped`` (the flags of :func:`~jaxq.sim.markov.invalid_rates` and, with
            ``markov.wrap_check``, :func:`~jaxq.sim.markov.wraps`: such a replication ended there, ``before`` the state
            before its last event) and, when the model states controls, ``controls``: per functional (``"discounted"``,
            ``"window"``) a (reps, C) array of the martingales weighted as that functional's integral (window: divided
            by ``horizon - warmup``), and with an ``observer`` its per-replication outputs ``observed``.
    """
    gamma, warmup, horizon = (float(t) for t in times)
    snap_times = jnp.asarray(snap_times, jnp.float64).reshape(-1)
    a = MarkovArgs(params, Horizon(jnp.float64(gamma), jnp.float64(warmup), jnp.float64(horizon)), snap_times)
    work = None if markov.bound is None else float(reps) * markov.bound(params) * horizon  # an upper estimate
    if work is not None:
        replications.announce(batching.progress, work, "events")
    model = markov_event_model(markov, functional, observer, bool(snap_times.shape[0]))
    out, timing = run(model, a, reps, seed, block=block, batching=batching, work=work)
    res = {"state": out["state"], "events": out["events"], "invalid_rates": out["invalid"], "wrapped": out["wrapped"],
           "before": out["before"],
           **results(markov, functional, out)}
    if "snap" not in res:  # no snapshot times: an empty record of the snapshot's shape
        shape = () if markov.snapshot is None else jax.eval_shape(markov.snapshot, markov.init(params), params).shape
        res["snap"] = np.zeros((reps, snap_times.shape[0]) + tuple(shape))
    return res, timing
