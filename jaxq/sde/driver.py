"""The shared time loop of the SDE schemes: blocks of steps on the replication layer, noise per path and block.

A :class:`Loop` is a model's scheme with its observables, as pure functions of all paths of a batch:
``start(keys, args)`` the state at time 0, ``block(args, keys, state, j)`` the steps of block j (their noise
drawn from the paths' keys and j), ``finish(state, args)`` the per-path outputs and ``blocks(args)`` the
number of blocks. :func:`loop_program` runs it on the replication layer (:mod:`jaxq.mc.replications`:
chunks, slices, devices, progress; paths are its replications, path r uses ``fold_in(PRNGKey(seed), r)``),
a few blocks per call: results do not depend on how paths are batched. :func:`program` runs a :class:`Scheme` on
it: the workload SDE's schemes (:func:`simulate`, blocks of ``block`` steps) and the network diffusion's Euler
scheme (:mod:`jaxq.sde.network_euler`, blocks of one step).

A scheme is a ``Scheme(name, n_normal, n_uniform, init, step, observe, order)`` of module-level pure
functions and its stated weak order:
``init(params, z) -> y`` maps the state (a scalar, or an array: the network's X) to the scheme's coordinates,
``step(params, y, h, normal, uniform) -> (y, dm)`` advances all paths by one step of length h (y: (paths,) + the
state's shape; normal: (paths, n_normal) standard normals, uniform: (paths, n_uniform) uniforms on [0, 1)) and
returns the step's martingale increment dm of the state (mean zero given the state: ``sigma sqrt(h) N``, or the
scheme's exact equivalent), ``observe(params, y) -> z`` maps back (None: the scheme's coordinates are the state's,
and the loop carries the state once); ``order`` is the weak order of the functional
the scheme's theory gives (the discounted cost, the network's time averages; None where its module states none:
errors below the Monte Carlo noise).

A scheme's path r draws the noise of block j as draw j of its stream (:mod:`jaxq.mc.rng`: the key
``fold_in(PRNGKey(seed), r)``, normals as quantiles of 52-bit uniforms). Within
a block of ``block`` steps the noise of all paths is drawn at once and the state of all paths is advanced
together by an inner ``lax.scan``. A horizon of ``ceil(T / dt)`` steps that is not a whole number of blocks
runs the masked program: the steps past the end in the last block weigh nothing (cost and control); a whole
number of blocks runs the unmasked program, compiled without the mask (bit-identical results).

Everything a run records is one observer (:mod:`jaxq.mc.observer`; several run as one by :func:`combine
<jaxq.mc.observer.combine>`), given to :func:`program`; observers read :class:`Observed` (the scheme's params,
the snapshot times, the control's value function), each its part of it. The workload SDE folds
(:func:`folded`) the cost (:data:`COST`), the snapshots of Z at fixed times (:data:`SNAPSHOTS`, the
:func:`~jaxq.mc.observer.snapshots` observer of each step's clock ``Segment.interval``), the Ito-sum control
(:data:`CONTROL`) and a user's observers; the network's Euler scheme its time averages, control variates and
recorded values. The functional the observers integrate is the run's :class:`StepWeights`, the weights of each
step's :class:`~jaxq.mc.observer.Segment`: :data:`DISCOUNTED` (the workload SDE's ``exp(-gamma t)``) or
:data:`WINDOW` (the network's time averages: 1 on the averaging window).

The discounted cost ``int_0^T exp(-gamma t) Z_t dt`` is integrated exactly against the linear
interpolation of Z within each step: away from the boundary and the jump levels, given its end
points, a Brownian motion with constant drift is a Brownian bridge whose conditional mean is linear,
so this rule is conditionally unbiased there; steps that touch the boundary or a level are a fraction
O(sqrt(dt)) of all steps and contribute an O(dt) bias in total.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.value import marginal
from jaxq.errors import InputError
from jaxq.mc import replications, rng
from jaxq.mc.observer import Observer, Segment, combine, integral, snapshots, with_params
from jaxq.mc.replications import Batching


class Scheme(NamedTuple):
    """One time-stepping method of an SDE: the workload SDE's or the network diffusion's (see the module
    docstring).

    Attributes:
        name: The scheme's name.
        n_normal: Standard normals per path and step.
        n_uniform: Uniforms on [0, 1) per path and step.
        init: ``init(params, z) -> y``: the state in the scheme's coordinates (a scalar or an array).
        step: ``step(params, y, h, normal, uniform) -> (y, dm)``: all paths advanced by one step of length h, and the
            step's martingale increment dm.
        observe: ``observe(params, y) -> z``: the state back in Z coordinates; None where ``y`` is Z itself (the
            time loop then carries one copy of the state, not two).
        order: The weak order the scheme's module states (None: none stated).
    """

    name: str
    n_normal: int
    n_uniform: int
    init: Callable
    step: Callable
    observe: Callable | None
    order: float | None  # the weak order the scheme's module states (None: none stated)


def step_weights(gamma, h):
    """``(w0, w1)`` with ``int_0^h exp(-gamma s) [(1 - s/h) z0 + (s/h) z1] ds = w0 z0 + w1 z1``.

    Args:
        gamma (jax.Array | float): The discount rate.
        h (jax.Array | float): The step.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(w0, w1)``.
    """
    u = gamma * h
    i1 = -jnp.expm1(-u) / gamma
    # int_0^h s exp(-gamma s) ds / h, written to avoid cancellation for small u
    w1 = h * jnp.where(u > 1e-4, (1.0 - jnp.exp(-u) * (1.0 + u)) / (u * u), 0.5 - u / 3.0 + u * u / 8.0)
    return i1 - w1, w1


class StepWeights(NamedTuple):
    """The functional a run's observers integrate, as the weights of its steps (see the module docstring).

    Attributes:
        step: ``step(a) -> at``, once a block (``a``: the run's :class:`PathArgs`); ``at(k) -> (weight,
            weight_after, scale)``: step k's weights of its start and end point (:class:`~jaxq.mc.observer.Segment`'s
            ``weight``, ``weight_after``) and the factor of its martingale increment (``Segment.martingale``).
        mass: ``mass(a, steps) -> mass``: the weights' sum over ``steps`` steps, the observers' ``finish`` mass.
    """

    step: Callable
    mass: Callable


def _discounted_step(a):
    w0, w1 = step_weights(a.gamma, a.h)

    def at(k):
        disc = jnp.exp(-a.gamma * a.h * k)
        return disc * w0, disc * w1, disc

    return at


def _discounted_mass(a, steps):
    return -jnp.expm1(-a.gamma * a.h * steps) / a.gamma


# the discounted integral int_0^T exp(-gamma t) f(Z_t) dt of the workload SDE: step k weighs exp(-gamma k h) times
# step_weights (the linear interpolation of Z in the step), its martingale increment exp(-gamma k h)
DISCOUNTED = StepWeights(_discounted_step, _discounted_mass)


def _window_step(a):
    def at(k):
        on = (k >= a.warm).astype(jnp.float64)
        return on * a.h, 0.0, on

    return at


def _window_mass(a, steps):
    return (steps - a.warm) * a.h


# the integral over the averaging window [warm h, T] of f(X_t) dt, the state held over each step (the network's
# Euler scheme): step k weighs h from step ``PathArgs.warm`` on, else 0, and so does its martingale increment; the
# mass is the window's length (per_mass observers are time averages)
WINDOW = StepWeights(_window_step, _window_mass)


def _block_noise(keys, j, block, n_normal, n_uniform):
    """The noise of block j of every path: draw j of the path's stream (:mod:`jaxq.mc.rng`), ``block * (n_normal
    + n_uniform)`` 52-bit uniforms, the first ``block * n_normal`` turned into normals; (block, paths, n) each."""
    m = block * (n_normal + n_uniform)

    def one(key):
        u = rng.uniforms(key, j, m)
        return (jax.scipy.special.ndtri(u[: block * n_normal]).reshape(block, n_normal),
                u[block * n_normal:].reshape(block, n_uniform))

    normal, uniform = jax.vmap(one)(keys)  # (paths, block, n)
    return jnp.swapaxes(normal, 0, 1), jnp.swapaxes(uniform, 0, 1)


def workload(z, params):
    """The workload Z itself: what the cost integrates (:data:`COST`) and the snapshots record (:data:`SNAPSHOTS`).

    Args:
        z (jax.Array): The workload.
        params (typing.Any): The observer's params (unused).

    Returns:
        (jax.Array): ``z``.
    """
    return z


class Observed(NamedTuple):
    """What the driver's observers read as their params.

    Attributes:
        params: The scheme's params (a user's observers and the cost get these alone).
        times: The (S,) snapshot times (multiples of the step, :data:`SNAPSHOTS`).
        value: The control's value function (:data:`CONTROL`; None: no control).
    """

    params: object
    times: jax.Array
    value: object = None


def _scheme_params(a: Observed):
    return a.params


def _snapshot_params(a: Observed):
    return (a.params, a.times)


def _control_params(a: Observed):
    return (a.params, a.value)


def _scalar(params):
    return jnp.zeros((), jnp.float64)


@lru_cache(maxsize=64)
def on_scheme_params(observer: Observer) -> Observer:
    """``observer`` (of the scheme's params, as a user writes it) on :class:`Observed`.

    Cached: the same observer gives the same program.

    Args:
        observer: The observer of the scheme's params.

    Returns:
        The observer on :class:`Observed`.
    """
    return with_params(observer, _scheme_params)


# the discounted cost int_0^T exp(-gamma t) Z_t dt, an observer like any other
COST = on_scheme_params(integral(workload))

_AT_TIMES = snapshots(workload, _scalar)


def _snapshots_update(snap, seg: Segment, pt):
    """:func:`~jaxq.mc.observer.snapshots`' update, run only on a step whose clock reaches a snapshot time (the
    same for every path: a branch, not a select, so the steps between the times leave the (paths, S) state alone)."""
    t0, t1 = seg.interval
    hit = jnp.any((pt[1] >= t0) & (pt[1] <= t1))
    return jax.lax.cond(hit, lambda s: _AT_TIMES.update(s, seg, pt), lambda s: s, snap)


# Z at the snapshot times: each step's clock is Segment.interval = (k h, (k + 1) h) and the times are whole steps
SNAPSHOTS = with_params(Observer(_AT_TIMES.init, _snapshots_update, _AT_TIMES.finish), _snapshot_params)


def _ito_update(acc, seg: Segment, pv):
    return acc + marginal(pv[1], seg.held) * seg.martingale


# the Ito sum sum_k exp(-gamma t_k) V'(Z_k) dM_k of a value function V (params: (the scheme's params, V)): the
# control variate, an observer of the steps' martingale increments; CONTROL reads it from Observed
ITO_SUM = Observer(lambda pv: jnp.zeros((), jnp.float64), _ito_update, lambda acc, mass, pv: acc)
CONTROL = with_params(ITO_SUM, _control_params)


@lru_cache(maxsize=64)
def folded(observer: Observer | None = None, cv: bool = False) -> Observer:
    """The one observer a run folds (on :class:`Observed`), :func:`combined <jaxq.mc.observer.combine>`.

    The cost (output ``cost``), the snapshots (``snaps``), with ``cv`` the Ito-sum control (``control``) and a
    user's ``observer`` (``observed``). Cached: the same observers give the same program.

    Args:
        observer: The combined observers of :class:`Record`, on the scheme's params (None: none).
        cv: Whether to fold the Ito-sum control.

    Returns:
        The combined observer.
    """
    parts = {"cost": COST, "snaps": SNAPSHOTS}
    if cv:
        parts["control"] = CONTROL
    if observer is not None:
        parts["observed"] = on_scheme_params(observer)
    return combine(parts)


def _start(scheme: Scheme, params, z0, paths: int, observer: Observer, args: Observed):
    y0 = scheme.init(params, jnp.asarray(z0, dtype=jnp.float64))
    y0 = jnp.broadcast_to(y0, (paths,) + jnp.shape(y0))
    zs0 = () if scheme.observe is None else scheme.observe(params, y0)  # () : Z is the state itself
    obs0 = jax.tree_util.tree_map(lambda v: jnp.broadcast_to(v, (paths,) + jnp.shape(v)), observer.init(args))
    return (y0, zs0, obs0)


def _finish(observer: Observer, obs, args: Observed, mass):
    """The observers' per-path outputs; ``mass``: the weights' sum over the run (:attr:`StepWeights.mass`)."""
    return jax.vmap(observer.finish, in_axes=(0, None, None))(obs, mass, args)


def _block(scheme: Scheme, a, weights: StepWeights, keys, block: int, carry, j, n_steps, observer: Observer,
           args: Observed):
    """Advance every path by one block of ``block`` steps (block index ``j``; ``a``: the run's :class:`PathArgs`),
    folding each step into the observer (the workload SDE's :func:`folded`: the cost, the snapshots, the control
    and a user's; its params ``args``).

    Each step is a :class:`~jaxq.mc.observer.Segment` from Z_k (``held``) to Z_{k+1} (``after``) with the weights of
    ``weights`` (``weight``, ``weight_after``; :data:`DISCOUNTED`: the linear interpolation between them weighted by
    :func:`step_weights` times ``exp(-gamma t_k)``), with no jump, over ``interval = (k h, (k + 1) h)`` (the
    snapshots' clock). With ``n_steps``, the steps ``k >= n_steps`` (past the horizon, in the last block) are
    masked: no observer sees them (a branch on k, the same for every path; the state moves on, unused). Without it
    (None) no step is masked, and the block is compiled without the mask.

    Each step's ``Segment.martingale`` is the step's martingale increment dM_k (``sigma(Z_k) sqrt(h) N_k`` or the
    scheme's exact equivalent) times the weights' factor (:data:`DISCOUNTED`: ``exp(-gamma t_k)``): with the
    control (:data:`CONTROL`, a :class:`jaxq.diffusion.value.ValueFunction` V in ``args.value``) the Ito sum
    ``sum_k exp(-gamma t_k) V'(Z_k) dM_k``, a control variate with mean exactly zero (dM_k has mean zero given Z_k)
    that cancels, as h -> 0, the whole fluctuation of the cost (Ito's formula; :mod:`jaxq.diffusion.value`).
    """
    params, h = a.params, a.h
    at = weights.step(a)
    axes = Segment(0, None, 0, None, None, martingale=0)  # over the paths (the clock is the same for all)
    fold = jax.vmap(observer.update, in_axes=(0, axes, None))

    def inner(c, x):
        y, z, obs = c
        k, normal, uniform = x
        y1, dm = scheme.step(params, y, h, normal, uniform)
        # a fusion boundary: the cost and the control do not change how the step is compiled, so a path's
        # numbers stay bit-identical whatever the batch, sharding or control
        if scheme.observe is None:  # the state is Z: carried once (a second copy costs a copy a step)
            y1, dm = jax.lax.optimization_barrier((y1, dm))
            z, z1, carried = y, y1, ()
        else:
            y1, z1, dm = jax.lax.optimization_barrier((y1, scheme.observe(params, y1), dm))
            carried = z1
        w_held, w_after, scale = at(k)
        seg = Segment(z, w_held, z1, 0.0, w_after, interval=(k * h, (k + 1.0) * h), martingale=scale * dm)
        if n_steps is None:
            obs = fold(obs, seg, args)
        else:  # a step past the end of the horizon: no observer sees it (a branch, the same for every path)
            obs = jax.lax.cond(k < n_steps, lambda o: fold(o, seg, args), lambda o: o, obs)
        return (y1, carried, obs), None

    normal, uniform = _block_noise(keys, j, block, scheme.n_normal, scheme.n_uniform)
    ks = (j * block + jnp.arange(block)).astype(jnp.float64)
    carry, _ = jax.lax.scan(inner, carry, (ks, normal, uniform))
    return carry


def run_paths(scheme: Scheme, params, z0, gamma, h, keys, n_blocks: int, block: int, snap_steps, remat: bool = False):
    """All paths of one batch, in one call: discounted cost over ``n_blocks * block`` steps and snapshots.

    A pure function (differentiable in ``params`` with ``remat``); :func:`simulate` runs the same blocks
    through the replication layer instead.

    Args:
        scheme: The method.
        params (typing.Any): Its coefficient pytree.
        z0 (jax.Array | float): The start (scalar).
        gamma (jax.Array | float): The discount rate.
        h (jax.Array | float): The step.
        keys (jax.Array): (paths,) per-path keys.
        n_blocks: The number of blocks (static only with remat).
        block: Steps per block (static).
        snap_steps (array_like): (S,) step indices k at which Z(k h) is recorded (k = 0 records z0).
        remat: Recompute each block in the backward pass (for gradients over long horizons).

    Returns:
        (tuple[jax.Array, jax.Array]): ``(cost, snaps)``: (paths,) discounted costs and (paths, S) snapshots.
    """
    observer = folded()
    a = PathArgs(params, z0, gamma, h, n_blocks, snap_steps)
    args = Observed(params, jnp.asarray(snap_steps).astype(jnp.float64) * h)
    carry = _start(scheme, params, z0, keys.shape[0], observer, args)

    def outer(c, j):
        return _block(scheme, a, DISCOUNTED, keys, block, c, j, None, observer, args), None

    if remat:  # reverse-mode differentiable: a scan over a static number of blocks
        (_, _, obs), _ = jax.lax.scan(jax.checkpoint(outer), carry, jnp.arange(n_blocks))
    else:  # a dynamic trip count: one compilation serves every step size and horizon
        _, _, obs = jax.lax.fori_loop(0, n_blocks, lambda j, c: outer(c, j)[0], carry)
    out = _finish(observer, obs, args, _discounted_mass(a, n_blocks * block))
    return out["cost"], out["snaps"]


class Loop(NamedTuple):
    """A model's scheme and observables as the time loop runs them (pure functions of all paths of a batch).

    Attributes:
        start: ``start(keys, args) -> state``: the batch's state at time 0 (keys: (paths,) per-path keys).
        block: ``block(args, keys, state, j) -> state``: every path advanced by the ``steps`` steps of block j (the
            noise drawn from the paths' keys and j).
        finish: ``finish(state, args) -> outputs``: per-path outputs (leading axis: paths).
        blocks: ``blocks(args)``: the number of blocks of a path (traced).
        steps: Steps per block (the work unit of progress is a path-step).
    """

    start: Callable
    block: Callable
    finish: Callable
    blocks: Callable
    steps: int = 1


def loop_program(loop: Loop, blocks_per_call: int) -> replications.Program:
    """The time loop of ``loop`` as a :class:`~jaxq.mc.replications.Program`.

    A ``fori_loop`` over blocks with a dynamic trip count: one compilation serves every horizon. Not cached: the
    cached :func:`program` keeps the programs it builds.

    Args:
        loop: The model's scheme and observables.
        blocks_per_call: Blocks per ``advance``.

    Returns:
        The program.
    """

    @jax.jit
    def start(keys, a):
        return {"keys": keys, "carry": loop.start(keys, a), "j": jnp.int64(0)}

    @jax.jit
    def advance(c, a):
        n_blocks = loop.blocks(a)
        j1 = jnp.minimum(c["j"] + blocks_per_call, n_blocks)
        carry = jax.lax.fori_loop(c["j"], j1, lambda j, cc: loop.block(a, c["keys"], cc, j), c["carry"])
        work = (j1 - c["j"]) * loop.steps * c["keys"].shape[0]
        return dict(c, carry=carry, j=j1), j1 >= n_blocks, work

    @jax.jit
    def finish(c, a):
        return loop.finish(c["carry"], a)

    return replications.Program(start, advance, finish, unit="path-steps")


def run_loop(prog: replications.Program, args, paths: int, seed: int, batching: Batching, work: float):
    """Paths ``batching.start .. + paths - 1`` of a time loop (:func:`loop_program`) on the replication layer.

    Args:
        prog: The program (:func:`loop_program`).
        args (typing.Any): Its traced arguments.
        paths: The number of paths.
        seed: The random seed (path r uses ``fold_in(PRNGKey(seed), r)``).
        batching: First path, paths per compiled call, devices, progress.
        work: The path-steps expected (told to the progress callback before any work; spreads a long run over the
            CPU's devices: :func:`jaxq.mc.replications.plan`).

    Returns:
        (tuple): ``(outputs, timing)`` of :func:`jaxq.mc.replications.run`.
    """
    replications.announce(batching.progress, work, "path-steps")
    return replications.run(prog, args, paths, seed, batching=batching, work=work)


class PathArgs(NamedTuple):
    """Traced arguments of a scheme's run on the replication layer (:func:`program`).

    Attributes:
        params: The scheme's coefficient pytree.
        z0: The start (a scalar, or the state's array).
        gamma: The discount rate (:data:`DISCOUNTED`; None: not read).
        h: The step.
        n_blocks: int64, the number of blocks.
        snap_steps: (S,) int64, the step indices at which the state is recorded.
        value: The value function of the control variate (None: no control).
        n_steps: float64, the steps of the horizon (the masked program weighs no step beyond).
        warm: int64, the steps before the averaging window (:data:`WINDOW`; None: not read).
    """

    params: object
    z0: jax.Array  # the start (a scalar, or the state's array)
    gamma: jax.Array  # the discount rate (DISCOUNTED; None: not read)
    h: jax.Array
    n_blocks: jax.Array  # int64
    snap_steps: jax.Array  # (S,) int64
    value: object = None  # ValueFunction of the control variate (None: no control)
    n_steps: jax.Array = None  # float64: the steps of the horizon (the masked program weighs no step beyond)
    warm: jax.Array = None  # int64: the steps before the averaging window (WINDOW; None: not read)


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def program(scheme: Scheme, block: int, blocks_per_call: int, observer: Observer,
            weights: StepWeights = DISCOUNTED, masked: bool = False) -> replications.Program:
    """The scheme on the time loop (:func:`loop_program`; paths are the replications), folding ``observer`` (one
    observer on :class:`Observed`: the workload SDE's :func:`folded`, the network's window averages) with the
    step weights ``weights`` (:data:`DISCOUNTED`, :data:`WINDOW`); ``finish`` returns the observer's per-path
    outputs. ``masked``: the steps from ``PathArgs.n_steps`` on (in the last block) weigh nothing. A step count that
    is a whole number of blocks runs the unmasked program, compiled without the mask: its results are
    bit-identical to the masked one's.

    Args:
        scheme: The method.
        block: Steps per block (static; the noise of a block is one draw of each path's stream).
        blocks_per_call: Blocks per ``advance`` call.
        observer: What the run folds, on :class:`Observed` (``PathArgs.value`` the control's value function).
        weights: The functional the observer integrates (its weights and mass read the :class:`PathArgs`).
        masked: Weigh no step from ``PathArgs.n_steps`` on.

    Returns:
        The :class:`~jaxq.mc.replications.Program` (cached: the same arguments give the same program).
    """

    def observed(a: PathArgs) -> Observed:
        return Observed(a.params, a.snap_steps.astype(jnp.float64) * a.h, a.value)

    def start(keys, a: PathArgs):
        return _start(scheme, a.params, a.z0, keys.shape[0], observer, observed(a))

    def one_block(a: PathArgs, keys, carry, j):
        return _block(scheme, a, weights, keys, block, carry, j, a.n_steps if masked else None, observer,
                      observed(a))

    def finish(carry, a: PathArgs):
        _, _, obs = carry
        return _finish(observer, obs, observed(a), weights.mass(a, a.n_steps))

    return loop_program(Loop(start, one_block, finish, lambda a: a.n_blocks, block), blocks_per_call)._replace(
        same=("sde", scheme, block, observer, weights))  # masked or not: the same numbers


def step_count(dt: float, horizon: float) -> int:
    """``ceil(horizon / dt)`` steps (at least one; a ratio within 1e-9 of an integer counts as that integer).

    Args:
        dt: The step.
        horizon: The horizon T.

    Returns:
        The number of steps.
    """
    return max(1, math.ceil(horizon / dt - 1e-9))


def step_counts(dt: float, horizon: float, block: int = 64) -> tuple[int, int]:
    """``(n_blocks, block)`` covering ``ceil(horizon / dt)`` steps (rounded up to whole blocks).

    Args:
        dt: The step.
        horizon: The horizon T.
        block: Steps per block.

    Returns:
        ``(n_blocks, block)``.
    """
    return math.ceil(step_count(dt, horizon) / block), block


def check_step(dt: float, horizon: float) -> None:
    """Refuse a step and horizon unless ``0 < dt <= horizon`` (finite).

    Args:
        dt: The step.
        horizon: The horizon T.

    Raises:
        InputError: Naming ``dt`` or ``horizon``: not positive and finite, or ``dt > horizon``.
    """
    if not (math.isfinite(dt) and dt > 0):
        raise InputError("dt", "must be a positive number")
    if not (math.isfinite(horizon) and horizon > 0):
        raise InputError("horizon", "must be a positive number")
    if dt > horizon:
        raise InputError("dt", "must not exceed the horizon")


class TimeGrid(NamedTuple):
    """The time grid of a workload SDE run.

    Attributes:
        dt: The step.
        horizon: The truncation time T, run as exactly ``ceil(T / dt)`` steps (the last block's steps beyond are
            masked).
        block: Steps per block (the noise of a block is drawn at once).
    """

    dt: float
    horizon: float
    block: int = 64


class Record(NamedTuple):
    """What a workload SDE run records besides the cost.

    Attributes:
        times: Fixed times at which Z is recorded (each rounded to the nearest multiple of dt).
        value: The value function of the Ito-sum control variate (:mod:`jaxq.diffusion.value`; None: no control).
        observers: Statistics of the path (name -> :class:`~jaxq.mc.observer.Observer` of Z, a float64 per path;
            each step a segment, :func:`_block`); None: none.
    """

    times: tuple = ()
    value: object = None
    observers: dict | None = None


def simulate(scheme: Scheme, params, z0: float, gamma: float, grid: TimeGrid, paths: int, seed: int = 0,
             batching: Batching = Batching(), record: Record = Record()):
    """Discounted cost and snapshots of ``paths`` paths through the replication layer.

    Results do not depend on the batching: path r uses ``fold_in(PRNGKey(seed), r)``.

    Args:
        scheme: The method.
        params (typing.Any): Its coefficients.
        z0: The start, >= 0.
        gamma: The discount rate, > 0.
        grid: Step, horizon and block (:class:`TimeGrid`); the horizon reported is the steps run times dt.
        paths: The number of paths.
        seed: The random seed.
        batching: First path, paths per compiled call, devices, progress (:class:`~jaxq.mc.replications.Batching`).
        record: Snapshot times, the control's value function and observers (:class:`Record`).

    Returns:
        (dict): dict with ``cost`` (paths,) = ``int_0^T exp(-gamma t) Z dt`` per path, ``snaps`` (paths, len(times)),
            ``control`` (paths,) (zeros without ``value``), ``observed`` (name -> the observer's per-path outputs),
            ``horizon`` (the T used), ``steps``, ``wall_s``, ``compile_s``.

    Raises:
        InputError: Naming ``dt``, ``horizon`` (:func:`check_step`), ``block`` (not a whole number of steps the
            stream can draw at once) or ``paths`` (fewer than 1).
    """
    dt, block = grid.dt, grid.block
    times, value, observers = record
    check_step(dt, grid.horizon)
    most = rng.MAX_WORD // (2 * (scheme.n_normal + scheme.n_uniform))  # a block's noise is one draw of the stream
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 1 <= block <= most:
        raise InputError("block", f"steps per block must be a whole number in 1..{most}, got {block!r}")
    if paths < 1:
        raise InputError("paths", "must be at least 1")
    times = np.atleast_1d(np.asarray(times, dtype=float))
    snap_steps = np.rint(times / dt).astype(np.int64)
    steps = max(step_count(dt, grid.horizon), int(snap_steps.max(initial=0)))
    n_blocks = math.ceil(steps / block)
    a = PathArgs(params, jnp.float64(z0), jnp.float64(gamma), jnp.float64(dt), jnp.int64(n_blocks), jnp.asarray(snap_steps),
             value, jnp.float64(steps))
    work = float(paths) * n_blocks * block
    plan = replications.plan(paths, batching.chunk, batching.devices, work=work)  # the layout run_loop's run takes
    per_call = 1 << max(0, ((1 << 22) // (block * plan.size)).bit_length() - 1)  # a power of two: few programs
    masked = steps % block != 0
    run = folded(combine(observers) if observers else None, value is not None)
    out, timing = run_loop(program(scheme, block, per_call, run, DISCOUNTED, masked), a, paths, seed, batching, work)
    control = out["control"] if value is not None else np.zeros(np.shape(out["cost"]), np.float64)
    return {"cost": out["cost"], "snaps": out["snaps"], "control": control, "observed": out.get("observed", {}),
            "horizon": steps * dt, "steps": steps, "wall_s": timing.wall_s, "compile_s": timing.compile_s}
