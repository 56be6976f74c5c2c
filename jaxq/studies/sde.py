"""Study ``sde``: the optimally controlled reflected SDE (2.24)-(2.25) against the exact WCP value.

SdeGrid: systems x step sizes dt. Each path is the skew-exact scheme (``jaxq.sde.skew``) started at 0 with
the lower mode below z* and the higher above (one mode in the single case); its discounted cost
``int_0^T exp(-gamma t) Z dt`` estimates V_WCP(0), which the HJB gives exactly. The figure shows the
bias |V_hat - V_WCP(0)| against dt with its 95% interval. A precision target (``target_rel_se``,
:mod:`jaxq.studies.targets`) chooses the paths of every point: the standard error of ``V_hat`` over ``V_hat``.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.mc.replications import Batching
from jaxq.studies import PointTarget, Study, Unique, chunks, figures, register, relative_se
from jaxq.studies.stats import controlled_estimate, loglog_rate

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class SdeGrid(BaseModel):
    """``[grid]`` of the SDE study.

    Attributes:
        dt: The step sizes (each once, at most ``horizon``).
        horizon: The horizon T of the discounted cost.
    """

    model_config = ConfigDict(extra="forbid")
    dt: Annotated[list[PosFloat], Field(min_length=1), Unique]
    horizon: PosFloat = 30.0


def points(exp) -> list[dict]:
    """The grid points: every ``pss2x2`` system at every step size.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points ``{"system", "engine", "dt"}``.

    Raises:
        InputError: Naming ``experiment.systems`` for a system that is not ``pss2x2``, or ``grid.dt`` for a step size
            above the horizon.
    """
    out = []
    for s in exp.systems:
        if type(s.model).__name__ != "PSS2x2":
            raise InputError("experiment.systems", f"{s.label}: study 'sde' needs a 'pss2x2' system")
        for dt in exp.grid.dt:
            if dt > exp.grid.horizon:
                raise InputError("grid.dt", f"{dt:g} exceeds the horizon {exp.grid.horizon:g}")
            out.append({"system": s.label, "engine": "sde", "dt": dt})
    return out


def run_chunk(exp, pt, start, count, devices=None):
    """The per-path records (``V``, ``events`` and, with ``exp.cv``, the control) of paths ``start .. start+count-1``
    of a point.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.
        start (int): The first path.
        count (int): The paths.
        devices (typing.Any): The devices the chunk is cut over (None: all local devices).

    Returns:
        (dict[str, numpy.ndarray]): Per-path records (:func:`jaxq.studies.chunks.sde_chunk`).
    """
    return chunks.sde_chunk(exp.system(pt["system"]).path, pt["dt"], exp.grid.horizon, pt["seed"], count,
                             Batching(start, pt["chunk"], devices), cv=exp.cv)


def aggregate(exp, pts, records):
    """The tables ``summary`` (per point V_hat, its standard error, V_WCP(0) and the bias) and ``fits`` (per system
    the weak order: the log-log rate of |bias| in dt).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-path records.

    Returns:
        (dict[str, list[dict]]): ``{"summary", "fits"}``.
    """
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        _, an = chunks.system_and_analysis(exp.system(pt["system"]).path)
        v, se, plain = controlled_estimate(rec, "V")
        rows.append({"point": i, "system": pt["system"], "dt": pt["dt"], "seed": pt["seed"],
                     "paths": int(rec["V"].size), "V_hat": v, "V_hat_stderr": se, "V_exact": an.V_wcp0,
                     "bias": v - an.V_wcp0, "z_star": an.z_star, **plain})
    fits = []
    for system in dict.fromkeys(r["system"] for r in rows):
        rs = [r for r in rows if r["system"] == system]
        rate, rate_se, _ = loglog_rate([r["dt"] for r in rs], [abs(r["bias"]) for r in rs],
                                       [r["V_hat_stderr"] for r in rs])
        fits.append({"system": system, "weak_order": rate, "weak_order_stderr": rate_se})
    return {"summary": rows, "fits": fits}


def figure(exp, pts, records, tables, out):
    """The bias V_hat - V_WCP(0) against dt with its 95% interval, per system (``sde_bias.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-path records.
        tables (dict[str, list[dict]]): The tables of :func:`aggregate`.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    fig, ax = figures.single_figure()
    for system in dict.fromkeys(r["system"] for r in tables["summary"]):
        rs = [r for r in tables["summary"] if r["system"] == system]
        ax.errorbar([r["dt"] for r in rs], [r["bias"] for r in rs],
                    yerr=1.96 * np.array([r["V_hat_stderr"] for r in rs]), fmt="o-", ms=4, capsize=2, label=system)
    ax.axhline(0.0, color="k", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("dt")
    ax.set_ylabel(r"$\hat V - V_{WCP}(0)$ (95% CI)")
    ax.legend(fontsize=7)
    return [figures.save(fig, out, "sde_bias.png")]


def _rel_se(exp, pt, rec) -> float:
    """The standard error of the point's V_hat (controlled, as its table's) over V_hat."""
    v, se, _ = controlled_estimate(rec, "V")
    return relative_se(v, se)


register(Study("sde", "the controlled reflected SDE's discounted cost against the exact WCP value", SdeGrid, points,
               run_chunk, aggregate, figure, target=PointTarget(lambda pt: True, _rel_se, "V_hat")))
