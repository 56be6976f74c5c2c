"""XLA:CPU for the machine jaxq runs on: one host device per core, 512-bit vectors where the CPU has them.

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

XLA reads its flags once, when its first backend starts, so ``import jaxq`` must come before the first JAX
computation of the process (it does for the CLI and for ``import jaxq`` at the top of a script).
"""

from __future__ import annotations

import os
import warnings

FLAG = "--xla_cpu_prefer_vector_width"
DEVICES_FLAG = "--xla_force_host_platform_device_count"


def cpu_has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU reports the AVX-512 foundation instructions (False where that cannot be read).

    Args:
        cpuinfo: The file to read (``/proc/cpuinfo``).

    Returns:
        Whether its ``flags`` line has ``avx512f``.
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512f" in line.split()
    except OSError:
        pass
    return False


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


def configure(environ=os.environ, cpuinfo: str = "/proc/cpuinfo", cores: int | None = None) -> list[str]:
    """Both settings of this module (:func:`vector_width`, :func:`host_devices`); returns the flags added.

    Args:
        environ (collections.abc.MutableMapping[str, str]): The environment (default ``os.environ``).
        cpuinfo: The file to read for the CPU's flags (``/proc/cpuinfo``).
        cores: The cores to count on (default :func:`core_count`).

    Returns:
        The flags added to ``environ["XLA_FLAGS"]`` (none, one or both).
    """
    return [f for f in (vector_width(environ, cpuinfo), host_devices(environ, cores)) if f]
