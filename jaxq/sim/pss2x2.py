"""Event-driven simulation of the n-th 2x2 system (seed 000) under the policies of Definitions 2.7-2.10.

Renewal primitives (2.1): class-i interarrival times ``a/lambda_n_i`` and activity-(i,k) service times
``u/mu_n_ik`` with a and u of mean 1 and the configured SCV (:mod:`jaxq.sim.sampling`). The system
starts empty; the first class-i arrival comes after one full interarrival time.

State of one replication (a pytree, see :func:`_init`): the time ``t`` and ``exp(-gamma t)``; jobs in
the system per class ``x``; the class each server serves (``serving``, -1 idle); the absolute time of
the next arrival of each class ``ta`` and of the next completion of each server ``tc`` (inf when idle);
the current mode; the running discounted cost; counters and path recorders. One step is one event:
the smallest clock fires, the cost ``exp(-gamma s) h.x/sqrt(n)`` is integrated exactly over the
elapsed interval, the event updates ``x``, the current mode is resampled at the policy's sampling
times (Definition 2.10), available servers admit jobs (Definition 2.7) and fresh interarrival / service
times are drawn (at most two per event). Service is non-preemptive.

Cost (2.6) truncated at the horizon T: ``J_T = int_0^T exp(-gamma t) h.X_hat(t) dt``. The neglected
tail is bounded rigorously, per replication and given the state at T, by

    E[int_T^inf exp(-gamma t) h.X_hat(t) dt | F_T]
        <= exp(-gamma T)/sqrt(n) sum_i h_i ((X_i(T) + 1 + ca2_i)/gamma + lambda_n_i/gamma^2),

because ``X_i(T+s) <= X_i(T) + A_i(T, T+s]`` and the arrivals in (T, T+s] are at most one (the
residual) plus the renewals of an undelayed renewal process, whose mean is at most
``lambda_n_i s + ca2_i`` (Lorden's inequality). The reported ``truncation_bound`` is the mean of this
bound over replications.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache, partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.workload import Analysis, analyze
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.policies import pss2x2 as pol
from jaxq.sim import sampling
from jaxq.sim.engine import Engine, compile_engine, simulate

DEFAULT_THETA_EXPONENT = 5.0 / 12.0  # midpoint of (2.28)'s interval (1/3, 1/2) when all moments are finite
POLICY_CHOICES = ("auto",) + tuple(pol.POLICIES) + tuple(pol.FIXED)

# Debug counters (Definition 2.7 invariants), in this order.
VIOLATIONS = (
    "prioritising_server_idle_with_waiting_job",  # 2.7.2: the dual-activity server idles while a job waits
    "dedicated_server_idle_with_its_class_waiting",  # 2.7.1
    "dedicated_server_started_other_class",  # 2.7.1
    "priority_not_respected",  # 2.7.2 / 2.8: started the other class while the prioritised one waits
    "preempted_or_inconsistent",  # a busy server changed job without completing, or a queue < 0
    "more_than_two_draws",  # the two-slot sampler would have been insufficient
)


def service_stream(i, k):
    """Stream index of activity (i, k) in the sampler's list (0, 1 are the interarrival streams)."""
    return 2 + 2 * i + k


# ------------------------------------------------------------------------------------------- engine
def _init(key, p, spec, perturb=False):
    f64 = jnp.float64
    v = sampling.sample(jax.random.fold_in(key, 0), spec, p["table"], jnp.arange(2))
    m = p["t_rec"].shape[0]
    level = p["level"]
    extra = {}
    if perturb:  # this replication's policy parameters (see perturbed_parameters)
        level, theta, eps = perturbed_parameters(key, p)
        extra = {"level": level, "theta": theta, "eps": eps}
    mode0 = jnp.where(0.0 < level, p["lower"], p["higher"]).astype(jnp.int32)
    return extra | {
        "key": key,
        "step": jnp.zeros((), jnp.uint32),
        "t": jnp.zeros((), f64),
        "disc": jnp.ones((), f64),
        "x": jnp.zeros(2, jnp.int32),
        "serving": jnp.full(2, pol.IDLE, jnp.int32),
        "ta": v * p["inv_lam"],
        "tc": jnp.full(2, jnp.inf, f64),
        "mode": mode0,
        "cost": jnp.zeros((), f64),
        "events": jnp.zeros((), jnp.int64),
        "switches": jnp.zeros((), jnp.int32),
        "w_rec": jnp.zeros(m, f64),
        "x_T": jnp.zeros(2, jnp.int32),
        "sup_x": jnp.zeros(2, jnp.int32),
        "viol": jnp.zeros(len(VIOLATIONS), jnp.int32),
    }


def _done(s, p):
    return s["t"] >= p["horizon"]


def _step(s, p, spec, debug, perturb=False):
    ks = jnp.arange(2)
    x, serving, mode = s["x"], s["serving"], s["mode"]
    clocks = jnp.concatenate([s["ta"], s["tc"]])
    e = jnp.argmin(clocks)
    t0, t1 = s["t"], clocks[e]
    horizon = p["horizon"]

    # Exact discounted cost over [t0, min(t1, T)]: the state is constant there.
    tt = jnp.minimum(t1, horizon)
    disc1 = jnp.exp(-p["gamma"] * tt)
    xf = x.astype(jnp.float64)
    cost = s["cost"] + jnp.dot(p["h_hat"], xf) * (s["disc"] - disc1) / p["gamma"]
    # Path recorders: W_hat at fixed times and X at the horizon (state on [t0, t1)).
    w_hat = jnp.dot(p["alpha_inv"], xf) * p["inv_sqrt_n"]
    in_rec = (p["t_rec"] >= t0) & (p["t_rec"] < t1)
    w_rec = jnp.where(in_rec, w_hat, s["w_rec"])
    x_T = jnp.where((horizon >= t0) & (horizon < t1), x, s["x_T"])

    # The event.
    is_arr = e < 2
    cls_arr = jnp.where(is_arr, e, 0)
    k_done = jnp.where(is_arr, 0, e - 2)
    c_done = serving[k_done]
    x = x + jnp.where(is_arr, (ks == cls_arr).astype(jnp.int32), -(ks == c_done).astype(jnp.int32))
    completed = jnp.logical_not(is_arr) & (ks == k_done)
    serving_before = jnp.where(completed, pol.IDLE, serving)

    # Definition 2.10: resample the current mode.
    workload = jnp.dot(p["alpha_inv"], x.astype(jnp.float64))
    mode = pol.sample_mode(
        mode, p["sampling"], is_arr, k_done, p["k1"], workload, s["level"] if perturb else p["level"], p["lower"], p["higher"]
    ).astype(jnp.int32)
    switched = (mode != s["mode"]) & (t1 <= horizon)
    i1, i2, k1 = p["i1"][mode], p["i2"][mode], p["k1"][mode]
    prio = pol.priority_class(p["rule"][mode], x, i1, i2, s["theta"] if perturb else p["theta"])
    serving, started = pol.dispatch(x, serving_before, k1, i2, prio)

    # Fresh clocks: at most two draws (the arrival's next interarrival and/or up to two starts).
    st0 = started[0]
    svc = service_stream(jnp.maximum(serving, 0), ks)
    slot0 = jnp.where(is_arr, cls_arr, jnp.where(st0, svc[0], svc[1]))
    slot1 = jnp.where(is_arr & st0, svc[0], svc[1])
    v = sampling.sample(jax.random.fold_in(s["key"], s["step"] + 1), spec, p["table"], jnp.stack([slot0, slot1]))
    v_arr = v[0]
    v_srv = jnp.stack([jnp.where(is_arr, v[1], v[0]), jnp.where(is_arr | st0, v[1], v[0])])
    ta = jnp.where(is_arr & (ks == cls_arr), t1 + v_arr * p["inv_lam"], s["ta"])
    inv_mu = p["inv_mu"][jnp.maximum(serving, 0), ks]
    tc = jnp.where(started, t1 + v_srv * inv_mu, jnp.where(completed, jnp.inf, s["tc"]))

    real = t1 <= horizon
    out = dict(
        s,
        step=s["step"] + 1,
        t=t1,
        disc=disc1,
        x=x,
        serving=serving,
        ta=ta,
        tc=tc,
        mode=mode,
        cost=cost,
        events=s["events"] + real.astype(jnp.int64),
        switches=s["switches"] + switched.astype(jnp.int32),
        w_rec=w_rec,
        x_T=x_T,
        sup_x=jnp.where(real, jnp.maximum(s["sup_x"], x), s["sup_x"]),
    )
    if debug:
        out["viol"] = s["viol"] + _violations(x, serving_before, serving, started, k1, i2, prio, is_arr).astype(
            jnp.int32
        )
    return out


def _violations(x, before, after, started, k1, i2, prio, is_arr):
    """Invariants of Definition 2.7 checked on the post-decision state (debug engines only)."""
    q = pol.queues(x, after)
    q_before = pol.queues(x, before)
    k2 = 1 - k1
    idle = after == pol.IDLE
    v0 = idle[k2] & (jnp.sum(q) > 0)
    v1 = idle[k1] & (q[i2] > 0)
    v2 = started[k1] & (after[k1] != i2)
    v3 = started[k2] & (after[k2] != prio) & (q_before[prio] > 0)
    busy_changed = (before != pol.IDLE) & (after != before)
    v4 = jnp.any(busy_changed) | jnp.any(q < 0)
    v5 = (is_arr.astype(jnp.int32) + jnp.sum(started)) > 2
    return jnp.stack([v0, v1, v2, v3, v4, v5])


def perturbed_parameters(key, p):
    """Gaussian smoothing of the policy parameters, one draw per replication (for gradients).

    With ``eps ~ N(0, I_2)`` drawn from the replication's key, the replication runs the policy with
    switching level ``z + sign tau_z eps_1`` (scaled workload) and threshold
    ``ceil(c n^a_bar + sign tau_c n^a_bar eps_2)``. Two runs with ``sign = +1`` and ``-1`` and the
    same seed are antithetic and use common random numbers; ``(J+ - J-) eps / (2 tau)`` is then an
    unbiased estimate of the gradient of the smoothed cost ``E_eps J(theta + tau eps)`` in
    ``theta = (z, c)`` (the likelihood ratio of the Gaussian perturbation: its score is eps/tau).
    The smoothed cost tends to J as tau -> 0 and is differentiable even though J is not.

    Returns:
      ``(level, theta, eps)``: the unscaled switching level, the integer threshold and eps.
    """
    eps = jax.random.normal(jax.random.fold_in(key, 0xE95), (2,), dtype=jnp.float64)
    level = p["level"] + p["sign"] * p["tau_level"] * eps[0]
    theta = jnp.ceil(p["theta_real"] + p["sign"] * p["tau_theta"] * eps[1]).astype(jnp.int32)
    return level, jnp.maximum(theta, 0), eps


@lru_cache(maxsize=None)
def engine_for(spec: sampling.Spec, debug: bool = False, perturb: bool = False) -> Engine:
    """The (cached, hence hashable and compiled once) Engine for a static sampler spec.

    ``perturb``: per-replication Gaussian perturbation of z and c (:func:`perturbed_parameters`).
    """
    return Engine(
        partial(_init, spec=spec, perturb=perturb), partial(_step, spec=spec, debug=debug, perturb=perturb), _done
    )


# ------------------------------------------------------------------------------------ configuration
def theta_level(n: float, exponent: float, constant: float = 1.0) -> int:
    """Threshold Theta_n = ceil(c n^a_bar) ((2.29) has c = 1)."""
    return int(math.ceil(round(constant * n**exponent, 9)))


def resolve_policy(an: Analysis, policy: str, switch_at: float | None):
    """The modes, rules and switching level a policy name means for this system.

    Returns ``(name, rules, lower, higher, z)`` with 0-based modes and z the switching level in
    scaled workload units (``inf``: never switch). ``auto`` is the policy of Theorem 2.11. A
    single-mode policy (P, T2) on a dual-mode system uses the lower mode. A dual-mode policy on a
    single-mode system uses the active mode as the lower mode, the other mode as the higher one and
    switches at ``switch_at`` (default: never). ``RULE@m`` fixes the rule and mode m.
    """
    name = an.policy if policy == "auto" else policy
    if name in pol.FIXED:
        rule, m = pol.FIXED[name]
        return name, pol.PolicyRules(rule, rule, pol.SAMPLE_NEVER, False), m, m, math.inf
    if name not in pol.POLICIES:
        raise InputError("policy", f"unknown policy {policy!r}; choose one of {', '.join(POLICY_CHOICES)}")
    rules = pol.POLICIES[name]
    if an.case == "single":
        lo, hi, z = an.active, 1 - an.active, math.inf
    else:
        lo, hi, z = an.lower, an.higher, an.z_star
    if not rules.dual:
        return name, rules, lo, lo, math.inf
    if switch_at is not None:
        z = float(switch_at)
    return name, rules, lo, hi, z


def default_horizon(system: PSS2x2, n: float, rel_tol: float = 1e-4, scale: float = 1.0) -> float:
    """Horizon T at which the state-free part of the tail bound is ``rel_tol * scale``."""
    lam_n, _ = system.rates(n)
    g = system.gamma
    b = float(np.sum(system.h * (lam_n / g**2 + (1.0 + system.ca2) / g))) / math.sqrt(n)
    return max(1.0, math.log(b / (rel_tol * scale)) / g)


def build_params(
    system: PSS2x2,
    n: float,
    *,
    policy: str = "auto",
    theta_exponent: float = DEFAULT_THETA_EXPONENT,
    switch_at: float | None = None,
    horizon: float | None = None,
    record_times=(),
    analysis: Analysis | None = None,
    theta_constant: float = 1.0,
):
    """Parameters (pytree of arrays), sampler spec and a description of the policy actually used.

    The threshold is ``Theta_n = ceil(c n^a_bar)`` with ``c = theta_constant`` (c = 1 in (2.29)).
    """
    if not (isinstance(n, (int, float)) and n >= 1 and math.isfinite(n)):
        raise InputError("n", f"n must be a number >= 1, got {n!r}")
    if not (0.0 <= theta_exponent <= 1.0):
        raise InputError("theta_exponent", f"must lie in [0, 1] ((2.28) asks for (1/3, 1/2)), got {theta_exponent}")
    if switch_at is not None and not (math.isfinite(switch_at) and switch_at >= 0):
        raise InputError("switch_at", f"must be a finite level >= 0, got {switch_at}")
    an = analysis if analysis is not None else analyze(system)
    name, rules, lo, hi, z = resolve_policy(an, policy, switch_at)
    lam_n, mu_n = system.rates(n)
    if horizon is None:
        horizon = default_horizon(system, n, scale=an.V0)
    if not (math.isfinite(horizon) and horizon > 0):
        raise InputError("horizon", f"must be a positive number, got {horizon}")
    expected_events = 2.0 * float(np.sum(lam_n)) * horizon
    if expected_events > 2.0**31:  # the per-event key counter is 32-bit
        raise InputError("n", f"about {expected_events:.3g} events per replication exceed the 2^31 supported")
    rec = np.asarray(record_times, dtype=np.float64).reshape(-1)
    if np.any(rec < 0) or np.any(rec > horizon):
        raise InputError("record_times", f"must lie in [0, horizon = {horizon:g}]")
    if not (theta_constant > 0 and math.isfinite(theta_constant)):
        raise InputError("theta_constant", f"must be a positive number, got {theta_constant}")
    theta = theta_level(n, theta_exponent, theta_constant) if pol.uses_threshold(rules) else None
    md = an.modes
    rule = np.zeros(2, np.int32)
    rule[lo] = rules.lower
    rule[hi] = rules.higher
    dists = list(system.interarrival) + [system.service[i][k] for i in range(2) for k in range(2)]
    spec = sampling.spec_of(dists)
    rn = math.sqrt(n)
    params = {
        "inv_lam": 1.0 / lam_n,
        "inv_mu": 1.0 / mu_n,
        "h_hat": system.h / rn,
        "inv_sqrt_n": np.float64(1.0 / rn),
        "gamma": np.float64(system.gamma),
        "horizon": np.float64(horizon),
        "alpha_inv": 1.0 / md.alpha,
        "level": np.float64(rn * z),
        "theta": np.int32(theta if theta is not None else 0),
        "i1": md.i1.astype(np.int32),
        "i2": md.i2.astype(np.int32),
        "k1": md.k1.astype(np.int32),
        "rule": rule,
        "lower": np.int32(lo),
        "higher": np.int32(hi),
        "sampling": np.int32(rules.sampling),
        "t_rec": rec,
        "table": sampling.param_table(dists),
    }
    params = jax.tree_util.tree_map(jnp.asarray, params)
    info = {
        "policy": name,
        "theta": theta,
        "switch_at": None if not rules.dual or math.isinf(z) else z,
        "modes_used": sorted({lo + 1, hi + 1}),
        "horizon": float(horizon),
    }
    return params, spec, info, an


def tail_bound(system: PSS2x2, n: float, horizon: float, x_T: np.ndarray) -> np.ndarray:
    """Per-replication bound on the cost neglected after the horizon (module docstring)."""
    lam_n, _ = system.rates(n)
    g = system.gamma
    per = (x_T + 1.0 + system.ca2) / g + lam_n / g**2
    return math.exp(-g * horizon) * (per @ system.h) / math.sqrt(n)


# -------------------------------------------------------------------------------------------- API

def simulate_cost(
    system: PSS2x2,
    n: float,
    reps: int,
    *,
    policy: str = "auto",
    seed: int = 0,
    horizon: float | None = None,
    theta_exponent: float = DEFAULT_THETA_EXPONENT,
    switch_at: float | None = None,
    record_times=(),
    chunk: int | None = None,
    block: int = 128,
    debug: bool = False,
    progress: Callable[[int], None] | None = None,
    analysis: Analysis | None = None,
    theta_constant: float = 1.0,
    perturb: tuple[float, float, float] | None = None,
) -> dict:
    """Monte Carlo estimate of the discounted cost J_n (2.6) of the n-th system under a policy.

    Args:
      system: the 2x2 system; n: the index of the system (rates n lambda + sqrt(n) lambda_hat, ...).
      reps: number of independent replications (each starts empty).
      policy: ``auto`` (Theorem 2.11), one of P, T2, PP, T2T2, T1T2, T2T1, or a fixed-mode rule
        ``P@1``, ``T2@2``, ... (see :func:`resolve_policy`).
      seed: replication r uses ``fold_in(PRNGKey(seed), r)``: results do not depend on ``chunk``.
      horizon: truncation time T (default: tail bound about 1e-4 V0).
      theta_exponent: a_bar of (2.28)-(2.29); switch_at: forced switching level z (scaled workload).
      record_times: fixed times at which W_hat(t) is recorded per replication.
      chunk, block: replications per compiled call, events per scan block.
      debug: accumulate the Definition 2.7 invariant counters (``violations``).
      progress: called with the number of replications finished after each chunk.
      theta_constant: c in Theta_n = ceil(c n^a_bar) (default 1, the paper's (2.29)).
      perturb: ``(sign, tau_z, tau_c)``: run every replication with Gaussian-perturbed z and c
        (:func:`perturbed_parameters`); the result then has the per-replication ``eps`` (reps, 2).

    Returns:
      dict with ``J_hat``, ``stderr``, ``ci95``, ``V0``, ``theta``, ``horizon``, ``truncation_bound``,
      ``events``, ``wall_s`` (compilation included), ``compile_s``, ``events_per_s`` (compilation
      excluded) and per-replication arrays ``J`` (reps,),
      ``W_hat_t`` (reps, len(record_times)), ``sup_X_hat`` (reps, 2: sup over [0, T] of each class's
      X_hat; the HPC is ``hpc``, 0-based), ``X_hat_T`` (reps, 2), ``switches`` (reps,) mode changes,
      and ``violations`` (dict of totals) when ``debug``.
    """
    if not (isinstance(reps, (int, np.integer)) and reps >= 1):
        raise InputError("reps", f"need at least 1 replication, got {reps!r}")
    params, spec, info, an = build_params(
        system,
        n,
        policy=policy,
        theta_exponent=theta_exponent,
        switch_at=switch_at,
        horizon=horizon,
        record_times=record_times,
        analysis=analysis,
        theta_constant=theta_constant,
    )
    if perturb is not None:
        sign, tau_z, tau_c = perturb
        if not (tau_z >= 0 and tau_c >= 0 and sign in (1, -1)):
            raise InputError("perturb", f"need sign +-1 and tau >= 0, got {perturb}")
        scale = float(n) ** theta_exponent
        params = dict(params, sign=jnp.float64(sign), tau_level=jnp.float64(tau_z * math.sqrt(n)),
                      theta_real=jnp.float64(theta_constant * scale), tau_theta=jnp.float64(tau_c * scale))
    eng = engine_for(spec, bool(debug), perturb is not None)
    t_start = time.perf_counter()
    compile_s = compile_engine(eng, params, int(reps), chunk, block)
    out = simulate(eng, params, int(reps), seed, chunk=chunk, block=block, progress=progress)
    wall = time.perf_counter() - t_start
    run_s = max(wall - compile_s, 1e-9)
    J = np.asarray(out["cost"])
    mean = float(J.mean())
    se = float(J.std(ddof=1) / math.sqrt(reps)) if reps > 1 else math.nan  # no stderr from one replication
    events = int(np.sum(out["events"]))
    bound = tail_bound(system, n, info["horizon"], np.asarray(out["x_T"], dtype=np.float64))
    rn = math.sqrt(n)
    res = {
        "n": n,
        "reps": int(reps),
        "policy": info["policy"],
        "theta": info["theta"],
        "switch_at": info["switch_at"],
        "modes_used": info["modes_used"],
        "J_hat": mean,
        "stderr": se,
        "ci95": [mean - 1.96 * se, mean + 1.96 * se],
        "V0": an.V0,
        "horizon": info["horizon"],
        "truncation_bound": float(bound.mean()),
        "events": events,
        "wall_s": wall,
        "compile_s": compile_s,
        "events_per_s": events / run_s,
        "J": J,
        "W_hat_t": np.asarray(out["w_rec"]),
        "sup_X_hat": np.asarray(out["sup_x"]) / rn,
        "X_hat_T": np.asarray(out["x_T"]) / rn,
        "switches": np.asarray(out["switches"]),
        "hpc": an.p,
    }
    if perturb is not None:
        res["eps"] = np.asarray(out["eps"])
    if debug:
        res["violations"] = dict(zip(VIOLATIONS, np.asarray(out["viol"]).sum(axis=0).tolist()))
    return res
