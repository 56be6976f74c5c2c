"""Monte Carlo estimators on the reflected SDE (2.24): discounted cost, WCP value, Z(t), stationary law.

``discounted_cost`` estimates ``E int_0^inf exp(-gamma t) Z_t dt`` (2.16) by the truncated integral over
[0, T] (``jaxq.sde.driver``) with a standard error over paths and a rigorous bound on what the
truncation leaves out (``truncation_bound``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from jaxq.diffusion import stationary
from jaxq.errors import InputError
from jaxq.sde import euler, exact_step, skew
from jaxq.sde.coefficients import Piecewise, wcp
from jaxq.sde.driver import TimeGrid, Record, check_step, simulate
from jaxq.diffusion.value import value_function
from jaxq.mc.observer import check_observers
from jaxq.mc.replications import Batching
from jaxq.mc.result import (Estimate, SimResult, TruncatedEstimate,  # noqa: F401  (TruncatedEstimate: re-exported)
                             add_observed, timed, with_work_of)

SCHEMES = {"skew": skew.SCHEME, "exact": exact_step.SCHEME, "euler": euler.SCHEME}
DEFAULT_SCHEME = "skew"


def scheme(name: str):
    """The scheme called ``name``.

    Args:
        name: One of :data:`SCHEMES`.

    Returns:
        (jaxq.sde.driver.Scheme): The scheme.

    Raises:
        InputError: Naming ``scheme``: an unknown name.
    """
    if name not in SCHEMES:
        raise InputError("scheme", f"expected one of {sorted(SCHEMES)}, got {name!r}")
    return SCHEMES[name]


class SdeTruncation(NamedTuple):
    """Where the discounted integral (2.16) is truncated.

    At ``horizon`` T (run as exactly ``ceil(T / dt)`` steps) or, when None, at the smallest T whose truncation bound
    (:func:`truncation_bound`) is at most ``rel_tol`` times ``scale``.

    Attributes:
        horizon: The truncation time T (None: from the truncation bound).
        rel_tol: The truncation bound's share of ``scale`` that chooses T when ``horizon`` is None.
        scale: The size of the value (None: an a-priori size, see :func:`discounted_cost`).
    """

    horizon: float | None = None
    rel_tol: float = 1e-4
    scale: float | None = None


class SdeOutputs(NamedTuple):
    """What a run estimates besides the cost.

    Attributes:
        cv: Subtract the Ito-sum control variate (:func:`discounted_cost`).
        observers: Statistics of the path, a dict of name -> :class:`jaxq.Observer` of the workload Z (a float64 per
            path; each step a :class:`~jaxq.mc.observer.Segment` from Z_k to Z_{k+1}, docs/guides/observers.md),
            whose outputs are estimates ``<name>`` / ``<name>_<key>``; None: none.
    """

    cv: bool = True
    observers: Any = None


GROUPS = {"truncation": SdeTruncation, "batching": Batching, "outputs": SdeOutputs}  # the typed arguments the API builds


def truncation_bound(z0: float, b_max: float, s_max: float, gamma: float, horizon: float) -> float:
    """Upper bound on ``E int_T^inf exp(-gamma t) Z_t dt``.

    From (2.15), ``Z_t = z0 + int b + M_t + L_t`` with ``L_t = sup_s (z0 + int b + M)^-``, so
    ``E Z_t <= z0 + 2 b_max t + 2 E sup|M| <= z0 + 2 b_max t + 2 s_max sqrt(t)`` (Doob's L2 inequality),
    with ``b_max = max |b|``, ``s_max = max sigma``. Integrating against ``exp(-gamma t)`` over [T, inf)
    (and ``int_T^inf e^{-gamma t} sqrt(t) dt <= e^{-gamma T} (sqrt(T)/gamma + 1/(2 gamma^2 sqrt(T)))``).

    Args:
        z0: The start.
        b_max: ``max |b|`` over the regions.
        s_max: ``max sigma`` over the regions.
        gamma: The discount rate.
        horizon: The truncation time T.

    Returns:
        The bound.
    """
    g, t = gamma, horizon
    lin = z0 / g + 2.0 * b_max * (t / g + 1.0 / g**2)
    root = 2.0 * s_max * (math.sqrt(t) / g + 1.0 / (2.0 * g * g * math.sqrt(t)))
    return math.exp(-g * t) * (lin + root)


def default_horizon(z0: float, b_max: float, s_max: float, gamma: float, tol: float = 1e-3) -> float:
    """The smallest T (to 0.5%) whose truncation bound is at most ``tol`` (workload units).

    The bound decreases strictly in T (to 0 as T grows, to infinity as T -> 0) and falls like
    ``exp(-gamma T)`` times a polynomial, so T is found on the time scale ``1/gamma``: doubling or halving
    from ``1/gamma`` to a bracket, then bisection (a bounded number of evaluations, for any gamma; T may be
    far below 1 when gamma is large).

    Args:
        z0: The start.
        b_max: ``max |b|`` over the regions.
        s_max: ``max sigma`` over the regions.
        gamma: The discount rate.
        tol: The largest truncation bound allowed.

    Returns:
        The horizon T.

    Raises:
        InputError: Naming ``horizon``: ``tol`` not a positive number, or no horizon makes the bound small enough.
    """
    if not (tol > 0 and math.isfinite(tol)):
        raise InputError("horizon", f"the truncation tolerance must be a positive number, got {tol}")
    bound = lambda t: truncation_bound(z0, b_max, s_max, gamma, t)  # noqa: E731
    hi = 1.0 / gamma
    if bound(hi) <= tol:  # halve down to a horizon whose bound is too large: [lo, hi] brackets T
        lo = 0.5 * hi
        for _ in range(400):
            if bound(lo) > tol:
                break
            lo, hi = 0.5 * lo, lo
        else:
            return hi
    else:
        lo = hi
        for _ in range(400):  # the bound falls like exp(-gamma T) times a polynomial: a finite hi exists
            if bound(hi) <= tol:
                break
            lo, hi = hi, 2.0 * hi
        else:
            raise InputError("horizon", "no horizon makes the truncation bound small enough (coefficients too large)")
    for _ in range(200):
        if hi - lo <= 0.005 * hi:
            break
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if bound(mid) <= tol else (mid, hi)
    return hi


# Step size against the discount time scale 1/gamma. Started at 0 with a large gamma the cost is made in the
# first few 1/gamma, where Z stays near the reflecting boundary; a step of gamma dt units of that time scale
# biases V_hat by a function of gamma dt alone (the problem is scale free in that limit). Measured on pss_PP at
# gamma = 1e6 against V_exact (20000 paths, skew): -13% at gamma dt = 1, -3% at 0.3, -0.5% +- 0.1% at 0.1,
# +0.03% +- 0.04% at 0.01, +0.007% +- 0.014% at 0.001 (exact alike; euler has its own sqrt(dt) bias on top).
DEFAULT_DT = 1e-3  # the default step for gamma <= 1
DEFAULT_GAMMA_DT = 1e-3  # the default step is DEFAULT_DT * min(1, DEFAULT_GAMMA_DT / (DEFAULT_DT * gamma))
MAX_GAMMA_DT = 0.1  # a larger gamma dt is refused: the step does not resolve the discount time scale

# Step size against the drift's time scale sigma^2 / b^2 (in which the drift moves Z by the diffusion's length
# scale sigma^2 / |b|, the size of the stationary law), per region of the coefficients. A step with
# b^2 dt / sigma^2 >> 1 jumps over that length: the level crossing (skew), the frozen coefficients at the level
# (exact), the trapezoid cost of a step that reaches 0 (all schemes, from z0 > 0) and the projection (euler)
# no longer see it. Measured (2000 to 8000 paths, pss_PP's modes with the drifts scaled by F and z* by 1/F,
# dt = 1e-3, gamma = 0.5, against the exact ODE value), at b^2 dt / sigma^2 = 0.01, 0.1, 0.3, 0.5, 1, 1.9, 21, 2100:
# dual mode from 0, skew +0.01% (0.6 se), +0.04% (1.8 se), -0.09% (-4.2 se), -0.56%, -1.9%, -3%, +46%, +2700%;
# exact +0.02%, +0.08% (3.5 se), +0.21%, +0.35%, +0.73%, +1.2%, +1.6%, +1.6%. Single mode from z0 = |b| dt at
# gamma dt = 0.1 (where gamma alone costs about -0.5%): +0.01% at 0.1, +0.48% at 0.3, +0.85% at 0.5, +1.6% at 1.
# Single mode from 0 the skew and exact schemes are exact in law at any step, but from z0 = 1 at b = -1e3 (590) the
# cost is +0.9% (5 se) off, and at b = -1e10 the first step's trapezoid rule gives 5e-4 for a value of 2e-10.
# Projected Euler is biased by about -1.2 sqrt(b^2 dt / sigma^2) (its boundary error 0.58 sigma sqrt(dt)): -5% at
# the examples' default 2e-3, and it reads V_hat = 0 beyond ~10. The limit 0.3 is where the default scheme's error
# reaches 4 stderr at 8000 paths (less than the -0.5% allowed at gamma dt = 0.1); the bundled examples keep every
# dt up to 0.14 (pss_T2: 0.096; gamma dt <= 0.1 allows 0.2), experiments/sde_convergence.py its dt <= 0.2.
DEFAULT_DRIFT_DT = 0.01  # the default step is at most DEFAULT_DRIFT_DT sigma^2 / b^2 (the examples: 1e-3 stays)
MAX_DRIFT_DT = 0.3  # a larger b^2 dt / sigma^2 is refused: the step does not resolve the drift's length scale


def drift_time(params: Piecewise) -> float:
    """``min_k sigma_k^2 / b_k^2`` over the regions: the time in which the drift moves Z by the diffusion's length
    scale ``sigma^2 / |b|``.

    Args:
        params: The coefficients.

    Returns:
        The drift's time scale (inf without drift).
    """
    b = np.abs(np.asarray(params.b, dtype=float))
    s = np.asarray(params.s, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        return float(np.min(np.where(b > 0, (s / np.where(b > 0, b, 1.0)) ** 2, math.inf)))


def default_dt(gamma: float, drift: float = math.inf, base: float = DEFAULT_DT, gamma_dt: float = DEFAULT_GAMMA_DT,
               drift_dt: float = DEFAULT_DRIFT_DT) -> float:
    """The default step: ``base`` (1e-3), at most ``gamma_dt / gamma`` and ``drift_dt`` times ``drift``.

    A caller with coarser needs (the SDE tuner) passes its own shares.

    Args:
        gamma: The discount rate.
        drift: The drift's time scale (:func:`drift_time`; inf: no drift).
        base: The largest step.
        gamma_dt: The step's share of the discount time scale ``1/gamma`` (a thousandth).
        drift_dt: The step's share of the drift's time scale.

    Returns:
        The step.
    """
    return min(base, gamma_dt / gamma, drift_dt * drift)


def check_resolution(dt: float, gamma: float, default: float | None = None, key: str = "dt",
                     drift: float = math.inf) -> None:
    """Refuse a step that does not resolve the discount time scale or the drift's length scale.

    Unless ``gamma dt <= MAX_GAMMA_DT`` and ``dt <= MAX_DRIFT_DT drift`` (see the measurements above).

    Args:
        dt: The step.
        gamma: The discount rate.
        default: The caller's default step, which the message suggests (:func:`default_dt` when None).
        key: The name the error gives.
        drift: :func:`drift_time` of the coefficients (inf: no drift).

    Raises:
        InputError: Naming ``key``: a step too coarse for gamma or for the drift.
    """
    default = default_dt(gamma, drift) if default is None else default
    if gamma * dt > MAX_GAMMA_DT:
        raise InputError(key, f"dt = {dt:.3g} is too coarse for the discount rate gamma = {gamma:.3g}: "
                              f"gamma dt = {gamma * dt:.3g} exceeds {MAX_GAMMA_DT:g} (the step must resolve the "
                              f"discount time scale 1/gamma, or V_hat is biased); use dt <= "
                              f"{MAX_GAMMA_DT / gamma:.3g} or the default {default:.3g}")
    if dt > MAX_DRIFT_DT * drift:
        raise InputError(key, f"dt = {dt:.3g} is too coarse for the drift: b^2 dt / sigma^2 = {dt / drift:.3g} exceeds "
                              f"{MAX_DRIFT_DT:g} (a step's drift |b| dt must be small against the diffusion's length "
                              f"scale sigma^2 / |b|, or V_hat is biased); use dt <= {MAX_DRIFT_DT * drift:.3g} or the "
                              f"default {default:.3g}")


def _check_start(z0: float) -> None:
    if not (isinstance(z0, (int, float, np.floating)) and math.isfinite(z0) and 0 <= z0 <= 1e30):
        raise InputError("z0", f"must be a number in [0, 1e30], got {z0!r}")


@timed
def discounted_cost(params: Piecewise, gamma: float, z0: float = 0.0, dt: float | None = None,
                    truncation: SdeTruncation = SdeTruncation(), paths: int = 20000, seed: int = 0,
                    scheme_name: str = DEFAULT_SCHEME, batching: Batching = Batching(),
                    outputs: SdeOutputs = SdeOutputs()) -> SimResult:
    """``E int_0^inf exp(-gamma t) Z_t dt`` for the reflected SDE with piecewise-constant coefficients.

    Args:
        params: The coefficients (``jaxq.sde.coefficients.piecewise`` / ``wcp``).
        gamma: The discount rate.
        z0: The start.
        dt: The step (default :func:`default_dt` of gamma and :func:`drift_time`; refused when
            ``gamma dt > MAX_GAMMA_DT`` or ``b^2 dt / sigma^2 > MAX_DRIFT_DT``).
        truncation: The truncation time T (:class:`SdeTruncation`), run as exactly ``ceil(T / dt)`` steps (default:
            the truncation bound at most ``rel_tol`` times ``scale``, the size of the value: the exact value when
            known, else the cost of the slowest-decaying mode ``z0/gamma + s_max^2 / gamma^2`` order).
        paths: The number of Monte Carlo paths.
        seed: The random seed.
        scheme_name: One of ``SCHEMES``.
        batching: First path, paths per compiled call, devices, progress (:class:`~jaxq.mc.replications.Batching`).
        outputs: ``cv``: subtract the Ito-sum control ``sum exp(-gamma t) sigma V' dB`` of the policy's own value
            function V (at most one switching level; cross-fitted by path index, :func:`jaxq.stats.controlled_mean`);
            ``observers``: statistics of the path (:class:`SdeOutputs`).

    Returns:
        A :class:`~jaxq.mc.result.SimResult` with primary estimate ``V_hat`` (a :class:`TruncatedEstimate`: its
            ``ci95`` adds the truncation bound on the upper side), per-path ``samples["V"]`` and
            ``info`` with ``horizon``, ``truncation_bound``, ``steps``, ``dt``, ``scheme``, ``z0``,
            ``path_steps_per_s``; ``events`` counts path-steps.

    Raises:
        InputError: Naming the argument: a start, path count, discount rate, step or horizon out of range, a step
            that does not resolve gamma or the drift (:func:`check_resolution`), or a job too large.
    """
    _check_start(z0)
    if not (isinstance(paths, (int, np.integer)) and paths >= 2):
        raise InputError("paths", f"need at least 2 paths for a standard error, got {paths!r}")
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
        raise InputError("gamma", f"must be a positive number, got {gamma!r}")
    drift = drift_time(params)
    drift_bound = dt is None and default_dt(gamma, drift) < default_dt(gamma)  # the drift sets the default step
    if dt is None:
        dt = default_dt(gamma, drift)
    if not (isinstance(dt, (int, float, np.floating)) and math.isfinite(dt) and dt > 0):
        raise InputError("dt", f"must be a positive number, got {dt!r}")
    check_resolution(dt, gamma, drift=drift)
    horizon, rel_tol, scale = truncation
    if horizon is not None:
        check_step(dt, horizon)
    b_max = float(np.max(np.abs(np.asarray(params.b))))
    s_max = float(np.max(np.asarray(params.s)))
    if horizon is None:
        if scale is None:  # an a-priori size of V: the larger of the start's and a diffusion length's cost
            scale = max(z0 / gamma, max(s_max * s_max, 1e-300) / max(b_max * gamma + s_max * math.sqrt(gamma), 1e-300))
        horizon = default_horizon(z0, b_max, s_max, gamma, rel_tol * scale)
    from jaxq.model.validate import check_work, sde_steps_per_path

    try:
        check_work("horizon", paths, sde_steps_per_path(horizon, dt), unit="steps", reps_key="paths")
    except InputError as e:
        if not (drift_bound and e.key == "horizon"):
            raise
        raise InputError("dt", f"the default step {dt:.3g} = {DEFAULT_DRIFT_DT:g} sigma^2 / b^2 (a step must resolve "
                               f"the drift's length scale sigma^2 / |b|) makes the job too large for the horizon "
                               f"{horizon:.3g}: {e.reason}") from None
    batching = batching.checked()
    observers = check_observers(outputs.observers)
    value = value_of(params, gamma) if outputs.cv else None
    r = simulate(scheme(scheme_name), params, z0, gamma, TimeGrid(dt, horizon), paths, seed, batching=batching,
                 record=Record(value=value, observers=observers))
    cost = r["cost"]
    work = paths * r["steps"]
    run_s = max(r["wall_s"] - r["compile_s"], 1e-9)
    info = {"horizon": r["horizon"], "truncation_bound": truncation_bound(z0, b_max, s_max, gamma, r["horizon"]),
            "steps": r["steps"], "dt": dt, "scheme": scheme_name, "z0": z0, "path_steps_per_s": work / run_s}
    samples = {"V": cost}
    if value is not None:
        samples["controls"] = r["control"][:, None]
    index = batching.start + np.arange(paths)
    est = TruncatedEstimate.of_estimate(Estimate.with_controls(cost, samples.get("controls"), index),
                                        info["truncation_bound"])
    estimates = {"V_hat": est}
    if observers:
        add_observed(r["observed"], estimates, samples, info)
    res = SimResult("V_hat", estimates, paths, work, r["wall_s"], r["compile_s"], scheme_name, samples, info)
    bound, se = info["truncation_bound"], float(est.stderr)
    if truncation.horizon is None and bound > TRUNCATION_STDERR_SHARE * se > 0:  # a default horizon: run longer
        longer = default_horizon(z0, b_max, s_max, gamma, 0.5 * TRUNCATION_STDERR_SHARE * se)
        if longer > r["horizon"]:
            again = discounted_cost(params, gamma, z0, dt, SdeTruncation(horizon=longer), paths, seed, scheme_name,
                                    batching, outputs)
            return with_work_of(again, res, truncation_reruns=1)
    return dataclasses.replace(res, warnings=truncation_warnings(bound, se, r["horizon"]))


TRUNCATION_STDERR_SHARE = 0.1  # a truncation bound above this share of the standard error is said


def truncation_warnings(bound: float, stderr: float, horizon: float) -> tuple[str, ...]:
    """A note when the bound on the tail left out beyond the horizon exceeds a tenth of the standard error.

    The estimate may be low by up to the bound; ``ci95`` is widened by it.

    Args:
        bound: The truncation bound.
        stderr: The estimate's standard error.
        horizon: The truncation time T.

    Returns:
        The warnings (empty or one).
    """
    if not bound > TRUNCATION_STDERR_SHARE * stderr:
        return ()
    size = f"{bound / stderr:.3g} standard errors" if stderr > 0 else "above a standard error of 0"
    return (f"the truncation bound {bound:.3g} on the tail beyond the horizon {horizon:.4g} is {size}: the estimate "
            "may be low by up to that much (ci95 is widened by it; a longer horizon shrinks it)",)


def value_of(params: Piecewise, gamma: float):
    """The value function of piecewise-constant coefficients with at most one jump (the WCP's (2.25)).

    Args:
        params: The coefficients.
        gamma: The discount rate.

    Returns:
        (jaxq.diffusion.value.ValueFunction): The value function (:func:`jaxq.diffusion.value.value_function`).

    Raises:
        InputError: Naming ``cv``: more than one jump level.
    """
    levels, b, s = (np.asarray(a, dtype=float) for a in params)
    if levels.size > 1:
        raise InputError("cv", "the control variate needs at most one switching level")
    if levels.size == 0:
        return value_function(b[0], s[0], b[0], s[0], gamma, math.inf)
    return value_function(b[0], s[0], b[1], s[1], gamma, float(levels[0]))


def wcp_coefficients(analysis, switch_at: float | None = None) -> tuple[Piecewise, float | None]:
    """Coefficients (2.25) of a 2x2 system's WCP under switching at ``switch_at``.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        switch_at: The switching level z (default z*; single case: none).

    Returns:
        ``(coefficients, z)``: z None without switching.

    Raises:
        InputError: Naming ``switch_at``: not a finite number >= 0, or given for a single-mode system.
    """
    bL, sL, bH, sH = analysis.mode_coefficients()
    if switch_at is not None and not (math.isfinite(switch_at) and switch_at >= 0):
        raise InputError("switch_at", "must be a finite number >= 0")
    if switch_at is not None and analysis.z_star is None:
        raise InputError("switch_at", f"the system is single-mode (policy {analysis.policy}): its workload never "
                                      "switches modes; leave switch_at out")
    z = analysis.z_star if switch_at is None else switch_at
    if z is None:  # single-mode case: the active mode throughout
        return wcp(bH, sH, bH, sH, None), None
    return wcp(bL, sL, bH, sH, z), float(z)


def wcp_value(analysis, z0: float = 0.0, switch_at: float | None = None, **kw) -> SimResult:
    """Monte Carlo V_WCP(z0) (workload units) of a 2x2 system and the exact ODE value for the same switching point.

    Args:
        analysis (jaxq.diffusion.workload.Analysis): The system's analysis.
        z0: The start.
        switch_at: The switching level z (default z*; single case: none).
        **kw (typing.Any): The arguments of :func:`discounted_cost` after ``z0``; the truncation's ``scale``
            defaults to the exact value.

    Returns:
        The :class:`SimResult` of ``discounted_cost`` with ``V_exact`` and ``switch_at`` (None: no switching) in its
            ``info``.
    """
    _check_start(z0)
    params, z = wcp_coefficients(analysis, switch_at)
    exact = analysis.wcp_cost(z0, switch_at)
    truncation = kw.get("truncation", SdeTruncation())
    if truncation.scale is None:
        kw["truncation"] = truncation._replace(scale=exact)
    out = discounted_cost(params, analysis.system.gamma, z0, **kw)
    out.info.update(V_exact=exact, switch_at=z)
    return out


def terminal_values(params, z0: float, times, dt: float = 1e-3, paths: int = 10000, seed: int = 0,
                    scheme_name: str = DEFAULT_SCHEME, gamma: float = 1.0) -> np.ndarray:
    """Z(t) at fixed times for each path.

    Times are rounded to the nearest multiple of dt. ``scheme_name`` "euler"/"exact" also accept any
    coefficient pytree with ``jaxq.sde.euler.make(coef)`` / ``exact_step.make(coef)`` via
    ``jaxq.sde.driver.simulate``; here the coefficients are piecewise constant.

    Args:
        params (jaxq.sde.coefficients.Piecewise): The coefficients.
        z0: The start.
        times (array_like): The times, finite and >= 0.
        dt: The step.
        paths: The number of paths.
        seed: The random seed.
        scheme_name: One of ``SCHEMES``.
        gamma: The discount rate of the run (its cost is not returned).

    Returns:
        An array (paths, len(times)).

    Raises:
        InputError: Naming ``z0`` or ``times``: out of range.
    """
    _check_start(z0)
    times = np.atleast_1d(np.asarray(times, float))
    if times.size == 0 or np.any(times < 0) or not np.all(np.isfinite(times)):
        raise InputError("times", "need finite times >= 0")
    horizon = max(float(times.max()), dt)
    return simulate(scheme(scheme_name), params, z0, gamma, TimeGrid(dt, horizon), paths, seed,
                    record=Record(times=times))["snaps"]


def stationary_check(params: Piecewise, dt: float = 1e-2, paths: int = 20000, seed: int = 0, time_t: float = 20.0,
                     scheme_name: str = DEFAULT_SCHEME, level: float = 1e-3) -> dict:
    """KS distance between Z(time_t) over independent paths (started at 0) and the exact stationary law.

    ``time_t`` should be several relaxation times (the law of Z(t) approaches the stationary law
    geometrically). The threshold is the (1 - level) quantile of the Kolmogorov law for ``paths``
    independent samples.

    Args:
        params: The coefficients.
        dt: The step.
        paths: The number of paths.
        seed: The random seed.
        time_t: The time t.
        scheme_name: One of ``SCHEMES``.
        level: The test's level.

    Returns:
        dict with ``ks``, ``threshold``, ``passed``, ``mean`` (with ``mean_stderr``), the exact stationary mean
            ``mean_exact`` and the ``samples`` Z(time_t).
    """
    levels, b, s = (np.asarray(a) for a in params)
    z = terminal_values(params, 0.0, [time_t], dt, paths, seed, scheme_name)[:, 0]
    ks = stationary.ks_distance(z, levels, b, s)
    thr = stationary.ks_threshold(paths, level)
    return {
        "ks": ks,
        "threshold": thr,
        "passed": bool(ks <= thr),
        "mean": float(z.mean()),
        "mean_stderr": float(z.std(ddof=1) / math.sqrt(paths)),
        "mean_exact": stationary.stationary_mean(levels, b, s),
        "samples": z,
    }
