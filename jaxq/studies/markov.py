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

Each chunk runs :func:`jaxq.sim.user.simulate_markov` for its replications (replication r keyed by
``fold_in(PRNGKey(seed), r)``, so the numbers do not depend on the chunking); the records are the per-replication
estimates and controls. Table ``estimates``: one row per point and estimated quantity, the controlled estimate
cross-fitted by replication index over all of the point's replications when the model has controls.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.studies import Study, Unique, file_keys, register

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Grid(BaseModel):
    """``[grid]`` of the markov study."""

    model_config = ConfigDict(extra="forbid")
    model: str
    params: dict[str, Any] = {}
    horizon: PosFloat
    discount: PosFloat | None = None
    warmup: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    engines: Annotated[list[Literal["auto", "event", "uniformized"]], Field(min_length=1), Unique] = ["auto"]


def load_model(spec: str):
    """The :class:`jaxq.MarkovModel` named ``"package.module:attribute"`` (an attribute that is a function of no
    arguments is called); an InputError naming ``grid.model`` otherwise."""
    from jaxq.sim.markov import MarkovModel

    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise InputError("grid.model", f"expected 'package.module:attribute', got {spec!r}")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise InputError("grid.model", f"cannot import {spec!r}: {e}") from None
    if not isinstance(obj, MarkovModel) and callable(obj):
        obj = obj()
    if not isinstance(obj, MarkovModel):
        raise InputError("grid.model", f"{spec!r} is not a jaxq.MarkovModel (got {type(obj).__name__})")
    return obj


def _run(g, engine: str):
    from jaxq.sim.user import MarkovRun

    return MarkovRun(horizon=g.horizon, discount=g.discount, warmup=g.warmup, engine=engine)


def _keys(key: str) -> str:
    keys = {"model": "grid.model", "reps": "experiment.replications", "seed": "experiment.seeds"}
    return keys.get(key, f"grid.{key}")


def points(exp) -> list[dict]:
    from jaxq.sim.user import check_run

    g = exp.grid
    if exp.systems:
        raise InputError("experiment.systems", "study 'markov' takes its model from grid.model, not from systems")
    model = load_model(g.model)
    out = []
    for engine in g.engines:
        with file_keys(_keys, f"engine {engine}"):
            run, _ = check_run(model, _run(g, engine), 2, 0)
        out.append({"engine": engine, "ran": run.engine})
    return out


def run_chunk(exp, pt, start, count, devices=None):
    from jaxq.sim.user import simulate_markov

    g = exp.grid
    with file_keys(_keys, f"engine {pt['engine']}"):
        r = simulate_markov(load_model(g.model), _run(g, pt["engine"])._replace(start=start, devices=devices),
                            params=g.params, reps=max(count, 2), seed=pt["seed"])
    rec = {}
    for k, v in r.samples.items():
        v = np.asarray(v)[:count]
        if v.ndim == 2:  # the controls: one column each
            rec.update({f"{k}_{c}": v[:, c] for c in range(v.shape[1])})
        else:
            rec[k] = v
    rec["events"] = np.full(count, r.events // max(count, 2), dtype=np.int64)
    return rec


def _controls(rec: dict, kind: str):
    cols = sorted((k for k in rec if k.startswith(f"controls_{kind}_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    return np.stack([np.asarray(rec[k], np.float64) for k in cols], axis=1) if cols else None


def aggregate(exp, pts, records):
    from jaxq.sim.result import Estimate

    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        ctl = {"discounted": _controls(rec, "discounted"), "window": _controls(rec, "window")}
        for k, v in rec.items():
            if k.startswith("controls_") or not k.endswith(("_discounted", "_average", "_rate")):
                continue  # the runner's columns (rep, events) and the controls
            v = np.asarray(v, np.float64)
            c = ctl["discounted"] if k.endswith("_discounted") else ctl["window"]
            est = Estimate.with_controls(v, c, np.arange(v.size))
            lo, hi = est.ci95
            row = {"point": i, "engine": pt["ran"], "seed": pt["seed"], "quantity": k, "estimate": est.value,
                   "stderr": est.stderr, "ci95_low": lo, "ci95_high": hi, "reps": int(v.size)}
            if est.controlled:
                row.update(plain=est.plain, plain_stderr=est.plain_stderr, variance_reduction=est.variance_reduction)
            rows.append(row)
    return {"estimates": rows}


def figure(exp, pts, records, tables, out):
    return []


register(Study("markov", "a user's MarkovModel (grid.model = 'package.module:attribute'): discounted integrals and "
                         "time averages", Grid, points, run_chunk, aggregate, figure, needs_systems=False))
