"""XLA:CPU for the machine jaxq runs on: one host device per core, 512-bit vectors where the CPU has them, while
loops compiled as one function.

**One device per core.** XLA:CPU runs a computation's loop on about one thread (its executor may hand independent
kernels of a step to another, which an engine's sequential steps hardly use), and two computations dispatched to
the same CPU device run one after the other: a batch of replications on XLA's one host device uses one core, whatever its
size, and cutting it into slices on that device does not help (2-core Intel Xeon, AVX-512, jax 0.10.2, 2x2 event
engine: 1,024 replications of pss_P at n = 1000 in 18.0 s as one slice, 23.4 s as two slices on one device,
8.1 s as one slice on each of two host devices; the uniformised engine 8.7 s, 12.3 s, 3.9 s; 32 replications at
n = 10^4, 2.5 s against 1.8 s). :func:`configure` therefore asks XLA for one host device per core this process may
use (``--xla_force_host_platform_device_count``), and :mod:`jaxq.mc.replications` spreads a long run over them
(from :data:`jaxq.mc.replications.SPREAD_WORK`: XLA compiles a program once per device, a cost a short run keeps
off by staying on the first). A replication's numbers do not change (every slice runs the same single-device
program on whole vectors of replications). ``JAXQ_HOST_DEVICES=K`` asks for K instead (``1``: XLA's one device);
a device count already in ``XLA_FLAGS`` wins. The flag is written into ``os.environ``, so child processes inherit
it. ``jax.devices("cpu")`` then lists K devices: a user's own ``jax.jit`` runs on the first, as before, while code
that maps over all devices (``jax.pmap``, a ``Mesh`` of ``jax.devices()``) sees K.

**512-bit vectors.** XLA:CPU vectorises a loop for 256-bit registers by default, also on CPUs with AVX-512. jaxq's
simulators are loops over replications of long chains of float64 arithmetic (the event engine's step, the
samplers' written-out logarithms and exponentials), so twice the lanes per instruction is most of a 2x: measured on
this project's 2-core AMD EPYC (per-step probe of the 2x2 event engine, 2 x 5000 replications, min of 7 rounds):
exponential 12.7 -> 8.8 ns a step, gamma:3 21.5 -> 13.8, gamma:0.7 18.6 -> 11.8. The numbers do not change: the
arithmetic is elementwise IEEE float64 either way, and every batch is a whole number of 8-replication vectors
(:data:`jaxq.mc.replications.LANES`, one 512-bit vector), so no replication runs in a scalar loop tail; the
golden-output tests pass with either width. :func:`configure` adds ``--xla_cpu_prefer_vector_width=512`` when the
CPU reports ``avx512f`` (Linux ``/proc/cpuinfo``), unless ``XLA_FLAGS`` already sets a vector width (the user's
choice wins) or ``JAXQ_VECTOR_WIDTH`` is set (``256`` keeps XLA's default, ``512`` forces the flag).

**While loops in one function, loops not unrolled.** XLA:CPU runs a computation as a sequence of kernels
("thunks"), one per fused loop over the replications, each dispatched by its executor; inside a ``lax.scan`` of an
engine's steps that dispatch comes on every step (the 2x2 event step with its control variates and diagnostics is
70 to 90 fused loops and copies), and on the small batches of a long run (16-24 replications a core) it is most of
a step. XLA emits a while loop whose accessed bytes are below ``xla_cpu_small_while_loop_byte_threshold`` as one
compiled function instead (its ``SmallWhileLoopHoistingPass``), with the same kernels and the same arithmetic. In
that function a batch's loops are short (two or three 512-bit vectors), and LLVM's interleaving of two vectors an
iteration leaves a batch of 24 with a scalar remainder of 8 replications; ``xla_cpu_disable_loop_unrolling`` keeps
one vector an iteration. :func:`configure` passes both through ``--xla_backend_extra_options`` (:data:`LOOP_OPTIONS`,
the threshold past any loop's size): they apply to every XLA:CPU while loop of the process (a user's own ``jax.jit``
too; XLA leaves out loops with a dot or a custom call), each unless ``XLA_FLAGS``' backend options already name it,
none with ``JAXQ_LOOP_OPTIONS=off``. Measured with and without them (2-core AMD EPYC, AVX-512, jax 0.10.2; the 2x2
event engine at n = 10^6 with controls and diagnostics, one core; ``benchmarks/step_cost.py``, record
``benchmarks/results/step_cost_cpu_avx512.json``): a step of 8 to 32 replications 1.9 to 6.2 times faster, of 256
1.2-1.3 times, of 2048 the same; the numbers are bit for bit the same (``tests/test_xla_flags.py`` compares the 2x2
engine's outputs, controls included, with and without them).

XLA reads its flags once, when its first backend starts, so ``import jaxq`` must come before the first JAX
computation of the process (it does for the CLI and for ``import jaxq`` at the top of a script).
"""

from __future__ import annotations

import os
import re
import warnings

FLAG = "--xla_cpu_prefer_vector_width"
DEVICES_FLAG = "--xla_force_host_platform_device_count"
EXTRA_FLAG = "--xla_backend_extra_options"
# XLA:CPU backend options (module docstring): every while loop as one compiled function instead of a kernel dispatch
# per fused loop; one vector an iteration (no scalar remainder on short batches)
LOOP_OPTIONS = {"xla_cpu_small_while_loop_byte_threshold": str(1 << 40), "xla_cpu_disable_loop_unrolling": None}
_EXTRA = re.compile(re.escape(EXTRA_FLAG) + r"=(\S*)")  # a backend-options flag; group 1: its comma-separated options


def _cpuinfo(field: str, cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """The value of the first line of ``cpuinfo`` that starts with ``field`` (None where there is none or the file
    cannot be read)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(field) and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU reports the AVX-512 foundation instructions (False where that cannot be read).

    Args:
        cpuinfo: The file to read (``/proc/cpuinfo``).

    Returns:
        Whether its ``flags`` line has ``avx512f``.
    """
    return "avx512f" in (_cpuinfo("flags", cpuinfo) or "").split()


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name (``unknown`` where it cannot be read).

    Args:
        cpuinfo: The file to read (``/proc/cpuinfo``).

    Returns:
        Its ``model name``, e.g. ``AMD EPYC``.
    """
    return _cpuinfo("model name", cpuinfo) or "unknown"


def vector_bits(environ=os.environ) -> int:
    """The vector width XLA:CPU prefers in this process: 512 where ``XLA_FLAGS`` asks for it, else XLA's 256.

    Args:
        environ (collections.abc.Mapping[str, str]): The environment (default ``os.environ``).

    Returns:
        512 or 256.
    """
    return 512 if f"{FLAG}=512" in environ.get("XLA_FLAGS", "") else 256


def vector_width(environ=os.environ, cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """Add the 512-bit preference to ``environ["XLA_FLAGS"]`` where it applies; returns the flag added or None.

    Args:
        environ (collections.abc.MutableMapping[str, str]): The environment (default ``os.environ``).
        cpuinfo: The file to read (``/proc/cpuinfo``).

    Returns:
        The flag added, or None.
    """
    flags = environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return None
    width = environ.get("JAXQ_VECTOR_WIDTH", "").strip()
    if width == "256" or (width != "512" and not cpu_has_avx512(cpuinfo)):
        return None
    added = f"{FLAG}=512"
    environ["XLA_FLAGS"] = f"{flags} {added}".strip()
    return added


def core_count() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_devices(environ=os.environ, cores: int | None = None) -> str | None:
    """Ask XLA for one host device per core (or ``JAXQ_HOST_DEVICES``); returns the flag added or None.

    Args:
        environ (collections.abc.MutableMapping[str, str]): The environment (default ``os.environ``).
        cores: The cores to count on (default :func:`core_count`).

    Returns:
        The flag added, or None: ``XLA_FLAGS`` already sets a device count (the user's choice wins), or the count
        asked is 1 (XLA's default). A ``JAXQ_HOST_DEVICES`` that is not a whole number >= 1 is named in a warning
        and one device per core is used.
    """
    flags = environ.get("XLA_FLAGS", "")
    if DEVICES_FLAG in flags:
        return None
    count = core_count() if cores is None else int(cores)
    asked = environ.get("JAXQ_HOST_DEVICES", "").strip()
    if asked:
        if asked.isdecimal() and asked.isascii() and int(asked) >= 1:
            count = int(asked)
        else:
            warnings.warn(f"JAXQ_HOST_DEVICES: expected a whole number >= 1, got {asked!r}; using one host device "
                          f"per core ({count})", stacklevel=2)
    if count <= 1:
        return None
    added = f"{DEVICES_FLAG}={count}"
    environ["XLA_FLAGS"] = f"{flags} {added}".strip()
    return added


def _extra_keys(flags: str) -> set[str]:
    """The keys of the backend options in ``flags`` (every ``--xla_backend_extra_options=k[=v],...``)."""
    keys = set()
    for m in _EXTRA.finditer(flags):
        keys |= {item.split("=", 1)[0] for item in m.group(1).split(",") if item}
    return keys


def loop_options(environ=os.environ) -> str | None:
    """Add :data:`LOOP_OPTIONS` to XLA:CPU's backend options (module docstring); returns the options added or None.

    They join the first ``--xla_backend_extra_options`` already in ``XLA_FLAGS`` (its own options kept, the rest of
    ``XLA_FLAGS`` as it was); an option the user's backend options already name is left to the user. A
    ``JAXQ_LOOP_OPTIONS`` other than ``off``, ``0``, ``false``, ``no``, ``on``, ``1``, ``true``, ``yes`` or empty is
    named in a warning and the options are added.

    Args:
        environ (collections.abc.MutableMapping[str, str]): The environment (default ``os.environ``).

    Returns:
        The options added (comma-separated ``key[=value]``), or None: none to add, or ``JAXQ_LOOP_OPTIONS`` is off.
    """
    asked = environ.get("JAXQ_LOOP_OPTIONS", "").strip().lower()
    if asked in ("off", "0", "false", "no"):
        return None
    if asked not in ("", "on", "1", "true", "yes"):
        warnings.warn(f"JAXQ_LOOP_OPTIONS: expected off or on, got {asked!r}; using XLA:CPU's loop options",
                      stacklevel=2)
    flags = environ.get("XLA_FLAGS", "")
    named = _extra_keys(flags)
    added = ",".join(k if v is None else f"{k}={v}" for k, v in LOOP_OPTIONS.items() if k not in named)
    if not added:
        return None
    m = _EXTRA.search(flags)
    if m is None:
        environ["XLA_FLAGS"] = f"{flags} {EXTRA_FLAG}={added}".strip()
    else:
        joined = f"{m.group(1)},{added}" if m.group(1) else added
        environ["XLA_FLAGS"] = flags[:m.start(1)] + joined + flags[m.end(1):]
    return added


def configure(environ=os.environ, cpuinfo: str = "/proc/cpuinfo", cores: int | None = None) -> list[str]:
    """The settings of this module (:func:`vector_width`, :func:`host_devices`, :func:`loop_options`); returns the
    flags added.

    Args:
        environ (collections.abc.MutableMapping[str, str]): The environment (default ``os.environ``).
        cpuinfo: The file to read for the CPU's flags (``/proc/cpuinfo``).
        cores: The cores to count on (default :func:`core_count`).

    Returns:
        The flags (and backend options) added to ``environ["XLA_FLAGS"]``.
    """
    return [f for f in (vector_width(environ, cpuinfo), host_devices(environ, cores), loop_options(environ)) if f]
