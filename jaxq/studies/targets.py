"""Precision targets of an experiment: ``target_rel_se`` chooses each grid point's replications.

``[experiment] target_rel_se = 0.01`` (and, in the 2x2 studies, ``[grid] target_rel_se_at = {"1000" = 0.005}``
for the points at one n) asks, for every grid point whose replications a target can choose (its study's
:class:`jaxq.studies.PointTarget`), for a standard error at most that fraction of the point's estimate (the
column the study names: ``J_hat``, ``V_hat``, ``queue_hat``, ...). ``replications`` (or ``replications_at``)
is then the most a point may run (``max_reps``; default :data:`DEFAULT_MAX_REPS`). Each point is planned as
:func:`jaxq.mc.target.run_to_target` plans a run:

1. **Pilot**: ``m = min(128, max_reps)`` replications of the point on the seed
   ``derived_seed(seed, PILOT)`` (:func:`jaxq.mc.rng.derived_seed`: the seed ``jaxq.simulate(rel_se=...)``'s pilot
   uses; the run never uses that stream), in chunks of at most the point's ``chunk``. It measures the relative
   standard error ``q`` of the point's estimate.
2. **Plan**: ``R = max(m, ceil(m (q / target)^2 s))`` (:func:`jaxq.mc.target.plan`, with its safety factor ``s``),
   at most ``max_reps``: ``stopped_by`` is ``target``, or ``max_reps`` when the plan needs more (or when the
   pilot's estimate is 0 or not finite, which no number of replications brings to a relative target).
3. **Run**: replications ``0 .. R-1`` of the point's own seed, in chunks, exactly as a fixed run of ``R``
   replications: the same chunk files (their digests leave the target out), the same numbers, the same tables.
   ``R`` depends on the pilot only, so the estimate is unbiased; the target is met with high probability.

The pilot's result is written at once to ``DIR/pilots/<key>.json`` (its key: the point's replications, which
leave out the replication count and the target, and the pilot's size), so a resumed run plans the same ``R``
without running the pilot again, keeps every finished chunk, and ends with the bytes of an uninterrupted run. A
pilot file that is missing or damaged is computed again: the pilot is deterministic (its replications are keyed
by index, as every chunk's), so it plans the same ``R``. A resumed run may change the target: the pilot is kept,
the plan changes, and the chunks of the replications both runs share are kept.

A time budget is not offered: a plan that depends on seconds measured would not be the same on a resume or on
another machine, and resume must end with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from jaxq.errors import InputError
from jaxq.precision import float64

PILOTS = "pilots"  # DIR/pilots/<key>.json: the pilot of every targeted grid point
DEFAULT_MAX_REPS = 100_000  # max_reps of a targeted point when the experiment gives no replications (jaxq.simulate's)
# the point keys of a targeted grid point, left out of its digests (replication r's numbers do not depend on them)
# and of records.csv (whose rows are then a fixed run's of the same replications)
TARGET_KEYS = ("rel_se_target", "max_reps", "stopped_by", "pilot_reps", "pilot_rel_se")
STOPS = ("target", "max_reps")


def check_rel_se(value, key: str) -> float:
    """A relative standard error to reach: a number in (0, 1), else one InputError naming ``key``.

    Args:
        value (typing.Any): The value given.
        key: The key it was given as.

    Returns:
        The value as a float.

    Raises:
        InputError: Naming ``key``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value < 1:
        shown = "nan" if isinstance(value, float) and math.isnan(value) else repr(value)
        raise InputError(key, f"the relative standard error to reach must be a number in (0, 1) (0.01: a standard "
                              f"error 1% of the estimate), got {shown}")
    return float(value)


def targeted_studies() -> list[str]:
    """The registered studies that take a precision target."""
    from jaxq.studies import builtins

    return sorted(name for name, s in builtins().items() if s.target is not None)


def refuse_study(study, key: str = "experiment.target_rel_se") -> InputError:
    """The refusal of a target in a study that takes none (naming the study and those that do).

    Args:
        study (jaxq.studies.Study): The study.
        key: The key the refusal names.

    Returns:
        The refusal (to raise).
    """
    return InputError(key, f"study {study.name!r} takes no precision target (no estimate of its grid points has a "
                           f"standard error that its replications control); give replications. Studies that take "
                           f"one: {', '.join(targeted_studies())}")


def attach(exp, raw: dict, pt: dict) -> None:
    """Make ``pt`` (a grid point with its seed, ``reps`` and ``chunk``) a targeted one when its study's target
    applies to it (``raw``: the point as the study returned it) and a target is set: its own (a per-point
    override such as ``grid.target_rel_se_at``) or the experiment's. ``reps`` is then the cap, ``max_reps``.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        raw: The point as the study returned it.
        pt: The grid point with its seed, ``reps`` and ``chunk`` (changed in place).
    """
    spec = exp.study.target
    if spec is None or not spec.applies(raw):
        return
    target = raw.get("rel_se_target", exp.target_rel_se)
    if target is not None:
        pt["rel_se_target"] = float(target)
        pt["max_reps"] = int(pt["reps"])


def check_points(exp) -> None:
    """Refuse an experiment target that no grid point can take (a fast/slow study that simulates nothing).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Raises:
        InputError: Naming ``experiment.target_rel_se``.
    """
    if exp.target_rel_se is not None and not any("rel_se_target" in pt for pt in exp.points):
        raise InputError("experiment.target_rel_se", f"no grid point of study {exp.study.name!r} runs replications a "
                                                     "target could choose" + (" (fastslow simulates only with grid."
                                                     "simulate = true, identical slow servers)"
                                                     if exp.study.name == "fastslow" else ""))


def unplanned(exp) -> bool:
    """Whether a targeted grid point still needs its plan (:func:`plan`).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        (bool): Whether one does.
    """
    return any("rel_se_target" in pt and "stopped_by" not in pt for pt in exp.points)


def require_planned(exp) -> None:
    """Refuse to cut the chunks of an experiment whose targeted points have no plan yet (a programming error).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Raises:
        RuntimeError: When a targeted point has no plan yet.
    """
    if unplanned(exp):
        raise RuntimeError("the experiment's precision targets are not planned: call jaxq.studies.targets.plan first "
                           "(jaxq.studies.runner.run does)")


def pilot_reps(pt: dict) -> int:
    """The pilot's replications of a targeted point: :data:`jaxq.mc.target.PILOT_REPS`, at most ``max_reps``.

    Args:
        pt: The targeted grid point.

    Returns:
        The replications.
    """
    from jaxq.mc.target import PILOT_REPS

    return min(PILOT_REPS, int(pt["max_reps"]))


def pilot_key(replications: str, reps: int) -> str:
    """The name of a pilot: the point's replications (:meth:`Experiment.replication_digests`) and its size.

    Args:
        replications: The digest of the point's replications.
        reps: The pilot's replications.

    Returns:
        The hex digest.
    """
    return hashlib.sha256(f"{replications}:pilot:{reps}".encode()).hexdigest()


def run_pilot(exp, pt: dict, reps: int, devices=None) -> float:
    """The relative standard error of the point's estimate over ``reps`` replications of its pilot seed.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt: The targeted grid point.
        reps: The pilot's replications.
        devices (typing.Any): The devices each chunk is cut over (None: all local devices).

    Returns:
        The relative standard error (the study's :class:`jaxq.studies.PointTarget`).
    """
    from jaxq.mc.rng import PILOT, derived_seed
    from jaxq.studies import storage

    size = min(int(pt["chunk"]), reps)
    pilot = {**pt, "seed": derived_seed(int(pt["seed"]), PILOT), "chunk": size}
    cols = []
    for lo in range(0, reps, size):
        count = min(size, reps - lo)
        c = {k: np.asarray(v) for k, v in exp.study.run_chunk(exp, pilot, lo, count, devices).items()}
        c["rep"] = np.arange(lo, lo + count, dtype=np.int64)
        cols.append(c)
    return float(exp.study.target.rel_se(exp, pt, storage.concatenate_chunks(cols)))


def planned(pt: dict, q: float, m: int) -> dict:
    """The point with its plan: ``reps`` R (:func:`jaxq.mc.target.plan`, at most ``max_reps``), ``stopped_by``,
    ``pilot_reps`` and ``pilot_rel_se`` (None when not finite).

    Args:
        pt: The targeted grid point.
        q: The pilot's relative standard error.
        m: The pilot's replications.

    Returns:
        The planned point.
    """
    from jaxq.mc.target import plan as needed

    cap = int(pt["max_reps"])
    need = needed(q, m, float(pt["rel_se_target"]))
    reps, stop = (int(need), "target") if need <= cap else (cap, "max_reps")
    return {**pt, "reps": reps, "stopped_by": stop, "pilot_reps": m,
            "pilot_rel_se": q if math.isfinite(q) else None}


def _read_pilot(path: Path, key: str, reps: int) -> float | None:
    """The pilot's relative standard error recorded in ``path`` (NaN: recorded as not finite), or None when the
    file is missing, damaged or another pilot's."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("key") != key or rec.get("reps") != reps:
        return None
    q = rec.get("rel_se")
    if q is None:
        return math.nan
    return float(q) if isinstance(q, (int, float)) and not isinstance(q, bool) and q >= 0 else None


def clear(out: Path, resume: bool) -> None:
    """Create ``DIR/pilots``; a run that does not resume starts without an earlier run's pilots.

    Args:
        out: The run's folder.
        resume: The run resumes an earlier run (its pilots are kept).
    """
    folder = Path(out) / PILOTS
    if not resume and folder.is_dir():
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)


@float64
def plan(exp, out: Path, *, devices=None, process=(0, 1), barrier: Callable[[str], None] | None = None,
         progress: bool | None = None):
    """``exp`` with every targeted grid point planned (see the module): pilots read from ``DIR/pilots`` or run
    (process p of P runs every P-th missing one, then ``barrier`` and every process reads them all) and written
    there at once.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        out: The run's folder.
        devices (typing.Any): The devices each chunk is cut over (None: all local devices).
        process (tuple[int, int]): ``(p, P)``: this process and the number of processes.
        barrier: Called with a name after this process's pilots are written (None: one process).
        progress: Show the tqdm bar (None: only on a terminal).

    Returns:
        (jaxq.studies.experiment.Experiment): The planned experiment.

    Raises:
        InputError: Naming ``--out`` when another process's pilot file is not found.
    """
    from jaxq.studies import storage

    todo = [i for i, pt in enumerate(exp.points) if "rel_se_target" in pt and "stopped_by" not in pt]
    if not todo:
        return exp
    folder = Path(out) / PILOTS
    rdig = exp.replication_digests()
    sizes = {i: pilot_reps(exp.points[i]) for i in todo}
    keys = {i: pilot_key(rdig[i], sizes[i]) for i in todo}

    def found():
        return {i: q for i in todo if (q := _read_pilot(folder / f"{keys[i]}.json", keys[i], sizes[i])) is not None}

    have = found()
    first: dict[str, int] = {}  # a pilot to run: the first point of each key (a point listed twice runs it once)
    for i in todo:
        if i not in have:
            first.setdefault(keys[i], i)
    runs = list(first.values())
    p, P = process
    mine = runs[p::P]
    if mine:
        from jaxq.progress import monitor

        folder.mkdir(parents=True, exist_ok=True)
        show = sys.stderr.isatty() if progress is None else progress
        bar = monitor(f"pilots {exp.name}", sum(sizes[i] for i in mine), "replications", bar=show,
                      dynamic_ncols=True)
        try:
            for i in mine:
                q = run_pilot(exp, exp.points[i], sizes[i], devices)
                storage.write_json(folder / f"{keys[i]}.json", {
                    "key": keys[i], "reps": sizes[i], "rel_se": q if math.isfinite(q) else None,
                    "seed": _pilot_seed(exp.points[i]), "estimate": exp.study.target.estimate})
                have[i] = q
                bar.update(sizes[i])
        finally:
            bar.close()
    if barrier is not None:
        barrier("jaxq-run-pilots")
    if len(have) < len(todo):
        have = found()
    lost = [i for i in todo if i not in have]
    if lost:  # another process's pilot file is gone (a shared folder that is not shared)
        raise InputError("--out", f"the pilot of grid point {lost[0]} is not in {folder}; run again with --resume")
    points = list(exp.points)
    for i in todo:
        points[i] = planned(points[i], have[i], sizes[i])
    return dataclasses.replace(exp, points=tuple(points))


def _pilot_seed(pt: dict) -> int:
    from jaxq.mc.rng import PILOT, derived_seed

    return derived_seed(int(pt["seed"]), PILOT)


def summaries(exp, records: list[dict]) -> tuple[dict[int, dict], list[str]]:
    """The table columns of every targeted grid point, by point index (``rel_se_target``, ``rel_se`` reached,
    ``stopped_by``, ``max_reps``, ``pilot_reps``, ``pilot_rel_se``), and a sentence for every point whose relative
    standard error ends above its target.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        records: The records of each grid point.

    Returns:
        ``(columns by point index, sentences)``.
    """
    cols, notes = {}, []
    for i, (pt, rec) in enumerate(zip(exp.points, records)):
        if "stopped_by" not in pt:
            continue
        reached = float(exp.study.target.rel_se(exp, pt, rec))
        cols[i] = {"rel_se_target": pt["rel_se_target"], "rel_se": reached, "stopped_by": pt["stopped_by"],
                   "max_reps": pt["max_reps"], "pilot_reps": pt["pilot_reps"], "pilot_rel_se": pt["pilot_rel_se"]}
        if not reached <= pt["rel_se_target"]:
            label = ", ".join(f"{k} {pt[k]}" for k in ("system", "policy", "engine", "n", "dt", "seed") if k in pt
                              and pt[k] is not None)
            why = (f"the pilot's {pt['pilot_reps']} replications planned {pt['reps']:,}" if pt["stopped_by"] == "target"
                   else f"stopped by max_reps at {pt['reps']:,} replications"
                        + ("" if pt["pilot_rel_se"] is not None else " (the pilot's estimate is 0 or not finite)"))
            notes.append(f"grid point {i} ({label}): the relative standard error {reached:.3g} of "
                         f"{exp.study.target.estimate} is above the target {pt['rel_se_target']:g}: {why}")
    return cols, notes
