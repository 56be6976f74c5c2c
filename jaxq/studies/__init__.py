"""Studies: the experiment runner, its registry of studies, and their figures.

A study is data plus four pure-ish functions (:class:`Study`): a pydantic model of its ``[grid]`` table,
``points`` (the grid points of an experiment), ``run_chunk`` (per-replication records of one grid point
for replications ``start .. start+count-1``), and ``aggregate`` + ``figure`` (tables and PNG files from
all records). :mod:`jaxq.studies.runner` does the rest (chunks on disk, resume, devices, processes).
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, NamedTuple

import numpy as np
from pydantic import AfterValidator

from jaxq.errors import InputError


def _no_duplicates(values: list) -> list:
    """A grid list lists each value once: a repeated value would compute the same points twice (a typo)."""
    seen: list = []
    for x in values:
        if x in seen:  # == : 9 and 9.0 (or 1000 and 1e3) are the same value
            shown = f"{x:g}" if isinstance(x, float) else repr(x)
            raise ValueError(f"{shown} is listed twice (each value once)")
        seen.append(x)
    return values


#: pydantic annotation for a ``[grid]`` list that enumerates points: duplicates are refused (one line naming the key)
Unique = AfterValidator(_no_duplicates)


@contextmanager
def file_keys(key_of: Callable[[str], str], where: str, reason: Callable[[str], str] = lambda r: r):
    """Re-raise a lower layer's InputError with the experiment file's key (``key_of`` of the argument it named),
    the point it concerns (``where``) and, optionally, its reason reworded for the file.

    Args:
        key_of: The experiment file's key of the argument a lower layer's InputError named.
        where: The point the error concerns (the start of the reason).
        reason: Rewords the lower layer's reason for the file (default: as it is).

    Raises:
        InputError: Naming ``key_of`` of the key the lower layer's error named.
    """
    try:
        yield
    except InputError as e:
        raise InputError(key_of(e.key), f"{where}: {reason(e.reason)}") from None


_CHECKED: ContextVar[Callable[[int], None] | None] = ContextVar("jaxq_points_checked", default=None)


def point_checked(count: int = 1) -> None:
    """Tell the validation's progress counter that ``count`` more grid points were checked: a study's ``points``
    calls it as it goes (:func:`jaxq.studies.experiment.from_dict` counts the points it does not tell about when
    ``points`` returns). Does nothing outside :func:`counting_points`.

    Args:
        count: The grid points checked.
    """
    report = _CHECKED.get()
    if report is not None:
        report(count)


@contextmanager
def counting_points(report: Callable[[int], None] | None):
    """Within the block, :func:`point_checked` calls ``report`` (None: nothing).

    Args:
        report: Called with the count of every :func:`point_checked` within the block (None: nothing).
    """
    token = _CHECKED.set(report)
    try:
        yield
    finally:
        _CHECKED.reset(token)


class PointTarget(NamedTuple):
    """How a study takes a precision target (``experiment.target_rel_se``, :mod:`jaxq.studies.targets`).

    Attributes:
        applies: ``applies(point) -> bool`` on a point as the study's ``points`` returns it: whether a target
            chooses its replications (not a reference point with its own count, nor a deterministic case).
        rel_se: ``rel_se(exp, point, records) -> float``: the standard error over the estimate the target controls,
            from a point's records (the pilot's, then the run's): :func:`relative_se` of the table's estimate.
        estimate: the table column of that estimate (notes and docs).
    """

    applies: Callable[[dict], bool]
    rel_se: Callable[[Any, dict, dict], float]
    estimate: str


def relative_se(value: float, stderr: float) -> float:
    """``stderr / |value|``: 0 where the standard error is 0, inf where the value is 0 with a positive standard
    error, NaN where either is not finite (as :func:`jaxq.mc.target.relative_stderr`).

    Args:
        value: The estimate.
        stderr: Its standard error.

    Returns:
        The relative standard error.
    """
    value, stderr = float(value), float(stderr)
    if not (np.isfinite(value) and np.isfinite(stderr)):
        return float("nan")
    if stderr == 0:
        return 0.0
    return float("inf") if value == 0 else stderr / abs(value)


class Study(NamedTuple):
    """One registered study.

    Attributes:
        name: the value of ``experiment.study`` that selects it.
        describe: one line for ``--help`` and the run record.
        Grid: pydantic model of the experiment's ``[grid]`` table (extra keys forbidden).
        points: ``points(exp) -> list[dict]``: grid points (JSON scalars; optional ``reps``/``chunk``
            override the experiment's replications and chunk size for that point). Must raise InputError
            on anything it cannot run, so that nothing is written before the run starts. Called once per
            experiment (every seed gets the same points); a study whose checks take a while calls
            :func:`point_checked` after each point, which moves the validation's counter.
        run_chunk: ``run_chunk(exp, point, start, count, devices) -> dict[str, ndarray]``: per-replication
            records (each of length ``count``) of replications ``start .. start+count-1``; an ``events``
            column, when present, feeds the progress bar.
        aggregate: ``aggregate(exp, points, records) -> dict[str, list[dict]]``: named tidy tables.
        figure: ``figure(exp, points, records, tables, out_dir) -> list[str]``: PNG paths written.
        needs_systems: whether the experiment must name systems (False: the grid defines the cases).
        enumeration_keys: ``[grid]`` keys that only list the points (``n``, ...), never change a point's
            numbers: a resumed run may change them (and the systems, seeds, replications) and keeps the chunks
            of every point it shares with the earlier run (:mod:`jaxq.studies.runner`).
        target: how the study takes ``experiment.target_rel_se`` (:class:`PointTarget`); None: it takes none (a
            deterministic study, or one that compares laws), and the key is refused naming the study.
    """

    name: str
    describe: str
    Grid: type
    points: Callable[[Any], list[dict]]
    run_chunk: Callable[..., dict[str, np.ndarray]]
    aggregate: Callable[..., dict[str, list[dict]]]
    figure: Callable[..., list[str]]
    needs_systems: bool = True
    enumeration_keys: tuple[str, ...] = ()
    target: PointTarget | None = None


REGISTRY: dict[str, Study] = {}
_BUILTIN = ("jaxq.studies.pss", "jaxq.studies.sde", "jaxq.studies.network", "jaxq.studies.fastslow",
            "jaxq.studies.random_systems", "jaxq.studies.markov", "jaxq.studies.optimal")


def register(study: Study) -> Study:
    """Add a study to the registry (a later registration of the same name replaces it).

    Args:
        study: The study.

    Returns:
        The study.
    """
    REGISTRY[study.name] = study
    return study


def builtins() -> dict[str, Study]:
    """The registry with every built-in study registered."""
    for mod in _BUILTIN:
        importlib.import_module(mod)
    return REGISTRY


def get(name: str) -> Study:
    """The registered study ``name``; an InputError naming the known studies otherwise.

    Args:
        name: The value of ``experiment.study``.

    Returns:
        The study.

    Raises:
        InputError: Naming ``experiment.study`` when no study is registered as ``name``.
    """
    builtins()
    if name not in REGISTRY:
        raise InputError("experiment.study", f"unknown study {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]
