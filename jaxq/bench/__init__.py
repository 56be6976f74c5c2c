"""Benchmarks behind ``jaxq bench``: throughput of every engine beside its baselines, in one run.

Each section is a module of this package with ``bench(quick: bool)`` yielding rows. Rows report a
throughput of a jaxq engine (events, path-steps or state-updates per second, the median of repeats), the
compile time separately, its estimates, and, where the section has one, a baseline measured in the same
run on the same model (its rate, its estimates and the ratio).

The baselines (numba loops, Ciw, scipy's SuperLU for the optimum) are not part of this package: they live in
``benchmarks/baselines/`` of the repository checkout and are loaded by :func:`baseline`; without them (an
installed wheel, no numba or Ciw) every jaxq row is still measured, the baseline columns stay empty and a
``note`` says why.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path
from types import ModuleType

import jax

import jaxq
from jaxq import xla_flags

SECTIONS = ("pss2x2", "mmc", "network", "sde", "fastslow", "optimal")  # run by default
ON_REQUEST = ("verdict",)  # run when named (``--only verdict``): hours at the full size
BASELINES_ENV = "JAXQ_BASELINES"  # a folder holding ``baselines/`` (default: ``benchmarks/`` of the checkout)
REQUIRES = ("numba", "ciw")  # what the baselines import (pip install -e ".[bench]")


def baselines_folder() -> Path:
    """The folder that holds ``baselines/``: ``$JAXQ_BASELINES``, else ``benchmarks/`` beside the ``jaxq`` package."""
    env = os.environ.get(BASELINES_ENV)
    return Path(env) if env else Path(jaxq.__file__).resolve().parents[1] / "benchmarks"


@functools.lru_cache(maxsize=None)
def _load(name: str, folder: str) -> tuple[ModuleType | None, str | None]:
    """``(module, None)`` or ``(None, why)``: ``benchmarks.baselines.<name>`` imported from ``folder/baselines``."""
    pkg_dir = Path(folder) / "baselines"
    if not (pkg_dir / "__init__.py").is_file() or not (pkg_dir / f"{name}.py").is_file():
        where = pkg_dir / f"{name}.py"
        return None, f"no baseline {name}: {where} not found (run from a checkout, or set {BASELINES_ENV})"
    pkg = sys.modules.get("benchmarks.baselines")
    if pkg is None or Path(list(pkg.__path__)[0]).resolve() != pkg_dir.resolve():
        for key in [k for k in sys.modules if k == "benchmarks.baselines" or k.startswith("benchmarks.baselines.")]:
            del sys.modules[key]  # another folder's baselines
        spec = importlib.util.spec_from_file_location("benchmarks.baselines", pkg_dir / "__init__.py",
                                                      submodule_search_locations=[str(pkg_dir)])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["benchmarks.baselines"] = pkg
        spec.loader.exec_module(pkg)
    try:
        return importlib.import_module(f"benchmarks.baselines.{name}"), None
    except ModuleNotFoundError as e:
        if e.name not in REQUIRES:
            raise
        return None, f"{e.name} not installed (pip install -e '.[bench]')"


def baseline(name: str) -> ModuleType | None:
    """The baseline module ``benchmarks.baselines.<name>`` of a section, or None where it cannot run.

    Imported once per process from :func:`baselines_folder`; None when that folder has no such module
    (an installed wheel without the checkout) or when numba or Ciw is missing. :func:`baseline_note` says why.

    Args:
        name: The section's baseline (``fastslow``, ``optimal``, ...).

    Returns:
        The module, or None.
    """
    return _load(name, str(baselines_folder()))[0]


def baseline_note(name: str) -> str:
    """Why :func:`baseline` gives None for ``name`` (the ``note`` of a row without its baseline).

    Args:
        name: The section's baseline.

    Returns:
        The note.
    """
    return _load(name, str(baselines_folder()))[1] or f"baseline {name} not loaded"


def machine() -> dict:
    """What the figures were measured on: the CPU's model and XLA:CPU's vector width among it (a ratio depends on
    both)."""
    dev = jax.devices()[0]
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": xla_flags.cpu_model(),
        "vector_width": xla_flags.vector_bits(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "device": getattr(dev, "device_kind", str(dev)),
        "device_count": jax.device_count(),
        "baselines": _baselines_dir(),
        **{name: _version(name) for name in REQUIRES},
    }


def _baselines_dir() -> str | None:
    """The baselines' folder, None when there is none (an installed wheel without the checkout)."""
    d = baselines_folder() / "baselines"
    return str(d) if (d / "__init__.py").is_file() else None


def _version(name: str) -> str | None:
    """The installed version of a distribution, None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def available(on_request: bool = False) -> list[str]:
    """Sections whose module is present (every section runs without its baseline): those run by default, and
    with ``on_request`` also those run only when named (:data:`ON_REQUEST`).

    Args:
        on_request: Also the sections run only when named.

    Returns:
        The section names.
    """
    out = []
    for name in SECTIONS + (ON_REQUEST if on_request else ()):
        try:
            importlib.import_module(f"jaxq.bench.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"jaxq.bench.{name}":
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

    Args:
        parts: The results of :func:`run`.

    Returns:
        ``{"machine", "quick", "sections"}``.

    Raises:
        ValueError: Without parts.
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

    Args:
        sections: The sections (default: those run by default, :func:`available`).
        quick: Small sizes.
        progress (typing.Callable | None): ``progress(name)`` is called as each section starts.
        on_row (typing.Callable | None): ``on_row(result)`` is called with the result so far after every row.

    Returns:
        ``{"machine", "quick", "sections"}`` (per section its rows, wall time and peak memory).
    """
    names = available() if sections is None else sections  # the default sections (not those run on request)
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
