"""Benchmarks behind ``jaxq bench``: throughput of every engine beside its baselines, in one run.

Each section is a module of this package with ``bench(quick: bool) -> list[dict]``. Rows report a
throughput (events, path-steps or state-updates per second, the median of repeats), the compile
time separately, and, where the section has one, the ratio to a baseline measured in the same run.
"""

from __future__ import annotations

import importlib
import math
import os
import platform
import resource
import time

import jax

SECTIONS = ("pss2x2", "mmc", "network", "sde", "fastslow")
OPTIONAL = ("numba", "ciw")  # baselines (pip install 'jaxq[bench]'); a section needing a missing one is skipped


def machine() -> dict:
    """What the figures were measured on."""
    dev = jax.devices()[0]
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "device": getattr(dev, "device_kind", str(dev)),
        "device_count": jax.device_count(),
    }


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def available() -> list[str]:
    """Sections whose module is present."""
    out = []
    for name in SECTIONS:
        try:
            importlib.import_module(f"jaxq.bench.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"jaxq.bench.{name}" and e.name not in OPTIONAL:
                raise
            continue
        out.append(name)
    return out


def _finite(row: dict) -> dict:
    """A row with non-finite numbers (e.g. the standard error of a single replication) as None."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def combine(parts: list[dict]) -> dict:
    """One result from several ``run`` results (e.g. one process per section): the first machine, all sections.

    A later part's section replaces an earlier one of the same name. Used by ``benchmarks/run_gpu.sh``, which
    runs each section in its own process under a time limit so that a slow section cannot lose the others.
    """
    if not parts:
        raise ValueError("nothing to combine")
    out = {"machine": parts[0]["machine"], "quick": parts[0].get("quick", False), "sections": {}}
    for part in parts:
        out["sections"].update(part["sections"])
    return out


def run(sections: list[str] | None = None, quick: bool = False, progress=None, on_row=None) -> dict:
    """Run the given sections (default: all available) and return ``{"machine", "sections"}``.

    ``on_row(result)``, if given, is called with the result so far after every row (a section's ``bench``
    may be a generator that yields its rows as it measures them), e.g. to save partial figures.
    """
    names = available() if sections is None else sections
    out = {"machine": machine(), "quick": quick, "sections": {}}
    for name in names:
        if progress:
            progress(name)
        t0 = time.perf_counter()
        sec = out["sections"][name] = {"rows": [], "wall_s": 0.0, "peak_rss_mb": peak_rss_mb()}
        for row in importlib.import_module(f"jaxq.bench.{name}").bench(quick):
            sec["rows"].append(_finite(row))
            sec.update(wall_s=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb())
            if on_row:
                on_row(out)
        sec.update(wall_s=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb())
    return out
