"""Throughput on this machine (``jaxq bench``): each simulator's events per second beside its baselines (numba,
Ciw; loaded from ``benchmarks/baselines/`` of a checkout, or ``$JAXQ_BASELINES``, when present), and the optimum
J*_n of the 2x2 system by policy iteration beside the same iteration with scipy's sparse LU."""

from __future__ import annotations

__all__ = ["bench_parts", "bench_sections", "run_bench"]


def bench_sections(on_request: bool = True) -> list[str]:
    """The sections this installation can measure (those whose module is present; each runs without its
    baseline).

    Args:
        on_request: Also the sections run only when named: ``verdict`` (time to a precision target beside a
            plain loop). The sections run by default are ``pss2x2``, ``mmc``, ``network``, ``sde``,
            ``fastslow`` and ``optimal``.

    Returns:
        The section names.
    """
    from jaxq import bench

    return bench.available(on_request)


def bench_parts() -> tuple[str, ...]:
    """The parts of the ``pss2x2`` section this run measures: ``JAXQ_BENCH_PSS2X2_PARTS`` (comma-separated,
    default all); an unknown part is an :class:`jaxq.InputError` naming the variable, before any measurement."""
    from jaxq.bench.pss2x2 import parts

    return parts()


def run_bench(sections: list[str] | None = None, quick: bool = False, progress=None, on_row=None) -> dict:
    """Measure ``sections`` (default: those run by default, ``bench_sections(on_request=False)``), small sizes
    with ``quick``.

    Args:
        sections: The sections (default: those run by default; ``verdict`` runs only when named).
        quick: Small sizes.
        progress (typing.Callable | None): ``progress(name)`` is called as each section starts.
        on_row (typing.Callable | None): ``on_row(result)`` is called with the result so far after every measured row
            (e.g. to rewrite a file, so that an interrupted run keeps what it measured).

    Returns:
        ``{"machine", "quick", "sections"}`` (per section its rows, wall time and peak memory).
    """
    from jaxq import bench

    return bench.run(sections, quick=quick, on_row=on_row, progress=progress)
