"""The ``random_systems`` study: Theorem 2.11's policy on random 2x2 systems, and threshold rules compared.

The systems are drawn (:mod:`jaxq.studies.random_draw`) from ``grid.draw_seed``, ``grid.per_case`` of each of
the six cases; the experiment names no system files. For each system, each n of ``grid.n`` (and of
``grid.subset_n`` for a random subset of ``grid.subset_size`` systems, stratified by case) and each threshold
rule of ``grid.rules`` (``RULE@a``: ``Theta_n = ceil(c n^a)`` with c the rule's constant,
:func:`jaxq.policies.thresholds.rule_levels`, and for ``excursion`` its switching level; ``RULE*k@a``: k times
the constant), the event engine estimates J_n
under the theory's policy (``auto``) with the control variates. All rules of a system and n use the same seed,
hence common random numbers: their differences are paired. A policy without a threshold (P, PP) runs once per n
(the first rule), and its row is repeated for the other rules.

Tables: ``summary`` (system x rule x n: J_hat, its stderr, J/V0, Theta_n), ``systems`` (the drawn parameters,
V0, z*, the policy, each rule's constant), ``by_case`` (rule x case x n: median, 95th percentile and max of
J/V0, the share at most 1.3, the share of systems whose J_n does not increase from the previous n within 95%
intervals), ``rules`` (the threshold-rule comparison at the last two n of ``grid.n``) and ``worst`` (the
systems with the largest J/V0 at the last n under the first rule, with their parameters). Figures:
``J_over_V0.png`` (distribution per case against n, first rule) and ``rules.png`` (J/V0 per rule and case at
the last n).
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from types import MappingProxyType
from typing import Annotated, Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.mc import rng as streams
from jaxq.model import validate as v
from jaxq.model.policy_table import POLICY_TABLE
from jaxq.policies import pss2x2 as pol
from jaxq.policies import thresholds
from jaxq.sim import pss2x2 as sim
from jaxq.sim.diagnostics import limit_threshold_term
from jaxq.sim.models.pss2x2 import coarse_controls
from jaxq.stats import controlled_values, mean_stderr
from jaxq.studies import PointTarget, Study, Unique, figures, point_checked, register
from jaxq.studies.pss import rel_se_J
from jaxq.studies.chunks import control_columns, diagnostic_columns, diagnostics_row
from jaxq.studies.random_draw import CASES, Drawn, draw, draw_system
from jaxq.studies.stats import controlled_estimate, controls_of

NValue = Annotated[float, Field(ge=1, allow_inf_nan=False)]
TARGET = 1.3  # the share of systems with J_n / V0 at most this is reported
ENGINE = "random_pss"
TUNED = "tuned"  # the rule of a tuned point


class RandomSystemsGrid(BaseModel):
    """``[grid]`` of the random-systems study.

    Attributes:
        draw_seed: The seed of the drawn set.
        per_case: The systems drawn per case.
        cases: The cases of Theorem 2.11.
        n: The values of n.
        rules: Threshold rules ``RULE@a``: Theta_n = ceil(c_RULE n^a); the first is the reference (the default's).
        subset_n: Values of n run only for a random subset of the systems.
        subset_size: The size of that subset.
        replications_at: ``{"100000": 32}``: replications at that n.
        horizon: The horizon (None: the simulator's default).
        tuned_n: Values of n at which the tuned policy (Theorem 2.11's with z and Theta_n searched on the n-th system,
            :mod:`jaxq.tuning.prelimit`) runs beside the rules.
        tuned_size: The size of the stratified subset of systems with something to tune (not P) that it runs on.
        tune_reps: Replications per candidate of the search (default 128).
    """

    model_config = ConfigDict(extra="forbid")
    draw_seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    per_case: Annotated[int, Field(ge=1, le=10_000)]
    cases: Annotated[list[str], Field(min_length=1), Unique] = list(CASES)
    n: Annotated[list[NValue], Field(min_length=1), Unique]
    # threshold rules "RULE@a": Theta_n = ceil(c_RULE n^a); the first is the reference (the default's)
    rules: Annotated[list[str], Field(min_length=1), Unique] = [
        f"{sim.DEFAULT_THETA_RULE}@{sim.DEFAULT_THETA_EXPONENT}"]
    subset_n: Annotated[list[NValue], Unique] = []  # n run only for a random subset of the systems
    subset_size: Annotated[int, Field(ge=0)] = 0
    replications_at: dict[str, Annotated[int, Field(ge=2)]] = {}  # {"100000": 32}
    horizon: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # the tuned policy (Theorem 2.11's with z and Theta_n searched on the n-th system, :mod:`jaxq.tuning.prelimit`)
    # beside the rules, at tuned_n, on a stratified subset of tuned_size systems with something to tune (not P)
    tuned_n: Annotated[list[NValue], Unique] = []
    tuned_size: Annotated[int, Field(ge=0)] = 0
    tune_reps: Annotated[int, Field(ge=2)] | None = None  # replications per candidate of the search (default 128)


def parse_rule(spec: str) -> tuple[str, float, float]:
    """``"scv@0.4"`` -> ("scv", 1.0, 0.4); ``"depth*0.25@0.34"`` -> ("depth", 0.25, 0.34): the rule, a factor
    on its constant and the exponent. Refuses unknown rules, factors that are not positive and exponents outside
    [0, 1] (naming grid.rules).

    Args:
        spec: The rule.

    Returns:
        ``(rule, factor, exponent)``.

    Raises:
        InputError: Naming ``grid.rules``.
    """
    head, sep, a = spec.partition("@")
    if not sep:
        raise InputError("grid.rules", f"{spec!r}: write RULE@EXPONENT or RULE*FACTOR@EXPONENT, e.g. 'paper@0.34' "
                                       "or 'depth*0.25@0.34'")
    name, star, factor = head.partition("*")
    if name not in thresholds.THETA_RULES:
        raise InputError("grid.rules", f"{spec!r}: unknown rule {name!r}; choose one of {', '.join(thresholds.THETA_RULES)}")
    try:
        x, k = float(a), float(factor) if star else 1.0
    except ValueError:
        raise InputError("grid.rules", f"{spec!r}: the exponent and factor must be numbers") from None
    if not (math.isfinite(x) and 0 <= x <= 1):
        raise InputError("grid.rules", f"{spec!r}: the exponent must lie in [0, 1] ((2.28): (1/3, 1/2))")
    if not (math.isfinite(k) and k > 0):
        raise InputError("grid.rules", f"{spec!r}: the factor must be a positive number")
    return name, k, x


def systems_of(exp) -> Mapping[str, Drawn]:
    """The drawn systems of the experiment, by label (read-only; one mapping per draw, built once: the validation
    looks a system up for every point).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The drawn systems by label.

    Raises:
        InputError: Naming ``grid.cases`` for an unknown case.
    """
    g = exp.grid
    _check_cases(g)
    return _by_label(int(g.draw_seed), int(g.per_case), tuple(g.cases))


@lru_cache(maxsize=64)
def _by_label(seed: int, per_case: int, cases: tuple[str, ...]) -> Mapping[str, Drawn]:
    return MappingProxyType({d.label: d for d in draw(seed, per_case, cases)})


def _check_cases(g) -> None:
    bad = [c for c in g.cases if c not in CASES]
    if bad:
        raise InputError("grid.cases", f"unknown case {bad[0]!r}; choose from {', '.join(CASES)}")


def _drawing(g):
    """The systems of :func:`systems_of`, in its order, drawn one at a time (:func:`draw_system`, cached)."""
    for case in g.cases:
        for j in range(int(g.per_case)):
            yield draw_system(int(g.draw_seed), case, j)


def subset_of(exp, size_key: str = "subset_size", stream: int = 7919, cases=None) -> list[str]:
    """The labels run at ``grid.subset_n`` (``size_key`` ``subset_size``) or ``grid.tuned_n`` (``tuned_size``, over
    the cases with something to tune): a random permutation per case, dealt round-robin over the cases.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        size_key: The ``[grid]`` key of the subset's size.
        stream: The stream of the permutations.
        cases (typing.Collection[str] | None): The cases dealt (None: all of the grid's).

    Returns:
        The labels.

    Raises:
        InputError: Naming ``grid.<size_key>`` when it exceeds the systems drawn.
    """
    g = exp.grid
    cases = list(g.cases) if cases is None else [c for c in g.cases if c in cases]
    size = getattr(g, size_key)
    if size > len(cases) * g.per_case:
        raise InputError(f"grid.{size_key}", f"{size} exceeds the {len(cases) * g.per_case} systems drawn"
                                             + ("" if len(cases) == len(g.cases) else " with something to tune"))
    rng = streams.generator(g.draw_seed, stream)
    orders = [[f"{c}_{j:03d}" for j in rng.permutation(g.per_case)] for c in cases]
    dealt = [orders[k][j] for j in range(g.per_case) for k in range(len(cases))]
    return dealt[:size]


TUNABLE_CASES = tuple(case for case, spec in POLICY_TABLE.items() if spec.tunable)  # a switching level or a threshold


def tuned_subset(exp) -> list[str]:
    """The systems of the tuned comparison (``grid.tuned_size``, stratified over :data:`TUNABLE_CASES`).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The labels.
    """
    return subset_of(exp, "tuned_size", 104729, TUNABLE_CASES)


def _sha(d: Drawn) -> str:
    return hashlib.sha256(json.dumps(d.system.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def _num(n: float):
    return int(n) if float(n).is_integer() else float(n)


def points(exp) -> list[dict]:
    """systems x n x rules (the subset also at ``subset_n``); every setup is checked before anything runs.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points.

    Raises:
        InputError: Naming the file's key of a point that cannot run.
    """
    g = exp.grid
    rules = [parse_rule(r) for r in g.rules]
    for key in g.replications_at:
        try:
            val = float(key)
        except ValueError:
            raise InputError("grid.replications_at", f"{key!r} is not a number (a value of n)") from None
        if val not in [float(n) for n in list(g.n) + list(g.subset_n)]:
            raise InputError("grid.replications_at", f"{key!r} is not a value of grid.n or grid.subset_n")
    if g.subset_n and g.subset_size == 0:
        raise InputError("grid.subset_size", "grid.subset_n needs a subset of at least one system")
    if g.tuned_n and g.tuned_size == 0:
        raise InputError("grid.tuned_size", "grid.tuned_n needs a subset of at least one system")
    _check_cases(g)
    subset = set(subset_of(exp))
    tuned = set(tuned_subset(exp)) if g.tuned_n else set()
    out = []
    for d in _drawing(g):  # drawn one by one, so that the validation's counter moves from the first system on
        label = d.label
        sha = _sha(d)
        ns = list(g.n) + (list(g.subset_n) if label in subset else [])
        threshold = pol.uses_threshold(pol.resolve(d.analysis, "auto", None).rules)
        for n in ns:
            for spec, (rule, k, a) in zip(g.rules, rules):
                if not threshold and spec != g.rules[0]:
                    continue
                try:
                    st = sim.plan(d.system, float(n), analysis=d.analysis, horizon=g.horizon,
                                  levels=sim.Levels(theta_exponent=a, theta_rule=rule, theta_constant=k))
                except InputError as e:
                    raise InputError(f"grid.{'n' if e.key == 'n' else e.key}", f"{label}, n = {n:g}: {e.reason}") \
                        from None
                pt = {"rsystem": label, "case": d.case, "sha": sha, "engine": ENGINE, "n": _num(n), "rule": spec}
                for key, reps in g.replications_at.items():
                    if float(key) == float(n):
                        pt.update(reps=reps, chunk=min(reps, exp.chunk))
                # the levels the rule gives (computed by the excursion model for "excursion"): in the point's digest,
                # so that chunks computed under other levels are never reused
                pt.update(horizon=st.horizon, theta=st.theta, switch_at=st.switch_at)
                out.append(pt)
                point_checked()
        if label in tuned:
            for n in g.tuned_n:
                st = sim.plan(d.system, float(n), analysis=d.analysis, horizon=g.horizon)
                out.append({"rsystem": label, "case": d.case, "sha": sha, "engine": ENGINE, "n": _num(n), "rule": TUNED,
                            "tune_reps": g.tune_reps, "horizon": st.horizon})
    return out


def point_work(exp, pt) -> tuple[float, str, str]:
    """Events of one replication of a point (for :func:`jaxq.studies.experiment.check_experiment_work`).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.

    Returns:
        ``(events per replication, "events", "grid.n")``.
    """
    d = systems_of(exp)[pt["rsystem"]]
    return v.pss_events_per_replication(d.system, pt["n"], pt["horizon"]), "events", "grid.n"


@lru_cache(maxsize=256)
def _tuned(label: str, draw_seed: int, per_case: int, cases: tuple, n: float, seed: int, ns: tuple,
           reps: int | None = None):
    """The tuned (z, c, info) of a tuned point: a deterministic search on a seed derived from the point's (never the
    point's own, so its replications are fresh), the same for every chunk; cached per process. At the smallest of
    ``ns`` (the grid's ``tuned_n``) the search starts from the default levels on its wide grids; at a
    larger n from the tuned (z, c) of the next smaller n, on the local grids (``span="local"``)."""
    from jaxq.tuning.prelimit import Evaluation, Procedure, Start, tune_prelimit, tuned_info

    d = {x.label: x for x in draw(draw_seed, per_case, cases)}[label]
    smaller = [m for m in ns if m < n]
    procedure, start = Procedure(reps=reps), Start()
    if smaller:
        z0, c0, _ = _tuned(label, draw_seed, per_case, cases, max(smaller), seed, ns, reps)
        procedure, start = procedure._replace(span="local"), Start(z0, c0)
    t = tune_prelimit(d.system, n, seed=seed, procedure=procedure, start=start,
                      evaluation=Evaluation(evaluate_result=False), analysis=d.analysis)
    return t.z, t.c, tuned_info(t)


def run_chunk(exp, pt, start, count, devices=None):
    """Records of replications ``start .. start+count-1`` of one point (event engine, control variates).

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
    d = systems_of(exp)[pt["rsystem"]]
    if pt["rule"] == TUNED:
        z, c, info = _tuned(pt["rsystem"], int(g.draw_seed), int(g.per_case), tuple(g.cases), float(pt["n"]),
                            int(pt["seed"]), tuple(sorted(float(m) for m in g.tuned_n)), pt["tune_reps"])
        levels = sim.Levels.absolute(z, thresholds.DEFAULT_THETA_EXPONENT, c)
    else:
        rule, k, a = parse_rule(pt["rule"])
        levels, info = sim.Levels(theta_exponent=a, theta_rule=rule, theta_constant=k), None
    r = sim.simulate(d.system, float(pt["n"]), count, policy="auto", analysis=d.analysis, seed=pt["seed"],
                     truncation=sim.Truncation(engine="event", horizon=g.horizon, block=64), levels=levels,
                     outputs=sim.Outputs(cv=exp.cv),
                     batching=sim.Batching(start=start, chunk=max(pt["chunk"], count), devices=devices))
    rec = {"J": r.samples["J"], "tail_bound": r.samples["tail_bound"],
           "sup_X_hat_p": r.samples["sup_X_hat"][:, d.analysis.p], "events": r.samples["events"]}
    rec.update(control_columns(r.samples.get("controls")))
    rec.update(diagnostic_columns(r.samples))
    if info is not None:  # the tuned parameters and the search's cost, as constant columns
        const = {"tuned_z": np.nan if z is None else z, "tuned_theta": np.nan if info["theta"] is None else info["theta"],
                 "tuned_c": np.nan if c is None else c, "tuned_search_s": info["wall_s"],
                 "tuned_candidates": info["candidates"]}
        rec.update({key: np.full(count, v, dtype=np.float64) for key, v in const.items()})
    return rec


# ------------------------------------------------------------------------------------------- tables
def _setup(d: Drawn, pt: dict, rec: dict, horizon):
    """The setup of a point: its rule's threshold, or the tuned (z, c) its records carry."""
    if pt["rule"] == TUNED:
        z, c = float(rec["tuned_z"][0]), float(rec["tuned_c"][0])
        return sim.setup(d.system, float(pt["n"]), analysis=d.analysis, horizon=horizon,
                         levels=sim.Levels.absolute(None if math.isnan(z) else z, thresholds.DEFAULT_THETA_EXPONENT,
                                                    None if math.isnan(c) else c))
    rule, k, a = parse_rule(pt["rule"])
    return sim.setup(d.system, float(pt["n"]), analysis=d.analysis, horizon=horizon,
                     levels=sim.Levels(theta_exponent=a, theta_rule=rule, theta_constant=k))


def _rows(exp, pts, records) -> list[dict]:
    """One row per (system, rule, n); a threshold-free policy's row is repeated for every rule."""
    g = exp.grid
    drawn = systems_of(exp)
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        d = drawn[pt["rsystem"]]
        J, se, extra = controlled_estimate(rec, "J", coarse=coarse_controls)
        st = _setup(d, pt, rec, g.horizon)
        dn = limit_threshold_term(d.analysis, st.policy, st.theta, float(pt["n"]), st.switch_at)
        base = {**({"point": i} if "rel_se_target" in pt else {}),  # a targeted point's row takes its plan's columns
                "system": pt["rsystem"], "case": d.case, "policy": d.analysis.policy, "n": pt["n"],
                "seed": pt["seed"], "reps": int(rec["J"].size), "V0": d.analysis.V0, "J_hat": J, "J_hat_stderr": se,
                "J_over_V0": J / d.analysis.V0, "J_over_V0_stderr": se / d.analysis.V0, "theta": st.theta,
                "threshold_term_over_V0": None if dn is None else dn / d.analysis.V0,
                "variance_reduction": extra.get("variance_reduction"),
                "sup_X_hat_p": float(np.mean(rec["sup_X_hat_p"])), "tail_bound": float(np.mean(rec["tail_bound"]))}
        base.update(diagnostics_row(rec, {**base, "threshold_term": dn}, d.analysis, st))
        if pt["rule"] == TUNED:
            rows.append({**base, "rule": TUNED, "theta_rule": None, "theta_factor": None, "theta_exponent": None,
                         "switch_at": st.switch_at, "tuned_search_s": float(rec["tuned_search_s"][0]),
                         "tuned_candidates": int(rec["tuned_candidates"][0])})
            continue
        specs = [pt["rule"]] if st.theta is not None else list(g.rules)
        for spec in specs:
            r2, k2, a2 = parse_rule(spec)
            rows.append({**base, "rule": spec, "theta_rule": r2, "theta_factor": k2, "theta_exponent": a2,
                         "switch_at": st.switch_at})
    return rows


def _paired_difference(a: dict, b: dict) -> tuple[float, float]:
    """Mean and standard error of ``J(a) - J(b)`` over the replications two points share (common random numbers:
    the same seed and replication indices), each replication's J controlled by its own point's cross-fitted
    controls (:func:`jaxq.stats.controlled_values`)."""
    vals = []
    for rec in (a, b):
        c = controls_of(rec)
        y = rec["J"] if c is None else controlled_values(rec["J"], c, rec["rep"], coarse=coarse_controls)[0]
        vals.append(dict(zip(np.asarray(rec["rep"]).tolist(), np.asarray(y, dtype=np.float64).tolist())))
    common = sorted(set(vals[0]) & set(vals[1]))
    return mean_stderr(np.array([vals[0][r] - vals[1][r] for r in common]))


def _tuned_table(g, key, recs) -> list[dict]:
    """Per tuned system and n: J_n of the tuned policy and of the default (the first rule) on common random
    numbers, their 95% intervals, V0, and the paired difference with its standard error."""
    out = []
    ref = g.rules[0]
    for (label, rule, n), t in sorted(key.items()):
        if rule != TUNED or (label, ref, n) not in key:
            continue
        dft = key[(label, ref, n)]
        diff, dse = _paired_difference(recs[(label, TUNED, n)], recs[(label, ref, n)])
        out.append({"system": label, "case": t["case"], "n": _num(n), "V0": t["V0"],
                    "J_tuned": t["J_hat"], "J_tuned_stderr": t["J_hat_stderr"],
                    "J_tuned_ci95": [t["J_hat"] - 1.96 * t["J_hat_stderr"], t["J_hat"] + 1.96 * t["J_hat_stderr"]],
                    "J_default": dft["J_hat"], "J_default_stderr": dft["J_hat_stderr"],
                    "J_default_ci95": [dft["J_hat"] - 1.96 * dft["J_hat_stderr"], dft["J_hat"] + 1.96 * dft["J_hat_stderr"]],
                    "tuned_over_V0": t["J_over_V0"], "default_over_V0": dft["J_over_V0"],
                    "difference": diff, "difference_stderr": dse,
                    "theta_tuned": t["theta"], "theta_default": dft["theta"], "z_tuned": t["switch_at"],
                    "z_default": dft["switch_at"], "search_s": t["tuned_search_s"]})
    return out


def _stats(x) -> dict:
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return {"median": None, "p95": None, "max": None}
    return {"median": float(np.median(x)), "p95": float(np.percentile(x, 95)), "max": float(np.max(x))}


def _nonincreasing(lo: dict, hi: dict) -> bool:
    """J at the larger n at most J at the smaller n, within 95% intervals of the difference."""
    return hi["J_hat"] <= lo["J_hat"] + 1.96 * math.hypot(lo["J_hat_stderr"], hi["J_hat_stderr"])


def _gap_nonincreasing(lo: dict, hi: dict) -> bool:
    """|J - V0| at the larger n at most at the smaller n, within 95% intervals of the difference: J_n may rise to
    V0 from below (J_n < V0 at a finite n is allowed; V0 bounds the limit of J_n, Theorem 2.11)."""
    return abs(hi["J_hat"] - hi["V0"]) <= abs(lo["J_hat"] - lo["V0"]) + 1.96 * math.hypot(lo["J_hat_stderr"],
                                                                                              hi["J_hat_stderr"])


def _decreasing(lo: dict, hi: dict) -> bool:
    """J at the larger n below J at the smaller n beyond the 95% interval of the difference."""
    return hi["J_hat"] < lo["J_hat"] - 1.96 * math.hypot(lo["J_hat_stderr"], hi["J_hat_stderr"])


def aggregate(exp, pts, records) -> dict[str, list[dict]]:
    """The tables ``summary``, ``systems``, ``by_case``, ``rules``, ``worst`` and, with ``tuned_n``, ``tuned`` (see the
    module).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        The tables by name.
    """
    g = exp.grid
    rows = _rows(exp, pts, records)
    key = {(r["system"], r["rule"], float(r["n"])): r for r in rows}
    drawn = systems_of(exp)
    ns = sorted({float(n) for n in list(g.n) + list(g.subset_n)})
    by_case = []
    for spec in list(g.rules) + ([TUNED] if g.tuned_n else []):
        for case in list(g.cases) + ["all"]:
            labels = [lb for lb, d in drawn.items() if case in ("all", d.case)]
            for j, n in enumerate(ns):
                here = [key[(lb, spec, n)] for lb in labels if (lb, spec, n) in key]
                if not here:
                    continue
                x = [r["J_over_V0"] for r in here]
                row = {"rule": spec, "case": case, "n": _num(n), "systems": len(here), **_stats(x),
                       "share_le_1.3": float(np.mean(np.asarray(x) <= TARGET))}
                prev = ns[j - 1] if j else None
                pairs = [(key[(r["system"], spec, prev)], r) for r in here if (r["system"], spec, prev) in key]
                row["previous_n"] = None if prev is None else _num(prev)
                row["share_nonincreasing"] = float(np.mean([_nonincreasing(a, b) for a, b in pairs])) if pairs else None
                row["share_decreasing"] = float(np.mean([_decreasing(a, b) for a, b in pairs])) if pairs else None
                row["share_gap_nonincreasing"] = (float(np.mean([_gap_nonincreasing(a, b) for a, b in pairs]))
                                                  if pairs else None)
                by_case.append(row)
    systems = []
    for lb, d in drawn.items():
        row = d.describe()
        for spec in g.rules:
            rule, k, _ = parse_rule(spec)
            row[f"c[{spec}]"] = (None if rule == thresholds.EXCURSION_RULE  # depends on n: the summary's theta
                                 else k * thresholds.theta_rule_constant(rule, d.analysis,
                                                                         pol.resolve(d.analysis, "auto", None)))
        systems.append(row)
    rules = _rules_table(g, by_case, lambda n: [r for r in rows if float(r["n"]) == n])
    tables = {"summary": rows, "systems": systems, "by_case": by_case, "rules": rules, "worst": _worst(g, key, drawn)}
    if g.tuned_n:
        recs = {}
        for pt, rec in zip(pts, records):  # a threshold-free policy's point stands for every rule
            for spec in ([pt["rule"]] if pt["rule"] == TUNED else list(g.rules)):
                recs.setdefault((pt["rsystem"], spec, float(pt["n"])), rec)
        tables["tuned"] = _tuned_table(g, key, recs)
    return tables


def _rules_table(g, by_case, by_case_rows_at) -> list[dict]:
    """Rule x case: median, p95, max of J/V0 at the last two n of ``grid.n``, the share at most 1.3 and the
    share non-increasing from the one to the other (within intervals)."""
    ns = sorted(float(n) for n in g.n)
    lo, hi = (ns[-2], ns[-1]) if len(ns) >= 2 else (None, ns[-1])
    idx = {(r["rule"], r["case"], float(r["n"])): r for r in by_case}
    out = []
    for spec in g.rules:
        for case in list(g.cases) + ["all"]:
            h = idx.get((spec, case, hi))
            if h is None:
                continue
            row = {"rule": spec, "case": case, "systems": h["systems"]}
            if lo is not None and (spec, case, lo) in idx:
                low = idx[(spec, case, lo)]
                row.update({f"median@{_num(lo)}": low["median"], f"p95@{_num(lo)}": low["p95"],
                            f"max@{_num(lo)}": low["max"]})
            row.update({f"median@{_num(hi)}": h["median"], f"p95@{_num(hi)}": h["p95"], f"max@{_num(hi)}": h["max"],
                        f"share_le_1.3@{_num(hi)}": h["share_le_1.3"],
                        "share_nonincreasing": h["share_nonincreasing"] if h["previous_n"] == _num(lo or -1) else None})
            out.append(row)
    # the best rule of the list for each system separately (an oracle, not a rule): what the family can reach
    for case in list(g.cases) + ["all"]:
        best = {}
        for r in by_case_rows_at(hi):
            if case in ("all", r["case"]):
                best[r["system"]] = min(best.get(r["system"], math.inf), r["J_over_V0"])
        if best:
            x = list(best.values())
            st = _stats(x)
            out.append({"rule": "best of the rules per system", "case": case, "systems": len(x),
                        f"median@{_num(hi)}": st["median"], f"p95@{_num(hi)}": st["p95"], f"max@{_num(hi)}": st["max"],
                        f"share_le_1.3@{_num(hi)}": float(np.mean(np.asarray(x) <= TARGET))})
    return out


def _worst(g, key, drawn, count: int = 10) -> list[dict]:
    """The ``count`` systems with the largest J/V0 at the last n of ``grid.n`` under the first rule."""
    n_hi = max(float(n) for n in g.n)
    spec = g.rules[0]
    rows = sorted((key[(lb, spec, n_hi)] for lb in drawn if (lb, spec, n_hi) in key),
                  key=lambda r: -r["J_over_V0"])[:count]
    out = []
    for r in rows:
        row = {"system": r["system"], "rule": spec}
        for n in sorted({float(x) for x in list(g.n) + list(g.subset_n)}):
            if (r["system"], spec, n) in key:
                row[f"J_over_V0@{_num(n)}"] = key[(r["system"], spec, n)]["J_over_V0"]
                row[f"theta@{_num(n)}"] = key[(r["system"], spec, n)]["theta"]
        out.append({**row, **drawn[r["system"]].describe()})
    return out


# ------------------------------------------------------------------------------------------- figures
def figure(exp, pts, records, tables, out) -> list[str]:
    """``J_over_V0.png`` (distribution per case against n, first rule) and ``rules.png`` (J/V0 per rule and case at
    the last n).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        The PNG paths written.
    """
    g = exp.grid
    rows = tables["summary"]
    spec = g.rules[0]
    fig, axes = figures.grid_figure(len(g.cases))
    for ax, case in zip(axes, g.cases):
        rs = [r for r in rows if r["case"] == case and r["rule"] == spec]
        for lb in sorted({r["system"] for r in rs}):
            mine = sorted((r for r in rs if r["system"] == lb), key=lambda r: r["n"])
            ax.plot([r["n"] for r in mine], [r["J_over_V0"] for r in mine], "-", color="0.7", lw=0.7)
        ns = sorted({r["n"] for r in rs})
        data = [[r["J_over_V0"] for r in rs if r["n"] == n] for n in ns]
        ax.plot(ns, [np.median(x) for x in data], "o-", color="tab:blue", label="median")
        ax.plot(ns, [np.percentile(x, 95) for x in data], "s--", color="tab:red", label="95th percentile")
        ax.axhline(1.0, color="k", lw=1)
        ax.axhline(TARGET, color="k", ls=":", lw=1, label=f"J/V0 = {TARGET}")
        ax.set_xscale("log")
        ax.set_title(f"{case} ({len(data[0]) if data else 0} systems), {spec}", fontsize=9)
        ax.set_xlabel("n")
        ax.set_ylabel(r"$J_n / V_0$")
        ax.legend(fontsize=6)
    paths = [figures.save(fig, out, "J_over_V0.png")]
    n_hi = max(float(n) for n in g.n)
    fig, axes = figures.grid_figure(len(g.cases), width=0.5 * len(g.rules) + 2.2)
    for ax, case in zip(axes, g.cases):
        data = [[r["J_over_V0"] for r in rows if r["case"] == case and r["rule"] == s and float(r["n"]) == n_hi]
                for s in g.rules]
        ax.boxplot(data, whis=(5, 95))
        ax.set_xticks(range(1, len(g.rules) + 1), g.rules, rotation=60, fontsize=6)
        ax.axhline(1.0, color="k", lw=1)
        ax.axhline(TARGET, color="k", ls=":", lw=1)
        ax.set_title(f"{case}: J/V0 at n = {n_hi:g}", fontsize=9)
    paths.append(figures.save(fig, out, "rules.png"))
    return paths


ENUMERATION = ("per_case", "cases", "n", "rules", "subset_n", "subset_size", "replications_at", "tuned_n", "tuned_size",
               "tune_reps")
register(Study("random_systems", "Theorem 2.11's policy on random systems of all six cases; threshold rules",
               RandomSystemsGrid, points, run_chunk, aggregate, figure, needs_systems=False, enumeration_keys=ENUMERATION,
               target=PointTarget(lambda pt: True, rel_se_J, "J_hat")))
