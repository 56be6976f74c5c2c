"""Study ``optimal``: J*_n, the optimal discounted cost of the n-th 2x2 system, beside V0 and Theorem 2.11's policy.

OptimalGrid: the experiment's 2x2 systems (exponential or phase-type primitives) x ``n`` (``n_for``: other values of n for
the named systems, e.g. fewer for a phase-type system, whose chain is larger). Each point is one deterministic
solve (:func:`jaxq.mdp.optimum.optimal`: policy iteration on the truncated Markov decision process, each class's
queue cap doubled until doubling it moves J*_n by at most ``rtol / 2``, or with ``bracket`` J*_n bracketed by two
truncations at one queue cap) and the exact J_n of Theorem 2.11's policy on the same model
(:func:`jaxq.sim.exact_ctmc.policy_cost`). With phase-type primitives J*_n is the optimum of a controller that sees
the phases (a lower bound on every non-anticipating policy's J_n) and ``J_table`` the exact cost of the phase-blind
table policy read off it.

Beside the costs, what the optimal policy does that Theorem 2.11's rules would not call for, in one number each:

* ``idles_with_waiting``: over the observable states with x_1, x_2 <= 4 sqrt(n) (jobs in the system, each server's
  class; states the chain can hold), the share of (state, idle server) pairs at which the optimal table leaves the
  server idle although a job that it could start still waits after the other server's decision (unweighted: every
  state of the box counts once, reachable often or not);
* ``idles_with_waiting_weighted``: the same share under the optimal policy itself (phases seen), weighted by the
  discounted rate of decisions at each state from the empty system (:func:`jaxq.mdp.pss2x2.occupation`), over the
  whole truncated chain: how much of its idling-while-work-waits the optimal policy actually does.

Optionally (slow, off by default), ``simulate_reps`` > 0 also simulates J_n under Theorem 2.11's policy
(``"auto"``, :func:`jaxq.sim.pss2x2.simulate_bounded`, as ``jaxq.simulate``) and ``tuned_reps`` > 0 under the policy
tuned at each n (:func:`jaxq.tuning.prelimit.simulate_tuned`, as ``jaxq.simulate(policy="tuned")``; systems whose
policy has nothing to tune are skipped, empty cells), both on the point's seed.

A point is deterministic except for these simulations, which run inside it: one replication (one chunk) per point,
whatever ``experiment.replications``. Tables: ``summary`` (one row per system and n); figure ``J_over_V0.png``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.studies import Study, Unique, chunks, figures, file_keys, register

NValue = Annotated[float, Field(ge=1, allow_inf_nan=False)]
BOX_PER_ROOT_N = 4.0  # idles_with_waiting counts the states with x_1, x_2 <= 4 sqrt(n)

# the solver's argument -> the [grid] key that sets it (n: grid.n or grid.n_for, _n_key)
_KEYS = {"queue_cap": "grid.queue_cap", "rtol": "grid.rtol", "max_states": "grid.max_states",
         "max_gib": "grid.max_gib"}


class OptimalGrid(BaseModel):
    """``[grid]`` of the optimal-control study.

    Attributes:
        n: The values of n.
        n_for: The values of n of the named systems, in place of n (phase-type systems: their chains are larger).
        queue_cap: The first queue cap of both classes (default: ``max(6, 2 sqrt(n))``, each class's cap doubled
            until converged; :func:`jaxq.optimal`).
        rtol: The truncation's tolerance.
        bracket: A proven bracket at one cap of both queues instead (``J_star_lower``; :func:`jaxq.optimal`).
        max_states: The most states of the truncated chain.
        max_gib: The most memory of the solve, in GiB.
        simulate_reps: > 0 (at least 2): J_n of Theorem 2.11's policy by Monte Carlo.
        tuned_reps: > 0 (at least 2): J_n of the tuned policy by Monte Carlo.
    """

    model_config = ConfigDict(extra="forbid")
    n: Annotated[list[NValue], Field(min_length=1), Unique]
    # the values of n of the named systems, in place of n (phase-type systems: their chains are larger)
    n_for: dict[str, Annotated[list[NValue], Field(min_length=1), Unique]] = {}
    queue_cap: Annotated[int, Field(ge=2)] | None = None  # default: max(6, 2 sqrt(n)), doubled per class until converged
    rtol: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 1e-6  # the truncation's tolerance
    bracket: bool = False  # a proven bracket at one cap of both queues instead (J_star_lower)
    max_states: Annotated[int, Field(ge=1)] = 3_000_000
    max_gib: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 8.0
    simulate_reps: Annotated[int, Field(ge=0)] = 0  # > 0 (at least 2): J_n of Theorem 2.11's policy by Monte Carlo
    tuned_reps: Annotated[int, Field(ge=0)] = 0  # > 0 (at least 2): J_n of the tuned policy by Monte Carlo


def _num(n: float):
    return int(n) if float(n).is_integer() else float(n)


def _system(exp, label):
    ref = exp.system(label)
    if type(ref.model).__name__ != "PSS2x2":
        raise InputError("experiment.systems", f"{label}: study 'optimal' needs a 'pss2x2' system")
    return chunks.system_and_analysis(ref.path)


def _n_key(g, label) -> str:
    """The ``[grid]`` key that lists the values of n of a system."""
    return "grid.n_for" if label in g.n_for else "grid.n"


def _where(label, n) -> str:
    return f"{label}, n = {n:g}"


def _check_point(g, system, label, n) -> None:
    """What the solver checks before it builds anything: rates positive at n, phase-type primitives, the first
    truncation's size (:func:`jaxq.mdp.pss2x2.optimal_cost`), each refusal naming the experiment's key."""
    from jaxq.mdp import pss2x2 as dp
    from jaxq.sim.exact_ctmc import system_phase_types

    where = _where(label, n)
    try:
        system.at(float(n))
    except InputError as e:
        raise InputError(_n_key(g, label), f"{where}: {e.reason}") from None
    try:
        phase_types = system_phase_types(system)
    except InputError as e:
        raise InputError("experiment.systems", f"{where}: {e.key}: {e.reason}") from None
    cap = (dp.first_cap(n, g.queue_cap, g.bracket),) * 2
    key = "grid.queue_cap" if g.queue_cap is not None else _n_key(g, label)
    try:  # the first solve and, without the bracket, its first doubling tests
        for c in (cap,) if g.bracket else (cap, *dp.doubled_caps(cap)):
            dp.check_size(dp.layout_of(phase_types, c), g.max_states, g.max_gib * 2**30, key)
    except InputError as e:
        raise InputError(key, f"{where}: {e.reason}") from None


def points(exp) -> list[dict]:
    """systems x n, one replication each; checks each point before anything is written.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points ``{"system", "n", "reps", "chunk"}``.

    Raises:
        InputError: Naming the file's key of a point that cannot be solved.
    """
    g = exp.grid
    for key, reps in (("grid.simulate_reps", g.simulate_reps), ("grid.tuned_reps", g.tuned_reps)):
        if reps == 1:
            raise InputError(key, "needs at least 2 replications (0: no simulation)")
    labels = [s.label for s in exp.systems]
    for label in g.n_for:
        if label not in labels:
            raise InputError("grid.n_for", f"{label!r} is not a system of the experiment ({', '.join(labels)})")
    out = []
    for s in exp.systems:
        system, _ = _system(exp, s.label)
        for n in g.n_for.get(s.label, g.n):
            _check_point(g, system, s.label, n)
            out.append({"system": s.label, "n": _num(n), "reps": 1, "chunk": 1})
    return out


def _tunable(an) -> bool:
    from jaxq.tuning.prelimit import tunable

    try:
        tunable(an, "auto")
    except InputError:
        return False
    return True


def idles_with_waiting(table: np.ndarray, n: float) -> float:
    """The share of (observable state, idle server) pairs with x_1, x_2 <= 4 sqrt(n) (each within its queue's cap)
    at which ``table`` (the :class:`jaxq.mdp.optimum.Optimal` table, ``table[x_1, x_2, s_1 + 1, s_2 + 1, k]``)
    leaves the server idle although a job it could start still waits after both servers' decisions; NaN when the
    box has no such pair.

    Args:
        table: The optimal table.
        n: The index of the system.

    Returns:
        The share.
    """
    box = [min(table.shape[i] - 1, int(math.floor(BOX_PER_ROOT_N * math.sqrt(n)))) for i in (0, 1)]  # per queue cap
    t = np.asarray(table[: box[0] + 1, : box[1] + 1], dtype=np.int64)
    x1 = np.arange(box[0] + 1).reshape(-1, 1)
    x2 = np.arange(box[1] + 1).reshape(1, -1)
    pairs = idle = 0
    for c1 in range(3):  # server classes: 0 idle, 1 class 1, 2 class 2
        for c2 in range(3):
            if c1 and c2:
                continue
            d = [t[:, :, c1, c2, 0], t[:, :, c1, c2, 1]]  # starts of the idle servers (-1 idle)
            busy = [(c1 == i + 1) + (c2 == i + 1) for i in (0, 1)]
            valid = (x1 >= busy[0]) & (x2 >= busy[1])
            taken = [busy[i] + sum((d[k] == i).astype(np.int64) for k, c in enumerate((c1, c2)) if not c)
                     for i in (0, 1)]
            waiting = (x1 > taken[0]) | (x2 > taken[1])
            for k, c in enumerate((c1, c2)):
                if c:
                    continue
                pairs += int(valid.sum())
                idle += int((valid & (d[k] == -1) & waiting).sum())
    return idle / pairs if pairs else float("nan")


def idles_with_waiting_weighted(sol) -> float:
    """The discounted share of (decision, idle server) pairs at which the optimal policy (phases seen) leaves the
    server idle although a job it could start still waits, weighted by the discounted rate of decisions at each
    state from the empty system (:func:`jaxq.mdp.pss2x2.occupation`).

    Args:
        sol (typing.Any): The solution of the optimum (``jaxq.mdp.optimum.Optimal.solution``: its chain and policy).

    Returns:
        The share; NaN when there is no such pair.
    """
    from jaxq.mdp import pss2x2 as dp

    ch = sol.chain
    lay, gr = ch.lay, ch.grids
    acts = dp.actions(lay)
    pol = np.asarray(sol.policy)
    f = dp.occupation(ch, acts, dp.transitions(ch), pol)
    f = np.where(ch.valid() & (pol >= 0), f, 0.0)
    pol = np.maximum(pol, 0)
    opts = acts.options[pol]
    taken = [ch.in_service(i) + acts.starts[pol, i] for i in (0, 1)]
    waiting = (gr[0] > taken[0]) | (gr[1] > taken[1])
    pairs = idle = 0.0
    for k in (0, 1):
        free = gr[4 + k] == 0
        pairs += float(f[free].sum())
        idle += float(f[free & (opts[:, k] == 0) & waiting].sum())
    return idle / pairs if pairs > 0 else float("nan")


@lru_cache(maxsize=64)
def _solve(path: str, mtime: float, n: float, queue_cap, rtol: float, max_states: int, max_gib: float,
           bracket: bool) -> dict:
    """The optimum of one point and Theorem 2.11's exact J_n beside it (cached per system file version)."""
    from jaxq.mdp.optimum import optimal

    system, _ = chunks.system_and_analysis(Path(path))
    r = optimal(system, n, queue_cap, exact_policy=True, rtol=rtol, max_states=max_states, max_gib=max_gib,
                bracket=bracket)
    d = r.to_dict()
    d["queue_cap_1"], d["queue_cap_2"] = r.queue_cap
    row = {k: d[k] for k in ("J_star", "J_star_lower", "truncation_change", "queue_cap_1", "queue_cap_2", "states",
                             "iterations", "wall_s", "V0", "exact_cost", "theta", "switch_at", "J_table",
                             "phases_observed", "J_star_over_V0", "exact_cost_over_V0", "J_star_over_exact_cost")}
    row["idles_with_waiting"] = idles_with_waiting(r.table, n)
    row["idles_with_waiting_weighted"] = idles_with_waiting_weighted(r.solution)
    return row


def _point_keys(g, pt):
    """The solver's InputErrors with the experiment file's key and the point they concern."""
    keys = {**_KEYS, "n": _n_key(g, pt["system"])}
    return file_keys(lambda key: keys.get(key, f"grid.{key}"), _where(pt["system"], pt["n"]))


def run_chunk(exp, pt, start, count, devices=None):
    """The point's solve as constant columns and, with ``simulate_reps`` or ``tuned_reps``, the simulated J_n
    beside it (one replication per point).

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
    path = exp.system(pt["system"]).path
    with _point_keys(g, pt):
        row = _solve(str(path), path.stat().st_mtime, float(pt["n"]), g.queue_cap, g.rtol, g.max_states, g.max_gib,
                     g.bracket)
    rec = {k: np.full(count, np.nan if v is None else float(v)) for k, v in row.items()}
    if g.simulate_reps or g.tuned_reps:
        system, an = chunks.system_and_analysis(path)
        events = 0
        if g.simulate_reps:
            from jaxq.sim import pss2x2 as sim

            r = sim.simulate_bounded(system, float(pt["n"]), g.simulate_reps,
                                     **sim.grouped({"policy": "auto", "seed": pt["seed"], "engine": "auto",
                                                    "analysis": an, **_devices(devices)}))
            rec.update(J_sim=np.full(count, float(r.value)), J_sim_stderr=np.full(count, float(r.stderr)))
            events += int(r.events)
        if g.tuned_reps:
            J, se = np.nan, np.nan
            if _tunable(an):
                from jaxq.tuning.prelimit import simulate_tuned

                r = simulate_tuned(system, float(pt["n"]), g.tuned_reps, seed=pt["seed"], analysis=an,
                                   engine="auto", **_devices(devices))
                J, se = float(r.value), float(r.stderr)
                events += int(r.events)
            rec.update(J_tuned=np.full(count, J), J_tuned_stderr=np.full(count, se))
        rec["events"] = np.full(count, events, dtype=np.int64)
    return rec


def _devices(devices) -> dict:
    return {} if devices is None else {"devices": devices}


def _value(rec, key):
    if key not in rec:
        return None
    v = float(np.asarray(rec[key])[0])
    return v if np.isfinite(v) else None


INTS = ("queue_cap_1", "queue_cap_2", "states", "iterations", "theta")


def aggregate(exp, pts, records):
    """The table ``summary``: one row per system and n.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary"}``.
    """
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        _, an = _system(exp, pt["system"])
        row = {"point": i, "system": pt["system"], "case": an.case, "policy": an.policy, "n": pt["n"],
               "seed": pt["seed"]}
        for key in ("J_star", "J_star_lower", "exact_cost", "V0", "J_star_over_V0", "exact_cost_over_V0",
                    "J_star_over_exact_cost", "J_table", "truncation_change", "queue_cap_1", "queue_cap_2", "states", "iterations", "wall_s", "theta",
                    "switch_at", "phases_observed", "idles_with_waiting", "idles_with_waiting_weighted"):
            old = key.startswith("queue_cap_") and key not in rec  # a chunk from before the two caps: one for both
            v = _value(rec, "queue_cap" if old else key)
            row[key] = (int(v) if key in INTS else bool(v) if key == "phases_observed" else v) if v is not None \
                else None
        for key in ("J_sim", "J_tuned"):
            if key in rec:
                J, se = _value(rec, key), _value(rec, f"{key}_stderr")
                row.update({key: J, f"{key}_stderr": se,
                            f"{key}_over_V0": None if J is None else J / row["V0"]})
        rows.append(row)
    return {"summary": rows}


def figure(exp, pts, records, tables, out):
    """The costs over V0 against n, one panel per system (``J_over_V0.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    rows = tables["summary"]
    systems = list(dict.fromkeys(r["system"] for r in rows))
    if not systems:
        return []
    ns = sorted({r["n"] for r in rows})
    fig, axes = figures.grid_figure(len(systems), max_cols=3)
    for ax, label in zip(axes, systems):
        sel = sorted((r for r in rows if r["system"] == label), key=lambda r: r["n"])
        n = [r["n"] for r in sel]
        ratio = lambda key: [np.nan if r.get(key) is None else r[key] / r["V0"] for r in sel]  # noqa: E731
        ax.plot(n, ratio("J_star"), "o-", color="tab:green", label="J*_n / V0 (optimal)")
        if any(r["phases_observed"] for r in sel):
            ax.plot(n, ratio("J_table"), "o--", color="tab:green", mfc="none",
                    label="J_n / V0, optimal table, phase-blind (exact)")
        ax.plot(n, ratio("exact_cost"), "s-", color="tab:blue", label="J_n / V0, Theorem 2.11 (exact)")
        for key, color, name in (("J_sim", "tab:orange", "Theorem 2.11"), ("J_tuned", "tab:red", "tuned")):
            if any(r.get(key) is not None for r in sel):
                err = [np.nan if r.get(f"{key}_stderr") is None else 1.96 * r[f"{key}_stderr"] / r["V0"] for r in sel]
                ax.errorbar(n, ratio(key), yerr=err, fmt="^:", color=color, capsize=3,
                            label=f"J_n / V0, {name} (simulated, 95%)")
        ax.axhline(1.0, color="black", lw=0.8, ls=":")
        phases = ", phases seen" if sel[0].get("phases_observed") else ""
        ax.set(xscale="log", xlabel="n", ylabel="cost / V0", title=f"{label} ({sel[0]['policy']}{phases})",
               xlim=(ns[0] / 1.6, ns[-1] * 1.6))
        ax.set_xticks(ns)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=6)
    return [figures.save(fig, out, "J_over_V0.png")]


register(Study("optimal", "optimal discounted cost J*_n of 2x2 systems by policy iteration, beside V0 and "
                          "Theorem 2.11's exact J_n", OptimalGrid, points, run_chunk, aggregate, figure,
               enumeration_keys=("n", "n_for")))
