"""Per-chunk adapters from the studies to the simulators: replications ``start .. start+count-1``.

Replication r's numbers depend only on its key ``fold_in(PRNGKey(seed), r)`` (the replication layer,
:mod:`jaxq.mc.replications`, pads, slices and shards), so a chunk's records do not depend on which
process or device computed it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.sde import driver, skew
from jaxq.sde.estimators import value_of, wcp_coefficients
from jaxq.sim import diagnostics
from jaxq.sim import pss2x2 as sim


@lru_cache(maxsize=None)
def analysis_of(path: Path, mtime: float) -> tuple[PSS2x2, Analysis]:
    """The (cached) system and its analysis (``mtime`` keys the cache on the file's version).

    Args:
        path: The system file.
        mtime: The file's modification time.

    Returns:
        ``(system, analysis)``.
    """
    from jaxq.model import load

    system = load(path)
    return system, analyze(system)


def system_and_analysis(path: Path) -> tuple[PSS2x2, Analysis]:
    """The system in ``path`` and its analysis (cached per file version).

    Args:
        path: The system file.

    Returns:
        ``(system, analysis)``.
    """
    return analysis_of(Path(path), Path(path).stat().st_mtime)


def parse_policy(spec: str, z_star: float | None = None) -> tuple[str, float | None]:
    """A policy of the grid: ``NAME``, ``NAME:LEVEL`` (switch at workload LEVEL) or ``NAME:xF`` (at F z*).

    ``"PP"`` -> ("PP", None); ``"PP:0.8"`` -> ("PP", 0.8); ``"auto:x2"`` -> ("auto", 2 z*).

    Args:
        spec: The policy.
        z_star: The switching level z* of a dual-mode system (None: none).

    Returns:
        ``(name, level)``; the level None without one.

    Raises:
        InputError: Naming ``policy``: a bad level, or a level relative to z* without a dual-mode system.
    """
    name, _, level = spec.partition(":")
    if not level:
        return name, None
    try:
        if level.startswith("x"):
            if z_star is None:
                raise InputError("policy", f"{spec!r}: a level relative to z* needs a dual-mode system")
            return name, float(level[1:]) * z_star
        return name, float(level)
    except ValueError:
        raise InputError("policy", f"bad policy {spec!r}: use NAME, NAME:LEVEL or NAME:xFACTOR") from None


def pss_setup(system, an, n, policy, horizon=None, record_times=(), theta_exponent=sim.DEFAULT_THETA_EXPONENT,
              theta_rule=sim.DEFAULT_THETA_RULE):
    """The validated setup (:func:`jaxq.sim.pss2x2.setup`) of a grid point: parameters and the policy used.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The 2x2 system.
        an (jaxq.diffusion.workload.Analysis): Its analysis.
        n (float): The index of the system.
        policy (str): The policy of the grid (:func:`parse_policy`).
        horizon (float | None): The event driver's truncation time (None: the default).
        record_times (typing.Sequence[float]): The times at which W_hat(t) is recorded.
        theta_exponent (float): The threshold exponent.
        theta_rule (str): The threshold rule.

    Returns:
        (jaxq.sim.pss2x2.Setup): The setup.
    """
    name, z = parse_policy(policy, an.z_star)
    return sim.setup(system, float(n), policy=name, horizon=horizon, record_times=record_times,
                     analysis=an,
                     levels=sim.Levels(switch_at=z, theta_exponent=theta_exponent, theta_rule=theta_rule))


def pss_plan(system, an, n, policy, horizon=None, record_times=(), theta_exponent=sim.DEFAULT_THETA_EXPONENT,
             theta_rule=sim.DEFAULT_THETA_RULE):
    """:func:`pss_setup`'s checks and levels (:func:`jaxq.sim.pss2x2.plan`) without the simulator's parameters: the
    validation of a grid point.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The 2x2 system.
        an (jaxq.diffusion.workload.Analysis): Its analysis.
        n (float): The index of the system.
        policy (str): The policy of the grid (:func:`parse_policy`).
        horizon (float | None): The event driver's truncation time (None: the default).
        record_times (typing.Sequence[float]): The times at which W_hat(t) is recorded.
        theta_exponent (float): The threshold exponent.
        theta_rule (str): The threshold rule.

    Returns:
        (jaxq.sim.pss2x2.Plan): The plan.
    """
    name, z = parse_policy(policy, an.z_star)
    return sim.plan(system, float(n), policy=name, horizon=horizon, record_times=record_times, analysis=an,
                    levels=sim.Levels(switch_at=z, theta_exponent=theta_exponent, theta_rule=theta_rule))


def pss_chunk(path, n, policy, seed, count, batching: sim.Batching, *,
              truncation: sim.Truncation = sim.Truncation(engine="event"), levels: sim.Levels = sim.Levels(),
              outputs: sim.Outputs = sim.Outputs()) -> dict[str, np.ndarray]:
    """Per-replication records of the n-th 2x2 system under ``policy`` for replications ``batching.start ..
    batching.start+count-1`` (``batching.chunk``: the chunk size of the grid point, one compiled shape for all its
    chunks; ``truncation.engine``: the event engine, or the uniformised one for exponential primitives, which
    records only the cost; ``levels.switch_at`` is replaced by the one the policy's name carries).

    Returns:
        dict of (count,) arrays: ``J`` (discounted cost up to the horizon), ``tail_bound`` (bound on the
            neglected tail), ``sup_X_hat_1``, ``sup_X_hat_2`` (sup over [0, T] of X_i / sqrt(n)),
            ``W_hat@t`` for each record time t (scaled workload), ``events`` and, with ``cv``, the control variates
            ``cv_0 ..`` (:mod:`jaxq.sim.models.pss2x2`).

    Args:
        path (str | os.PathLike): The system file.
        n (float): The index of the system.
        policy (str): The policy of the grid (:func:`parse_policy`).
        seed (int): The seed.
        count (int): The replications.
        batching: The first replication, the chunk size and the devices.
        truncation: The driver and where it truncates.
        levels: The policy's levels (its ``switch_at`` replaced).
        outputs: What the simulator records.
    """
    system, an = system_and_analysis(path)
    name, z = parse_policy(policy, an.z_star)
    r = sim.simulate(system, float(n), count, policy=name, analysis=an, seed=seed,
                     truncation=truncation._replace(block=64), levels=levels._replace(switch_at=z), outputs=outputs,
                     batching=batching._replace(chunk=max(batching.chunk or count, count)))
    return pss_records(r, outputs.record_times)


def pss_records(r, record_times=()) -> dict[str, np.ndarray]:
    """A 2x2 simulation's per-replication record columns (:func:`pss_chunk`'s): ``J``, ``tail_bound``,
    ``sup_X_hat_i``, ``W_hat@t``, ``events``, the controls and the diagnostics.

    Args:
        r (jaxq.mc.result.SimResult): The simulation's result.
        record_times (typing.Sequence[float]): The times at which W_hat(t) was recorded.

    Returns:
        The record columns.
    """
    rec = {"J": r.samples["J"], "tail_bound": r.samples["tail_bound"]}
    if "sup_X_hat" in r.samples:
        rec.update(sup_X_hat_1=r.samples["sup_X_hat"][:, 0], sup_X_hat_2=r.samples["sup_X_hat"][:, 1])
    for j, t in enumerate(np.atleast_1d(np.asarray(record_times, dtype=np.float64))):
        rec[f"W_hat@{t:g}"] = r.samples["W_hat_t"][:, j]
    rec["events"] = r.samples["events"]
    rec.update(control_columns(r.samples.get("controls")))
    rec.update(diagnostic_columns(r.samples))
    return rec


def diagnostic_columns(samples) -> dict[str, np.ndarray]:
    """A chunk's per-replication diagnostics (:mod:`jaxq.sim.diagnostics`) as record columns, 1-based:
    ``diag_idle_<k><i>`` (server k idle while class i waits), ``diag_X_hat_p``, ``diag_mode_1`` (time in mode 1),
    ``diag_switch_rate``.

    Args:
        samples (dict): The simulation's per-replication samples.

    Returns:
        The record columns (none without diagnostics).
    """
    if "diag_idle_waiting" not in samples:
        return {}
    idle = np.asarray(samples["diag_idle_waiting"])
    out = {f"diag_idle_{k + 1}{i + 1}": idle[:, k, i] for k in (0, 1) for i in (0, 1)}
    out.update(diag_X_hat_p=samples["diag_X_hat_p"], diag_mode_1=np.asarray(samples["diag_mode_fraction"])[:, 0],
               diag_switch_rate=samples["diag_switch_rate"])
    return out


def control_columns(controls) -> dict[str, np.ndarray]:
    """A chunk's control variates as record columns ``cv_0, cv_1, ...`` (none without controls).

    Args:
        controls (numpy.typing.ArrayLike | None): (replications, controls), or None.

    Returns:
        The record columns.
    """
    if controls is None:
        return {}
    c = np.asarray(controls)
    return {f"cv_{k}": c[:, k] for k in range(c.shape[1])}



def sde_chunk(path, dt, horizon, seed, count, batching: sim.Batching, *, times=(), cv=True,
              switch_at: float | None = None) -> dict[str, np.ndarray]:
    """Per-path records of the WCP's reflected SDE Z (skew-exact scheme) started at 0, switching modes at
    ``switch_at`` (default z*), for paths ``batching.start .. batching.start+count-1`` (``batching.chunk``: the
    chunk size of the grid point, one compiled shape for all its chunks).

    Returns:
        dict of (count,) arrays: ``V`` (``int_0^T exp(-gamma t) Z dt``, workload units), ``Z@t`` for each
            time t, ``events`` (steps per path).

    Args:
        path (str | os.PathLike): The system file.
        dt (float): The step size.
        horizon (float): The horizon T.
        seed (int): The seed.
        count (int): The paths.
        batching: The first path, the chunk size and the devices.
        times (typing.Sequence[float]): The times at which Z is recorded.
        cv (bool): Record the control variate ``cv_0``.
        switch_at: The level at which the modes switch (None: z*).
    """
    system, an = system_and_analysis(path)
    params, _ = wcp_coefficients(an, switch_at)  # (2.25): lower mode below z*, higher above
    times = np.atleast_1d(np.asarray(times, dtype=np.float64))
    value = value_of(params, system.gamma) if cv else None
    r = driver.simulate(skew.SCHEME, params, 0.0, system.gamma, driver.TimeGrid(dt, horizon), count, seed,
                        batching=batching._replace(chunk=max(batching.chunk or count, count)),
                        record=driver.Record(times=times, value=value))
    rec = {"V": r["cost"]}
    for j, t in enumerate(times):
        rec[f"Z@{t:g}"] = r["snaps"][:, j]
    rec["events"] = np.full(count, r["steps"], dtype=np.int64)
    if cv:
        rec["cv_0"] = r["control"]
    return rec


def diagnostics_row(rec, row, an, st) -> dict:
    """The point's diagnostics (:mod:`jaxq.sim.diagnostics`: discounted time shares, means over replications)
    and ``warning``, the sentence due when J_hat is more than 50% above V0 at n >= 10^3 (empty otherwise).
    Records written before the diagnostics existed give empty cells.

    Args:
        rec (dict): The point's records.
        row (dict): The point's table row (its ``n``, ``J_hat`` and ``threshold_term``).
        an (jaxq.diffusion.workload.Analysis): The system's analysis.
        st (jaxq.sim.pss2x2.Plan | jaxq.sim.pss2x2.Setup): The point's setup (its modes, threshold and policy).

    Returns:
        The table columns ``idle_while_waiting_1``, ``idle_while_waiting_2``, ``X_hat_p_mean``, ``mode_1_fraction``,
            ``switch_rate`` and ``warning``.
    """
    if "diag_X_hat_p" not in rec:
        return {"idle_while_waiting_1": None, "idle_while_waiting_2": None, "X_hat_p_mean": None,
                "mode_1_fraction": None, "switch_rate": None, "warning": None}
    idle = np.array([[np.mean(rec[f"diag_idle_{k}{i}"]) for i in (1, 2)] for k in (1, 2)])
    dual = len(st.modes_used) > 1
    d = {"idle_waiting": idle.tolist(), "X_hat_p": float(np.mean(rec["diag_X_hat_p"]))}
    if dual:
        m1 = float(np.mean(rec["diag_mode_1"]))
        d.update(mode_fraction=[m1, 1.0 - m1], switch_rate=float(np.mean(rec["diag_switch_rate"])))
    n = row["n"]
    note = diagnostics.warning(d, J_hat=row["J_hat"], V0=an.V0, n=n, gamma=an.system.gamma, h=an.system.h,
                               hpc=an.p + 1, theta=st.theta, policy=st.policy, threshold_term=row["threshold_term"])
    return {"idle_while_waiting_1": float(idle[0].sum()), "idle_while_waiting_2": float(idle[1].sum()),
            "X_hat_p_mean": d["X_hat_p"], "mode_1_fraction": d.get("mode_fraction", [None])[0],
            "switch_rate": d.get("switch_rate"), "warning": note}
