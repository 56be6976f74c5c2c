"""XLA:CPU code generation for the machine jaxq runs on: 512-bit vectors where the CPU has them.

XLA:CPU vectorises a loop for 256-bit registers by default, also on CPUs with AVX-512. jaxq's simulators are
loops over replications of long chains of float64 arithmetic (the event engine's step, the samplers'
written-out logarithms and exponentials), so twice the lanes per instruction is most of a 2x: measured on this
project's 2-core AMD EPYC (per-step probe of the 2x2 event engine, 2 x 5000 replications, min of 7 rounds):
exponential 12.7 -> 8.8 ns a step, gamma:3 21.5 -> 13.8, gamma:0.7 18.6 -> 11.8.

The numbers do not change: the arithmetic is elementwise IEEE float64 either way, and every batch is a whole
number of 8-replication vectors (:data:`jaxq.mc.replications.LANES`, one 512-bit vector), so no replication
runs in a scalar loop tail; the golden-output tests pass with either width.

:func:`configure` adds ``--xla_cpu_prefer_vector_width=512`` to ``XLA_FLAGS`` when the CPU reports
``avx512f`` (Linux ``/proc/cpuinfo``), unless ``XLA_FLAGS`` already sets a vector width (the user's choice
wins) or ``JAXQ_VECTOR_WIDTH`` is set (``256`` keeps XLA's default, ``512`` forces the flag). XLA reads its
flags once, when its first backend starts, so ``import jaxq`` must come before the first JAX computation of
the process (it does for the CLI and for ``import jaxq`` at the top of a script).
"""

from __future__ import annotations

import os

FLAG = "--xla_cpu_prefer_vector_width"


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


def configure(environ=os.environ, cpuinfo: str = "/proc/cpuinfo") -> str | None:
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
