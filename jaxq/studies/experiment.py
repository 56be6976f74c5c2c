"""The experiment file (TOML): which systems, which study, which grid, how many replications.

```toml
[experiment]
study = "convergence"                 # a registered study (jaxq.studies.REGISTRY)
name = "convergence_Jn"               # optional; default: the file's stem
systems = ["pss_PP", "my_system.toml"]  # bundled example names or paths relative to this file
replications = 256                    # per grid point
chunk = 64                            # replications per chunk file (the unit of resume)
seeds = [0]                           # optional; every grid point is run for every seed
records = true                        # optional; false: no records.csv (large runs)
[grid]                                # the study's own keys (validated by its Grid model)
n = [100, 1000, 10000]
policies = ["auto"]
```

Everything is validated (pydantic, one-line errors) and every grid point is checked by the study
before a single file is written.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

from jaxq.errors import InputError
from jaxq.examples import names as example_names
from jaxq.examples import path as example_path
from jaxq.model import load, pydantic_error, read_toml


class _Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    study: str
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-]+$")] | None = None
    description: str = ""
    system: str | None = None
    systems: list[str] = []
    replications: Annotated[int, Field(ge=2)]
    chunk: Annotated[int, Field(ge=1)] = 64
    seeds: Annotated[list[Annotated[int, Field(ge=0, lt=2**32)]], Field(min_length=1)] = [0]
    records: bool = True  # write records.csv (one row per replication); chunks/ keep them anyway

    @model_validator(mode="after")
    def _one_system_key(self):
        if self.system is not None and self.systems:
            raise ValueError("give either 'system' or 'systems', not both")
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    experiment: _Experiment
    grid: dict[str, Any] = {}


@dataclass(frozen=True, eq=False)
class SystemRef:
    """A system of the experiment: its label (file stem), file and loaded model."""

    label: str
    path: Path
    model: Any


@dataclass(frozen=True, eq=False)
class Experiment:
    """A validated experiment (see the module docstring)."""

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
    points: tuple[dict, ...] = field(default=())

    def system(self, label: str) -> SystemRef:
        """The system with this label."""
        for s in self.systems:
            if s.label == label:
                return s
        raise KeyError(label)

    def fingerprint(self) -> str:
        """sha256 of everything that determines the numbers (not the output paths): the resume key."""
        data = {
            "study": self.study.name,
            "systems": {s.label: s.path.read_text() for s in self.systems},
            "replications": self.replications,
            "chunk": self.chunk,
            "seeds": list(self.seeds),
            "grid": self.grid.model_dump(mode="json"),
            "points": list(self.points),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

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
            "grid": self.grid.model_dump(mode="json"),
        }


def resolve_system(ref: str, base: Path) -> Path:
    """A system reference: a bundled example name, or a TOML path relative to ``base``."""
    if ref.endswith(".toml") or "/" in ref:
        p = Path(ref)
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise InputError("experiment.systems", f"no such system file {str(p)!r}")
        return p
    if ref not in example_names():
        raise InputError("experiment.systems", f"{ref!r} is neither a bundled example nor a .toml path")
    return example_path(ref)


def from_dict(data: dict, file: Path) -> Experiment:
    """Validate an experiment dictionary read from ``file``; raises InputError (one line) on bad input."""
    from jaxq.studies import get

    try:
        f = _File.model_validate(data)
    except pydantic.ValidationError as e:
        raise pydantic_error(e) from None
    e = f.experiment
    study = get(e.study)
    try:
        grid = study.Grid.model_validate(f.grid)
    except pydantic.ValidationError as err:
        raise pydantic_error(err, prefix="grid.") from None
    refs = [e.system] if e.system is not None else e.systems
    if study.needs_systems and not refs:
        raise InputError("experiment.systems", "name at least one system ('system' or 'systems')")
    systems = []
    for ref in refs:
        p = resolve_system(ref, file.parent)
        systems.append(SystemRef(p.stem, p, load(p)))
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise InputError("experiment.systems", "two systems have the same file name")
    exp = Experiment(
        name=e.name or file.stem,
        file=file,
        study=study,
        systems=tuple(systems),
        replications=e.replications,
        chunk=e.chunk,
        seeds=tuple(e.seeds),
        grid=grid,
        description=e.description,
        records=e.records,
    )
    points = []
    for seed in exp.seeds:
        for pt in study.points(exp):
            pt = {**pt, "seed": seed}
            pt.setdefault("reps", exp.replications)
            pt.setdefault("chunk", exp.chunk)
            points.append(pt)
    return Experiment(**{**exp.__dict__, "points": tuple(points)})


def load_experiment(path: str | Path, seeds: list[int] | None = None) -> Experiment:
    """Read and validate an experiment file (see the module docstring); ``seeds`` replaces its seeds."""
    p = Path(path).resolve() if Path(path).is_file() else Path(path)
    data = read_toml(p)
    if seeds is not None and isinstance(data.get("experiment"), dict):
        data["experiment"]["seeds"] = list(seeds)
    return from_dict(data, p)
