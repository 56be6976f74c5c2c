"""Study ``markov``: a user's :class:`jaxq.MarkovModel` from an importable module, run by the experiment runner.

The experiment file names the model and what to estimate::

    [experiment]
    study = "markov"
    replications = 1024
    chunk = 256

    [grid]
    model = "mypackage.queues:MMCM"     # a MarkovModel, or a function of no arguments returning one
    params = {lam = 3.0, mu = 1.0, theta = 0.5, c = 3, K = 5}
    horizon = 80.0
    discount = 1.0                      # E int_0^T exp(-gamma t) observe dt (optional)
    warmup = 10.0                       # the time average over [warmup, horizon] (optional)
    engines = ["event", "uniformized"]  # one grid point per engine (default ["auto"])
    observers = {blocked = "mypackage.queues:BLOCKED"}  # statistics of the path (jaxq.Observer; optional)

The model's functions are checked on ``grid.params`` before the run starts: an entry the model reads but
``params`` lacks, or one that is not a number or an array of numbers, is one error naming ``grid.params`` and the
entry. Each chunk runs :func:`jaxq.sim.simulate_markov.simulate_markov` for its replications (replication r keyed by
``fold_in(PRNGKey(seed), r)``, so the numbers do not depend on the chunking); the records are the per-replication
estimates and controls. Table ``estimates``: one row per point and estimated quantity, the controlled estimate
cross-fitted by replication index over all of the point's replications when the model has controls; each
observer's outputs are rows too (quantity ``<name>`` or ``<name>_<key>``, the plain mean; an array output one row
per entry, ``_<i>`` appended), as :func:`jaxq.simulate` names them. A precision target (``target_rel_se``,
:mod:`jaxq.studies.targets`) chooses the replications of every point: the largest standard error over the estimate
of the model's estimates (not the observers'), as ``jaxq.simulate(model, rel_se=...)`` targets a MarkovModel.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.studies import PointTarget, Study, Unique, file_keys, register, relative_se

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class MarkovGrid(BaseModel):
    """``[grid]`` of the markov study.

    Attributes:
        model: ``"package.module:attribute"``: a MarkovModel, or a function of no arguments returning one.
        params: The model's parameters.
        horizon: The horizon T.
        discount: The discount rate gamma of ``E int_0^T exp(-gamma t) observe dt`` (optional).
        warmup: The time average over [warmup, horizon] (optional).
        engines: One grid point per engine: ``auto``, ``event`` or ``uniformized``.
        observers: Statistics of the path: name -> ``"package.module:attribute"`` (:class:`jaxq.Observer`; optional).
    """

    model_config = ConfigDict(extra="forbid")
    model: str
    params: dict[str, Any] = {}
    horizon: PosFloat
    discount: PosFloat | None = None
    warmup: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    engines: Annotated[list[Literal["auto", "event", "uniformized"]], Field(min_length=1), Unique] = ["auto"]
    observers: dict[str, str] = {}


OBSERVED = "observer__"  # the records' prefix of the observers' outputs (their names follow it)


def _load(spec: str, key: str):
    """The attribute named ``"package.module:attribute"``; an InputError naming ``key`` otherwise."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise InputError(key, f"expected 'package.module:attribute', got {spec!r}")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise InputError(key, f"cannot import {spec!r}: {e}") from None


def load_observers(specs: dict[str, str]) -> dict:
    """The observers of ``grid.observers`` (name -> ``"package.module:attribute"``: a :class:`jaxq.Observer`, or a
    function of no arguments returning one); an InputError naming ``grid.observers.<name>`` otherwise. Loaded once
    per process (the same objects for every chunk: a compiled program is reused).

    Args:
        specs: ``grid.observers``.

    Returns:
        The observers by name.

    Raises:
        InputError: Naming ``grid.observers.<name>`` (``grid.observers`` when they do not go together).
    """
    return dict(_load_observers(tuple(specs.items())))


@lru_cache(maxsize=16)
def _load_observers(specs: tuple) -> tuple:
    from jaxq.mc.observer import Observer, check_observers

    out = {}
    for name, spec in specs:
        key = f"grid.observers.{name}"
        obj = _load(spec, key)
        if not isinstance(obj, Observer) and callable(obj):
            obj = obj()
        if not isinstance(obj, Observer):
            raise InputError(key, f"{spec!r} is not a jaxq.Observer (got {type(obj).__name__})")
        out[name] = obj
    return tuple(check_observers(out, "grid.observers").items())


def load_model(spec: str):
    """The :class:`jaxq.MarkovModel` named ``"package.module:attribute"`` (an attribute that is a function of no
    arguments is called); an InputError naming ``grid.model`` otherwise.

    Args:
        spec: ``"package.module:attribute"``.

    Returns:
        (jaxq.MarkovModel): The model.

    Raises:
        InputError: Naming ``grid.model``.
    """
    from jaxq.sim.markov import MarkovModel

    obj = _load(spec, "grid.model")
    if not isinstance(obj, MarkovModel) and callable(obj):
        obj = obj()
    if not isinstance(obj, MarkovModel):
        raise InputError("grid.model", f"{spec!r} is not a jaxq.MarkovModel (got {type(obj).__name__})")
    return obj


def _run(g, engine: str):
    from jaxq.sim.simulate_markov import MarkovRun

    return MarkovRun(horizon=g.horizon, discount=g.discount, warmup=g.warmup, engine=engine,
                     observers=load_observers(g.observers) or None)


_MODEL_FUNCTIONS = frozenset({"init", "transition", "observe", "rates", "counts", "rate_bound", "controls",
                              "snapshot"})  # the functions of a jaxq.MarkovModel


def _keys(key: str) -> str:
    """The file's key for an InputError's key: a function of the model is named as the model's (``grid.model``'s
    ``counts``), not as a grid key."""
    keys = {"model": "grid.model", "reps": "experiment.replications", "seed": "experiment.seeds"}
    if key in _MODEL_FUNCTIONS:
        return f"grid.model's {key}"
    return keys.get(key, f"grid.{key}")


def points(exp) -> list[dict]:
    """One grid point per engine, the model checked on ``grid.params`` first.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points ``{"engine", "ran"}`` (``ran``: the engine that runs).

    Raises:
        InputError: Naming the file's key (``grid.params``, ``grid.model``, ...; ``experiment.systems`` when systems
            are given).
    """
    from jaxq.precision import in_float64
    from jaxq.sim.simulate_markov import check_model, check_params, check_run

    g = exp.grid
    if exp.systems:
        raise InputError("experiment.systems", "study 'markov' takes its model from grid.model, not from systems")
    model = load_model(g.model)
    with file_keys(_keys, g.model), in_float64():  # before any run: params the model lacks or cannot take
        check_model(model, check_params(g.params))
    out = []
    for engine in g.engines:
        with file_keys(_keys, f"engine {engine}"):
            run, _ = check_run(model, _run(g, engine), 2, 0)
        out.append({"engine": engine, "ran": run.engine})
    return out


def run_chunk(exp, pt, start, count, devices=None):
    """The per-replication estimates, controls and observers' outputs of one point
    (:func:`jaxq.sim.simulate_markov.simulate_markov`).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.
        start (int): The first replication.
        count (int): The replications.
        devices (typing.Any): The devices the chunk is cut over (None: all local devices).

    Returns:
        (dict[str, numpy.ndarray]): Per-replication records, each of length ``count``.

    Raises:
        InputError: Naming the file's key (``grid.observers`` when two observers' outputs share a column).
    """
    from jaxq.mc.replications import Batching
    from jaxq.sim.simulate_markov import simulate_markov

    g = exp.grid
    with file_keys(_keys, f"engine {pt['engine']}"):
        run = _run(g, pt["engine"])
        r = simulate_markov(load_model(g.model), run._replace(batching=Batching(start, devices=devices)),
                            params=g.params, reps=max(count, 2), seed=pt["seed"])
    observed = set(r.info.get("observed", ()))
    rec = {}
    for k, v in r.samples.items():
        v = np.asarray(v)[:count]
        if k in observed:  # an observer's output: a column per entry of an array output
            v = v.reshape(count, -1)
            k = OBSERVED + k
            cols = {f"{k}_{c}": v[:, c] for c in range(v.shape[1])} if v.shape[1] > 1 else {k: v[:, 0]}
            shared = sorted(set(cols) & set(rec))  # an array output's columns and another observer's name
            if shared:
                raise InputError("grid.observers", f"two observers' outputs share the column {shared[0]!r}")
            rec.update(cols)
        elif v.ndim == 2:  # the controls: one column each
            rec.update({f"{k}_{c}": v[:, c] for c in range(v.shape[1])})
        else:
            rec[k] = v
    rec["events"] = np.full(count, r.events // max(count, 2), dtype=np.int64)
    return rec


def _controls(rec: dict, kind: str):
    cols = sorted((k for k in rec if k.startswith(f"controls_{kind}_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    return np.stack([np.asarray(rec[k], np.float64) for k in cols], axis=1) if cols else None


def _estimates(rec: dict):
    """``(column, estimate, observed)`` of every estimate of a point's records: the model's (controlled,
    cross-fitted by replication index, when it has controls) and the observers' (plain means)."""
    from jaxq.mc.result import Estimate

    ctl = {"discounted": _controls(rec, "discounted"), "window": _controls(rec, "window")}
    for k, v in rec.items():
        mine = k.startswith(OBSERVED)
        if not mine and (k.startswith("controls_") or not k.endswith(("_discounted", "_average", "_rate"))):
            continue  # the runner's columns (rep, events) and the controls
        v = np.asarray(v, np.float64)
        c = None if mine else ctl["discounted"] if k.endswith("_discounted") else ctl["window"]
        yield k, Estimate.with_controls(v, c, np.arange(v.size)), mine


def _rel_se(exp, pt, rec) -> float:
    """The largest standard error over the estimate among the model's estimates of a point (NaN: none finite)."""
    worst = 0.0
    for _, est, observed in _estimates(rec):
        if not observed:
            q = relative_se(est.value, est.stderr)
            if np.isnan(q):
                return q
            worst = max(worst, q)
    return worst


def aggregate(exp, pts, records):
    """The table ``estimates``: one row per point and estimated quantity (see the module).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"estimates"}``.
    """
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        for k, est, mine in _estimates(rec):
            v = np.asarray(rec[k], np.float64)
            lo, hi = est.ci95
            row = {"point": i, "engine": pt["ran"], "seed": pt["seed"], "quantity": k.removeprefix(OBSERVED),
                   "estimate": est.value,
                   "stderr": est.stderr, "ci95_low": lo, "ci95_high": hi, "reps": int(v.size)}
            if est.controlled:
                row.update(plain=est.plain, plain_stderr=est.plain_stderr, variance_reduction=est.variance_reduction)
            rows.append(row)
    return {"estimates": rows}


def figure(exp, pts, records, tables, out):
    """No figure: the study draws none.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): ``[]``.
    """
    return []


register(Study("markov", "a user's MarkovModel (grid.model = 'package.module:attribute'): discounted integrals and "
                         "time averages", MarkovGrid, points, run_chunk, aggregate, figure, needs_systems=False,
               target=PointTarget(lambda pt: True, _rel_se, "every estimate of the model")))
