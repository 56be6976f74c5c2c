"""The experiment file (TOML): which systems, which study, which grid, how many replications.

```toml
[experiment]
study = "convergence"                 # a registered study (jaxq.studies.REGISTRY)
name = "convergence_Jn"               # optional; default: the file's stem (a plain folder name)
systems = ["pss_PP", "my_system.toml"]  # bundled example names or paths relative to this file
replications = 256                    # per grid point (with target_rel_se: the most per grid point)
target_rel_se = 0.01                  # optional: replications chosen per point by a pilot (jaxq.studies.targets)
chunk = 64                            # replications per chunk file (the unit of resume)
seeds = [0]                           # optional; every grid point is run for every seed
records = true                        # optional; false: no records.csv (large runs)
[grid]                                # the study's own keys (validated by its Grid model)
n = [100, 1000, 10000]
policies = ["auto"]
```

Everything is validated (pydantic in strict mode, one-line errors) and every grid point is checked by
the study before a single file is written (once: every seed gets the same points). Then the work is
estimated (:func:`check_experiment_work`): replications per point at most 2^31 - 1, a chunk that fits in
memory, at most 2^20 chunk files, and per replication at most 2^31 events of the prelimit simulator
(``2 sum_i lambda_n_i T``) or 2^40 time steps of an SDE path (``horizon / dt``), and a finite total. Each
refusal names the key. A targeted point's work is estimated at its cap, the most replications it may run.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from jaxq.errors import InputError
from jaxq.examples import names as example_names
from jaxq.examples import path as example_path
from jaxq.model import load, read_toml
from jaxq.model import validate as v
from jaxq.studies import Unique, targets


NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")  # a plain folder name: not ".", "..", hidden or an option


def _plain_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a plain folder name (the default output folder is results/<name>): "
                         "letters, digits, '_', '.' and '-', starting with a letter, digit or '_'")
    return name


class _Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    study: str
    name: Annotated[str, Field(max_length=200), AfterValidator(_plain_name)] | None = None
    description: str = ""
    system: str | None = None
    systems: Annotated[list[str], Field(max_length=1000)] = []
    replications: Annotated[int, Field(ge=2, le=v.MAX_REPLICATIONS)] | None = None  # required without a target
    target_rel_se: float | None = None  # a precision target (jaxq.studies.targets); replications: its cap
    chunk: Annotated[int, Field(ge=1)] = 64
    seeds: Annotated[list[Annotated[int, Field(ge=0, lt=2**32)]], Field(min_length=1), Unique] = [0]
    records: bool = True  # write records.csv (one row per replication); chunks/ keep them anyway
    cv: bool = True  # control variates from the diffusion limit (records the controls; controlled estimates)

    @model_validator(mode="after")
    def _one_system_key(self):
        if self.system is not None and self.systems:
            raise ValueError("give either 'system' or 'systems', not both")
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    experiment: _Experiment
    grid: dict[str, Any] = {}


@dataclass(frozen=True, eq=False)
class SystemRef:
    """A system of the experiment: its label (file stem), file and loaded model.

    Attributes:
        label: The file stem.
        path: The system file.
        model: The loaded model.
    """

    label: str
    path: Path
    model: Any


@dataclass(frozen=True, eq=False)
class Experiment:
    """A validated experiment (see the module docstring).

    Attributes:
        name: The experiment's name (the default output folder is results/<name>).
        file: The experiment file.
        study: The study (:class:`jaxq.studies.Study`).
        systems: The systems.
        replications: The replications per grid point (with ``target_rel_se``: the most per grid point).
        chunk: The replications per chunk file (the unit of resume).
        seeds: The seeds; every grid point is run for every seed.
        grid: The study's Grid model instance.
        description: The experiment's description.
        records: Write records.csv (one row per replication).
        cv: Control variates from the diffusion limit.
        points: The grid points, each with its seed, ``reps`` and ``chunk``.
        target_rel_se: The precision target of the points that take one (:mod:`jaxq.studies.targets`).
    """

    name: str
    file: Path
    study: Any  # jaxq.studies.Study
    systems: tuple[SystemRef, ...]
    replications: int
    chunk: int
    seeds: tuple[int, ...]
    grid: Any  # the study's Grid model instance
    description: str = ""
    records: bool = True
    cv: bool = True
    points: tuple[dict, ...] = field(default=())
    target_rel_se: float | None = None  # the precision target of the points that take one (jaxq.studies.targets)

    def system(self, label: str) -> SystemRef:
        """The system with this label.

        Args:
            label: The label (file stem).

        Returns:
            The system.

        Raises:
            KeyError: When no system has this label.
        """
        for s in self.systems:
            if s.label == label:
                return s
        raise KeyError(label)

    def fingerprint(self) -> str:
        """sha256 of everything that determines the numbers (not the output paths): the resume key."""
        data = {
            "study": self.study.name,
            "systems": {s.label: s.path.read_text(encoding="utf-8") for s in self.systems},
            "replications": self.replications,
            "chunk": self.chunk,
            "seeds": list(self.seeds),
            "grid": digested_grid(self.grid.model_dump(mode="json")),
            "points": list(self.points),
            "cv": self.cv,
            **({} if self.target_rel_se is None else {"target_rel_se": self.target_rel_se}),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def base_fingerprint(self) -> str:
        """sha256 of what every point shares (study, ``cv``, the ``[grid]`` keys other than the study's
        enumeration keys): a resumed run must keep it; it may change the list of points."""
        return base_fingerprint(self.study.name, self.grid.model_dump(mode="json"), self.cv,
                                self.study.enumeration_keys)

    def point_digests(self, points=None, without=("reps",)) -> list[str | None]:
        """sha256 per point of everything that determines its numbers for replications r (chunk by chunk): the
        base fingerprint, the point's system file (all of them for a point without one) and the point itself
        except its replication count (replication r's numbers do not depend on it).

        ``points``: other points (an earlier run's, from its manifest) digested against this experiment's
        systems (None for a point whose system this experiment does not have). ``without``: the keys left out;
        ``("reps", "chunk")`` names the replications themselves, whatever the chunking
        (:meth:`replication_digests`). A precision target's keys (:data:`jaxq.studies.targets.TARGET_KEYS`) are
        always left out: a targeted point's replications are a fixed run's.

        Args:
            points (list[dict] | None): Other points (None: the experiment's).
            without (tuple[str, ...]): The keys left out.

        Returns:
            The digests.
        """
        base = self.base_fingerprint()
        texts = {s.label: s.path.read_text(encoding="utf-8") for s in self.systems}

        def digest(point):
            label = point.get("system")
            if label is not None and label not in texts:
                return None
            data = {"base": base, "systems": {label: texts[label]} if label is not None else texts,
                    "point": {k: v for k, v in point.items() if k not in without and k not in targets.TARGET_KEYS}}
            return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

        return [digest(pt) for pt in (self.points if points is None else points)]

    def replication_digests(self, points=None) -> list[str | None]:
        """sha256 per point naming its replications whatever the chunking (:meth:`point_digests` without
        ``reps`` and ``chunk``, with the version of the simulators' numbers): replication r of two points with
        the same digest is the same number. A chunk file carries it, so that a resume with another ``chunk``
        rebuilds its chunks from the finished replications (:func:`jaxq.studies.runner.rechunk`).

        Args:
            points (list[dict] | None): Other points (None: the experiment's).

        Returns:
            The digests.
        """
        from jaxq.sim import STREAM_VERSION

        return [None if d is None else hashlib.sha256(f"{d}:{STREAM_VERSION}".encode()).hexdigest()
                for d in self.point_digests(points, without=("reps", "chunk"))]

    def to_dict(self) -> dict:
        """A JSON record of the experiment (for run.json and the manifest)."""
        return {
            "name": self.name,
            "file": str(self.file),
            "study": self.study.name,
            "description": self.description,
            "systems": {s.label: str(s.path) for s in self.systems},
            "replications": self.replications,
            "chunk": self.chunk,
            "seeds": list(self.seeds),
            "records": self.records,
            "cv": self.cv,
            "grid": self.grid.model_dump(mode="json"),
            **({} if self.target_rel_se is None else {"target_rel_se": self.target_rel_se}),
        }


# [grid] keys added after runs were recorded, with the value those runs had: a key at that value is left out of the
# digests, so a run recorded before the key existed still reads and resumes, and any other value is a new run
DIGEST_OMITS = {"theta_rule": "paper", "target_rel_se_at": {}, "bracket": True}


def digested_grid(grid: dict) -> dict:
    """The ``[grid]`` record that the digests see: :data:`DIGEST_OMITS` keys at their recorded value left out.

    Args:
        grid: The ``[grid]`` record.

    Returns:
        The record without those keys.
    """
    return {k: v for k, v in grid.items() if not (k in DIGEST_OMITS and v == DIGEST_OMITS[k])}


def base_fingerprint(study: str, grid: dict, cv: bool, enumeration_keys=()) -> str:
    """:meth:`Experiment.base_fingerprint` from an experiment's JSON record (a manifest's ``experiment``).

    Args:
        study: The study's name.
        grid: The ``[grid]`` record.
        cv: Control variates.
        enumeration_keys (tuple[str, ...]): The study's enumeration keys (left out).

    Returns:
        The hex digest.
    """
    shared = {k: v for k, v in digested_grid(grid).items() if k not in enumeration_keys}
    return hashlib.sha256(json.dumps({"study": study, "grid": shared, "cv": cv}, sort_keys=True).encode()).hexdigest()


def resolve_system(ref: str, base: Path) -> Path:
    """A system reference: a bundled example name, or a TOML path relative to ``base``.

    Args:
        ref: The reference.
        base: The folder of the experiment file.

    Returns:
        The system file.

    Raises:
        InputError: Naming ``experiment.systems`` for a missing file or an unknown example.
    """
    if ref.endswith(".toml") or "/" in ref:
        p = Path(ref)
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise InputError("experiment.systems", f"no such system file {str(p)!r}")
        return p
    if ref not in example_names():
        raise InputError("experiment.systems", f"{ref!r} is neither a bundled example nor a .toml path")
    return example_path(ref)


def from_dict(data: dict, file: Path, progress: Callable[[int], None] | None = None) -> Experiment:
    """Validate an experiment dictionary read from ``file``; raises InputError (one line) on bad input.

    The study's grid points are computed and checked once and given every seed. ``progress``: called with the
    number of points (grid points times seeds) checked since its last call, while they are checked.

    Args:
        data: The experiment dictionary.
        file: The file it was read from.
        progress: Called with the number of points checked since its last call (None: nothing).

    Returns:
        The experiment, its grid points computed.

    Raises:
        InputError: Naming the key of bad input.
    """
    from jaxq.studies import counting_points, get

    v.check_depth(data, str(file))
    e = v.validate_model(_File, data).experiment
    study = get(e.study)
    if e.target_rel_se is not None:
        targets.check_rel_se(e.target_rel_se, "experiment.target_rel_se")
        if study.target is None:
            raise targets.refuse_study(study)
    elif e.replications is None:
        raise InputError("experiment.replications", "missing: give replications (per grid point), or target_rel_se "
                                                    "(a precision target; replications is then the most per point)")
    grid = v.validate_model(study.Grid, data.get("grid", {}), prefix="grid.")
    refs = [e.system] if e.system is not None else e.systems
    if study.needs_systems and not refs:
        raise InputError("experiment.systems", "name at least one system ('system' or 'systems')")
    systems = []
    for ref in refs:
        p = resolve_system(ref, file.parent)
        try:
            model = load(p)
        except InputError as err:  # name the system file: the key alone would not say which one
            raise InputError(f"{p.name}: {err.key}", err.reason) from None
        systems.append(SystemRef(p.stem, p, model))
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise InputError("experiment.systems", "two systems have the same file name")
    if e.name is None and file.stem in ("", ".", ".."):  # "..toml": results/. would be results/ itself
        raise InputError("experiment.name", f"missing, and the file name {file.name!r} gives no folder name "
                                            "(results/<name>); set name")
    exp = Experiment(
        name=e.name or file.stem,
        file=file,
        study=study,
        systems=tuple(systems),
        replications=targets.DEFAULT_MAX_REPS if e.replications is None else e.replications,
        chunk=e.chunk,
        seeds=tuple(e.seeds),
        grid=grid,
        description=e.description,
        records=e.records,
        cv=e.cv,
        target_rel_se=e.target_rel_se,
    )
    told = 0

    def checked(count: int = 1) -> None:  # the study checked ``count`` more grid points, each for every seed
        nonlocal told
        told += count
        if progress is not None:
            progress(count * len(exp.seeds))

    with counting_points(checked):
        grid_points = study.points(exp)  # the same for every seed: checked once
    if told < len(grid_points):
        checked(len(grid_points) - told)
    points = []
    for seed in exp.seeds:
        for raw in grid_points:
            pt = {**raw, "seed": seed}
            pt.setdefault("reps", exp.replications)
            pt.setdefault("chunk", exp.chunk)
            targets.attach(exp, raw, pt)  # a targeted point: reps is its cap (max_reps) until the pilot plans it
            points.append(pt)
    exp = Experiment(**{**exp.__dict__, "points": tuple(points)})
    targets.check_points(exp)
    check_experiment_work(exp)
    return exp


def _keys(exp: Experiment, pt: dict) -> tuple[str, str]:
    """The keys that set a point's replications and chunk (the experiment's, or a study override: the SDE
    reference paths of the weak study and the network diffusion, ``replications_at`` of the 2x2 studies)."""
    reference = pt.get("engine") in ("sde", "diffusion") and "dt" not in pt  # not a point of the sde study
    if pt["reps"] == exp.replications:
        reps_key = "experiment.replications"
    elif reference:
        reps_key = "grid.sde_paths"
    elif pt.get("engine") == "pss":
        reps_key = "grid.replications_at"
    else:
        reps_key = "experiment.replications"
    chunk_key = "grid.sde_chunk" if reference and pt.get("engine") == "sde" and pt["chunk"] != exp.chunk \
        else "experiment.chunk"
    return reps_key, chunk_key


def point_work(exp: Experiment, pt: dict, cache: dict | None = None) -> tuple[float, str, str] | None:
    """``(per_replication, unit, key)``: events (prelimit simulator) or steps (SDE) of one replication of a
    grid point, and the key that controls it; None for a point of an unknown kind.

    Args:
        exp: The experiment.
        pt: The grid point.
        cache: The V0 of every system analysed so far, by label (filled in).

    Returns:
        ``(per_replication, unit, key)``, or None.
    """
    g = exp.grid
    if pt.get("engine") == "sde":
        dt = pt.get("dt", getattr(g, "sde_dt", None))
        horizon = getattr(g, "horizon", None)
        if horizon is None:
            times = getattr(g, "times", None) or []
            horizon = max(times) if times else None
        if dt is None or horizon is None:
            return None
        steps = v.sde_steps_per_path(horizon, dt)
        dt_key = "grid.dt" if "dt" in pt else "grid.sde_dt"
        key = "grid.horizon" if horizon > v.MAX_STEPS_PER_PATH * 1e-6 else dt_key
        return steps, "steps", key
    if pt.get("engine") == "pss" and pt.get("n") is not None:
        from jaxq.diffusion.workload import analyze

        system = exp.system(pt["system"]).model
        horizon = getattr(g, "horizon", None)
        if horizon is None:
            cache = {} if cache is None else cache
            if pt["system"] not in cache:
                cache[pt["system"]] = analyze(system).V0
        nth = system.at(pt["n"])
        if horizon is None:
            horizon = v.pss_default_horizon(nth, pt["n"], cache[pt["system"]])
        return v.pss_events_per_replication(nth, pt["n"], horizon), "events", "grid.n"
    if pt.get("engine") == "random_pss":  # the random-systems study: its systems are drawn, not files
        from jaxq.studies.random_systems import point_work as random_point_work

        return random_point_work(exp, pt)
    if pt.get("engine") == "ctmc" and pt.get("n") is not None:  # network study: the uniformisation rate x horizon
        net = exp.system(pt["system"]).model
        nth = net.at(pt["n"], "underloaded" if net.scaling == "underloaded" else "halfin-whitt")
        rate = float(nth.lam_n.sum() + (nth.N * nth.mu_n.max(axis=0)).sum())
        return rate * g.horizon, "events", "grid.n"
    if pt.get("engine") == "diffusion":
        return v.sde_steps_per_path(g.horizon, g.dt), "steps", "grid.dt"
    if "criterion" in pt and getattr(g, "simulate", False):  # fast/slow study: uniformised steps
        return float(g.steps), "steps", "grid.steps"
    return None


def check_experiment_work(exp: Experiment) -> float:
    """Refuse an experiment whose work cannot fit (see the module docstring); returns the total estimate.

    Args:
        exp: The experiment.

    Returns:
        The total estimate (events and steps).

    Raises:
        InputError: Naming the key that controls the work that cannot fit.
    """
    total, files = 0.0, 0
    analyses: dict[str, Any] = {}
    works: dict[tuple, Any] = {}  # a point's work per replication does not depend on its seed: once per grid point
    for pt in exp.points:
        reps_key, chunk_key = _keys(exp, pt)
        reps, chunk = int(pt["reps"]), int(pt["chunk"])
        if reps > v.MAX_REPLICATIONS:
            raise InputError(reps_key, f"{reps} replications exceed the limit 2^31 - 1")
        v.check_chunk(chunk_key, chunk)  # the replication layer pads every chunk to this size
        files += math.ceil(reps / chunk)
        if files > v.MAX_CHUNKS:
            raise InputError(chunk_key, f"more than {v.MAX_CHUNKS} chunk files ({reps} replications in chunks "
                                        f"of {chunk} per grid point); use larger chunks")
        try:
            grid_point = tuple(sorted((k, v) for k, v in pt.items() if k != "seed"))
            hash(grid_point)
        except TypeError:  # a value that is not a scalar: no memo
            grid_point = None
        if grid_point is None:
            work = point_work(exp, pt, analyses)
        elif grid_point in works:
            work = works[grid_point]
        else:
            work = works[grid_point] = point_work(exp, pt, analyses)
        if work is None:
            continue
        per_rep, unit, key = work
        total += v.check_work(key, reps, per_rep, unit=unit)
    if not total <= v.MAX_TOTAL_WORK:
        raise InputError("experiment.replications", f"about {total:.3g} events and steps in total exceed the limit "
                                                    f"{v.MAX_TOTAL_WORK:.3g}")
    return total


def load_experiment(path: str | Path, seeds: list[int] | None = None,
                    progress: Callable[[int], None] | None = None) -> Experiment:
    """Read and validate an experiment file (see the module docstring); ``seeds`` replaces its seeds;
    ``progress``: :func:`from_dict`'s counter of points checked.

    Args:
        path: The experiment file.
        seeds: Replace its seeds (None: its own).
        progress: :func:`from_dict`'s counter of points checked (None: nothing).

    Returns:
        The experiment.

    Raises:
        InputError: Naming the key of bad input.
    """
    p = Path(path).resolve() if Path(path).is_file() else Path(path)
    data = read_toml(p)
    if seeds is not None and isinstance(data.get("experiment"), dict):
        data["experiment"]["seeds"] = list(seeds)
    return from_dict(data, p, progress)
