"""Studies of the 2x2 system of the switched-policies paper: J_n -> V0, weak convergence, state-space collapse,
policies.

All four share one grid (systems x policies x n) and one per-chunk record (``chunks.pss_chunk``):
``J`` (discounted cost (2.6) up to the horizon, with a rigorous ``tail_bound``), ``sup_X_hat_i`` over
[0, T] and the scaled workload ``W_hat@t`` at fixed times; they differ in what they aggregate and draw.

* ``convergence``: J_n against n with 95% intervals and the lower bound V0 (Theorem 2.11), and
  |J_n - V0| against n on log-log axes with a fitted rate.
* ``weak``: the law of W_hat^n(t) against the law of Z(t), Z the optimally controlled reflected SDE
  (2.24)-(2.25) started at 0: quantile-quantile plots and the two-sample Kolmogorov-Smirnov distance.
* ``collapse``: E sup_[0,T] X_hat_p^n of the high-priority class p (2.12), which vanishes as n grows.
* ``policies``: all policies (and naive ones: fixed modes ``RULE@m``, wrong switching levels
  ``POLICY:z``) on the same systems at the same n, with common random numbers, against V0.

The policy ``"tuned"`` of ``[grid] policies`` (convergence, collapse, policies) is Theorem 2.11's policy with its
switching level and threshold tuned at each n (:func:`jaxq.tuning.prelimit.tune_prelimit`, search), on a seed
derived from the point's and never equal to it; the point's replications are then fresh and share their seed
with the ``auto`` point (common random numbers). Its tables carry the tuned ``switch_at``, ``theta`` and
``theta_constant`` per n.

A precision target (``[experiment] target_rel_se``, :mod:`jaxq.studies.targets`) chooses the replications of the
2x2 points (not of the weak study's, which compares laws, nor of its SDE references): the standard error of
``J_hat`` (collapse: of ``sup_X_hat_p``) over the estimate; ``[grid] target_rel_se_at = {"1000" = 0.005}`` sets
another target at one n, as ``replications_at`` sets another count (with a target: the most replications there).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.diffusion.threshold import held_workload, threshold_term
from jaxq.errors import InputError
from jaxq.model import validate as v
from jaxq.policies.thresholds import EXCURSION_RULE, THETA_RULES
from jaxq.sim import pss2x2 as sim
from jaxq.studies import (PointTarget, Study, Unique, chunks, figures, point_checked, register, relative_se, targets,
                          tuned_policy)
from jaxq.studies.tuned_policy import TUNED
from jaxq.studies.stats import (controlled_estimate, groups_by, ks_distance, ks_noise_level, limit_fit, loglog_rate,
                                mean_stderr, threshold_rate)

PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NValue = Annotated[float, Field(ge=1, allow_inf_nan=False)]


class ConvergenceGrid(BaseModel):
    """``[grid]`` of the 2x2 studies.

    Attributes:
        n: The values of n.
        policies: The policies (``tuned``: Theorem 2.11's, tuned at each n).
        horizon: The horizon (default: the simulator's tail-bound horizon (cost) or the study's).
        theta_exponent: The threshold exponent a_bar.
        theta_rule: The threshold rule (:func:`jaxq.policies.thresholds.rule_levels`; excursion also sets the
            switching level).
        theta_exponents: A sweep of a_bar (overrides ``theta_exponent``).
        times: Fixed times at which W_hat(t) is recorded.
        engine: ``event``, or ``auto``: the uniformised engine for exponential primitives.
        replications_at: ``{"1000000": 64}``: replications at that n.
        target_rel_se_at: ``{"1000" = 0.005}``: the precision target at that n (:mod:`jaxq.studies.targets`; beside or
            instead of ``target_rel_se``).
    """

    model_config = ConfigDict(extra="forbid")
    n: Annotated[list[NValue], Field(min_length=1), Unique]
    policies: Annotated[list[str], Field(min_length=1), Unique] = ["auto"]
    horizon: PosFloat | None = None  # default: the simulator's tail-bound horizon (cost) or the study's
    theta_exponent: Annotated[float, Field(ge=0, le=1)] = sim.DEFAULT_THETA_EXPONENT
    # the threshold rule (jaxq.policies.thresholds.rule_levels; excursion also sets the switching level)
    theta_rule: Literal[THETA_RULES] = sim.DEFAULT_THETA_RULE
    # a sweep of a_bar (overrides theta_exponent)
    theta_exponents: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Unique] = []
    times: Annotated[list[PosFloat], Unique] = []  # fixed times at which W_hat(t) is recorded
    engine: Literal["event", "auto"] = "event"  # auto: the uniformised engine for exponential primitives
    replications_at: dict[str, Annotated[int, Field(ge=2)]] = {}  # {"1000000": 64}: replications at that n
    # {"1000" = 0.005}: the precision target at that n (jaxq.studies.targets; beside or instead of target_rel_se)
    target_rel_se_at: dict[str, float] = {}


class CollapseGrid(ConvergenceGrid):
    """``[grid]`` of the collapse study: :class:`ConvergenceGrid`'s keys, with a horizon of its own.

    Attributes:
        horizon: T of sup_[0, T].
    """
    horizon: PosFloat = 10.0  # T of sup_[0, T]


class WeakGrid(ConvergenceGrid):
    """``[grid]`` of the weak study: :class:`ConvergenceGrid`'s keys, with the SDE references' own.

    Attributes:
        times: The times t at which the laws of W_hat^n(t) and Z(t) are compared (at least one).
        shifted: T1T2: also compare W_hat - Theta_hat/alpha_p with the SDE switching at z* - Theta_hat/alpha_p (the T1
            rule makes the workload reflect at Theta_hat/alpha_p: :mod:`jaxq.diffusion.threshold`); one SDE reference
            per n.
        sde_paths: The paths of an SDE reference.
        sde_chunk: The paths per chunk of an SDE reference.
        sde_dt: The step size of the SDE references.
    """
    times: Annotated[list[PosFloat], Field(min_length=1), Unique] = [2.0]
    # T1T2: also compare W_hat - Theta_hat/alpha_p with the SDE switching at z* - Theta_hat/alpha_p (the T1 rule
    # makes the workload reflect at Theta_hat/alpha_p: jaxq.diffusion.threshold); one SDE reference per n
    shifted: bool = True
    sde_paths: Annotated[int, Field(ge=2)] = 20000
    sde_chunk: Annotated[int, Field(ge=1)] = 5000
    sde_dt: PosFloat = 1e-3


def _system(exp, label):
    ref = exp.system(label)
    if type(ref.model).__name__ != "PSS2x2":
        raise InputError("experiment.systems", f"{label}: study {exp.study.name!r} needs a 'pss2x2' system")
    return chunks.system_and_analysis(ref.path)


def _horizon(exp):
    g = exp.grid
    if isinstance(g, WeakGrid):
        return g.horizon if g.horizon is not None else max(g.times)
    return g.horizon


def _num(n: float):
    return int(n) if float(n).is_integer() else float(n)


def _n_key(key: str, grid_key: str = "grid.replications_at") -> float:
    """A key of ``grid.replications_at`` (or ``grid_key``): a value of n written as a string (``"1000"``, ``"1e6"``)."""
    try:
        return float(key)
    except ValueError:
        raise InputError(grid_key, f"{key!r} is not a number (a value of n)") from None


def _check_n_keys(g, grid_key: str) -> None:
    """The keys of a per-n table (``replications_at``, ``target_rel_se_at``) name values of ``grid.n``, each once."""
    named: dict[float, str] = {}
    for key in getattr(g, grid_key.removeprefix("grid.")):  # a typo (31622 for 31623) must not pass silently
        if _n_key(key, grid_key) not in [float(n) for n in g.n]:
            raise InputError(grid_key, f"{key!r} is not a value of grid.n")
        if _n_key(key, grid_key) in named:
            raise InputError(grid_key, f"{named[_n_key(key, grid_key)]!r} and {key!r} name the same n")
        named[_n_key(key, grid_key)] = key


def _setup_key(key: str, g) -> str:
    """The ``[grid]`` key behind an argument of :func:`chunks.pss_plan` (its InputErrors name those)."""
    return {"record_times": "grid.times", "switch_at": "grid.policies", "policy": "grid.policies",
            "theta_exponent": "grid.theta_exponents" if g.theta_exponents else "grid.theta_exponent",
            "horizon": "grid.horizon" if g.horizon is not None else "grid.times"}.get(key, f"grid.{key}")


def _check_horizon(g, system, label, n, horizon) -> None:
    """Refuse a ``horizon`` (or weak's last time) in which a replication expects less than one arrival
    (:func:`jaxq.model.validate.check_pss_horizon`), naming the grid key it came from."""
    v.check_pss_horizon(system, n, horizon, "grid.horizon" if g.horizon is not None else "grid.times", label)


def _check_times(g) -> None:
    """Distinct record times must stay distinct in the records' column names (``W_hat@t``, 6 digits)."""
    names: dict[str, float] = {}
    for t in g.times:
        if f"{t:g}" in names:
            raise InputError("grid.times", f"{names[f'{t:g}']!r} and {t!r} agree to 6 digits (the records name "
                                           f"the times W_hat@{t:g}); list each time once")
        names[f"{t:g}"] = t


def points(exp) -> list[dict]:
    """systems x policies x n (weak: x n plus one SDE reference point per system). Checks each point.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.

    Returns:
        The grid points.

    Raises:
        InputError: Naming the file's key of a point that cannot run.
    """
    g = exp.grid
    _check_n_keys(g, "grid.replications_at")
    if g.target_rel_se_at:
        if exp.study.target is None:
            raise targets.refuse_study(exp.study, "grid.target_rel_se_at")
        _check_n_keys(g, "grid.target_rel_se_at")
        for key, t in g.target_rel_se_at.items():
            targets.check_rel_se(t, f"grid.target_rel_se_at.{key}")
    _check_times(g)
    out = []
    policies = ["auto"] if isinstance(g, WeakGrid) else g.policies
    sweep = list(g.theta_exponents)
    if sweep and g.theta_rule == EXCURSION_RULE:  # its Theta_n does not depend on the exponent
        raise InputError("grid.theta_exponents", "the excursion rule gives the same points for every exponent; "
                                                 "set theta_rule to a closed-form rule (root, paper)")
    lockstep = g.engine == "auto" and not g.times and exp.study.name in ("convergence", "policies")
    for s in exp.systems:
        system, an = _system(exp, s.label)
        planned = {}  # (policy, n, a_bar) -> the plan: each checked once (the first n also tells has_theta)

        def check(pol, n, *a):
            key = (pol, float(n), float(a[0]) if a else sim.DEFAULT_THETA_EXPONENT)
            if key not in planned:
                planned[key] = _check(pol, n, *a)
            return planned[key]

        def _check(pol, n, *a):
            if pol == TUNED:
                tuned_policy.check_tunable(an, s.label)
            try:
                st = chunks.pss_plan(system, an, n, tuned_policy.setup_policy(pol), _horizon(exp), g.times, *a,
                                      theta_rule=g.theta_rule)
            except InputError as e:
                where = f"{s.label}, n = {n:g}" + (f", policy {pol!r}" if e.key == "switch_at" else "")
                if e.key == "n" and _horizon(exp) is not None:  # events per replication: n and the horizon
                    where += f", horizon {_horizon(exp):g}"
                raise InputError(_setup_key(e.key, g), f"{where}: {e.reason}") from None
            _check_horizon(g, system, s.label, n, _horizon(exp))
            return st

        for pol in policies:
            has_theta = check(pol, min(g.n)).theta is not None
            for a in (sweep if has_theta else sweep[:1]) or [g.theta_exponent]:
                for n in g.n:
                    check(pol, n, a)
                    pt = {"system": s.label, "engine": "pss", "policy": pol, "n": _num(n)}
                    for key, reps in g.replications_at.items():
                        if _n_key(key) == float(n):
                            pt.update(reps=reps, chunk=min(reps, exp.chunk))
                    for key, t in g.target_rel_se_at.items():
                        if _n_key(key) == float(n):
                            pt["rel_se_target"] = float(t)
                    if sweep:
                        pt["a"] = a
                    if lockstep and system.exponential and g.horizon is None:
                        pt["driver"] = "uniformized"
                    out.append(pt)
                    point_checked()
                    if isinstance(g, WeakGrid) and g.shifted and an.policy == "T1T2":
                        out += _shifted_reference(g, pt, check(pol, n, a), an)
        if isinstance(g, WeakGrid):
            _check_sde_reference(g)
            out.append({"system": s.label, "engine": "sde", "policy": "auto", "n": None, "reps": g.sde_paths,
                        "chunk": g.sde_chunk})
    return out


def _check_sde_reference(g) -> None:
    """The SDE driver's own check of the weak study's reference paths (step and horizon), before any work."""
    from jaxq.sde.driver import check_step

    horizon = g.horizon if g.horizon is not None else max(g.times)
    try:
        check_step(g.sde_dt, horizon)
    except InputError as e:
        key = "grid.sde_dt" if e.key == "dt" else _setup_key(e.key, g)
        raise InputError(key, f"sde_dt = {g.sde_dt:g} {e.reason} T = {horizon:g} of the SDE reference "
                              f"(grid.horizon, else the last of grid.times)") from None


def _shifted_reference(g, pt, st, an) -> list[dict]:
    """The SDE reference of a T1T2 point for the shifted comparison (WeakGrid.shifted): the workload reflects at
    Theta_hat / alpha_p, so Z^s switches at z* - Theta_hat / alpha_p (none once Theta_hat / alpha_p >= z*)."""
    shift = held_workload(an, st.theta / math.sqrt(pt["n"]))
    if shift is None:
        return []
    ref = {"system": pt["system"], "engine": "sde", "policy": "auto", "n": pt["n"], "shift": shift,
           "switch_at": an.z_star - shift, "reps": g.sde_paths, "chunk": g.sde_chunk}
    return [{**ref, "a": pt["a"]} if "a" in pt else ref]


def run_chunk(exp, pt, start, count, devices=None):
    """Records of replications ``start .. start+count-1`` of one grid point.

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
    path, batch = exp.system(pt["system"]).path, sim.Batching(start, pt["chunk"], devices)
    if pt["engine"] == "sde":
        return chunks.sde_chunk(path, g.sde_dt, _horizon(exp), pt["seed"], count, batch, times=g.times, cv=exp.cv,
                                 switch_at=pt.get("switch_at"))
    if pt["policy"] == TUNED:
        return tuned_policy.chunk(exp, pt, start, count, devices, horizon=_horizon(exp), exponent=_exponent(exp, pt))
    levels = sim.Levels(None, _exponent(exp, pt), g.theta_rule)
    return chunks.pss_chunk(path, pt["n"], pt["policy"], pt["seed"], count, batch, levels=levels,
                             truncation=sim.Truncation(engine=pt.get("driver", "event"), horizon=_horizon(exp)),
                             outputs=sim.Outputs(g.times, exp.cv))


def _point_setup(exp, system, an, pt, rec):
    """The setup of a grid point; a ``tuned`` point's from the tuned parameters its records carry."""
    a = _exponent(exp, pt)
    if pt["policy"] != TUNED:
        return chunks.pss_setup(system, an, pt["n"], pt["policy"], _horizon(exp), exp.grid.times, a,
                                 exp.grid.theta_rule), None
    return tuned_policy.point_setup(system, an, pt, rec, horizon=_horizon(exp), times=exp.grid.times, exponent=a)


def _exponent(exp, pt) -> float:
    """The threshold exponent a_bar of a grid point (the sweep's value, else the grid's)."""
    return float(pt.get("a", exp.grid.theta_exponent))


def _point_rows(exp, pts, records):
    """The per-point summary shared by the studies (cost, its stderr, the bound, the policy used)."""
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        if pt["engine"] != "pss":
            continue
        system, an = _system(exp, pt["system"])
        st, tuned = _point_setup(exp, system, an, pt, rec)
        J, se, plain = controlled_estimate(rec, "J", coarse=sim.coarse_controls)
        dn = _threshold_term(exp, an, st, pt["n"])
        p = an.p
        sp, sp_se = mean_stderr(rec[f"sup_X_hat_{p + 1}"]) if f"sup_X_hat_{p + 1}" in rec else (None, None)
        sq, sq_se = mean_stderr(rec[f"sup_X_hat_{2 - p}"]) if f"sup_X_hat_{2 - p}" in rec else (None, None)
        rows.append({
            "point": i, "system": pt["system"], "policy": pt["policy"], "policy_used": st.policy,
            "theta": st.theta, "theta_exponent": _exponent(exp, pt), "switch_at": st.switch_at, "n": pt["n"],
            "seed": pt["seed"], "engine": pt.get("driver", "event"),
            "reps": int(rec["J"].shape[0]), "J_hat": J, "J_hat_stderr": se, "ci95_lo": J - 1.96 * se,
            "ci95_hi": J + 1.96 * se, "V0": an.V0, "gap": J - an.V0, "threshold_term": dn,
            "residual": None if dn is None else J - an.V0 - dn, "horizon": st.horizon,
            "truncation_bound": float(np.mean(rec["tail_bound"])), "hpc": p + 1,
            "sup_X_hat_p": sp, "sup_X_hat_p_stderr": sp_se, "sup_X_hat_q": sq, "sup_X_hat_q_stderr": sq_se,
            "events": int(np.sum(rec["events"])), **plain, **(tuned or {}),
        })
        rows[-1].update(chunks.diagnostics_row(rec, rows[-1], an, st))
    return rows


def _threshold_term(exp, an, st, n):
    """The limit's threshold term Delta_n of the point (:mod:`jaxq.diffusion.threshold`), or None where it does not
    apply: a finite ``grid.horizon`` (J is then a truncated cost, Delta_n an infinite-horizon one) or a switching
    level other than z* (``auto:x2``, ``T2T1:0.1``: that policy's limit is not V0)."""
    if exp.grid.horizon is not None:
        return None
    return threshold_term(an, st.policy, (st.theta or 0) / math.sqrt(n), st.switch_at)


# ------------------------------------------------------------------------------------ convergence
def aggregate_convergence(exp, pts, records):
    """The tables of ``convergence``: ``summary`` (one row per point: J_hat with its standard error, V0, the gap)
    and ``fits`` (per system, policy, threshold exponent and seed: the limit fit, the log-log rate of the gap and
    :func:`verdict`).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary", "fits"}``.
    """
    rows = _point_rows(exp, pts, records)
    fits = []
    for (system, policy, a, seed), rs in groups_by(rows, ("system", "policy", "theta_exponent", "seed")).items():
        rs = sorted(rs, key=lambda r: r["n"])
        n = [r["n"] for r in rs]
        rate, rate_se, C = loglog_rate(n, [abs(r["gap"]) for r in rs], [r["J_hat_stderr"] for r in rs])
        fit = limit_fit(n, [r["J_hat"] for r in rs], [r["J_hat_stderr"] for r in rs])
        row = {"system": system, "policy": policy, "policy_used": rs[0]["policy_used"], "theta_exponent": a,
               "seed": seed, "n_min": min(n), "n_max": max(n), "rate": rate, "rate_stderr": rate_se, "C": C,
               "gap_at_n_max": rs[-1]["gap"], "gap_stderr_at_n_max": rs[-1]["J_hat_stderr"],
               "V0": rs[0]["V0"], "V0_fit": fit["L"], "V0_fit_stderr": fit["L_stderr"], "fit_C": fit["C"],
               "fit_rate": -fit["r"], "fit_rate_stderr": fit["r_stderr"], "fit_chi2": fit["chi2"], "fit_dof": fit["dof"]}
        row["threshold_rate"] = threshold_rate(exp.grid.theta_rule == EXCURSION_RULE, a, [r["n"] for r in rs],
                                               [r["theta"] for r in rs])
        # the residual after the threshold term, where the limit defines the term (Theta_hat below z*)
        held = [r for r in rs if r["threshold_term"] is not None and r["threshold_term"] != 0]
        if rs[0]["theta"] is not None and len(held) >= 3 and held[-1] is rs[-1]:
            r_rate, r_se, r_C = loglog_rate([r["n"] for r in held], np.abs([r["residual"] for r in held]),
                                            [r["J_hat_stderr"] for r in held])
            row.update(threshold_term_at_n_max=rs[-1]["threshold_term"], residual_at_n_max=rs[-1]["residual"],
                       residual_rate=r_rate, residual_rate_stderr=r_se, residual_C=r_C, residual_n_min=held[0]["n"])
        row["verdict"] = verdict(row)
        fits.append(row)
    return {"summary": rows, "fits": fits}


def verdict(f: dict) -> str:
    """A sentence on whether J_n -> V0 at the measured n (intervals: 2 standard errors).

    Two pieces of evidence: the free fit J_n = V0_fit + C n^(-r) (is V0_fit consistent with V0?) and the
    log-log slope of the gap |J_n - V0| with V0 known (``rate``: does the gap shrink, and like what?). With
    errors of a fraction of a percent a single power law is often rejected by the next-order terms, which
    biases V0_fit while the gap still shrinks steadily; the slope then carries the verdict. For threshold
    policies the slope is compared with the threshold term Theta_n / sqrt(n) = n^(a - 1/2) of (2.28).

    Args:
        f: A row of the ``fits`` table of ``convergence``.

    Returns:
        The sentence.
    """
    gap, gse = f["gap_at_n_max"], f["gap_stderr_at_n_max"]
    if f.get("residual_at_n_max") is not None:  # a threshold policy whose threshold term is not zero
        return _threshold_verdict(f)
    if not np.isfinite(f["V0_fit"] if f["V0_fit"] is not None else np.nan):
        if abs(gap) <= 2 * gse:
            return f"J_n is within 2 s.e. of V0 at n = {f['n_max']:g} (too few n for a limit fit)"
        return f"J_n - V0 = {gap:.3g} +- {gse:.2g} at n = {f['n_max']:g} (too few n for a limit fit)"
    fitted = np.isfinite(f["V0_fit_stderr"]) and f["V0_fit_stderr"] < 0.25 * abs(f["V0"])
    dev = (f["V0_fit"] - f["V0"]) / f["V0_fit_stderr"] if f["V0_fit_stderr"] > 0 else np.inf
    rate, rse = f["rate"], f["rate_stderr"]
    head = (f"J_n - V0 = {gap:.3g} +- {gse:.2g} at n = {f['n_max']:g}, shrinking like n^({rate:.3f} +- {rse:.3f}); "
            + (f"fitted limit {f['V0_fit']:.4g} +- {f['V0_fit_stderr']:.2g} ({dev:+.1f} s.e. from V0)" if fitted
               else "the free fit does not pin the limit down"))
    thr = f["threshold_rate"]
    like_threshold = thr is not None and rate is not None and abs(rate - thr) <= 2 * rse + 0.02
    if fitted and abs(dev) <= 2:
        tail = "consistent with J_n -> V0"
    elif rate is not None and rate + 2 * rse < 0:
        if like_threshold:
            tail = (f"consistent with J_n -> V0 at the threshold term's slow rate n^({thr:.3f}) (Theta_n / sqrt(n)); "
                    "V0 itself lies far beyond the measured range")
        else:
            tail = ("consistent with J_n -> V0: the gap shrinks like a power of n over the whole range (the free "
                    "fit's limit is biased by next-order terms)" if fitted
                    else "consistent with J_n -> V0: the gap shrinks like a power of n over the whole range")
    else:
        tail = "J_n -> V0 is not seen at these n: the gap does not shrink"
        if thr is not None:
            tail += (f" (the threshold term predicts n^({thr:.3f}); smaller threshold exponents give smaller gaps, "
                     "see the threshold-exponent study)")
    return f"{head}: {tail}"


def _threshold_verdict(f: dict) -> str:
    """The verdict of a threshold policy: the gap against the limit's threshold term Delta_n
    (:mod:`jaxq.diffusion.threshold`; it vanishes like n^(a - 1/2)) and the residual J_n - V0 - Delta_n."""
    gap, gse, dn, res = f["gap_at_n_max"], f["gap_stderr_at_n_max"], f["threshold_term_at_n_max"], f["residual_at_n_max"]
    rr, rse, thr = f["residual_rate"], f["residual_rate_stderr"], f["threshold_rate"]
    head = (f"J_n - V0 = {gap:.3g} +- {gse:.2g} at n = {f['n_max']:g}, of which the threshold term Delta_n = {dn:.3g} "
            f"(-> 0 like n^({thr:.3f})); residual J_n - V0 - Delta_n = {res:.3g} +- {gse:.2g}")
    if abs(res) <= 2 * gse:
        return f"{head}: within 2 s.e. of 0, consistent with J_n -> V0 through the threshold term"
    since = "" if f["residual_n_min"] == f["n_min"] else f" from n = {f['residual_n_min']:g} (Theta_hat < z*)"
    if np.isfinite(rr) and rr + 2 * (rse if np.isfinite(rse) else 0.0) < 0:
        return (f"{head}, shrinking like n^({rr:.3f} +- {rse:.3f}){since}: consistent with J_n -> V0, at the slow "
                "rate of the threshold term")
    return f"{head}: the residual does not shrink at these n, so J_n - V0 is not explained by the threshold term"


def figure_convergence(exp, pts, records, tables, out):
    """J_n against n with 95% intervals and V0 (``J_n.png``), and |J_n - V0| against n on log-log axes
    (``gap_loglog.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    rows, fits = tables["summary"], tables["fits"]
    keys = ("system", "policy", "theta_exponent", "seed")
    sweep = bool(exp.grid.theta_exponents)
    groups = groups_by(rows, keys)
    panels = groups_by(rows, ("system", "policy", "seed"))

    def label(rs, a):
        return rs[0]["policy_used"] + (f", a = {a:.3g}" if sweep else "")

    fig, axes = figures.grid_figure(len(panels))
    for ax, (pkey, prs) in zip(axes, panels.items()):
        for (system, policy, a, seed), rs in groups.items():
            if (system, policy, seed) != pkey:
                continue
            rs = sorted(rs, key=lambda r: r["n"])
            n = np.array([r["n"] for r in rs], dtype=float)
            J = np.array([r["J_hat"] for r in rs])
            ci = 1.96 * np.array([r["J_hat_stderr"] for r in rs])
            ax.errorbar(n, J, yerr=ci, fmt="o-", ms=4, capsize=3, label=r"$J_n$ (95% CI)" + (f", a={a:.3g}" if sweep
                                                                                             else ""))
        ax.axhline(prs[0]["V0"], color="k", ls="--", lw=1, label=r"$V_0$")
        ax.set_xscale("log")
        ax.set_title(f"{pkey[0]}: {prs[0]['policy_used']}" + (" tuned" if pkey[1] == TUNED else ""), fontsize=10)
        ax.set_xlabel("n")
        ax.legend(fontsize=7)
    paths = [figures.save(fig, out, "J_n.png")]
    fig, ax = figures.single_figure()
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["n"])
        n = np.array([r["n"] for r in rs], dtype=float)
        gap = np.abs([r["gap"] for r in rs])
        se = np.array([r["J_hat_stderr"] for r in rs])
        fit = next(f for f in fits if tuple(f[k] for k in keys) == key)
        rate = "-" if fit["rate"] is None else f"{fit['rate']:.2f}"
        line = ax.errorbar(n, gap, yerr=1.96 * se, fmt="o", ms=4, capsize=2,
                           label=f"{key[0]} ({label(rs, key[2])}): rate {rate}")
        if fit["rate"] is not None:
            ax.plot(n, fit["C"] * n ** fit["rate"], "-", color=line[0].get_color(), lw=1)
        if fit.get("residual_rate") is not None:  # a threshold policy: the gap less the limit's threshold term
            keep = np.array([r["residual"] is not None for r in rs])
            res = np.abs([r["residual"] for r in rs if r["residual"] is not None])
            ax.errorbar(n[keep], res, yerr=1.96 * se[keep], fmt="s", mfc="none", ms=4, capsize=2,
                        color=line[0].get_color(), label=f"  minus threshold term: rate {fit['residual_rate']:.2f}")
            ax.plot(n[keep], fit["residual_C"] * n[keep] ** fit["residual_rate"], ":", color=line[0].get_color(), lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$|J_n - V_0|$ (open squares: $|J_n - V_0 - \Delta_n|$)")
    ax.legend(fontsize=6)
    paths.append(figures.save(fig, out, "gap_loglog.png"))
    return paths


# ------------------------------------------------------------------------------------------- weak
def aggregate_weak(exp, pts, records):
    """The tables of ``weak``: ``summary`` (the KS distance of W_hat^n(t) to the SDE reference's Z(t), per point and
    time) and ``fits``.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary", "fits"}``.
    """
    ref = {(pt["system"], pt["seed"], pt["n"], pt.get("a")): (pt, rec) for pt, rec in zip(pts, records)
           if pt["engine"] == "sde"}
    rows = []
    for i, (pt, rec) in enumerate(zip(pts, records)):
        if pt["engine"] != "pss":
            continue
        z = ref[(pt["system"], pt["seed"], None, None)][1]
        shifted = ref.get((pt["system"], pt["seed"], pt["n"], pt.get("a")))  # T1T2: (W_hat - shift) against Z^s
        for t in exp.grid.times:
            w, zt = rec[f"W_hat@{t:g}"], z[f"Z@{t:g}"]
            d, pval = ks_distance(w, zt)
            mw, mw_se = mean_stderr(w)
            mz, mz_se = mean_stderr(zt)
            row = {"point": i, "system": pt["system"], "n": pt["n"], "seed": pt["seed"], "t": t,
                   "reps": int(w.size), "sde_paths": int(zt.size), "ks": d, "ks_pvalue": pval,
                   "ks_noise_95": ks_noise_level(w.size, zt.size), "mean_W_hat": mw,
                   "mean_W_hat_stderr": mw_se, "mean_Z": mz, "mean_Z_stderr": mz_se}
            if shifted is not None:
                spt, srec = shifted
                zs = srec[f"Z@{t:g}"]
                ds, ps = ks_distance(w - spt["shift"], zs)
                row.update(shift=spt["shift"], ks_shifted=ds, ks_shifted_pvalue=ps, mean_W_hat_shifted=mw - spt["shift"],
                           mean_Z_shifted=mean_stderr(zs)[0])
            rows.append(row)
    fits = []
    for (system, t, seed), rs in groups_by(rows, ("system", "t", "seed")).items():
        rate, rate_se, C = loglog_rate([r["n"] for r in rs], [r["ks"] for r in rs])
        fit = {"system": system, "t": t, "seed": seed, "ks_rate": rate, "ks_rate_stderr": rate_se}
        sh = [r for r in rs if "ks_shifted" in r]
        if len(sh) >= 2:
            s_rate, s_se, _ = loglog_rate([r["n"] for r in sh], [r["ks_shifted"] for r in sh])
            fit.update(ks_shifted_rate=s_rate, ks_shifted_rate_stderr=s_se)
        fits.append(fit)
    return {"summary": rows, "fits": fits}


def figure_weak(exp, pts, records, tables, out):
    """Quantile-quantile plots of W_hat^n(t) against Z(t) (``qq.png``) and the KS distances against n (``ks.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    rows = tables["summary"]
    t = max(exp.grid.times)
    seed = pts[0]["seed"]
    labels = [s.label for s in exp.systems]
    fig, axes = figures.grid_figure(len(labels))
    qs = np.linspace(0.01, 0.99, 99)
    for ax, label in zip(axes, labels):
        z = next(r for p, r in zip(pts, records)
                 if p["system"] == label and p["engine"] == "sde" and p["seed"] == seed and p["n"] is None)
        zq = np.quantile(z[f"Z@{t:g}"], qs)
        for p, r in zip(pts, records):
            if p["system"] == label and p["engine"] == "pss" and p["seed"] == seed:
                ax.plot(zq, np.quantile(r[f"W_hat@{t:g}"], qs), ".-", ms=2, lw=0.8, label=f"n={p['n']}")
        ax.plot([0, zq[-1]], [0, zq[-1]], "k--", lw=1, label="Z(t)")
        ax.set_title(f"{label}: quantiles at t={t:g}", fontsize=10)
        ax.set_xlabel("Z(t) quantile")
        ax.set_ylabel(r"$\hat W^n(t)$ quantile")
        ax.legend(fontsize=7)
    paths = [figures.save(fig, out, "qq.png")]
    fig, ax = figures.single_figure()
    for (system, tt, s), rs in groups_by(rows, ("system", "t", "seed")).items():
        if tt != t or s != seed:
            continue
        line = ax.plot([r["n"] for r in rs], [r["ks"] for r in rs], "o-", ms=4, label=system)
        sh = [r for r in rs if "ks_shifted" in r]
        if sh:
            ax.plot([r["n"] for r in sh], [r["ks_shifted"] for r in sh], "s--", mfc="none", ms=4,
                    color=line[0].get_color(), label=f"{system}: " + r"$\hat W^n - \hat\Theta_n/\alpha_p$ vs $Z^s$")
    noise = [r["ks_noise_95"] for r in rows if r["t"] == t]
    ax.axhline(max(noise), color="gray", ls=":", lw=1, label="95% sampling noise")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("KS distance of " + r"$\hat W^n$" + f"({t:g}) to Z({t:g})")
    ax.legend(fontsize=7)
    paths.append(figures.save(fig, out, "ks.png"))
    return paths


# --------------------------------------------------------------------------------------- collapse
def aggregate_collapse(exp, pts, records):
    """The tables of ``collapse``: ``summary`` (E sup_[0,T] X_hat_p^n per point, with Theta_n / sqrt(n)) and ``fits``
    (per system, policy and seed: its log-log rate in n).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary", "fits"}``.
    """
    rows = _point_rows(exp, pts, records)
    keep = ("point", "system", "policy", "policy_used", "theta", "n", "seed", "reps", "hpc", "horizon",
            "sup_X_hat_p", "sup_X_hat_p_stderr", "sup_X_hat_q", "sup_X_hat_q_stderr", "events", "X_hat_p_mean",
            "idle_while_waiting_1", "idle_while_waiting_2", "warning")
    rows = [{k: r[k] for k in keep} for r in rows]
    for r in rows:
        r["theta_over_sqrt_n"] = None if r["theta"] is None else r["theta"] / math.sqrt(r["n"])
    fits = []
    for (system, policy, seed), rs in groups_by(rows, ("system", "policy", "seed")).items():
        rate, rate_se, C = loglog_rate([r["n"] for r in rs], [r["sup_X_hat_p"] for r in rs],
                                       [r["sup_X_hat_p_stderr"] for r in rs])
        fits.append({"system": system, "policy": policy, "policy_used": rs[0]["policy_used"], "seed": seed,
                     "rate": rate, "rate_stderr": rate_se, "C": C})
    return {"summary": rows, "fits": fits}


def figure_collapse(exp, pts, records, tables, out):
    """E sup_[0,T] X_hat_p^n against n with 95% intervals and Theta_n / sqrt(n) (``collapse.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    fig, ax = figures.single_figure()
    for (system, policy, seed), rs in groups_by(tables["summary"], ("system", "policy", "seed")).items():
        n = np.array([r["n"] for r in rs], dtype=float)
        y = np.array([r["sup_X_hat_p"] for r in rs])
        se = np.array([r["sup_X_hat_p_stderr"] for r in rs])
        ax.errorbar(n, y, yerr=1.96 * se, fmt="o-", ms=4, capsize=2, label=f"{system} ({rs[0]['policy_used']})")
    th = sorted({(r["n"], r["theta_over_sqrt_n"]) for r in tables["summary"] if r["theta_over_sqrt_n"] is not None})
    if th:  # the threshold level (2.29) the T-rules keep the HPC near, in diffusion scale
        ax.plot([a for a, _ in th], [b for _, b in th], "k:", lw=1, label=r"$\Theta_n/\sqrt{n}$")
    ax.set_xscale("log")
    ys = [r["sup_X_hat_p"] for r in tables["summary"]] + [b for _, b in th]
    if any(y is not None and y > 0 for y in ys):  # a log axis of nothing but zeros only warns
        ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel(r"$E\,\sup_{[0,T]} \hat X^n_p$" + f"  (T = {exp.grid.horizon:g})")
    ax.legend(fontsize=7)
    return [figures.save(fig, out, "collapse.png")]


# --------------------------------------------------------------------------------------- policies
def aggregate_policies(exp, pts, records):
    """The table of ``policies``: ``summary``, each point's row with its excess over the ``auto`` policy (paired:
    common random numbers) and over V0.

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.

    Returns:
        (dict[str, list[dict]]): ``{"summary"}``.
    """
    rows = _point_rows(exp, pts, records)
    by_point = dict(zip(range(len(pts)), records))
    for (system, n, seed), rs in groups_by(rows, ("system", "n", "seed")).items():
        base = next((r for r in rs if r["policy"] == "auto"), rs[0])
        Jb = by_point[base["point"]]["J"]
        for r in rs:
            d, d_se = mean_stderr(by_point[r["point"]]["J"] - Jb)  # paired: common random numbers (plain costs)
            r["baseline"] = base["policy"]
            r["excess_over_baseline"] = d
            r["excess_over_baseline_stderr"] = d_se
            r["excess_over_V0_pct"] = 100.0 * r["gap"] / r["V0"]
            r["V_limit"] = _switching_limit(exp, r)
    return {"summary": rows}


def _switching_limit(exp, r):
    """h_q alpha_q V_WCP^z(0): the diffusion-limit cost of switching modes at the level z the variant uses.

    Defined for the theory's policy of a dual-mode system at any level z; None for the others, whose
    limit depends on more than the switching level.
    """
    _, an = _system(exp, r["system"])
    if an.case != "dual" or r["switch_at"] is None or r["policy_used"] != an.policy:
        return None
    return an.cost_scale() * an.wcp_cost(0.0, r["switch_at"])


def _policy_label(r):
    used = r["policy_used"]
    if r["policy"] == TUNED:
        z = "" if r["switch_at"] is None else f"z={r['switch_at']:.3g}, "
        return f"tuned {used} ({z}Theta={r['theta']})"
    if r["policy"] == "auto":
        return f"auto = {used}" + ("" if r["switch_at"] is None else f" (z*={r['switch_at']:.3g})")
    if r["switch_at"] is not None:  # 3 digits: z = 1e300 must not make a 300-character label
        return f"{used} (z={r['switch_at']:.3g})"
    return used


def figure_policies(exp, pts, records, tables, out):
    """The policies' costs, one panel per system, n and seed (``policies.png``).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pts (list[dict]): The grid points.
        records (list[dict]): Their per-replication records.
        tables (dict[str, list[dict]]): The tables of the study's aggregate.
        out (pathlib.Path): The folder of the figures.

    Returns:
        (list[str]): The PNG paths written.
    """
    groups = groups_by(tables["summary"], ("system", "n", "seed"))
    fig, axes = figures.grid_figure(len(groups), width=4.6, height=0.35 * max(len(g) for g in groups.values()) + 1.2,
                                    max_cols=2)
    for ax, ((system, n, seed), rs) in zip(axes, groups.items()):
        y = np.arange(len(rs))
        J = np.array([r["J_hat"] for r in rs])
        ci = 1.96 * np.array([r["J_hat_stderr"] for r in rs])
        colors = ["tab:green" if r["policy"] == "auto" else "tab:blue" for r in rs]
        ax.barh(y, J, xerr=ci, color=colors, capsize=2)
        ax.axvline(rs[0]["V0"], color="k", ls="--", lw=1, label=r"$V_0$")
        ax.set_yticks(y, [_policy_label(r) for r in rs], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(r"$J_n$ (95% CI)")
        ax.set_title(f"{system}, n = {n}", fontsize=10)
        ax.legend(fontsize=7)
    return [figures.save(fig, out, "policies.png")]


# ---------------------------------------------------------------------------------- precision targets
def _is_2x2_point(pt) -> bool:
    return pt.get("engine") == "pss"


def rel_se_J(exp, pt, rec) -> float:
    """The standard error of the point's J_hat (controlled, as its table's) over J_hat (also the random-systems
    study's target).

    Args:
        exp (jaxq.studies.experiment.Experiment): The experiment.
        pt (dict): The grid point.
        rec (dict): Its per-replication records (the pilot's or the run's).

    Returns:
        The relative standard error.
    """
    J, se, _ = controlled_estimate(rec, "J", coarse=sim.coarse_controls)
    return relative_se(J, se)


def _rel_se_sup(exp, pt, rec) -> float:
    """The standard error of the point's sup_X_hat_p (its table's) over sup_X_hat_p."""
    _, an = _system(exp, pt["system"])
    return relative_se(*mean_stderr(rec[f"sup_X_hat_{an.p + 1}"]))


TARGET_J = PointTarget(_is_2x2_point, rel_se_J, "J_hat")

# [grid] keys that only list the points: a resumed run may change them and keeps the shared points' chunks
ENUMERATION = ("n", "policies", "theta_exponents", "replications_at", "target_rel_se_at", "shifted")
register(Study("convergence", "J_n against n with the lower bound V0 (Theorem 2.11)", ConvergenceGrid, points, run_chunk,
               aggregate_convergence, figure_convergence, enumeration_keys=ENUMERATION, target=TARGET_J))
register(Study("weak", "law of W_hat^n(t) against the controlled reflected SDE Z(t)", WeakGrid, points, run_chunk,
               aggregate_weak, figure_weak, enumeration_keys=ENUMERATION))
register(Study("collapse", "E sup_[0,T] X_hat_p^n of the high-priority class", CollapseGrid, points, run_chunk,
               aggregate_collapse, figure_collapse, enumeration_keys=ENUMERATION,
               target=PointTarget(_is_2x2_point, _rel_se_sup, "sup_X_hat_p")))
register(Study("policies", "the six policies and naive ones on the same systems at the same n", ConvergenceGrid, points,
               run_chunk, aggregate_policies, figure_policies, enumeration_keys=ENUMERATION, target=TARGET_J))
