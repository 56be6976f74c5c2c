"""Study ``fastslow``: optimal policies of one fast and K slow servers (the fast/slow-servers paper) over a grid of
cases.

FastSlowGrid: criteria (average cost, discounted cost) x slow-server sets (K identical servers of rate
``ratio * mu1`` for each K in ``slow_servers`` and each ratio, plus the heterogeneous rate lists of
``heterogeneous``) x loads ``lambda / (mu1 + sum mu2)``. For every case (one grid point) the MDP is solved
exactly (:func:`jaxq.mdp.fastslow.solve`, truncation verified by doubling) and its structure tested
(threshold type, monotone, ordered; (K1)-(K6) for identical servers). Optionally:

* ``policy_iteration``: the average-cost policy is re-checked by policy iteration (exact sparse solves);
* ``best_threshold``: when the optimal policy is not of threshold type, the best threshold policy is found by
  coordinate descent over its population thresholds and the value gap reported (Theorem 1 beyond K = 2);
* ``simulate``: the optimal threshold policy (identical servers) is simulated, ``replications`` per case, and
  its Monte Carlo cost compared with the exact one (4 standard errors).

A case is deterministic, so its replications are the simulation's (one replication when ``simulate`` is
off); the exact results are the same in every record of a case. Tables: ``summary`` (one row per case); figures:
the maps of q_L and q_H (two identical slow servers) and the relative gap of the best threshold policy. A precision
target (``target_rel_se``, :mod:`jaxq.studies.targets`) chooses the replications of the simulated cases: the
standard error of ``simulated_cost`` over ``simulated_cost``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.studies import PointTarget, Study, Unique, figures, file_keys, register, relative_se
from jaxq.studies.stats import mean_stderr

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Load = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]


class FastSlowGrid(BaseModel):
    """``[grid]`` of the fast/slow study.

    Attributes:
        loads: The loads ``lambda / (mu1 + sum mu2)``, each in (0, 1).
        ratios: mu2 / mu1 of identical slow servers.
        slow_servers: The numbers K of identical slow servers (1 to 8).
        heterogeneous: Lists of slow-server rates (2 to 6 each).
        mu1: The rate of the fast server.
        criteria: ``average`` and/or ``discounted`` cost.
        alpha: The discount rate of the discounted criterion.
        truncation: The truncation of the MDP (None: chosen and verified by doubling).
        policy_iteration: Re-check the average-cost policy by policy iteration.
        best_threshold: Find the best threshold policy when the optimal one is not of threshold type.
        simulate: Simulate the optimal threshold policy (identical servers).
        steps: The steps of a simulated path.
        warmup: The steps left out at the start of a path (below ``steps``).
    """

    model_config = ConfigDict(extra="forbid")
    loads: Annotated[list[Load], Field(min_length=1), Unique]
    ratios: Annotated[list[PosFloat], Unique] = []  # mu2 / mu1 of identical slow servers
    slow_servers: Annotated[list[Annotated[int, Field(ge=1, le=8)]], Unique] = [2]
    heterogeneous: Annotated[list[Annotated[list[PosFloat], Field(min_length=2, max_length=6)]], Unique] = []
    mu1: PosFloat = 1.0
    criteria: Annotated[list[Literal["average", "discounted"]], Field(min_length=1), Unique] = ["average"]
    alpha: PosFloat = 0.05
    truncation: Annotated[int, Field(ge=7, le=8191)] | None = None
    policy_iteration: bool = False
    best_threshold: bool = False
    simulate: bool = False
    steps: Annotated[int, Field(ge=128, le=2**30)] = 20_000
    warmup: Annotated[int, Field(ge=0)] = 2_000


def points(exp) -> list[dict]:
    """The cases: every criterion x slow-server set x load.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points ``{"criterion", "K", "mu2", "load", "lam"}`` (``reps`` 1 for a case not simulated).

    Raises:
        InputError: Naming the ``[grid]`` key (``experiment.systems`` when systems are given).
    """
    g = exp.grid
    if exp.systems:
        raise InputError("experiment.systems", "study 'fastslow' takes its cases from [grid], not from systems")
    if not g.ratios and not g.heterogeneous:
        raise InputError("grid.ratios", "give ratios (identical slow servers) or heterogeneous rate lists")
    if g.simulate and g.warmup >= g.steps:
        raise InputError("grid.warmup", f"must be below steps = {g.steps}")
    sets = [(K, [r * g.mu1] * K, "grid.ratios") for K in g.slow_servers for r in g.ratios]
    sets += [(len(m), list(m), "grid.heterogeneous") for m in g.heterogeneous]
    seen = {}
    for K, mu2, key in sets:  # [0.3, 0.3] in heterogeneous is K = 2 identical servers of ratios = [0.3]
        label = _mu2_label(mu2)
        if label in seen:
            raise InputError(key, f"slow rates {label} are listed twice ({seen[label]} and {key})")
        seen[label] = key
    out = []
    for crit in g.criteria:
        for K, mu2, key in sets:
            for load in g.loads:
                lam = load * (g.mu1 + sum(mu2))
                pt = {"criterion": crit, "K": K, "mu2": _mu2_label(mu2), "load": load, "lam": lam}
                if not g.simulate or len(set(mu2)) > 1:
                    pt.update(reps=1, chunk=1)
                _check_case(g, pt, key)
                out.append(pt)
    return out


def _mu2_label(mu2) -> str:
    """The slow rates of a case as the point stores them (15 digits: the solver reads them back from this)."""
    return " ".join(f"{m:.15g}" for m in mu2)


def _discount(g, pt):
    return None if pt["criterion"] == "average" else g.alpha


def _grid_key(key: str, rates_key: str) -> str:
    """The ``[grid]`` key behind an argument of :func:`jaxq.mdp.fastslow.solve` (its InputErrors name those)."""
    return {"lam": "grid.loads", "mu2": rates_key, "discount": "grid.alpha", "mu1": "grid.mu1",
            "slow_servers": "grid.slow_servers" if rates_key == "grid.ratios" else rates_key,
            "truncation": "grid.truncation"}.get(key, f"grid.{key}")


def _case_keys(pt, rates_key: str):
    """The solver's InputErrors with the experiment file's key and the case they concern."""
    where = f"{pt['criterion']} cost, K = {pt['K']}, mu2 = [{pt['mu2']}], load = {pt['load']:g}"
    return file_keys(lambda key: _grid_key(key, rates_key), where,
                     lambda r: r.replace("use --average for", 'use criteria = ["average"] for'))  # the CLI's wording


def _rates_key(pt) -> str:
    return "grid.ratios" if len(set(pt["mu2"].split())) == 1 else "grid.heterogeneous"


def _check_case(g, pt, rates_key: str) -> None:
    """The solver's own checks of one case (:func:`jaxq.mdp.fastslow.problem` and ``check_tractable``), before
    anything is written: everything but the solve itself (convergence, the doubling check)."""
    from jaxq.mdp.fastslow import check_tractable, problem

    mu2 = [float(v) for v in pt["mu2"].split()]
    with _case_keys(pt, rates_key):
        p = problem(pt["lam"], g.mu1, mu2[0] if len(set(mu2)) == 1 else mu2, discount=_discount(g, pt),
                    slow_servers=len(mu2))
        check_tractable(p)


@lru_cache(maxsize=256)
def _case(lam, mu1, mu2: tuple, discount, truncation, policy_iteration, best_threshold) -> dict:
    """The exact analysis of one case (cached: every chunk of a case reads the same numbers)."""
    from jaxq.mdp import exact
    from jaxq.mdp.fastslow import solve

    identical = len(set(mu2)) == 1
    sol = solve(lam, mu1, mu2[0] if identical else list(mu2), discount=discount, slow_servers=len(mu2),
                truncation=truncation)
    p, s = sol.problem, sol.structure
    cost = sol.average_cost if discount is None else sol.value_empty
    q = [None if n is None else int(n) - 1 for n in s["population_thresholds"]]
    row = {"N": sol.N, "cost": cost, "threshold": bool(s["threshold"]), "monotone": bool(s["monotone"]),
           "ordered": bool(s["ordered"]), "violations": int(s["violations"]),
           "thresholds": " ".join("inf" if v is None else str(v) for v in q), "converged": bool(sol.converged),
           "q_L": q[0] if q else None, "q_H": q[1] if len(q) > 1 else None,
           "inequalities": bool(sol.margins and all(v is None or v >= -1e-9 for v in sol.margins.values()))
           if identical else None}
    if policy_iteration and discount is None:
        _, (g_pi, _), _ = exact.policy_iteration(p.layout, sol.N, lam, mu1, p.mu2, policy=sol.policy)
        row["pi_agrees"] = bool(abs(g_pi - cost) <= 1e-8 * abs(g_pi))
    if best_threshold and discount is None:
        row.update(best_threshold_cost=cost, gap=0.0, rel_gap=0.0)
        if not s["threshold"]:
            c, n = _best_threshold_policy(sol)
            row.update(best_threshold_cost=c, gap=c - cost, rel_gap=(c - cost) / cost,
                       thresholds=" ".join(str(v - 1) for v in n))
    return row


def _best_threshold_policy(sol, span: int = 12):
    """Coordinate descent over population thresholds (exact average costs by sparse solves)."""
    from jaxq.mdp import exact
    from jaxq.policies.fastslow import threshold_policy

    p, lay, N = sol.problem, sol.problem.layout, sol.N
    cost = lambda n: exact.average_cost(lay, N, p.lam, p.mu1, p.mu2, threshold_policy(lay, N, n))[0]  # noqa: E731
    start = [sol.X if v is None else v for v in sol.structure["population_thresholds"]]
    n = np.array([min(int(v), sol.X) for v in start])
    best = cost(n)
    improved = True
    while improved:
        improved = False
        for r in range(len(n)):
            for v in range(max(1, n[r] - span), n[r] + span + 1):
                m = n.copy()
                m[r] = v
                c = cost(m)
                if c < best - 1e-12 * best:
                    best, n, improved = c, m, True
    return best, n


def run_chunk(exp, pt, start, count, devices=None):
    """A case's exact results as constant columns and, when simulated (identical servers), its simulated cost per
    replication (``simulated_cost``, ``events``).

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
    mu2 = tuple(float(v) for v in pt["mu2"].split())
    discount = _discount(g, pt)
    with _case_keys(pt, _rates_key(pt)):  # what only the solve finds (no convergence) still names the file's key
        row = _case(pt["lam"], g.mu1, mu2, discount, g.truncation, g.policy_iteration, g.best_threshold)
    rec = {k: np.full(count, np.nan if v is None else float(v)) for k, v in row.items() if not isinstance(v, str)}
    if g.simulate and len(set(mu2)) == 1:
        from jaxq.sim.fastslow import Batching, StepWindow, simulate

        q = [int(v) if v != "inf" else None for v in row["thresholds"].split()]
        r = simulate(pt["lam"], g.mu1, mu2[0], q, alpha=g.alpha, window=StepWindow(g.steps, g.warmup), reps=max(count, 2),
                     seed=pt["seed"], batching=Batching(start=start, devices=devices))
        key = "average_cost" if discount is None else "value_empty"
        rec["simulated_cost"] = r.samples[key][:count]
        rec["events"] = np.full(count, r.events // max(count, 2), dtype=np.int64)
    return rec


def aggregate(exp, pts, records):
    """The table ``summary``: one row per case, its exact results and, when simulated, its Monte Carlo cost
    (``simulation_agrees``: within 4 standard errors of the exact one).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary"}``.
    """
    g = exp.grid
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        mu2 = tuple(float(v) for v in pt["mu2"].split())
        discount = None if pt["criterion"] == "average" else g.alpha
        row = {"point": i, **{k: pt[k] for k in ("criterion", "K", "mu2", "load", "lam", "seed")},
               "kind": "identical" if len(set(mu2)) == 1 else "heterogeneous"}
        row.update(_case(pt["lam"], g.mu1, mu2, discount, g.truncation, g.policy_iteration, g.best_threshold))
        if "simulated_cost" in rec:
            m, se = mean_stderr(rec["simulated_cost"])
            row.update(simulated_cost=m, simulated_cost_stderr=se, reps=int(rec["simulated_cost"].size),
                       simulation_agrees=bool(abs(m - row["cost"]) <= 4 * se))
        rows.append(row)
    return {"summary": rows}


def figure(exp, pts, records, tables, out):
    """The maps of q_L and q_H (two identical slow servers, ``thresholds_map.png``) and the relative gap of the
    best threshold policy (``kslow.png``), when the grid has them.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    g = exp.grid
    rows = tables["summary"]
    paths = []
    maps = [r for r in rows if r["K"] == 2 and r["kind"] == "identical"]
    ratios = sorted({float(r["mu2"].split()[0]) / g.mu1 for r in maps})
    if maps and len(ratios) >= 2 and len(g.loads) >= 2:
        crits = list(dict.fromkeys(r["criterion"] for r in maps))
        fig, axes = figures.grid_figure(2 * len(crits), max_cols=2)
        for c, crit in enumerate(crits):
            for k, key in enumerate(("q_L", "q_H")):
                ax = axes[2 * c + k]
                Z = np.full((len(g.loads), len(ratios)), np.nan)
                for r in maps:
                    if r["criterion"] == crit and r[key] is not None:
                        Z[g.loads.index(r["load"]), ratios.index(float(r["mu2"].split()[0]) / g.mu1)] = r[key]
                im = ax.imshow(Z.T, origin="lower", aspect="auto", cmap="viridis",
                               extent=(g.loads[0], g.loads[-1], ratios[0], ratios[-1]))
                ax.set(title=f"{key} ({crit})", xlabel="load", ylabel="mu2 / mu1")
                ax.figure.colorbar(im, ax=ax)
        paths.append(figures.save(fig, out, "thresholds_map.png"))
    gaps = [r for r in rows if "rel_gap" in r]
    if gaps:
        fig, ax = figures.single_figure(7, 4)
        for kind, mk in (("identical", "o"), ("heterogeneous", "s")):
            sel = [r for r in gaps if r["kind"] == kind]
            if sel:
                ax.scatter([r["K"] + 0.1 * (kind != "identical") for r in sel], [max(r["rel_gap"], 1e-16) for r in sel],
                           marker=mk, c=["tab:green" if r["threshold"] else "tab:red" for r in sel], label=kind)
        ax.set(yscale="log", xlabel="K slow servers", ylabel="relative gap to the best threshold policy (1e-16: none)",
               title="green: optimal policy of threshold type; red: not")
        ax.legend()
        paths.append(figures.save(fig, out, "kslow.png"))
    return paths


def _rel_se(exp, pt, rec) -> float:
    """The standard error of a simulated case's simulated_cost over simulated_cost."""
    return relative_se(*mean_stderr(rec["simulated_cost"]))


register(Study("fastslow",
               "optimal thresholds of one fast and K slow servers over a grid of cases (the fast/slow-servers paper)",
               FastSlowGrid, points, run_chunk, aggregate, figure, needs_systems=False,
               target=PointTarget(lambda pt: "reps" not in pt, _rel_se, "simulated_cost")))
