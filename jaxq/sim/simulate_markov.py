"""Monte Carlo of a user's :class:`~jaxq.sim.markov.MarkovModel`: discounted integrals and time averages.

:func:`simulate_markov` checks its inputs once, converts the model into the drivers' statement once
(:func:`jaxq.sim.markov.as_markov`), runs the event or the uniformised driver over chunks and devices (replication
r keyed by ``fold_in(PRNGKey(seed), r)``) and returns a :class:`~jaxq.mc.result.SimResult` with one estimate per
observed quantity and functional: ``<name>_discounted`` (``E int_0^T exp(-gamma t) observe dt``) and
``<name>_average`` (the time average over [warmup, T]); ``<name>_rate`` for the window's event records per unit
time. With controls (:func:`jaxq.sim.markov.difference_controls`) every estimate is controlled, cross-fitted by
replication index (:meth:`jaxq.mc.result.Estimate.with_controls`), the plain mean beside it. Observers
(:mod:`jaxq.mc.observer`) add their outputs as estimates ``<name>`` / ``<name>_<key>``.

The front of every Markov simulator: :func:`run_chain` picks the driver by :func:`choose_engine`, the one
rule for ``engine="auto"`` of every simulator, and runs a converted model (:class:`~jaxq.sim.markov.Markov`)
with its options (horizon or step counts, warm-up, discount, snapshots at fixed times, controls, observers,
batching and devices). :func:`simulate_markov` (a user's model), the network CTMC and M/M/c
(:mod:`jaxq.sim.network`) and the fast/slow system (:mod:`jaxq.sim.fastslow`) run through it; each keeps its own
option checking and summary. (The 2x2 system, :mod:`jaxq.sim.pss2x2`, runs its own models on the same drivers,
chosen by the same :func:`choose_engine`.)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.model.validate import check_seed, check_work
from jaxq.precision import float64
from jaxq.sim import ENGINES, event, uniformized
from jaxq.sim.markov import (Functional, Horizon, Markov, MarkovModel, as_markov, invalid_rates_message,
                              wrapped_message)
from jaxq.mc.observer import check_observers, combine, tree_layout
from jaxq.mc.replications import Batching
from jaxq.mc.result import Estimate, SimResult, add_observed, timed


NO_RATE_BOUND = "the model has no rate_bound, so only the event driver runs it (engine='event')"
"""The refusal of the uniformised driver for a model without a rate bound (key ``engine``)."""
SNAPSHOTS_NEED_EVENT = ("snap_times", "snapshots at fixed times need the event engine (engine = 'event')")
"""The refusal of the uniformised driver for a run with snapshots at fixed times: ``(key, message)``."""


LOCKSTEP_BATCH = 256
LOCKSTEP_LONG = 5_000_000
"""``auto`` gives a run of fewer than LOCKSTEP_BATCH replications of more than LOCKSTEP_LONG uniformised steps each to
the event driver. Measured without the loop options of :mod:`jaxq.xla_flags`: in a small batch each lockstep step cost
about 0.5 us a replication on a CPU (the 2x2 pss_P at n = 10^5, a fixed run of 16 replications: 9.4 s a replication,
the event driver 1.5 s), and a precision target at large n needs few replications (its pilot's 16 and a run as
long). With them both engines are faster and the order may have turned (pss_P at n = 10^5, 32 replications, two
cores: the event driver 19.9 s, the uniformised 11.8 s for the same number of events, docs/performance.md)."""


def slow_lockstep(reps: int, steps: float) -> bool:
    """Whether ``reps`` replications of ``steps`` uniformised steps each are few and long (:data:`LOCKSTEP_BATCH`).

    Args:
        reps: The replications of the run.
        steps: The uniformised steps of a replication.

    Returns:
        True where ``auto`` takes the event driver for them.
    """
    return reps < LOCKSTEP_BATCH and steps > LOCKSTEP_LONG


def choose_engine(engine, rate_bound: bool, needs_event: bool = False, *, no_rate_bound: str = NO_RATE_BOUND,
                  event_only: tuple[str, str] = SNAPSHOTS_NEED_EVENT, long_and_few: bool = False) -> str:
    """The driver that runs a model: the one rule of every simulator with the ``engine`` option.

    ``"auto"`` is the uniformised driver (:mod:`jaxq.sim.uniformized`) when the model has a rate bound, the run
    asks for nothing only the event driver gives and its replications are not few and long (``long_and_few``,
    :func:`slow_lockstep`), else the event driver (:mod:`jaxq.sim.event`); ``"event"`` and
    ``"uniformized"`` are taken as given. The Markov simulators pass whether the model has a rate bound and whether
    snapshots at fixed times are asked for; the 2x2 system (:func:`jaxq.sim.pss2x2.simulate`) whether its
    primitives are exponential and whether the run needs the event driver, with its own messages.

    Args:
        engine (str): ``auto``, ``event`` or ``uniformized``.
        rate_bound: Whether the uniformised driver can run the model (a rate bound).
        needs_event: Whether the run asks for what only the event driver gives (snapshots at fixed times).
        no_rate_bound: The message of the InputError naming ``engine`` for the uniformised driver without a rate
            bound.
        event_only: The key and message of the InputError for the uniformised driver when ``needs_event``.
        long_and_few: The run's replications are few and long (:func:`slow_lockstep`): ``auto`` takes the event
            driver.

    Returns:
        ``"event"`` or ``"uniformized"``.

    Raises:
        InputError: Naming ``engine`` for a value not in ``jaxq.sim.ENGINES`` or for the uniformised driver
            without a rate bound; naming ``event_only``'s key for the uniformised driver when ``needs_event``.
    """
    if engine not in ENGINES:
        raise InputError("engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "auto":
        return "uniformized" if rate_bound and not needs_event and not long_and_few else "event"
    if engine == "uniformized" and not rate_bound:
        raise InputError("engine", no_rate_bound)
    if engine == "uniformized" and needs_event:
        raise InputError(*event_only)
    return engine


class Steps(NamedTuple):
    """A run's length on the uniformised driver in steps; the discounted sum runs over all of them (in whole pages).

    Attributes:
        warm: The steps before the window (>= 0).
        window: The steps in it (>= 1).
    """

    warm: int
    window: int


def window_steps(big: float, warmup: float, horizon: float) -> Steps:
    """The window [warmup, horizon] in steps at rate ``big``, each end rounded on its own.

    ``round(big warmup)`` warm-up steps, ``max(1, round(big (horizon - warmup)))`` in the window (the networks' and
    M/M/c's).

    Args:
        big: The uniformisation rate.
        warmup: The window's start.
        horizon: Its end.

    Returns:
        The steps.
    """
    return Steps(round(big * warmup), max(1, round(big * (horizon - warmup))))


class ChainRun(NamedTuple):
    """What :func:`run_chain` returns.

    Attributes:
        out: The driver's per-replication outputs (with ``observed``, the observers' outputs, when there are
            observers).
        timing: Its timing.
        engine: The engine that ran.
        info: Uniformised: ``Lambda``, ``steps``, ``warm_steps``, ``window_steps``, ``r``; event: empty.
    """

    out: dict
    timing: Any
    engine: str
    info: dict


def run_chain(mk: Markov, params, functional: Functional, reps: int, seed: int, *, times: Horizon,
              engine: str = "auto", steps: Steps | None = None, snap_times=None, observers=None,
              batching: Batching = Batching()) -> ChainRun:
    """Run a Markov model on the driver :func:`choose_engine` picks: the one engine dispatch of the Markov
    simulators (the module docstring).

    The work is checked before the run (:func:`jaxq.model.validate.check_work`, naming ``horizon``, or ``steps``
    when they are given).

    Args:
        mk: The converted model (:func:`jaxq.sim.markov.as_markov`).
        params (typing.Any): Its parameters.
        functional: What to estimate (discounted integral, window average).
        reps: The replications.
        seed: Replication r is keyed by ``fold_in(PRNGKey(seed), r)``.
        times: The discount rate, warm-up and horizon (:class:`~jaxq.sim.markov.Horizon`, units of time; horizon
            None: a run given in ``steps`` only, whose warm-up is not read).
        engine: ``auto``, ``event`` or ``uniformized`` (:func:`choose_engine`).
        steps: The uniformised driver's length in steps (:class:`Steps`); None: from ``times``,
            ``round(Lambda T)`` steps in all, the window the last ``round(Lambda T) - round(Lambda warmup)`` (at
            least 1) of them, no warm-up without a window (the event driver reads only ``times``; a run given by
            ``steps`` alone, horizon None, runs on the uniformised driver only).
        snap_times (typing.Any): Times at which the model's ``snapshot`` is recorded (event driver; None: none).
        observers (dict | None): Name -> :class:`~jaxq.mc.observer.Observer` of the model's states (None: none),
            under the discounted functional when there is one, else the window's.
        batching: First replication, chunk, devices, progress (:class:`~jaxq.mc.replications.Batching`).

    Returns:
        The run's outputs, timing, engine and information.
    """
    engine = choose_engine(engine, mk.bound is not None, snap_times is not None)
    observers = check_observers(observers)
    watch = combine(observers) if observers else None
    gamma, warmup, horizon = times
    if engine == "uniformized":
        big = float(mk.bound(params))
        if not (math.isfinite(big) and big > 0):
            raise InputError("rate_bound", f"rate_bound(params) = {big!r} is not a positive finite number")
        by_time = horizon is not None
        check_work("horizon" if by_time else "steps", reps, big * horizon if by_time else steps.warm + steps.window,
                   unit="steps", reps_key="reps", per_replication_limit=uniformized.MAX_STEPS)
        if steps is None:
            warm = round(big * warmup) if functional.window else 0
            steps = Steps(warm, max(1, round(big * horizon) - warm))
        out, timing, info = uniformized.run(mk, params, functional, reps, seed, gamma=gamma, warm_steps=steps.warm,
                                            steps=steps.window, batching=batching, observer=watch)
        return ChainRun(out, timing, engine, info)
    if horizon is None:
        raise InputError("engine", "a run given in uniformised steps runs on the uniformised driver only")
    if mk.bound is not None:
        check_work("horizon", reps, float(mk.bound(params)) * horizon, reps_key="reps", per_replication_limit=2.0**31)
    out, timing = event.run_markov(mk, params, functional, reps, seed, times=Horizon(gamma, warmup, horizon),
                                   snap_times=() if snap_times is None else snap_times, batching=batching,
                                   observer=watch)
    return ChainRun(out, timing, engine, {})



class MarkovRun(NamedTuple):
    """What a run of a :class:`~jaxq.sim.markov.MarkovModel` estimates and how it runs.

    Attributes:
      horizon: the simulated time T of every replication.
      discount: the discount rate gamma > 0 of the discounted integral (None: not estimated).
      warmup: the start of the averaging window [warmup, T] (None: no time average).
      engine: ``"auto"`` (uniformised when the model has a ``rate_bound``, :func:`choose_engine`), ``"event"`` or
        ``"uniformized"``.
      batching: first replication, replications per compiled call, devices, progress
        (:class:`~jaxq.mc.replications.Batching`).
      observers: statistics of the path, a dict of name -> :class:`~jaxq.mc.observer.Observer` of the model's
        states: with ``discount`` their segments carry the discounted weights (the mass ``int_0^T exp(-gamma t)
        dt``), without it the window's (1 over ``[warmup, T]``, the mass its length: ``acc / mass`` is a time
        average); each output is an estimate ``<name>`` or ``<name>_<key>``.
    """

    horizon: float
    discount: float | None = None
    warmup: float | None = None
    engine: str = "auto"
    batching: Batching = Batching()
    observers: Any = None


def _positive(value, key: str, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(key, f"expected a number, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) and (x >= 0 if zero else x > 0)):
        raise InputError(key, f"expected a finite number {'>= 0' if zero else '> 0'}, got {value!r}")
    return x


def check_run(model, run: MarkovRun, reps, seed) -> tuple[MarkovRun, Functional]:
    """Check a run's inputs and return it with its functional.

    Args:
        model (jaxq.sim.markov.MarkovModel): The chain.
        run: What to estimate and how.
        reps (int): Replications (at least 2).
        seed (int): The base seed.

    Returns:
        ``(run, functional)``: the run with its numbers checked, its engine chosen and its batching checked.

    Raises:
        InputError: Naming the key: not a MarkovModel, too few replications, a bad seed, horizon, discount, warmup,
            engine, batching or observers.
    """
    if not isinstance(model, MarkovModel):
        raise InputError("model", f"expected a jaxq.MarkovModel, got {type(model).__name__}")
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 2:
        raise InputError("reps", f"expected an integer >= 2 (one replication has no standard error), got {reps!r}")
    check_seed(seed, "seed")
    horizon = _positive(run.horizon, "horizon")
    discount = None if run.discount is None else _positive(run.discount, "discount")
    warmup = None if run.warmup is None else _positive(run.warmup, "warmup", zero=True)
    if discount is None and warmup is None:
        raise InputError("discount", "give discount > 0 (a discounted integral) and/or warmup (a time average)")
    if warmup is not None and warmup >= horizon:
        raise InputError("warmup", f"the window [warmup, horizon] is empty: warmup {warmup} >= horizon {horizon}")
    engine = choose_engine(run.engine, model.rate_bound is not None)
    if not isinstance(run.batching, Batching):
        raise InputError("batching", f"expected a jaxq.mc.replications.Batching, got {type(run.batching).__name__}")
    observers = check_observers(run.observers)
    run = run._replace(batching=run.batching.checked(), horizon=horizon, discount=discount, warmup=warmup,
                       engine=engine, observers=observers)
    return run, Functional(discounted=discount is not None, window=warmup is not None)


def check_params(params):
    """The model's parameters as JAX arrays.

    Args:
        params (typing.Any): The model's parameters (a pytree).

    Returns:
        (typing.Any): The pytree with JAX arrays for its leaves.

    Raises:
        InputError: Naming ``params`` and the entry: one that is not a number or an array of numbers (a string, say).
    """

    def leaf(path, v):
        dtype = v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype
        if not (np.issubdtype(dtype, np.number) or dtype == np.bool_):
            raise InputError("params", f"params{jax.tree_util.keystr(path)} must be a number or an array of numbers, "
                                       f"got {v!r}")
        return jnp.asarray(v)

    return jax.tree_util.tree_map_with_path(leaf, params)


def _traced(fn, *args):
    """``fn(*args)`` traced only (:func:`jax.eval_shape`): the model's functions of the state."""
    return jax.eval_shape(fn, *args)


def _host(fn, *args):
    """``fn(*args)`` called on the host: ``rate_bound``, a function of the parameters' values."""
    return fn(*args)


def _missing(fn, args, error: KeyError, call=_traced) -> list:
    """The entries that ``fn(*args)`` reads from its parameters (a dict, ``args[-1]``) but they lack: the key of
    ``error``, and of the KeyErrors after it, while giving the entry (a number) makes its KeyError go away."""
    params, missing = args[-1], []
    while isinstance(params, dict) and len(error.args) == 1 and error.args[0] not in params and len(missing) < 8:
        key = error.args[0]
        params = {**params, key: jnp.float64(1.0)}
        try:
            call(fn, *args[:-1], params)
        except KeyError as e:
            if e.args == error.args:  # not an entry of the parameters (of the state, say)
                return missing
            missing, error = missing + [key], e
            continue
        except Exception:  # noqa: BLE001  (another error: the entry was read; its value is the user's to give)
            pass
        return missing + [key]
    return missing


class _Entries(dict):
    """A stand-in for parameters that are not a dict (None: not given): records the entries a model function reads
    by name (``p["lam"]``, ``p.get("lam")``; ``p.lam``, a named tuple's field), each read a 1.0."""

    def __init__(self):
        super().__init__()
        self.read: list = []

    def __getitem__(self, key):
        if isinstance(key, str) and f"params[{key!r}]" not in self.read:
            self.read.append(f"params[{key!r}]")
        return jnp.float64(1.0)

    def get(self, key, default=None):
        return self[key]

    def __getattr__(self, name):
        if name.startswith("_"):  # Python's and JAX's own probes of an object
            raise AttributeError(name)
        if f"params.{name}" not in self.read:
            self.read.append(f"params.{name}")
        return jnp.float64(1.0)


def _entries_read(fn, args, call=_traced) -> list:
    """The entries that ``fn(*args)`` reads by name from its parameters (``args[-1]``), as ``params['lam']`` or
    ``params.lam``, found by running it on a stand-in (:class:`_Entries`): what it needs when the parameters given
    are not a dict."""
    probe = _Entries()
    try:
        call(lambda *a: fn(*a, probe), *args[:-1])
    except Exception:  # noqa: BLE001  (the entries read before the error are what is asked)
        pass
    return probe.read[:8]


def _kind(params) -> str:
    """What parameters that are not a dict are, for a message."""
    if params is None:
        return "None (not given)"
    if isinstance(params, (int, float, np.generic, np.ndarray, jax.Array)) and np.ndim(params) == 0:
        return f"the number {np.asarray(params).item()!r}"
    return "an array" if isinstance(params, (np.ndarray, jax.Array)) else f"a {type(params).__name__}"


def _shape_of(key: str, what: str, fn, *args, call=_traced):
    """``jax.eval_shape(fn, *args)`` (``call``: :func:`_host` calls it), or one InputError naming ``key`` with what
    failed (no JAX traceback); one naming ``params`` when ``fn`` reads an entry of the parameters (the last argument)
    that they lack, or reads entries by name of parameters that are not a dict (None: not given)."""
    try:
        return call(fn, *args)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001  (a user's function: any error is the model's, reported by its name)
        params = args[-1]
        missing = _missing(fn, args, e, call) if isinstance(e, KeyError) else []
        if missing:
            reads = ", ".join(f"params[{k!r}]" for k in missing)
            raise InputError("params", f"{what} reads {reads}, which {'is' if len(missing) == 1 else 'are'} not "
                                       f"given (params has {', '.join(sorted(map(str, params))) or 'no entry'})"
                             ) from None
        named = [] if isinstance(params, dict) else [  # the fields the parameters have are not what failed
            k for k in _entries_read(fn, args, call) if not (k.startswith("params.") and hasattr(params, k[7:]))]
        if named:
            one = len(named) == 1
            give = ((f"with {'this field' if one else 'these fields'} (a named tuple, say)")
                    if any(k.startswith("params.") for k in named)
                    else f"as a dict with {'this entry' if one else 'these entries'}")
            raise InputError("params", f"{what} reads {', '.join(named)}, but params is {_kind(params)}: give params "
                                       f"{give}") from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise InputError(key, f"{what} fails on the start state: {type(e).__name__}: {first}") from None


def check_model(model: MarkovModel, params) -> None:
    """The model's functions checked on the start state, before any run.

    ``init`` runs; ``rates`` gives at least one event, as floats (E,) in the plain form, and finite unit rates >= 0,
    one per event of ``counts``, in the structured form; ``transition`` keeps the state's structure, shapes and
    dtypes for every event; ``observe`` returns numbers; ``rate_bound`` is a function of the parameters returning a
    number.

    Args:
        model: The chain.
        params (typing.Any): Its parameters (:func:`check_params`).

    Raises:
        InputError: Naming the function and what was expected; a function that reads an entry the parameters lack
            (or reads entries by name of parameters that are not a dict: None, not given) naming ``params`` and the
            entries.
    """
    if model.rate_bound is not None and not callable(model.rate_bound):
        raise InputError("rate_bound", f"must be a function of params returning the bound, got {model.rate_bound!r}")
    s0 = _shape_of("init", "init(params)", model.init, params)
    if model.counts is None:
        r = _shape_of("rates", "rates(state, params)", model.rates, s0, params)
        if not hasattr(r, "shape") or len(r.shape) != 1:
            raise InputError("rates", f"rates(state, params) must return a vector (E,) of floats, got "
                                      f"{getattr(r, 'shape', type(r).__name__)}")
        if r.shape[0] == 0:
            raise InputError("rates", "rates(state, params) returns no event (shape (0,)): a chain needs at least one")
        if not jnp.issubdtype(r.dtype, jnp.floating):
            raise InputError("rates", f"rates(state, params) must return floats (the rate of each event), got {r.dtype}")
        events = r.shape[0]
    else:
        c = _shape_of("counts", "counts(state, params)", model.counts, s0, params)
        events = len(c) if isinstance(c, (tuple, list)) else 0
        if events == 0:
            raise InputError("counts", "counts(state, params) must return a tuple of E >= 1 multiplicities")
        _check_unit_rates(model, params, events)
    want = tree_layout(s0)
    if model.one_hot:
        event = tuple(jax.ShapeDtypeStruct((), jnp.bool_) for _ in range(events))
    else:
        event = jax.ShapeDtypeStruct((), jnp.int32)
    out = _shape_of("transition", "transition(state, event, params)", model.transition, s0, event, params)
    new = out[0] if model.records and isinstance(out, tuple) else out
    if tree_layout(new) != want:
        raise InputError("transition", f"transition(state, event, params) must return a state of the start state's "
                                       f"structure, shapes and dtypes {want[1]}, got {tree_layout(new)[1]} "
                                       f"(structure {jax.tree_util.tree_structure(new)})")
    obs = _shape_of("observe", "observe(state, params)", model.observe, s0, params)
    bad = [dtype for _, dtype in tree_layout(obs)[1] if not (jnp.issubdtype(dtype, jnp.number) or dtype == "bool")]
    if bad or not jax.tree_util.tree_leaves(obs):
        raise InputError("observe", f"observe(state, params) must return numbers (a dict of scalars or arrays), "
                                    f"got {obs!r}")
    if model.rate_bound is not None:  # on the host, as the drivers call it
        big = _shape_of("rate_bound", "rate_bound(params)", model.rate_bound, params, call=_host)
        try:
            float(big)
        except (TypeError, ValueError):
            raise InputError("rate_bound", f"rate_bound(params) must return a number, got {big!r}") from None


def _check_unit_rates(model: MarkovModel, params, events: int) -> None:
    """The unit rates ``rates(params)`` of a structured model: a vector (E,) of finite numbers >= 0, one per event of
    ``counts`` (with the multiplicities, checked at every event, every rate is then a finite number >= 0)."""
    shape = _shape_of("rates", "rates(params)", lambda p: jnp.asarray(model.rates(p), jnp.float64), params).shape
    if shape != (events,):
        raise InputError("rates", f"rates(params) must return a vector ({events},) of unit rates, one per event of "
                                  f"counts(state, params), got shape {shape}")
    values = np.asarray(jnp.asarray(model.rates(params), jnp.float64))
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
    if bad.size:
        raise InputError("rates", f"rates(params) gives event {int(bad[0])} the unit rate {float(values[bad[0]])!r}; "
                                  "every unit rate must be a finite number >= 0")


def _refuse_wrapped(mk, out: dict, params) -> None:
    """One InputError naming ``transition`` when an integer of the state wrapped around its dtype in a replication
    (:func:`jaxq.sim.markov.wraps`; checked first: negative counts may then make the rates invalid)."""
    bad = wrapped_message(mk, out.get("wrapped", ()), out.get("before"), out["state"], params)
    if bad:
        raise InputError("transition", bad)


def _refuse_invalid(model: MarkovModel, mk, out: dict, params) -> None:
    """One InputError naming ``rates`` (the plain form) or ``counts`` (the structured form) and the event when a
    rate was not a finite number >= 0, or a multiplicity below 0, in a state a replication reached
    (:func:`jaxq.sim.markov.invalid_rates`)."""
    plain = model.counts is None
    bad = invalid_rates_message(mk, out.get("invalid_rates", ()), out["state"], params, plain)
    if bad:
        raise InputError("rates" if plain else "counts", bad)


def _names(tree) -> list[tuple[str, Any]]:
    """The observed quantities by name: a dict's keys, else the pytree's key paths."""
    if isinstance(tree, dict):
        return list(tree.items())
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [(jax.tree_util.keystr(k) or "value", v) for k, v in flat]


@float64
@timed
def simulate_markov(model: MarkovModel, run: MarkovRun, params=None, reps: int = 256, seed: int = 0) -> SimResult:
    """Monte Carlo of a :class:`~jaxq.sim.markov.MarkovModel` (see the module docstring).

    Args:
        model: The chain.
        run: What to estimate and how (:class:`MarkovRun`).
        params (typing.Any): The model's parameters (any pytree, passed to its functions; traced, so new values do
            not recompile).
        reps: Replications (at least 2).
        seed: Replication r uses ``fold_in(PRNGKey(seed), r)``.

    Returns:
        A :class:`~jaxq.mc.result.SimResult`: estimates ``<name>_discounted`` and/or ``<name>_average`` for every
            observed quantity (``<name>_rate``: a record's count per unit time over the window), per-replication
            ``samples`` (``controls_discounted``, ``controls_window``: the controls, mean zero), ``info`` (horizon,
            discount, warmup, ``Lambda`` and ``steps`` of the uniformised driver).

    Raises:
        InputError: Naming the key: the inputs fail :func:`check_run`, :func:`check_params` or :func:`check_model`;
            a replication's state wrapped around its dtype or reached an invalid rate; the total rate exceeded
            ``rate_bound``.
    """
    run, functional = check_run(model, run, reps, seed)
    params = check_params(params)
    check_model(model, params)
    mk = as_markov(model, wrap_check=True)
    warmup = run.warmup if run.warmup is not None else 0.0
    gamma = run.discount if run.discount is not None else 0.0
    info: dict = {"horizon": run.horizon, "discount": run.discount, "warmup": run.warmup}
    chain = run_chain(mk, params, functional, reps, seed, times=Horizon(gamma, warmup, run.horizon),
                      engine=run.engine, observers=run.observers, batching=run.batching)
    out, timing = chain.out, chain.timing
    _refuse_wrapped(mk, out, params)
    _refuse_invalid(model, mk, out, params)
    if run.engine == "uniformized":
        big = chain.info["Lambda"]
        over = int(np.sum(out.get("over_bound", 0)))
        if over:
            raise InputError("rate_bound", f"the total rate exceeded rate_bound(params) = {big:.6g} in {over} of "
                                           f"{reps} replications: it must bound the rates in every reachable state")
        span = chain.info["window_steps"] / big
        info.update(Lambda=big, steps=chain.info["steps"])
    else:
        span = run.horizon - warmup
    per: dict[str, np.ndarray] = {}
    if functional.discounted:
        per.update({f"{k}_discounted": np.asarray(v, np.float64) for k, v in _names(out["discounted"])})
    if functional.window:
        per.update({f"{k}_average": np.asarray(v, np.float64) for k, v in _names(out["window"])})
        per.update({f"{k}_rate": np.asarray(v, np.float64) / span for k, v in _names(out["records"])})
    ctl = out.get("controls", {})
    index = run.batching.start + np.arange(reps)
    est = {}
    for k, v in per.items():
        c = ctl.get("discounted") if k.endswith("_discounted") else ctl.get("window")
        est[k] = Estimate.with_controls(v, c, index)
    for kind, c in ctl.items():  # before the observers' outputs: a clash with these names is refused too
        per[f"controls_{kind}"] = c
    if run.observers:
        add_observed(out["observed"], est, per, info)
    primary = next(iter(est)) if len(est) == 1 else None
    return SimResult(primary, est, reps, int(np.sum(out["events"])), timing.wall_s, timing.compile_s, run.engine,
                     per, info)
