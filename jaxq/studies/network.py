"""Study ``network``: many-server networks (the uniform-stability and LAP-tightness papers) across n, under several
policies.

NetworkGrid: systems x policies x n. Every replication of the n-th system (:func:`jaxq.sim.network.simulate`)
records its time averages over [warmup, horizon]; the study aggregates them into one table and the figures
that the papers' statements call for:

* tightness (the uniform-stability paper, Theorem 2.1 (iv)): the scaled queue ``E<e, X_hat>^+`` and idleness ``E<e,
  X_hat>^-`` stay bounded in n; the stationary density of ``<e, X_hat>`` settles (``hist_bins > 0``);
* the prelimit identity (3.6): ``sum_j w_j E[Y_hat_j] = rho_n`` (``weighted_idleness_hat`` beside
  ``spare_capacity_n``), and, with ``diffusion = true``, the Euler scheme of the diffusion (2.27) under a
  constant control as a reference point (``n = inf``: its rows have ``engine = "diffusion"`` and no ``n``, an
  empty cell in the CSV tables);
* transience (Propositions 3.1-3.2: negative spare capacity): ``E<e, X_hat(t)>`` at ``times`` grows
  linearly; a fitted growth rate per n;
* LAP concentration (the LAP-tightness paper): ``sum_ij E|Psi_ij - r psi*_ij|`` against r with a fitted exponent (the
  paper: ``r^(1/2 + eps)``) and the fluid error ``max |E Psi / r - psi*|``.

A precision target (``target_rel_se``, :mod:`jaxq.studies.targets`) chooses the replications of the prelimit points
(not of the diffusion's reference paths, ``sde_paths``): the standard error of ``queue_hat`` over ``queue_hat``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.diffusion.network_analysis import NetworkAnalysis, analyze
from jaxq.errors import InputError
from jaxq.model.network import Network
from jaxq.policies.network import POLICIES
from jaxq.studies import PointTarget, Study, Unique, figures, file_keys, register, relative_se
from jaxq.studies.chunks import control_columns
from jaxq.studies.stats import controlled_estimate, groups_by, loglog_rate

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNeg = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class NetworkGrid(BaseModel):
    """``[grid]`` of the network study.

    Attributes:
        n: The scalings n.
        policies: The policies (:data:`jaxq.policies.network.POLICIES`).
        warmup: The start of the averaging window [warmup, horizon].
        horizon: The end of the averaging window (above ``warmup``).
        engine: ``auto``, ``event`` or ``uniformized``.
        hist_bins: Bins of the histograms of <e, X_hat> (tightness figure; 0: none).
        hist_range: The range of the histograms.
        times: Snapshot times of <e, X_hat(t)> (transience; the event driver), at most ``horizon``.
        diffusion: Add the Euler scheme of (2.27) as a reference point per system and policy.
        control: The diffusion's control.
        uc: The diffusion's queue control vector (default: all queue on the last class, the lowest priority).
        us: The diffusion's idleness control vector (default: uniform idleness shares).
        dt: The Euler step of the diffusion.
        sde_paths: The paths of a diffusion reference point.
    """

    model_config = ConfigDict(extra="forbid")
    n: Annotated[list[PosFloat], Field(min_length=1), Unique]
    policies: Annotated[list[str], Field(min_length=1), Unique] = ["priority"]
    warmup: NonNeg = 20.0
    horizon: PosFloat = 200.0
    engine: str = "auto"
    hist_bins: Annotated[int, Field(ge=0, le=400)] = 0  # histograms of <e, X_hat> (tightness figure)
    hist_range: PosFloat = 6.0
    times: Annotated[list[PosFloat], Unique] = []  # snapshot times of <e, X_hat(t)> (transience; the event driver)
    diffusion: bool = False  # add the Euler scheme of (2.27) as a reference point per system and policy
    control: str = "constant"
    uc: list[NonNeg] | None = None  # default: all queue on the last class (the lowest priority)
    us: list[NonNeg] | None = None  # default: uniform idleness shares
    dt: PosFloat = 0.01
    sde_paths: Annotated[int, Field(ge=2)] = 256


@lru_cache(maxsize=None)
def _analysis_of(path: Path, mtime: float) -> NetworkAnalysis:
    from jaxq.model import load

    return analyze(load(path))


def analysis(exp, label) -> NetworkAnalysis:
    """The analysis of the network ``label`` of the experiment (cached per file version).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        label (str): The system's label.

    Returns:
        The analysis.

    Raises:
        InputError: Naming ``experiment.systems`` when the system is not a network.
    """
    ref = exp.system(label)
    if not isinstance(ref.model, Network):
        raise InputError("experiment.systems", f"{label}: study 'network' needs a 'network' system")
    return _analysis_of(Path(ref.path), Path(ref.path).stat().st_mtime)


def _num(n: float):
    return int(n) if float(n).is_integer() else float(n)


def _controls(an: NetworkAnalysis, g: NetworkGrid):
    num_i, num_j = an.plan.basic.shape
    uc = np.eye(num_i)[-1] if g.uc is None else np.asarray(g.uc, float)
    us = np.full(num_j, 1.0 / num_j) if g.us is None else np.asarray(g.us, float)
    return uc, us


def points(exp) -> list[dict]:
    """systems x policies x n (plus one diffusion point per system and policy). Checks each point.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points ``{"system", "engine", "policy", "n"}``.

    Raises:
        InputError: Naming the ``[grid]`` key of a point that cannot run.
    """
    from jaxq.sim.network import make_params

    g = exp.grid
    if g.horizon <= g.warmup:
        raise InputError("grid.horizon", f"must exceed the warm-up {g.warmup:g}")
    if g.times and max(g.times) > g.horizon:
        raise InputError("grid.times", f"must lie in (0, horizon = {g.horizon:g}]")
    if g.times and g.engine == "uniformized":
        raise InputError("grid.engine", "snapshots at fixed times need the event engine")
    if g.engine not in ("auto", "event", "uniformized"):
        raise InputError("grid.engine", f"expected auto, event or uniformized, got {g.engine!r}")
    out = []
    for s in exp.systems:
        an = analysis(exp, s.label)
        for pol in g.policies:
            if pol not in POLICIES:
                raise InputError("grid.policies", f"{pol!r} is not one of {', '.join(POLICIES)}")
            for n in g.n:
                try:
                    make_params(an, n, pol, g.hist_range, g.hist_bins)
                except InputError as e:
                    raise InputError(f"grid.{e.key}", f"{s.label}, n = {n:g}: {e.reason}") from None
                out.append({"system": s.label, "engine": "ctmc", "policy": pol, "n": _num(n)})
            if g.diffusion:
                if an.diffusion is None:
                    raise InputError("grid.diffusion", f"{s.label}: the diffusion (2.27) needs a critical network")
                _check_diffusion(an, g, s.label)
                out.append({"system": s.label, "engine": "diffusion", "policy": pol, "n": None,
                            "reps": g.sde_paths, "chunk": min(g.sde_paths, exp.chunk * 8)})
    return out


_DIFFUSION_KEYS = {"control": "grid.control", "uc": "grid.uc", "us": "grid.us", "dt": "grid.dt",
                   "horizon": "grid.horizon", "warmup": "grid.warmup", "paths": "grid.sde_paths"}


def _diffusion_keys(label: str):
    """The Euler scheme's InputErrors with the experiment file's key."""
    return file_keys(lambda key: _DIFFUSION_KEYS.get(key, f"grid.{key}"), f"{label}, diffusion")


def _check_diffusion(an: NetworkAnalysis, g: NetworkGrid, label: str) -> None:
    """The Euler scheme's own preconditions (:func:`jaxq.sde.network_euler.check_settings`: control, control
    vectors, a stable step, a step in the averaging window, the work) on the grid's settings, before any work."""
    from jaxq.sde.network_euler import check_settings

    with _diffusion_keys(label):
        uc, us = _controls(an, g)
        check_settings(an.diffusion, uc, us, g.control, g.dt, g.horizon, g.warmup, g.sde_paths)


def run_chunk(exp, pt, start, count, devices=None):
    """Per-replication records of one grid point (replications ``start .. start+count-1``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.
        start (int): The first replication.
        count (int): The replications.
        devices (typing.Any): The devices the chunk is cut over (None: all local devices).

    Returns:
        (dict[str, numpy.ndarray]): Per-replication records, each of length ``count``.
    """
    g = exp.grid
    an = analysis(exp, pt["system"])
    if pt["engine"] == "diffusion":
        from jaxq.sde.network_euler import Control, EulerGrid, simulate_diffusion
        from jaxq.mc.replications import Batching

        uc, us = _controls(an, g)
        with _diffusion_keys(pt["system"]):
            r = simulate_diffusion(an.diffusion, Control(g.control, uc, us), paths=max(count, 2),
                                   window=EulerGrid(g.dt, g.horizon, g.warmup), seed=pt["seed"],
                                   batching=Batching(start=start, chunk=max(count, pt["chunk"]), devices=devices),
                                   times=g.times or None, cv=exp.cv)
        smp = {k: v[:count] for k, v in r.samples.items()}
        rec = {"queue_hat": smp["mean_pos"], "idleness_hat": smp["mean_neg"], "identity_rhs": smp["identity_rhs"]}
        if g.times:
            rec["sum_x_hat_t"] = smp["sum_path"]
        rec["events"] = np.full(count, int(round((g.horizon) / g.dt)), dtype=np.int64)
        rec.update(control_columns(smp.get("controls")))
        return rec
    from jaxq.sim import network

    n = pt["n"]
    runs = max(count, 2)  # a simulation needs two replications (a standard error); the extra one is dropped
    r = network.simulate(an, n, pt["policy"], reps=runs, window=network.Window(g.warmup, g.horizon), seed=pt["seed"],
                         engine=g.engine, outputs=network.NetworkOutputs(g.times or None, g.hist_range, g.hist_bins, exp.cv),
                         batching=network.Batching(start, max(runs, pt["chunk"]), devices))
    s = {k: v[:count] for k, v in r.samples.items()}
    rn = math.sqrt(n)
    num_i, num_j = an.plan.basic.shape
    rec = {"queue_hat": s["mean_queue"].sum(axis=1) / rn, "idleness_hat": s["mean_idleness_hat"],
           "p_wait": s["p_wait"], "idle_total": s["mean_idle_total"]}
    for i in range(num_i):
        rec[f"queue_{i + 1}"] = s["mean_queue"][:, i]
    if "weighted_idleness_hat" in s:
        rec["weighted_idleness_hat"] = s["weighted_idleness_hat"]
    if "mean_abs_dev" in s:
        rec["abs_dev"] = s["mean_abs_dev"].sum(axis=(1, 2))
    for i in range(num_i):
        for j in range(num_j):
            rec[f"busy_{i + 1}_{j + 1}"] = s["mean_busy"][:, i, j]
    if "hist" in s:
        rec["hist_total"] = s["hist"][:, -1, :] / float(g.hist_range * 2 / g.hist_bins)  # density of <e, X_hat>
    if "snapshots" in s:
        centre = (an.fluid_z * n if an.scaling == "underloaded" else an.plan.xi * np.asarray(r["pool_sizes"])).sum()
        rec["sum_x_hat_t"] = (s["snapshots"].sum(axis=2) - centre) / rn
    rec["events"] = np.full(count, r.events // runs, dtype=np.int64)
    rec.update(control_columns(s.get("controls")))
    return rec


def aggregate(exp, pts, records):
    """The tables ``summary`` (one row per point: the estimates with their standard errors), ``fits`` (per system,
    policy and seed the log-log rates in n) and, with ``times``, ``transient``.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary", "fits"}`` and, with ``times``, ``"transient"``.
    """
    rows, trans, fits = [], [], []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        an = analysis(exp, pt["system"])
        row = {"point": i, "system": pt["system"], "policy": pt["policy"], "engine": pt["engine"],
               "n": pt["n"], "seed": pt["seed"], "reps": int(rec["queue_hat"].size),  # n None: the diffusion
               "spare_capacity": an.spare_capacity}
        for k in ("queue_hat", "idleness_hat", "identity_rhs", "weighted_idleness_hat", "p_wait", "abs_dev"):
            if k in rec:
                row[k], row[k + "_stderr"], plain = controlled_estimate(rec, k)
                if plain:
                    row[k + "_plain"], row[k + "_plain_stderr"] = plain[k + "_plain"], plain[k + "_plain_stderr"]
                    row[k + "_variance_reduction"] = plain["variance_reduction"]
        if "sum_x_hat_t" in rec:
            m = rec["sum_x_hat_t"].mean(axis=0)
            se = rec["sum_x_hat_t"].std(axis=0, ddof=1) / math.sqrt(rec["sum_x_hat_t"].shape[0])
            for t, v, e in zip(exp.grid.times, m, se):
                trans.append({"system": pt["system"], "policy": pt["policy"], "n": row["n"], "seed": pt["seed"], "t": t,
                              "sum_x_hat": float(v), "sum_x_hat_stderr": float(e)})
            if len(exp.grid.times) >= 2:
                row["growth_rate"] = float(np.polyfit(exp.grid.times, m, 1)[0])
        if pt["engine"] == "ctmc":
            n = pt["n"]
            if an.scaling == "halfin-whitt":
                from jaxq.diffusion.network import spare_capacity_n

                row["spare_capacity_n"] = spare_capacity_n(an.network, an.plan, n, an.basis_pool)
            num_i, num_j = an.plan.basic.shape
            busy = np.array([[rec[f"busy_{a + 1}_{b + 1}"].mean() for b in range(num_j)] for a in range(num_i)])
            row["max_rel_fluid_error"] = float(np.abs(busy / n - an.fluid_z).max())
        rows.append(row)
    for key in dict.fromkeys((r["system"], r["policy"], r["seed"]) for r in rows if r["engine"] == "ctmc"):
        rs = sorted([r for r in rows if (r["system"], r["policy"], r["seed"]) == key and r["engine"] == "ctmc"],
                    key=lambda r: r["n"])
        fit = {"system": key[0], "policy": key[1], "seed": key[2]}
        for k in ("queue_hat", "abs_dev"):
            if all(k in r for r in rs):
                rate, rate_se, _ = loglog_rate([r["n"] for r in rs], [r[k] for r in rs], [r[k + "_stderr"] for r in rs])
                fit[f"{k}_rate"], fit[f"{k}_rate_stderr"] = rate, rate_se
        fits.append(fit)
    out = {"summary": rows, "fits": fits}
    if trans:
        out["transient"] = trans
    return out


def figure(exp, pts, records, tables, out):
    """The figures the grid calls for: ``density.png``, ``tightness.png``, ``lap_concentration.png`` and
    ``transience.png``.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    paths = []
    g = exp.grid
    rows = [r for r in tables["summary"] if r["engine"] == "ctmc"]
    if g.hist_bins:
        groups = list(dict.fromkeys((p["system"], p["policy"]) for p in pts if p["engine"] == "ctmc"))
        fig, axes = figures.grid_figure(len(groups))
        edges = np.linspace(-g.hist_range, g.hist_range, g.hist_bins + 1)
        mid = 0.5 * (edges[1:] + edges[:-1])
        for ax, (system, pol) in zip(axes, groups):
            for p, rec in zip(pts, records):
                if (p["system"], p["policy"], p["engine"]) == (system, pol, "ctmc") and "hist_total" in rec:
                    ax.plot(mid, rec["hist_total"].mean(axis=0), lw=1, label=f"n={p['n']}")
            ax.set_title(f"{system}, {pol}: density of <e, X_hat>", fontsize=9)
            ax.set_xlabel(r"$\langle e, \hat X\rangle$")
            ax.legend(fontsize=7)
        paths.append(figures.save(fig, out, "density.png"))
    fig, ax = figures.single_figure()
    for (system, pol), rs in _groups(rows).items():
        n = [r["n"] for r in rs]
        ax.errorbar(n, [r["queue_hat"] for r in rs], yerr=[1.96 * r["queue_hat_stderr"] for r in rs], fmt="o-",
                    ms=4, capsize=2, label=f"{system} {pol}: queue")
        ax.errorbar(n, [r["idleness_hat"] for r in rs], yerr=[1.96 * r["idleness_hat_stderr"] for r in rs],
                    fmt="s--", ms=4, capsize=2, label=f"{system} {pol}: idleness")
    for r in tables["summary"]:
        if r["engine"] == "diffusion":
            ax.axhline(r["queue_hat"], color="k", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$E\langle e,\hat X\rangle^{\pm}$ (95% CI)")
    ax.legend(fontsize=6)
    paths.append(figures.save(fig, out, "tightness.png"))
    if any("abs_dev" in r for r in rows) and any(r["policy"] == "lap" for r in rows):
        fig, ax = figures.single_figure()
        for (system, pol), rs in _groups(rows).items():
            if pol != "lap":
                continue
            n = np.array([r["n"] for r in rs], float)
            y = np.array([r["abs_dev"] for r in rs])
            ax.errorbar(n, y, yerr=[1.96 * r["abs_dev_stderr"] for r in rs], fmt="o", label=system)
            ax.plot(n, y[0] * (n / n[0]) ** 0.5, ":", color="gray", label="r^(1/2)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("r")
        ax.set_ylabel(r"$\sum_{ij} E|\Psi_{ij} - r\psi^*_{ij}|$")
        ax.legend(fontsize=7)
        paths.append(figures.save(fig, out, "lap_concentration.png"))
    if "transient" in tables:
        fig, ax = figures.single_figure()
        for key in dict.fromkeys((r["system"], r["policy"], r["n"]) for r in tables["transient"]):
            rs = [r for r in tables["transient"] if (r["system"], r["policy"], r["n"]) == key]
            ax.errorbar([r["t"] for r in rs], [r["sum_x_hat"] for r in rs], yerr=[r["sum_x_hat_stderr"] for r in rs],
                        capsize=2, label=f"{key[0]} {key[1]} " + ("diffusion" if key[2] is None else f"n={key[2]}"))
        ax.set_xlabel("t")
        ax.set_ylabel(r"$E\langle e, \hat X(t)\rangle$")
        ax.legend(fontsize=7)
        paths.append(figures.save(fig, out, "transience.png"))
    return paths


def _groups(rows):
    return {k: sorted(v, key=lambda r: r["n"]) for k, v in groups_by(rows, ("system", "policy")).items()}


def _rel_se(exp, pt, rec) -> float:
    """The standard error of the point's queue_hat (controlled, as its table's) over queue_hat."""
    v, se, _ = controlled_estimate(rec, "queue_hat")
    return relative_se(v, se)


register(Study("network", "stationary averages of many-server networks across n (tightness, identity (3.6), "
                          "transience, LAP concentration)", NetworkGrid, points, run_chunk, aggregate, figure,
               target=PointTarget(lambda pt: pt.get("engine") == "ctmc", _rel_se, "queue_hat")))
