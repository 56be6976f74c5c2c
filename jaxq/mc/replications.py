"""The one replication layer: every simulator in jaxq (event, uniformised, SDE) runs through :func:`run`.

A simulator compiles a :class:`Program`, three pure functions over a batch of replications::

    start(keys, args)   -> carry              # the batch's initial state (keys: one per replication)
    advance(carry, args) -> carry, done, work # a fixed amount of work (e.g. 16 blocks of events)
    finish(carry, args) -> outputs            # per-replication outputs (leading axis: replications)

and this module does everything else, once, for all of them:

* **keys**: replication ``r`` uses ``fold_in(PRNGKey(seed), r)`` (:func:`jaxq.mc.rng.keys`), so its numbers do not
  depend on the chunk size, the slices, the device count or the process that runs it;
* **chunks**: replications are processed ``chunk`` at a time (memory bound), a ragged last chunk is
  padded to the compiled shape (no recompilation), and every batch is a whole number of ``LANES``
  replications: XLA:CPU computes the tail of a loop that is not a multiple of its vector width with
  scalar code whose rounding can differ in the last bit, so whole vectors keep every replication on one
  code path (bit-identical results for any ``chunk``);
* **devices**: with several devices each chunk is cut into one slice per device (at most one per vector of
  ``LANES`` replications), and every slice runs the same single-device program on its own device (dispatched
  asynchronously; no communication until results are gathered). One program for every device count keeps a
  replication's numbers bit-identical: the SPMD partitioner compiles a sharded program differently and can
  change the last bit of some replications. On a CPU the cores are devices: ``import jaxq`` asks XLA for one
  host device per core (:mod:`jaxq.xla_flags`: two computations on one CPU device run one after the other, so
  slices on one device would not use a second core), and a run of the default devices is spread over them when
  its work is at least ``SPREAD_WORK`` (each device compiles the program once);
* **cache-sized slices**: on a single CPU device a chunk is cut into slices of at most ``MAX_SLICE`` so that a
  lockstep state stays in cache;
* **compile cache**: each program is compiled ahead of time once per shape and device (:func:`compiled`), and the
  compile time is reported apart from the run time;
* **progress**: ``advance`` returns how much work it did (events, steps), and the host loop reports it
  after every call, so a progress bar moves within seconds even inside one chunk;
* **runs ahead**: inside :func:`ahead` (a precision target, :mod:`jaxq.mc.target`), the first run of a pilot's
  seed also runs, in the same batch, the first replications of the seed its run will use (a targeted run never
  has fewer than its pilot's first stage), and the run of that seed with the same program, arguments and platform
  takes them instead of computing them again, so a long run of its pilot's size costs about one stage instead of
  two (a lane costs about its share of a step: :data:`jaxq.mc.target.AHEAD` runs ahead no more than a run's
  least). The numbers do not change: a replication's outputs are the same in any batch on one platform.

Nothing here knows what is simulated: a driver (:mod:`jaxq.sim.event`, :mod:`jaxq.sim.uniformized`,
:mod:`jaxq.sde.driver`) turns a model into a Program.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import time
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq import interrupt
from jaxq.errors import InputError
from jaxq.mc.rng import keys

LANES = 8  # a batch is a whole number of vectors (see the module docstring)
MAX_SLICE = 16384  # replications per slice above which a lockstep state no longer fits a core's cache
# The work (events, steps, path-steps) from which a run on the CPU's default devices is spread over all of them (one
# per core, jaxq.xla_flags): XLA compiles a program once per device (about 1.2 s more per device for the 2x2 event
# engine on the 2-core Xeon; compiling the devices' programs in threads did not shorten it, one compilation already
# uses both cores), which a short run does not recover; 2e8 events take 20 to 45 s on one core (4.3-8.9e6 events/s
# in the verdict bench).
SPREAD_WORK = 2e8
CACHE_SIZE = 64  # compiled programs kept per device (least recently used dropped first)
# Programs (and the engines they are built from) kept by the drivers' cached constructors. A program's jitted
# functions keep JAX's traces and executables of it alive, so an unbounded cache grows by every program a
# process has run (tens of MB each: a study over hundreds of systems ran out of memory); the least recently used
# are dropped, and built (and compiled, or loaded from the persistent cache) again if needed.
PROGRAMS_KEPT = 32


class Program(NamedTuple):
    """A simulator compiled for batches of replications (see the module docstring).

    A Program must be hashable (module-level functions or cached constructors), since it keys the compile cache.

    Attributes:
        start: A jitted function.
        advance: A jitted function; returns ``(carry, done, work)`` with ``done`` a scalar bool (every replication of
            the batch has finished) and ``work`` a scalar integer (work units done by this call, for progress).
        finish: A jitted function.
        unit: Names the work unit ("events", "steps").
        same: Programs with the same ``same`` (not None) give every replication the same outputs from the same
            arguments: they differ only in the work an ``advance`` call does (:func:`ahead` takes replications run
            by one for another). None: the program itself.
    """

    start: Callable
    advance: Callable
    finish: Callable
    unit: str = "events"
    same: Any = None


# Below this many replications a single simulation (jaxq.simulate, `jaxq simulate`) on an accelerator runs on the
# host CPU instead: each event (or step) of such a run is a few small kernels, so a GPU is launch-bound there.
# Measured on one H200 and its host (benchmarks/gpu_small_batches.py, benchmarks/results/gpu_h200_small_batches.json):
# with 100 replications the host ran the 2x2 event engine 3.4x and the uniformised one 2.6x faster than the GPU,
# with 1000 the GPU was 2.1x and 1.4x faster; the crossover lies between (not measured there), runs below 256 move.
HOST_BELOW = 256


def small_run_devices(reps: int, devices=None, backend: str | None = None):
    """The devices of a single run of ``reps`` replications.

    The experiment runner does not use it: its chunks all run on one platform.

    Args:
        reps: The replications of the run.
        devices (typing.Any): The devices as given.
        backend: The accelerator's backend (default JAX's).

    Returns:
        (typing.Any): ``devices`` as given, except that None on an accelerator with fewer than :data:`HOST_BELOW`
            replications becomes the host CPU (its first device, where the process has one).
    """
    backend = jax.default_backend() if backend is None else backend
    if devices is not None or backend == "cpu" or reps >= HOST_BELOW:
        return devices
    try:
        return jax.devices("cpu")[:1]
    except RuntimeError:  # no CPU backend in this process (JAX_PLATFORMS without cpu): stay where we are
        return devices


class Batching(NamedTuple):
    """How a simulator's replications are executed, never what they estimate: any value gives the same numbers.

    :meth:`checked` validates user input once, at the API; the drivers trust it.

    Attributes:
        start: The index of the first replication (replication r uses ``fold_in(PRNGKey(seed), r)``).
        chunk: Replications per compiled call (None: all, at most ``DEFAULT_CHUNK``).
        devices: The devices each chunk is cut over (None: all local devices; on a CPU, all of them for a run of at
            least ``SPREAD_WORK`` and the first below).
        progress: Called with the work done after every call (an object with a ``start(total, unit)`` method is told
            the expected work first).
    """

    start: int = 0
    chunk: int | None = None
    devices: Any = None
    progress: Callable[[int], None] | None = None

    def checked(self) -> "Batching":
        """This batching after the checks of user input (an :class:`~jaxq.errors.InputError` naming the key), its
        ``devices`` as a list (a count K: the first K local devices; :func:`jaxq.model.validate.check_devices`)."""
        from jaxq.model.validate import check_devices

        if not (isinstance(self.start, (int, np.integer)) and self.start >= 0):
            raise InputError("start", f"must be a whole number >= 0, got {self.start!r}")
        if self.chunk is not None and not (isinstance(self.chunk, (int, np.integer)) and self.chunk >= 1):
            raise InputError("chunk", f"must be a whole number >= 1, got {self.chunk!r}")
        if self.progress is not None and not callable(self.progress):
            raise InputError("progress", f"must be callable (work done) or None, got {self.progress!r}")
        return self._replace(devices=check_devices(self.devices, "devices"))


class Timing(NamedTuple):
    """Seconds spent compiling (0 when every shape was compiled before in this process) and in total.

    Attributes:
        compile_s: Seconds spent compiling (0 when every shape was compiled before in this process).
        wall_s: Seconds in total.
    """

    compile_s: float
    wall_s: float


class Slicing(NamedTuple):
    """How ``reps`` replications are cut.

    Attributes:
        chunk: Chunks of ``chunk`` replications (padded).
        parts: Each chunk in ``parts`` slices.
        size: The replications of a slice.
        devices: Slice j runs on ``devices[j % len(devices)]`` (None: the default device).
    """

    chunk: int
    parts: int
    size: int
    devices: tuple | None


DEFAULT_CHUNK = {"cpu": 1 << 16}  # replications per chunk when none is given (accelerators: 1 << 20)


def plan(reps: int, chunk: int | None, devices=None, max_slice: int | None = MAX_SLICE,
         work: float | None = None) -> Slicing:
    """The chunk/slice/device layout for ``reps`` replications.

    Args:
        reps: The replications.
        chunk: None: all replications, at most ``DEFAULT_CHUNK`` at once (memory).
        devices (typing.Any): None (all local devices of the default backend) or the devices named, used even when one
            is not the default (the host CPU's devices on a GPU machine). Several devices: one slice on each, at most
            one slice per vector of ``LANES`` replications (the first devices).
        max_slice: The largest slice on a CPU (None or 0: no cap); with several devices, slice j runs on device
            ``j % K``.
        work: The run's expected work (events, steps, path-steps; None: not known). With devices None on a CPU with
            several devices, the run is spread over them from :data:`SPREAD_WORK` on, and stays on the first below.

    Returns:
        The layout.
    """
    devs = jax.local_devices() if devices is None else list(devices)
    platform = jax.default_backend() if devices is None else devs[0].platform
    if devices is None and platform == "cpu" and not (work is not None and work >= SPREAD_WORK):  # NaN: first
        devs = devs[:1]
    cap = DEFAULT_CHUNK.get(platform, 1 << 20)
    chunk = min(reps, cap) if chunk is None else max(1, min(int(chunk), reps))
    vectors = -(-chunk // LANES)
    per_device = -(-chunk // max(LANES, max_slice)) if platform == "cpu" and max_slice else 1  # cache-sized slices
    if len(devs) > 1:
        k = min(len(devs), vectors)  # no device gets only padding
        parts, devs = min(vectors, k * -(-per_device // k)), tuple(devs[:k])
    else:
        devs = None if devices is None else tuple(devs)  # a device named is used, even when it is not the default
        parts = min(vectors, per_device)
    unit = parts * LANES
    chunk = -(-chunk // unit) * unit
    return Slicing(chunk, parts, chunk // parts, devs)


def announce(progress, total: float, unit: str) -> None:
    """Tell a progress callback the work expected (``progress.start(total, unit)``, when it has that method).

    Args:
        progress (typing.Any): The progress callback.
        total: The work expected.
        unit: The work unit.
    """
    if progress is not None and hasattr(progress, "start"):
        progress.start(total, unit)


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (treedef,) + tuple((np.shape(a), str(getattr(a, "dtype", type(a)))) for a in leaves)


_COMPILED: OrderedDict = OrderedDict()


def _capacity() -> int:
    """Programs kept: ``CACHE_SIZE`` per device (a program is compiled once per device it runs on)."""
    try:
        count = max(jax.local_device_count(), len(jax.devices("cpu")))
    except RuntimeError:  # no CPU backend in this process
        count = jax.local_device_count()
    return CACHE_SIZE * max(1, count)


def compiled(fn, *args):
    """``fn.lower(*args).compile()``, cached by (fn, argument shapes and dtypes, shardings).

    Args:
        fn (typing.Any): A jitted function.
        *args (typing.Any): Its arguments.

    Returns:
        (tuple): ``(executable, seconds spent compiling)`` (0 when it was cached).
    """
    shard = tuple(getattr(a, "sharding", None) for a in jax.tree_util.tree_leaves(args))
    key = (fn, _signature(args), shard)
    if key in _COMPILED:
        _COMPILED.move_to_end(key)
        return _COMPILED[key], 0.0
    t0 = time.perf_counter()
    exe = fn.lower(*args).compile()
    _COMPILED[key] = exe
    while len(_COMPILED) > _capacity():
        _COMPILED.popitem(last=False)
    return exe, time.perf_counter() - t0


def _pad(k: jax.Array, size: int) -> jax.Array:
    """Pad a batch of keys to ``size`` by repeating the last one (the extra results are dropped)."""
    m = k.shape[0]
    return k if m == size else jnp.concatenate([k, jnp.repeat(k[-1:], size - m, axis=0)])


def run(program: Program, args, reps: int, seed: int, *, batching: Batching = Batching(),
        max_slice: int | None = MAX_SLICE, work: float | None = None) -> tuple[Any, Timing]:
    """Run replications ``start .. start+reps-1`` of a program; outputs are numpy arrays (axis 0: replications).

    Args:
        program: The compiled simulator (:class:`Program`).
        args (typing.Any): Its traced arguments (a pytree of arrays; other values do not recompile).
        reps: Number of replications.
        seed: Base seed.
        batching: The first replication, replications per compiled call (default all; any value gives identical
            results), the devices each chunk is cut over (default all local devices) and the progress callback,
            called with the work done (in ``program.unit``) after every ``advance`` call (:class:`Batching`).
        max_slice: See :func:`plan`.
        work: The run's expected work in ``program.unit`` (None: not known), read by :func:`plan` (the drivers tell the
            progress callback, :func:`announce`, before they build the program).

    Returns:
        ``(outputs, timing)``.
    """
    start, chunk, devices, progress = batching
    early = _AHEAD.get()
    extra = 0 if early is None or start != 0 else early.lanes(program, args, seed, reps, devices)
    if isinstance(extra, tuple):  # replications 0 .. c-1 were run beside the pilot: the rest only
        kept, c = extra
        if c < reps:
            if work is not None:
                work = work * (reps - c) / reps
                announce(progress, work, program.unit)
            rest, timing = run(program, args, reps - c, seed, batching=batching._replace(start=c),
                               max_slice=max_slice, work=work)
        else:
            rest, timing = None, Timing(0.0, 0.0)
        first = jax.tree_util.tree_map(lambda x: x[:c], kept)
        out = first if rest is None else jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b], axis=0), first, rest)
        return out, Timing(timing.compile_s, timing.wall_s + early.charge())  # their share of the pilot's batch
    segments = [(seed, start, reps)] + ([(early.seed, 0, extra)] if extra else [])
    total = reps + extra
    if extra and work is not None:  # the work of the replications run ahead too
        work = work * total / reps
        announce(progress, work, program.unit)
    p = plan(total, chunk, devices, max_slice, work)
    placed = {}

    def on(j):
        """The device of slice j and the arguments placed there (once per device)."""
        if p.devices is None:
            return None, args
        dev = p.devices[j % len(p.devices)]
        if dev not in placed:
            placed[dev] = jax.device_put(args, dev)
        return dev, placed[dev]

    def place(k, j):
        dev, _ = on(j)
        return k if dev is None else jax.device_put(k, dev)

    t0 = time.perf_counter()
    compile_s = 0.0

    def call(fn, *a):  # compiled once per shape (cached across calls), then run
        nonlocal compile_s
        exe, c = compiled(fn, *a)
        compile_s += c
        return exe(*a)

    outs = []
    for lo in range(0, total, p.chunk):  # chunks of replications, not single ones
        m = min(p.chunk, total - lo)
        k = _pad(_keys(segments, lo, m), p.chunk)
        carries = [call(program.start, place(k[j * p.size:(j + 1) * p.size], j), on(j)[1]) for j in range(p.parts)]
        live = list(range(p.parts))
        while live:
            interrupt.check()  # a Ctrl-C that a finalizer swallowed (jaxq.interrupt)
            stepped = {j: call(program.advance, carries[j], on(j)[1]) for j in live}  # asynchronous: a slice a device
            done_now = 0
            for j, (c, done, w) in stepped.items():
                carries[j] = c
                done_now += int(w)
                if bool(done):
                    live.remove(j)
            if progress is not None and done_now:
                progress(done_now)
        parts = [call(program.finish, c, on(j)[1]) for j, c in enumerate(carries)]
        outs.append(jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs])[:m], *parts))
    result = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *outs)
    wall = time.perf_counter() - t0
    if extra:  # the batch's time shared by replications: the pilot's share, the rest charged to the run
        share = (wall - compile_s) * extra / total
        early.keep(jax.tree_util.tree_map(lambda x: x[reps:], result), share)
        result, wall = jax.tree_util.tree_map(lambda x: x[:reps], result), wall - share
    return result, Timing(compile_s, wall)


def _keys(segments, lo: int, m: int) -> jax.Array:
    """Keys of positions ``lo .. lo+m-1`` of the replications ``segments`` lists one after the other: ``(seed,
    first replication, count)`` each."""
    parts = []
    for seed, first, count in segments:
        a, b = max(lo, 0), min(lo + m, count)
        if b > a:
            parts.append(keys(seed, first + a, b - a))
        lo -= count
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


class _Ahead:
    """The replications a targeted run will use, run beside its pilot (:func:`ahead`).

    Attributes:
        ran: The replications run ahead (0 until the pilot's first run).
        used: Of those, the ones the run took (0: its program, arguments or platform were not the pilot's).
        ahead_s: Their share of the pilot's batch time.
        charged: Whether a run was charged ``ahead_s`` (it took them).
    """

    def __init__(self, pilot_seed: int, seed: int, count: int):
        self.pilot_seed, self.seed, self.count = pilot_seed, seed, count
        self.ran = self.used = 0
        self.ahead_s, self.charged = 0.0, False
        self._key, self._kept = None, None

    @staticmethod
    def _key_of(program, args, devices) -> tuple:
        """What fixes a replication's outputs: the program (its ``same``), the arguments and the platform (a host
        CPU and an accelerator do not give the same last bits)."""
        h = hashlib.sha256()
        for leaf in jax.tree_util.tree_leaves(args):
            a = np.asarray(leaf)
            h.update(f"{a.shape}{a.dtype}".encode())
            h.update(a.tobytes())
        platform = jax.default_backend() if devices is None or isinstance(devices, int) else list(devices)[0].platform
        return (program if program.same is None else program.same, jax.tree_util.tree_structure(args),
                h.hexdigest(), platform)

    def lanes(self, program, args, seed: int, reps: int, devices):
        """For a run from replication 0: the replications to run beside it (the pilot's first run), or
        ``(outputs, c)`` (the first ``c`` of this run were run ahead), or 0."""
        if self._key is None and seed == self.pilot_seed:
            self._key = self._key_of(program, args, devices)
            self.ran = self.count
            return self.count
        if seed == self.seed and self._kept is not None and self._key_of(program, args, devices) == self._key:
            kept, self._kept = self._kept, None
            self.used = min(self.count, reps)
            return kept, self.used
        return 0

    def keep(self, outputs, share: float) -> None:
        self._kept, self.ahead_s = outputs, share

    def charge(self) -> float:
        """The time of the replications run ahead, charged once to the run that takes them."""
        self.charged = True
        return self.ahead_s


_AHEAD: contextvars.ContextVar = contextvars.ContextVar("jaxq_ahead", default=None)


def ahead_seconds() -> float:
    """The seconds of the pilot's batch spent on replications run ahead that no run has been charged yet (0 outside
    :func:`ahead`): a timer around a call subtracts what this grew by (the pilot's call ran them for the run) and
    adds what it fell by (the run's call took them without running them; :func:`jaxq.mc.result.timed`)."""
    early = _AHEAD.get()
    return 0.0 if early is None or early.charged else early.ahead_s


@contextlib.contextmanager
def ahead(pilot_seed: int, seed: int, count: int):
    """Within it, the first run of ``pilot_seed`` (from replication 0) also runs replications ``0 .. count-1`` of
    ``seed`` in its batch, and the first run of ``seed`` (from replication 0) with the same program, arguments and
    platform takes them (see the module docstring). The batch's time is shared by replications: the pilot's result
    counts its own share, the run that takes them the rest (the caller adds ``ahead_s`` where no run took them).

    Args:
        pilot_seed: The pilot's seed.
        seed: The run's seed.
        count: The replications of ``seed`` to run ahead.

    Yields:
        The record (``ran``, ``used``, ``ahead_s``, ``charged``).
    """
    token = _AHEAD.set(_Ahead(pilot_seed, seed, count))
    try:
        yield _AHEAD.get()
    finally:
        _AHEAD.reset(token)
