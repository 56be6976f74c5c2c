"""Running a lockstep kernel over many replications: chunks, padding, and all CPU cores.

The uniformised engines (:mod:`jaxq.sim.birth_death`, :mod:`jaxq.sim.pss2x2_ctmc`) compile one
kernel ``run(keys) -> tuple of arrays`` over a batch of replication keys. This module feeds it:
replications in chunks (memory bound), a ragged last chunk padded to the compiled shape, and, on a
single CPU device, each chunk cut into slices (at least one per core, none above ``MAX_SLICE``
replications, whose state stays in cache: a 10^5-replication chunk in one slice ran 1.5x slower per
step), dispatched asynchronously so that XLA runs the slices on different threads (one CPU device
executes one vectorised loop on one core). Results
never depend on any of this: replication ``r`` always uses the key ``fold_in(PRNGKey(seed), r)``.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.sim.engine import replication_keys, replication_sharding

MIN_SLICE = 256  # replications per core slice below which splitting a chunk costs more than it gains
MAX_SLICE = 16384  # replications per slice above which a slice's state no longer fits a core's cache


def core_slices(chunk: int) -> int:
    """Slices per chunk on a single-device CPU backend: at least one per core (each of at least MIN_SLICE
    replications), and enough that none exceeds MAX_SLICE (the state of a larger slice spills out of
    the cache and every step becomes a trip to memory)."""
    if jax.default_backend() != "cpu" or jax.local_device_count() > 1:
        return 1
    return max(1, min(os.cpu_count() or 1, chunk // MIN_SLICE), -(-chunk // MAX_SLICE))


def _signature(args) -> tuple:
    leaves, tree = jax.tree_util.tree_flatten(args)
    return (tree,) + tuple((np.shape(a), str(getattr(a, "dtype", type(a)))) for a in leaves)


_COMPILED: OrderedDict = OrderedDict()  # (kernel, statics, shapes, sharding) -> executable, least recent first
CACHE_SIZE = 32


def compiled(kernel, keys, args: tuple, static: dict):
    """``kernel.lower(keys, *args, **static).compile()``, cached; returns ``(executable, compile_s)``."""
    key = (kernel, tuple(sorted(static.items())), _signature((keys, args)), getattr(keys, "sharding", None))
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        return _COMPILED[key], 0.0
    t0 = time.perf_counter()
    exe = kernel.lower(keys, *args, **static).compile()
    _COMPILED[key] = exe
    while len(_COMPILED) > CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return exe, time.perf_counter() - t0


def run_replications(kernel, args: tuple, static: dict, reps: int, seed: int, chunk: int | None = None, devices=None,
                     progress: Callable[[int], None] | None = None) -> tuple[list[np.ndarray], float]:
    """Run replications ``0 .. reps-1`` through a lockstep kernel.

    Args:
      kernel: a jitted ``kernel(keys, *args, **static) -> tuple of arrays`` (leading axis: replications).
      args: its traced arguments (changing their values does not recompile); static: its static ones.
      reps, seed: replications and base seed.
      chunk: replications per compiled call (default: all); devices: devices to shard over (default:
        all local devices).
      progress: called with the number of replications finished after each chunk.
    Returns:
      ``(columns, compile_s)``: the kernel's outputs concatenated over replications (numpy), and the
      compilation time in seconds (0 when this shape was compiled before in this process).
    """
    chunk = reps if chunk is None else max(1, min(chunk, reps))
    sharding = replication_sharding(devices)
    parts = 1 if sharding is not None else core_slices(chunk)
    width = sharding.mesh.size if sharding is not None else parts
    chunk = -(-chunk // width) * width  # every device or slice gets the same number of replications
    size = chunk // parts

    def place(keys):
        return keys if sharding is None else jax.device_put(keys, sharding)

    exe, compile_s = compiled(kernel, place(replication_keys(0, 0, size)), args, static)
    outs = []
    for lo in range(0, reps, chunk):  # chunks of replications, not single ones
        m = min(chunk, reps - lo)
        keys = replication_keys(seed, lo, m)
        if m < chunk:  # pad to the compiled shape so a ragged last chunk does not recompile
            keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], chunk - m, axis=0)])
        pending = [exe(place(keys[j * size:(j + 1) * size]), *args) for j in range(parts)]  # asynchronous dispatch
        cols = zip(*([np.asarray(a) for a in out] for out in pending))
        outs.append([np.concatenate(c)[:m] for c in cols])
        if progress is not None:
            progress(m)
    return [np.concatenate(c) for c in zip(*outs)], compile_s
