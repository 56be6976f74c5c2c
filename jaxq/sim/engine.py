"""One generic driver for every event-driven simulator in jaxq.

A model supplies an :class:`Engine`: three pure functions over an explicit state pytree, in the
style of optax's ``GradientTransformation``::

    init(key, params)   -> state        # one replication's initial state (key: its own PRNG key)
    step(state, params) -> state        # advance by exactly one event
    done(state, params) -> bool         # True once the replication has passed its horizon

The driver runs ``step`` in blocks of ``block`` events with ``lax.scan`` inside a ``lax.while_loop``
that stops when ``done``; replications are ``vmap``-ed and processed in chunks of ``chunk``. Within a
block a finished replication is masked (its state is frozen), so the result never depends on the
block size, the chunk size, or how replications are batched or sharded: replication ``r`` always
uses the key ``fold_in(PRNGKey(seed), r)``.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

State = Any
Params = Any


class Engine(NamedTuple):
    """The event rule of one model: ``init``, ``step`` and ``done`` (see module docstring)."""

    init: Callable[[jax.Array, Params], State]
    step: Callable[[State, Params], State]
    done: Callable[[State, Params], jax.Array]


def replication_keys(seed: int, start: int, count: int) -> jax.Array:
    """Keys of replications ``start .. start+count-1``: ``fold_in(PRNGKey(seed), r)``."""
    base = jax.random.PRNGKey(seed)
    idx = jnp.arange(start, start + count, dtype=jnp.uint32)
    return jax.vmap(lambda r: jax.random.fold_in(base, r))(idx)


def masked_step(engine: Engine, state: State, params: Params) -> State:
    """``step`` for a replication that is not done; a finished one keeps its state."""
    fin = engine.done(state, params)
    new = engine.step(state, params)
    return jax.tree_util.tree_map(lambda a, b: jnp.where(fin, a, b), state, new)


def run_one(engine: Engine, key: jax.Array, params: Params, block: int = 256, max_events: int | None = None) -> State:
    """Run one replication until ``done`` (or until ``max_events`` events, rounded up to blocks)."""
    state = engine.init(key, params)
    max_blocks = jnp.inf if max_events is None else -(-max_events // block)

    def body(carry):
        s, b = carry
        s, _ = jax.lax.scan(lambda c, _: (masked_step(engine, c, params), None), s, None, length=block)
        return s, b + 1

    def cond(carry):
        s, b = carry
        return jnp.logical_and(jnp.logical_not(engine.done(s, params)), b < max_blocks)

    state, _ = jax.lax.while_loop(cond, body, (state, jnp.int64(0)))
    return state


@partial(jax.jit, static_argnames=("engine", "block", "max_events"))
def _run_batch(engine: Engine, keys: jax.Array, params: Params, block: int, max_events: int | None):
    return jax.vmap(lambda k: run_one(engine, k, params, block, max_events))(keys)


def compile_engine(engine: Engine, params: Params, reps: int, chunk: int | None, block: int) -> float:
    """Compile the driver for the chunk shape ``simulate`` will use, ahead of time; return the seconds spent.

    Lets a caller report compilation apart from simulation (the compiled program is cached by jit).
    """
    size = reps if chunk is None else max(1, min(chunk, reps))
    keys = replication_keys(0, 0, size)
    t = time.perf_counter()
    _run_batch.lower(engine, keys, params, block, None).compile()
    return time.perf_counter() - t


def replication_sharding(devices=None):
    """A sharding that splits the replication axis over ``devices`` (default: all local devices).

    Returns None on a single device. Replications are independent, so XLA partitions the vmapped
    driver along this axis with no communication until results are gathered.
    """
    devices = jax.local_devices() if devices is None else list(devices)
    if len(devices) <= 1:
        return None
    mesh = jax.sharding.Mesh(np.array(devices), ("reps",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("reps"))


def simulate(
    engine: Engine,
    params: Params,
    reps: int,
    seed: int = 0,
    *,
    chunk: int | None = None,
    block: int = 256,
    max_events: int | None = None,
    start: int = 0,
    progress: Callable[[int], None] | None = None,
    devices=None,
) -> State:
    """Run replications ``start .. start+reps-1`` and return their final states (stacked on axis 0).

    Args:
      engine: the model's event rule; must be hashable (a module-level NamedTuple of functions).
      params: a pytree of arrays (traced, so changing values does not recompile).
      reps: number of replications.
      seed: base seed; replication r uses ``fold_in(PRNGKey(seed), r)``.
      chunk: replications per compiled call (memory bound); any value gives identical results.
      block: events per ``lax.scan`` block.
      max_events: optional safety cap on events per replication.
      start: index of the first replication (used by resumable runners).
      progress: called with the number of replications finished after each chunk.
      devices: devices to shard each chunk's replications over (default: all local devices).
    """
    chunk = reps if chunk is None else max(1, min(chunk, reps))
    sharding = replication_sharding(devices)
    if sharding is not None:  # every device gets the same number of replications
        nd = sharding.mesh.size
        chunk = -(-chunk // nd) * nd
    outs = []
    for lo in range(0, reps, chunk):  # loop over chunks, not replications
        n = min(chunk, reps - lo)
        keys = replication_keys(seed, start + lo, n)
        if n < chunk:  # pad to the compiled shape so a ragged last chunk does not recompile
            keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], chunk - n, axis=0)])
        if sharding is not None:
            keys = jax.device_put(keys, sharding)
        out = _run_batch(engine, keys, params, block, max_events)
        outs.append(jax.tree_util.tree_map(lambda a: np.asarray(a)[:n], out))
        if progress is not None:
            progress(n)
    return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *outs)
