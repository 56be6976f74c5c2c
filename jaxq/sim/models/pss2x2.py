"""The n-th 2x2 parallel server system of seed 000: typed parameters and state, and its two statements.

Renewal primitives (2.1): class-i interarrival times ``a/lambda_n_i`` and activity-(i,k) service times
``u/mu_n_ik`` with a and u of mean 1 and the configured SCV (:mod:`jaxq.sim.sampling`). The system starts
empty; the first class-i arrival comes after one full interarrival time. Service is non-preemptive and the
servers follow the policy of :mod:`jaxq.policies.pss2x2` (Definitions 2.7-2.10).

Two statements of the same system, for the two drivers:

* :func:`engine`, the event rule for any renewal primitives (:mod:`jaxq.sim.event`). State: the time and
  ``exp(-gamma t)``, jobs per class ``x``, the class each server serves (-1 idle), the absolute times of
  the next arrival of each class and the next completion of each server, the current mode, the running
  discounted cost, counters and path recorders. One step is one event: the smallest clock fires, the
  cost ``exp(-gamma s) h.x/sqrt(n)`` is integrated exactly over the elapsed interval, the event updates
  x, the policy decides, and fresh interarrival / service times are drawn (at most two per event).
* :data:`MARKOV`, the CTMC of exponential primitives (:mod:`jaxq.sim.markov`): events are the arrivals
  of each class and the completion of a class-c job at server k (multiplicity 1 when server k serves c);
  a self-loop of the uniformised chain is not an event (it neither samples the mode nor dispatches).

Control variates (issue 14): with V the value function of the policy's diffusion limit
(:mod:`jaxq.diffusion.value`), every unit-mean variate v drawn at time t for class i contributes
``exp(-gamma t) V'(W_hat(t)) (v - 1) s / (alpha_i sqrt(n))`` to the control of its stream, ``s = -1`` for an
interarrival (a longer one removes arrivals) and ``+1`` for a service (a longer one removes departures):
the weight is known when v is drawn and E[v - 1] = 0, so each control has mean exactly zero. The CTMC states the
same idea as one approximating martingale per event (:data:`MARKOV_CV`).

Cost (2.6) truncated at the horizon T: ``J_T = int_0^T exp(-gamma t) h.X_hat(t) dt``. The neglected tail
is bounded rigorously, per replication and given the state at T, by (:func:`tail_bound`)

    E[int_T^inf exp(-gamma t) h.X_hat(t) dt | F_T]
        <= exp(-gamma T)/sqrt(n) sum_i h_i ((X_i(T) + 1 + ca2_i)/gamma + lambda_n_i/gamma^2),

because ``X_i(T+s) <= X_i(T) + A_i(T, T+s]`` and the arrivals in (T, T+s] are at most one (the residual)
plus the renewals of an undelayed renewal process, whose mean is at most ``lambda_n_i s + ca2_i``
(Lorden's inequality).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.value import ValueFunction, marginal
from jaxq.policies import pss2x2 as pol
from jaxq.sim import sampling
from jaxq.sim.event import Engine
from jaxq.sim.markov import Markov

# Debug counters (Definition 2.7 invariants), in this order.
VIOLATIONS = (
    "prioritising_server_idle_with_waiting_job",  # 2.7.2: the dual-activity server idles while a job waits
    "dedicated_server_idle_with_its_class_waiting",  # 2.7.1
    "dedicated_server_started_other_class",  # 2.7.1
    "priority_not_respected",  # 2.7.2 / 2.8: started the other class while the prioritised one waits
    "preempted_or_inconsistent",  # a busy server changed job without completing, or a queue < 0
    "more_than_two_draws",  # the two-slot sampler would have been insufficient
)


class Perturb(NamedTuple):
    """Gaussian smoothing of the policy's parameters for gradients (see :func:`perturbed_parameters`)."""

    sign: jnp.ndarray  # +1 or -1 (antithetic pair)
    tau_level: jnp.ndarray  # scale of the perturbation of the level (unscaled workload units)
    theta_real: jnp.ndarray  # c n^a_bar, the unrounded threshold
    tau_theta: jnp.ndarray  # scale of the perturbation of the threshold


class Params(NamedTuple):
    """Traced parameters of the n-th system under a policy."""

    inv_lam: jnp.ndarray  # (2,) 1 / lambda_n_i
    inv_mu: jnp.ndarray  # (2, 2) 1 / mu_n_ik
    lam: jnp.ndarray  # (2,) lambda_n_i
    mu: jnp.ndarray  # (2, 2) mu_n_ik
    h_hat: jnp.ndarray  # (2,) h_i / sqrt(n)
    inv_sqrt_n: jnp.ndarray
    gamma: jnp.ndarray
    horizon: jnp.ndarray  # T (event rule)
    policy: pol.Policy
    t_rec: jnp.ndarray  # (m,) times at which W_hat(t) is recorded
    table: dict  # the samplers' per-stream parameters (sampling.param_table)
    perturb: Perturb | None = None
    value: ValueFunction | None = None  # V of the policy's diffusion limit (control variates)
    cv_scale: jnp.ndarray | None = None  # (6,) effect of a unit variate of each stream on W_hat: -+1/(alpha_i sqrt(n))


class State(NamedTuple):
    """One replication of the event rule."""

    key: jnp.ndarray
    step: jnp.ndarray  # uint32 event counter (the random stream's index)
    t: jnp.ndarray
    disc: jnp.ndarray  # exp(-gamma t)
    x: jnp.ndarray  # (2,) int32 jobs per class
    serving: jnp.ndarray  # (2,) int32 class served by each server, -1 idle
    ta: jnp.ndarray  # (2,) next arrival time of each class
    tc: jnp.ndarray  # (2,) next completion time of each server (inf when idle)
    mode: jnp.ndarray  # int32 current mode
    cost: jnp.ndarray  # discounted cost so far
    events: jnp.ndarray  # int64 real events (arrivals and completions before T)
    switches: jnp.ndarray  # int32 mode changes
    w_rec: jnp.ndarray  # (m,) W_hat at the record times
    x_T: jnp.ndarray  # (2,) X at the horizon
    sup_x: jnp.ndarray  # (2,) sup of X over [0, T]
    viol: jnp.ndarray  # (6,) Definition 2.7 violations (debug engines)
    level: jnp.ndarray  # this replication's switching level (perturbed runs), else the policy's
    theta: jnp.ndarray  # this replication's threshold
    eps: jnp.ndarray  # (2,) the Gaussian perturbation (zeros when not perturbed)
    cv: jnp.ndarray  # (CONTROLS,) control variates (zeros when not controlled)


# Control variates: per variate (renewal) or per event (CTMC) the features of its effect on the state.
CONTROLS = 11  # 6 per stream/event V'(W_hat) dW_hat, 2 linear in X_hat_i, 3 quadratic (X_hat_1^2, X_hat_2^2, X_hat_1 X_hat_2)
STREAM_JUMPS = jnp.array([[-1.0, 0.0, 1.0, 1.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0, 1.0, 1.0]])  # effect on X_i, (2, 6)


def features(xh, vw, d, onehot, exact: bool = False):
    """The controls' features of one random input: ``vw = V'(W_hat) dW_hat`` on the input's own control (``onehot``
    over the six streams/events), the jump ``d`` of X_hat (2,) for the linear controls ``g = X_hat_i``, and the
    change of ``X_hat_1^2``, ``X_hat_2^2``, ``X_hat_1 X_hat_2`` (first order, or ``exact`` differences)."""
    sq = (d * d) if exact else jnp.zeros(2)
    cross = d[0] * d[1] if exact else 0.0
    return jnp.concatenate([onehot * vw, d, 2.0 * xh * d + sq, jnp.stack([xh[0] * d[1] + xh[1] * d[0] + cross])])


def service_stream(i, k):
    """Stream index of activity (i, k) in the sampler's list (0, 1 are the interarrival streams)."""
    return 2 + 2 * i + k


def perturbed_parameters(key, p: Params):
    """Gaussian smoothing of the policy parameters, one draw per replication (for gradients).

    With ``eps ~ N(0, I_2)`` drawn from the replication's key, the replication runs the policy with
    switching level ``z + sign tau_z eps_1`` (scaled workload) and threshold
    ``ceil(c n^a_bar + sign tau_c n^a_bar eps_2)``. Two runs with ``sign = +1`` and ``-1`` and the same
    seed are antithetic and use common random numbers; ``(J+ - J-) eps / (2 tau)`` is then an unbiased
    estimate of the gradient of the smoothed cost ``E_eps J(theta + tau eps)`` in ``theta = (z, c)`` (the
    likelihood ratio of the Gaussian perturbation: its score is eps/tau).

    Returns:
      ``(level, theta, eps)``: the unscaled switching level, the integer threshold and eps.
    """
    q = p.perturb
    eps = jax.random.normal(jax.random.fold_in(key, 0xE95), (2,), dtype=jnp.float64)
    level = p.policy.level + q.sign * q.tau_level * eps[0]
    theta = jnp.ceil(q.theta_real + q.sign * q.tau_theta * eps[1]).astype(jnp.int32)
    return level, jnp.maximum(theta, 0), eps


def _init(key, p: Params, spec):
    f64 = jnp.float64
    v = sampling.sample(jax.random.fold_in(key, 0), spec, p.table, jnp.arange(2))
    if p.perturb is not None:
        level, theta, eps = perturbed_parameters(key, p)
    else:
        level, theta, eps = p.policy.level, p.policy.theta, jnp.zeros(2, f64)
    return State(
        key=key, step=jnp.zeros((), jnp.uint32), t=jnp.zeros((), f64), disc=jnp.ones((), f64),
        x=jnp.zeros(2, jnp.int32), serving=jnp.full(2, pol.IDLE, jnp.int32), ta=v * p.inv_lam,
        tc=jnp.full(2, jnp.inf, f64), mode=pol.initial_mode(p.policy, level), cost=jnp.zeros((), f64),
        events=jnp.zeros((), jnp.int64), switches=jnp.zeros((), jnp.int32), w_rec=jnp.zeros(p.t_rec.shape[0], f64),
        x_T=jnp.zeros(2, jnp.int32), sup_x=jnp.zeros(2, jnp.int32), viol=jnp.zeros(len(VIOLATIONS), jnp.int32),
        level=jnp.asarray(level, f64), theta=jnp.asarray(theta, jnp.int32), eps=eps, cv=jnp.zeros(CONTROLS, f64))


def _done(s: State, p: Params):
    return s.t >= p.horizon


def _step(s: State, p: Params, spec, debug, cv=False):
    ks = jnp.arange(2)
    x, serving = s.x, s.serving
    clocks = jnp.concatenate([s.ta, s.tc])
    e = jnp.argmin(clocks)
    t0, t1 = s.t, clocks[e]
    horizon = p.horizon

    # Exact discounted cost over [t0, min(t1, T)]: the state is constant there.
    tt = jnp.minimum(t1, horizon)
    disc1 = jnp.exp(-p.gamma * tt)
    xf = x.astype(jnp.float64)
    cost = s.cost + jnp.dot(p.h_hat, xf) * (s.disc - disc1) / p.gamma
    # Path recorders: W_hat at fixed times and X at the horizon (state on [t0, t1)).
    w_hat = jnp.dot(p.policy.alpha_inv, xf) * p.inv_sqrt_n
    in_rec = (p.t_rec >= t0) & (p.t_rec < t1)
    w_rec = jnp.where(in_rec, w_hat, s.w_rec)
    x_T = jnp.where((horizon >= t0) & (horizon < t1), x, s.x_T)

    # The event.
    is_arr = e < 2
    cls_arr = jnp.where(is_arr, e, 0)
    k_done = jnp.where(is_arr, 0, e - 2)
    c_done = serving[k_done]
    x = x + jnp.where(is_arr, (ks == cls_arr).astype(jnp.int32), -(ks == c_done).astype(jnp.int32))
    completed = jnp.logical_not(is_arr) & (ks == k_done)
    serving_before = jnp.where(completed, pol.IDLE, serving)
    mode, serving, started, prio = pol.decide(p.policy, x, serving_before, s.mode, is_arr, k_done, s.level, s.theta)
    switched = (mode != s.mode) & (t1 <= horizon)

    # Fresh clocks: at most two draws (the arrival's next interarrival and/or up to two starts).
    st0 = started[0]
    svc = service_stream(jnp.maximum(serving, 0), ks)
    slot0 = jnp.where(is_arr, cls_arr, jnp.where(st0, svc[0], svc[1]))
    slot1 = jnp.where(is_arr & st0, svc[0], svc[1])
    v = sampling.sample(jax.random.fold_in(s.key, s.step + 1), spec, p.table, jnp.stack([slot0, slot1]))
    v_arr = v[0]
    v_srv = jnp.stack([jnp.where(is_arr, v[1], v[0]), jnp.where(is_arr | st0, v[1], v[0])])
    ta = jnp.where(is_arr & (ks == cls_arr), t1 + v_arr * p.inv_lam, s.ta)
    inv_mu = p.inv_mu[jnp.maximum(serving, 0), ks]
    tc = jnp.where(started, t1 + v_srv * inv_mu, jnp.where(completed, jnp.inf, s.tc))

    real = t1 <= horizon
    acc = s.cv
    if cv:  # exp(-gamma t) (v - 1) times the features of the stream's effect, per variate v drawn at t
        xh = x.astype(jnp.float64) * p.inv_sqrt_n
        v_prime = marginal(p.value, jnp.dot(p.policy.alpha_inv, xh))
        any_start = started[0] | started[1]
        used0 = is_arr | any_start
        used1 = jnp.where(is_arr, any_start, st0 & started[1])
        streams = jnp.arange(6)
        for slot, used, val in ((slot0, used0, v[0]), (slot1, used1, v[1])):
            sel = streams == slot
            d_w = jnp.sum(jnp.where(sel, p.cv_scale, 0.0))  # jump of W_hat per unit of (v - 1)
            d = jnp.sum(jnp.where(sel[None, :], STREAM_JUMPS, 0.0), axis=1) * p.inv_sqrt_n  # jump of X_hat
            f = features(xh, v_prime * d_w, d, jnp.where(sel, 1.0, 0.0))
            acc = acc + jnp.where(used & real, disc1 * (val - 1.0), 0.0) * f
    viol = s.viol
    if debug:
        k1, i2 = pol.pick(p.policy.k1, mode), pol.pick(p.policy.i2, mode)
        viol = viol + _violations(x, serving_before, serving, started, k1, i2, prio, is_arr).astype(jnp.int32)
    return s._replace(
        step=s.step + 1, t=t1, disc=disc1, x=x, serving=serving, ta=ta, tc=tc, mode=mode, cost=cost,
        events=s.events + real.astype(jnp.int64), switches=s.switches + switched.astype(jnp.int32), w_rec=w_rec,
        x_T=x_T, sup_x=jnp.where(real, jnp.maximum(s.sup_x, x), s.sup_x), viol=viol, cv=acc)


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


def _output(s: State, p: Params):
    return {"cost": s.cost, "events": s.events, "switches": s.switches, "w_rec": s.w_rec, "x_T": s.x_T,
            "sup_x": s.sup_x, "viol": s.viol, "eps": s.eps, "cv": s.cv}


@lru_cache(maxsize=None)
def engine(spec: sampling.Spec, debug: bool = False, cv: bool = False) -> Engine:
    """The event rule for a static sampler spec (cached, hence hashable and compiled once).

    ``debug``: accumulate the Definition 2.7 invariant counters; ``cv``: the control variates (``Params.value``
    and ``Params.cv_scale`` must be set).
    """
    return Engine(lambda k, p: _init(k, p, spec), lambda s, p: _step(s, p, spec, debug, cv), _done, _output,
                  lambda s: s.events)


def tail_bound(lam_n, ca2, h, gamma: float, n: float, horizon: float, x_T: np.ndarray) -> np.ndarray:
    """Per-replication bound on the cost neglected after the horizon (module docstring)."""
    per = (np.asarray(x_T, np.float64) + 1.0 + np.asarray(ca2)) / gamma + np.asarray(lam_n) / gamma**2
    return math.exp(-gamma * horizon) * (per @ np.asarray(h)) / math.sqrt(n)


# ------------------------------------------------------------------------------ exponential primitives
class CtmcState(NamedTuple):
    """The CTMC's state as scalars (under vmap every operation then runs along the replications)."""

    x0: jnp.ndarray  # int32 jobs of class 1
    x1: jnp.ndarray  # int32 jobs of class 2
    s0: jnp.ndarray  # int32 class served by server 1 (-1 idle)
    s1: jnp.ndarray  # int32 class served by server 2
    mode: jnp.ndarray  # int32
    switches: jnp.ndarray  # int32


def _ctmc_init(p: Params):
    z, idle = jnp.int32(0), jnp.int32(pol.IDLE)
    return CtmcState(z, z, idle, idle, pol.initial_mode(p.policy), z)


def _ctmc_counts(s: CtmcState, p: Params):
    # arrivals of class 0, 1; completions of (class 0, server 0), (1, 0), (0, 1), (1, 1)
    i32 = jnp.int32
    return (1, 1, (s.s0 == 0).astype(i32), (s.s0 == 1).astype(i32), (s.s1 == 0).astype(i32),
            (s.s1 == 1).astype(i32))


def _ctmc_rates(p: Params):
    return jnp.stack([p.lam[0], p.lam[1], p.mu[0, 0], p.mu[1, 0], p.mu[0, 1], p.mu[1, 1]])


def _ctmc_bound(p: Params) -> float:
    """``Lambda = lambda_1 + lambda_2 + max_i mu_i1 + max_i mu_i2``: the largest total rate of any state."""
    mu = np.asarray(p.mu)
    return float(np.sum(np.asarray(p.lam)) + mu[:, 0].max() + mu[:, 1].max())


def _ctmc_transition(s: CtmcState, fired, p: Params):
    a0, a1, d00, d10, d01, d11 = fired
    i32 = jnp.int32
    is_arr = a0 | a1
    done0, done1 = d00 | d10, d01 | d11
    real = is_arr | done0 | done1
    x0 = s.x0 + a0.astype(i32) - (d00 | d01).astype(i32)
    x1 = s.x1 + a1.astype(i32) - (d10 | d11).astype(i32)
    before = jnp.stack([jnp.where(done0, pol.IDLE, s.s0), jnp.where(done1, pol.IDLE, s.s1)])
    mode, serving, _, _ = pol.decide(p.policy, jnp.stack([x0, x1]), before, s.mode, is_arr, jnp.where(done0, 0, 1),
                                     real=real)  # a self-loop is not an event
    s0 = jnp.where(real, serving[0], s.s0).astype(i32)
    s1 = jnp.where(real, serving[1], s.s1).astype(i32)
    return CtmcState(x0, x1, s0, s1, mode, s.switches + (mode != s.mode).astype(i32)), ()


def _ctmc_observe(s: CtmcState, p: Params):
    return {"cost": p.h_hat[0] * s.x0.astype(jnp.float64) + p.h_hat[1] * s.x1.astype(jnp.float64)}


EVENT_JUMPS = ((1, 0), (0, 1), (-1, 0), (0, -1), (-1, 0), (0, -1))  # effect of each event on x, in _ctmc_counts order


def _ctmc_controls(s: CtmcState, p: Params):
    """The approximating martingales of the CTMC: for event e with jump ``d_e`` of X_hat, the features of
    :func:`features` (``V'(W_hat) d_e . alpha^-1`` on the event's own control, then ``d_e`` and the exact changes
    of the quadratic basis). Control c has ``phi[c][e]`` = feature c of event e."""
    ai = p.policy.alpha_inv
    rn = p.inv_sqrt_n
    xh = jnp.stack([s.x0, s.x1]).astype(jnp.float64) * rn
    v_prime = marginal(p.value, jnp.dot(ai, xh))
    cols = []
    for e, (a, b) in enumerate(EVENT_JUMPS):
        d = jnp.array([a, b], jnp.float64) * rn
        cols.append(features(xh, v_prime * jnp.dot(ai, d), d, jnp.eye(6)[e], exact=True))
    return tuple(tuple(cols[e][c] if (c >= 6 or c == e) else 0 for e in range(6)) for c in range(CONTROLS))


MARKOV = Markov(name="pss2x2", init=_ctmc_init, counts=_ctmc_counts, rates=_ctmc_rates, bound=_ctmc_bound,
                transition=_ctmc_transition, observe=_ctmc_observe)
MARKOV_CV = MARKOV._replace(controls=_ctmc_controls)


def ctmc_tail_bound(lam_n, h, gamma: float, n: float, r: float, steps: int, x_K: np.ndarray) -> np.ndarray:
    """Per-replication bound on the discounted cost neglected after K uniformised steps.

    Given X_K, at most one arrival per step: ``r^K / sqrt(n) sum_i h_i (X_i,K / gamma + lambda_n_i / gamma^2)``.
    """
    return r**steps / math.sqrt(n) * (np.asarray(x_K, np.float64) @ np.asarray(h) / gamma
                                      + float(np.sum(np.asarray(h) * np.asarray(lam_n))) / gamma**2)
