"""The n-th 2x2 parallel server system of the switched-policies paper: typed parameters and state, and its two
statements.

Renewal primitives (2.1): class-i interarrival times ``a/lambda_n_i`` and activity-(i,k) service times
``u/mu_n_ik`` with a and u of mean 1 and the configured SCV (:mod:`jaxq.sim.sampling`). The system starts
empty; the first class-i arrival comes after one full interarrival time. Service is non-preemptive and the
servers follow the policy of :mod:`jaxq.policies.pss2x2` (Definitions 2.7-2.10).

Two statements of the same system, for the two drivers:

* :func:`event_model`, the event rule for any renewal primitives (:mod:`jaxq.sim.event`). State: the time and
  ``exp(-gamma t)``, jobs per class ``x``, the class each server serves (-1 idle), the absolute times of
  the next arrival of each class and the next completion of each server, the current mode, counters and the
  observers' state (:mod:`jaxq.sim.models.pss2x2_paths`: the running discounted cost, the path recorders, the
  control variates; the diagnostics, a user's). One step is one event: the smallest clock fires, the
  cost ``exp(-gamma s) h.x/sqrt(n)`` is integrated exactly over the elapsed interval, the event updates
  x, the policy decides, and fresh interarrival / service times are drawn (at most two per event).
* :data:`MARKOV`, the CTMC of exponential primitives (:mod:`jaxq.sim.markov`): events are the arrivals
  of each class and the completion of a class-c job at server k (multiplicity 1 when server k serves c);
  a self-loop of the uniformised chain is not an event (it neither samples the mode nor dispatches).

Control variates: with V the value function of the policy's diffusion limit
(:mod:`jaxq.diffusion.value`), the first-order control of a stream is the approximating martingale of its renewal
clocks in their age filtration (:func:`_age_controls`): a clock of unit age u (the interarrival clock of a class,
the service clock of a busy server) fires at its law's hazard rate and, fired at age u, settles ``m(u)``, its law's
mean residual life (:func:`jaxq.sim.sampling.mean_residual`), of what it owed; weighted at every event by
``exp(-gamma t) V'(W_hat(t)) s / (alpha_i sqrt(n))`` of the current state, ``s = -1`` for an interarrival clock (a
longer one removes arrivals) and ``+1`` for a service, its mean is exactly zero for any law (the policy never sees a
clock). At a weight held from the draw it would be the variate's own ``(v - 1)`` times that weight; the weight that
follows ``V'`` while the clock runs is what the CTMC's per-event martingales have. Beside them, per variate, the
linear and quadratic features of its effect times ``exp(-gamma t) (v - 1)``, and per stream a control of second
order: ``exp(-gamma t) ((min(v, K) - 1)^2 - m_K) (s / (alpha_i sqrt(n)))^2`` with
the cap ``K = Params.cv_cap`` and ``m_K = E[(min(v, K) - 1)^2]`` of the law as sampled (``Params.cv_m2``): a long
variate moves about ``v - 1`` jobs, and the cost of the queue it builds or drains grows with the square. The CTMC
states the first-order idea as one approximating martingale per event (:data:`MARKOV_CV`).

Diagnostics (:data:`DIAGNOSTICS`, docs/diagnostics.md): an observer (:mod:`jaxq.mc.observer`) of the post-decision
state, folded by the event rule and by both Markov drivers (:data:`MARKOV_DIAGNOSTICS`) under the discounted
occupation measure: idling while jobs wait per server and class, X_hat_p, the mode and its switches. A user's
observers of the same :class:`View` run beside them on both drivers (:func:`markov_observer` on the CTMC).

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.value import ValueFunction, marginal
from jaxq.model.pss2x2 import ScaledPSS2x2
from jaxq.policies import hook as hk
from jaxq.policies import pss2x2 as pol
from jaxq.mc import replications, rng
from jaxq.sim import sampling
from jaxq.sim.event import EventModel
from jaxq.sim.markov import Markov, MarkovModel, as_markov
from jaxq.sim.models.pss2x2_diagnostics import (DIAGNOSTICS, MARKOV_DIAGNOSTICS, Diagnostics,  # noqa: F401
                                               View, markov_observer, markov_view)  # (public here too)
from jaxq.sim.models.pss2x2_paths import (CONTROLS, RENEWAL_CONTROL_COUNT, pack2, path_observers,  # noqa: F401
                                          unpack2)  # (public here too)
from jaxq.mc.observer import Observer, Segment

VIOLATIONS = hk.VIOLATIONS  # the built-ins' debug counters (Definition 2.7 invariants), in this order
Perturb = hk.Perturb  # Gaussian smoothing of a built-in's level and threshold (jaxq.policies.hook)


class Params(NamedTuple):
    """Traced parameters of the n-th system under a policy.

    Attributes:
        inv_lam: (2,) 1 / lambda_n_i.
        inv_mu: (2, 2) 1 / mu_n_ik.
        lam: (2,) lambda_n_i.
        mu: (2, 2) mu_n_ik.
        h_hat: (2,) h_i / sqrt(n).
        inv_sqrt_n: 1 / sqrt(n).
        gamma: The discount rate.
        horizon: T (event rule).
        policy: The policy as data.
        t_rec: (m,) times at which W_hat(t) is recorded.
        table: The samplers' per-stream parameters (:func:`jaxq.sim.sampling.param_table`).
        value: V of the policy's diffusion limit (control variates).
        cv_scale: (6,) effect of a unit variate of each stream on W_hat: -+1/(alpha_i sqrt(n)).
        cv_cap: Where the second-order controls cap a variate: ``(min(v, cv_cap) - 1)^2``.
        cv_m2: (6,) ``E[(min(v, cv_cap) - 1)^2]`` of each stream's law as sampled
            (:func:`jaxq.sim.sampling.capped_variance`), subtracted so that the second-order controls have mean zero.
        hpc: int32: the high-priority class p (0-based; the diagnostics' X_hat_p).
        policy_params: The parameters of the Policy2x2 that decides (:attr:`jaxq.policies.hook.Policy2x2.params`).
    """

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
    value: ValueFunction | None = None  # V of the policy's diffusion limit (control variates)
    cv_scale: jnp.ndarray | None = None  # (6,) effect of a unit variate of each stream on W_hat: -+1/(alpha_i sqrt(n))
    cv_cap: jnp.ndarray | None = None  # where the second-order controls cap a variate
    cv_m2: jnp.ndarray | None = None  # (6,) E[(min(v, cv_cap) - 1)^2] of each stream's law as sampled
    hpc: jnp.ndarray | None = None  # int32: the high-priority class p (0-based; the diagnostics' X_hat_p)
    policy_params: Any = None  # the parameters of the Policy2x2 that decides (jaxq.policies.hook.Policy2x2.params)


class State(NamedTuple):
    """One replication of the event rule: per-replication scalars, small integers packed.

    (Under ``vmap`` a two-element array per replication becomes a strided axis of the batch and every
    indexing by a traced class or server a gather; scalars keep the whole step one vectorised loop. XLA:CPU
    computes one loop over the replications per state array, so pairs of integers share an int64.)
    Fields that a run does not use are ``None`` (empty pytrees): the perturbation for a policy without
    ``perturb``, ``viol`` without ``debug``, ``bad`` for a policy that is not ``checked``.

    Attributes:
        k0: uint32: the replication key's first word (its random stream, :mod:`jaxq.mc.rng`).
        k1: uint32: its second word.
        draw: uint32: the next draw counter (draw 0: the initial interarrival times; then one a step).
        t: The time.
        disc: ``exp(-gamma min(t, T))``.
        ta0: The next arrival time of class 1.
        ta1: The next arrival time of class 2.
        tc0: The next completion time of server 1 (inf when idle).
        tc1: The next completion time of server 2 (inf when idle).
        x: int64: jobs of class 1 + 2^32 jobs of class 2 (:func:`pack2`).
        code: int32: class served by each server (+1, 2 bits each, from bit 5 and 7), mode (bit 9).
        rec: int64: real events (arrivals and completions up to T) + 2^32 mode switches.
        eps: (2,) the Gaussian perturbation (a policy with ``perturb``).
        viol: int32 counters of the policy's invariants (debug engines).
        obs: The observers' state (:func:`jaxq.sim.models.pss2x2_paths.path_observers`: cost, X(T), sup X, W_hat at
            record times, ...).
        mem: The policy's memory.
        bad: int32: the policy's refused assignments (a checked policy).
        born: The start times of the four clocks (the interarrival clocks of class 1 and 2, the service clocks of
            server 1 and 2): the age-filtration controls (``cv``).
        weight: Their weights in the first-order controls (:func:`_age_controls`).
    """

    k0: jnp.ndarray  # uint32: the replication key's two words (its random stream, jaxq.mc.rng)
    k1: jnp.ndarray
    draw: jnp.ndarray  # uint32: the next draw counter (draw 0: the initial interarrival times; then one a step)
    t: jnp.ndarray
    disc: jnp.ndarray  # exp(-gamma min(t, T))
    ta0: jnp.ndarray  # next arrival time of class 1
    ta1: jnp.ndarray
    tc0: jnp.ndarray  # next completion time of server 1 (inf when idle)
    tc1: jnp.ndarray
    x: jnp.ndarray  # int64: jobs of class 1 + 2^32 jobs of class 2 (pack2)
    code: jnp.ndarray  # int32: class served by each server (+1, 2 bits each, from bit 5 and 7), mode (bit 9)
    rec: jnp.ndarray  # int64: real events (arrivals and completions up to T) + 2^32 mode switches
    eps: jnp.ndarray | None  # (2,) the Gaussian perturbation (a policy with ``perturb``)
    viol: tuple | None  # int32 counters of the policy's invariants (debug runs)
    obs: Any = None  # the observers' state (pss2x2_paths.path_observers: cost, X(T), sup X, W_hat at record times, ...)
    mem: Any = None  # the policy's memory
    bad: jnp.ndarray | None = None  # int32: the policy's refused assignments (a checked policy)
    born: tuple | None = None  # the start times of the four clocks (arrivals 1, 2; servers 1, 2): the controls' ages
    weight: tuple | None = None  # their weights in the first-order controls (_age_controls)


_SERVING0, _SERVING1, _MODE = 5, 7, 9  # bit positions in State.code (below them: the last event's flags)


def _serving_mode(code):
    return ((code >> _SERVING0) & 3) - 1, ((code >> _SERVING1) & 3) - 1, code >> _MODE


def queues(s: State):
    """X (2,) int32: the jobs of each class in an event-rule state (for event models built on this rule).

    Args:
        s: The state.

    Returns:
        (jax.Array): The jobs of each class, (2,) int32.
    """
    return jnp.stack(unpack2(s.x))


def serving_and_mode(s: State):
    """The class each server serves and the mode of a state.

    Args:
        s: The state.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(serving, mode)``: (2,) int32, -1 idle; the mode.
    """
    s0, s1, mode = _serving_mode(s.code)
    return jnp.stack([s0, s1]), mode


def real_events(s: State):
    """Arrivals and completions up to the horizon so far.

    Args:
        s: The state.

    Returns:
        (jax.Array): The count.
    """
    return unpack2(s.rec)[0]


# Control variates: per variate (renewal) or per event (CTMC) the features of its effect on the state.
# The CTMC's coarse set where the replications do not afford all eleven (jaxq.stats.controlled_mean): the value
# function's martingale summed over the six events (its coefficient is 1 in the limit) and the two linear controls.
COARSE_CONTROLS = (tuple(range(6)), (6,), (7,))
# The renewal rule's coarse set: the first-order martingale summed, the second-order controls summed (the heaviest
# law's control carries the sum), the two linear controls summed.
RENEWAL_COARSE_CONTROLS = (tuple(range(6)), tuple(range(CONTROLS, RENEWAL_CONTROL_COUNT)), (6, 7))


def coarse_controls(columns: int) -> tuple:
    """The coarse groups of a 2x2 engine's controls by their number of columns (:func:`jaxq.stats.controlled_mean`).

    Args:
        columns: The number of control columns: :data:`CONTROLS` (the CTMC) or :data:`RENEWAL_CONTROL_COUNT` (the
            renewal rule).

    Returns:
        :data:`COARSE_CONTROLS` or :data:`RENEWAL_COARSE_CONTROLS`.
    """
    return RENEWAL_COARSE_CONTROLS if columns == RENEWAL_CONTROL_COUNT else COARSE_CONTROLS


VOID_PROPOSALS = 1  # Marsaglia-Tsang proposals per gamma variate in an event (the void protocol redoes the rest)


def features(xh, vw, d, onehot, exact: bool = False):
    """The controls' features of one random input.

    ``vw = V'(W_hat) dW_hat`` on the input's own control (``onehot`` over the six streams/events), the jump ``d`` of
    X_hat (2,) for the linear controls ``g = X_hat_i``, and the change of ``X_hat_1^2``, ``X_hat_2^2``,
    ``X_hat_1 X_hat_2`` (first order, or ``exact`` differences).

    Args:
        xh (jax.Array): X_hat (2,) before the input's effect.
        vw (jax.Array): ``V'(W_hat) dW_hat``.
        d (jax.Array): The jump of X_hat, (2,).
        onehot (jax.Array): The input's stream or event, one-hot over the six.
        exact: Exact differences of the quadratic controls (else first order).

    Returns:
        (jax.Array): The features, (11,).
    """
    sq = (d * d) if exact else jnp.zeros(2)
    cross = d[0] * d[1] if exact else 0.0
    return jnp.concatenate([onehot * vw, d, 2.0 * xh * d + sq, jnp.stack([xh[0] * d[1] + xh[1] * d[0] + cross])])


def service_stream(i, k):
    """Stream index of activity (i, k) in the sampler's list (0, 1 are the interarrival streams).

    Args:
        i (int | jax.Array): The class.
        k (int | jax.Array): The server.

    Returns:
        (int | jax.Array): ``2 + 2 i + k``.
    """
    return 2 + 2 * i + k


def perturbation(key):
    """The Gaussian ``eps ~ N(0, I_2)`` of a replication (its key), drawn beyond every event's draw.

    Args:
        key (jax.Array): The replication's key.

    Returns:
        (jax.Array): eps, (2,).
    """
    return rng.normals(key, jnp.uint64(rng.PERTURB_DRAW), 2)


def perturbed_parameters(key, params: hk.BuiltinParams):
    """Gaussian smoothing of a built-in policy's parameters, one draw per replication (for gradients).

    With ``eps ~ N(0, I_2)`` drawn from the replication's key, the replication runs the policy with
    switching level ``z + sign tau_z eps_1`` (scaled workload) and threshold
    ``ceil(c n^a_bar + sign tau_c n^a_bar eps_2)``. Two runs with ``sign = +1`` and ``-1`` and the same
    seed are antithetic and use common random numbers; ``(J+ - J-) eps / (2 tau)`` is then an unbiased
    estimate of the gradient of the smoothed cost ``E_eps J(theta + tau eps)`` in ``theta = (z, c)`` (the
    likelihood ratio of the Gaussian perturbation: its score is eps/tau). Any :class:`jaxq.Policy2x2` with a
    ``perturb`` is smoothed the same way (the drivers draw ``eps``, ``perturb`` maps it to its parameters).

    Args:
        key (jax.Array): The replication's key.
        params: The built-in's parameters (with its :class:`Perturb`).

    Returns:
        (tuple[jax.Array, jax.Array, jax.Array]): ``(level, theta, eps)``: the unscaled switching level, the integer
            threshold and eps.
    """
    eps = perturbation(key)
    q = hk.BUILTIN_PERTURBED.perturb(params, eps)
    return q.level, q.theta, eps


def _event_view(x0, x1, code) -> View:
    s0, s1, mode = _serving_mode(code)
    return View(x0, x1, s0, s1, mode)


def event_spec(spec: sampling.Spec) -> sampling.Spec:
    """The spec an event draws with.

    Gamma-method streams take ``VOID_PROPOSALS`` proposals (void protocol) where the sampler has a one-proposal form
    (:func:`jaxq.sim.sampling.with_proposals`).

    Args:
        spec: The primitives' spec.

    Returns:
        The spec.
    """
    return sampling.with_proposals(spec, VOID_PROPOSALS)


def _init(key, p: Params, spec, debug, cv, observer, policy: hk.Policy2x2):
    f64, i32 = jnp.float64, jnp.int32
    k0, k1 = rng.key_words(key)
    # Draw 0: the two initial interarrival times, with the self-contained sampler (its exact fallback, once).
    init_spec = event_spec(spec)
    idx = jnp.arange(2, dtype=i32)
    words = rng.word_list(key, jnp.uint32(0), 2 * sampling.words_needed(init_spec))
    v = sampling.sample(words, init_spec, p.table, idx, key, jnp.uint32(0))
    eps = None if policy.perturb is None else perturbation(key)
    memory = jax.tree_util.tree_map(jnp.asarray, policy.init(hk.run_params(policy, p.policy_params, eps)))
    mode = hk.mode_of(policy, memory)
    zl, zf = jnp.zeros((), jnp.int64), jnp.zeros((), f64)
    inf = jnp.full((), jnp.inf, f64)
    return State(
        k0=k0, k1=k1, draw=jnp.ones((), jnp.uint32), t=zf, disc=jnp.ones((), f64), ta0=v[0] * p.inv_lam[0],
        ta1=v[1] * p.inv_lam[1], tc0=inf, tc1=inf, x=zl, code=mode << _MODE, rec=zl, eps=eps,
        viol=tuple(jnp.zeros((), i32) for _ in policy.invariants) if debug else None,
        obs=path_observers(observer, cv).init(p), mem=None if policy.memory_is_mode else memory,
        bad=jnp.zeros((), i32) if policy.checked else None,
        born=(zf,) * 4 if cv else None, weight=(zf,) * 4 if cv else None)


def _done(s: State, p: Params):
    return s.t >= p.horizon


def _sel(c, a, b):
    """``a`` where ``c`` else ``b`` (a select, never an index)."""
    return jnp.where(c, a, b)


def _bit(code, k):
    return ((code >> k) & 1).astype(bool)


def _age_controls(s: State, p: Params, spec, end, live, real, fired, restart, t1, disc1, after, keep):
    """The first-order controls of one event, in the age filtration of the clocks.

    A clock (the interarrival clock of each class, the service clock of each busy server) of rate ``r`` and unit age
    ``u`` (its age times ``r``) fires at rate ``h(u)``, the hazard rate of its stream's mean-1 law; a completion at
    age u moves ``W_hat`` by ``d`` (``-Params.cv_scale`` of its stream) and settles ``m(u)`` of what the clock owes
    (:func:`jaxq.sim.sampling.mean_residual`: a completion now instead of ``m(u)`` later is ``m(u)`` more
    completions at the clock's rate in the long run). With a predictable weight ``w`` per clock, ``int w (m(u) dN -
    m h du)`` is a martingale, and as ``m h = 1 + m'`` it is, over a clock's life: ``+w`` when the clock starts,
    ``-w du`` as it ages, and ``+(w' - w) m(u)`` where its weight changes from ``w`` to ``w'`` at age ``u``; at a
    constant weight it is ``w (1 - v)``, the variate's own first-order control. A clock starts with the weight
    ``exp(-gamma t) V'(W_hat) d`` of the state after the event, and at every event the clocks that run on take the
    weight of the state then (past the horizon 0: a clock still running at T is settled there, ``-w m(u_T)``): the
    weight follows ``V'(W_hat)`` while the clock runs, as the CTMC's martingales do
    (a weight fixed at the draw, the variate's control, measured 4 to 10 times the residual variance on the random
    systems at n = 10^4).

    Returns:
        ``(columns, born, weight)``: the increments of the six first-order controls (per stream, the sign of
        ``(v - 1)``), the clocks' start times and weights after the event.
    """
    f64 = jnp.float64
    s0, s1, _ = _serving_mode(s.code)  # the classes in service on the segment (t0, end]
    x0, x1, n0, n1 = after  # the state after the event: the weights of the clocks that start or are refreshed
    ai = p.policy.alpha_inv
    c_new = keep(_sel(real, disc1, 0.0) * marginal(p.value, (ai[0] * x0.astype(f64) + ai[1] * x1.astype(f64))
                                                   * p.inv_sqrt_n))
    rates = (p.lam[0], p.lam[1], _sel(s0 == 1, p.mu[1, 0], p.mu[0, 0]), _sel(s1 == 1, p.mu[1, 1], p.mu[0, 1]))

    def clock_streams(c0, c1):  # the four clocks' streams when the servers serve classes c0, c1
        return 0, 1, service_stream(jnp.maximum(c0, 0), 0), service_stream(jnp.maximum(c1, 0), 1)

    streams = clock_streams(s0, s1)  # on the segment
    # the effect d of each clock's stream after the event; a deterministic clock keeps the weight 0 (its control is 0)
    d_new = tuple(_sel(j == 4, p.cv_scale[4], p.cv_scale[2]) if k == 2 else
                  _sel(j == 5, p.cv_scale[5], p.cv_scale[3]) if k == 3 else p.cv_scale[k]
                  for k, j in enumerate(clock_streams(n0, n1)))
    if "deterministic" in spec.methods:
        d_new = tuple(_sel(sampling.random_stream(spec, p.table, j), d, 0.0)
                      for j, d in zip(clock_streams(n0, n1), d_new))
    running = (live, live, live & (s0 >= 0), live & (s1 >= 0))
    # the clocks that run on take the new weight; past the horizon (an event beyond T: not real) that weight is 0, so
    # every clock still running at T is settled there, -w m(u_T)
    refresh = [running[k] & ~(fired[k] & real) for k in range(4)]
    # m(u) of each clock at its age; 1 for a clock whose laws are all exponential (static: nothing to compute or keep)
    m_of = [1.0 if sampling.memoryless(spec, can) else
            keep(sampling.mean_residual(_sel(refresh[k], rates[k] * (end - s.born[k]), 0.0), spec, p.table, streams[k],
                                        can)) for k, can in enumerate(((0,), (1,), (2, 4), (3, 5)))]
    cols, born, weight = [0.0] * 6, [], []
    for k in range(4):
        w = s.weight[k]
        start = restart[k] & real
        w_new = keep(c_new * d_new[k])
        # each product materialised before it is added: one rounding whatever the batch (no fused multiply-add in
        # some compiled loops and not in others)
        aging = keep(_sel(running[k], w * rates[k] * (end - s.t), 0.0))
        change = keep(_sel(refresh[k], (w_new - w) * m_of[k], 0.0))
        fresh = keep(_sel(start, w_new, 0.0) + change)
        if k < 2:  # an arrival clock's stream is its class
            cols[k] = keep(aging - fresh)
        else:  # a service clock's stream: the class it serves on the segment (aging), after the event (the rest)
            old, new = (s0, _sel(real, n0, s0)) if k == 2 else (s1, _sel(real, n1, s1))  # past T: the class served
            cols[k] = -(_sel(new == 0, fresh, 0.0) - _sel(old == 0, aging, 0.0))
            cols[k + 2] = -(_sel(new == 1, fresh, 0.0) - _sel(old == 1, aging, 0.0))
        born.append(_sel(start, t1, s.born[k]))
        weight.append(_sel(start | refresh[k], w_new, w))
    return tuple(cols), tuple(born), tuple(weight)


def _step(s: State, p: Params, spec, debug, cv, observer, policy: hk.Policy2x2):
    """One event. A finished replication (``t >= T``) keeps stepping with every output frozen (the driver
    does not mask it: :attr:`jaxq.sim.event.EventModel.frozen_when_done`); with gamma-method streams an event
    whose used gamma variates were all rejected is void (nothing but the draw counter changes: exact, see
    :func:`jaxq.sim.sampling.sample_or_void`) and is redone with the next draw.

    Written for XLA:CPU, which compiles a step into one loop over the replications per array it produces
    and fuses every cheap operation into each loop that needs it, so that a value read by several new
    state fields (the Threefry words, the policy's decision) would be recomputed in each. The values that
    several fields read are therefore materialised once (``keep``: a division by an opaque 1.0, which
    XLA never duplicates): the event time, the event and the policy's decision packed in one integer
    (which is also the new ``code``), the uniforms that feed a logarithm or a normal quantile, and the
    two variates.
    """
    f64, i32, i64 = jnp.float64, jnp.int32, jnp.int64
    T = p.horizon
    t0 = s.t
    live = t0 < T
    one = _sel(t0 >= 0.0, 1.0, 2.0)  # 1.0, opaque to the compiler (t >= 0 always)

    def keep(v):  # materialise v (exact: a division by 1)
        return v / one

    s0, s1, mode0 = _serving_mode(s.code)
    x0_, x1_ = unpack2(s.x)

    # The smallest of the four clocks, first index on ties (as argmin over (ta0, ta1, tc0, tc1)).
    a1 = s.ta1 < s.ta0
    ta = jnp.minimum(s.ta0, s.ta1)
    c1 = s.tc1 < s.tc0
    tcm = jnp.minimum(s.tc0, s.tc1)
    is_arr = ta <= tcm
    t1 = keep(_sel(is_arr, ta, tcm))

    def after(is_arr, a1, c1):  # the change of x and the assignment right after the event (before the policy)
        c_done = _sel(c1, s1, s0)
        d0 = (is_arr & ~a1).astype(i32) - (~is_arr & (c_done == 0)).astype(i32)
        d1 = (is_arr & a1).astype(i32) - (~is_arr & (c_done == 1)).astype(i32)
        b0 = _sel(~is_arr & ~c1, pol.IDLE, s0).astype(i32)
        b1 = _sel(~is_arr & c1, pol.IDLE, s1).astype(i32)
        return d0, d1, b0, b1

    # The event and the policy's decision, materialised as one small integer: the new code.
    d0, d1, b0, b1 = after(is_arr, a1, c1)
    params = hk.run_params(policy, p.policy_params, s.eps)  # this replication's (perturbed: recomputed, exact)
    xa, before = jnp.stack([x0_ + d0, x1_ + d1]), jnp.stack([b0, b1])
    event_code = hk.event_code(is_arr, a1, c1)
    # the policy's memory: its own, or the mode recorded in the code (a policy whose memory is its mode)
    memory, serving, started, bad = hk.decision(policy, xa, before, mode0 if policy.memory_is_mode else s.mem,
                                                event_code, params)
    mode = hk.mode_of(policy, memory)
    code = (is_arr.astype(i32) | (a1.astype(i32) << 1) | (c1.astype(i32) << 2) | (started[0].astype(i32) << 3)
            | (started[1].astype(i32) << 4) | ((serving[0] + 1) << _SERVING0) | ((serving[1] + 1) << _SERVING1)
            | (mode << _MODE))
    code = keep(code.astype(f64)).astype(i32)
    is_arr, a1, c1, st0, st1 = (_bit(code, k) for k in range(5))
    n0, n1, mode = _serving_mode(code)
    d0, d1, b0, b1 = after(is_arr, a1, c1)
    x0, x1 = x0_ + d0, x1_ + d1
    arr0, arr1 = is_arr & ~a1, is_arr & a1
    comp0, comp1 = ~is_arr & ~c1, ~is_arr & c1

    # Fresh clocks: at most two variates (the arrival's next interarrival and/or up to two starts), one draw.
    svc0 = 2 + 2 * jnp.maximum(n0, 0)  # service_stream(n0, 0)
    svc1 = 3 + 2 * jnp.maximum(n1, 0)  # service_stream(n1, 1)
    slot0 = _sel(is_arr, a1.astype(i32), _sel(st0, svc0, svc1))
    slot1 = _sel(is_arr & st0, svc0, svc1)
    any_start = st0 | st1
    used0 = is_arr | any_start
    used1 = _sel(is_arr, any_start, st0 & st1)
    espec = event_spec(spec)
    words = rng.word_list(jnp.stack([s.k0, s.k1]), s.draw, 2 * sampling.words_needed(espec))
    v0, v1 = sampling.slot_values(words, espec, p.table, jnp.stack([slot0, slot1]), keep)
    ok = None  # None: no gamma-method stream, no event is ever void
    if "gamma" in espec.methods:  # void the event when a slot it uses was rejected (NaN)
        ok = (~jnp.isnan(v0) | ~used0) & (~jnp.isnan(v1) | ~used1)
        ok = keep(ok.astype(f64)) > 0.5  # materialised: every new state field reads it

    ta0 = _sel(arr0, t1 + v0 * p.inv_lam[0], s.ta0)
    ta1 = _sel(arr1, t1 + v0 * p.inv_lam[1], s.ta1)
    vs0 = _sel(is_arr, v1, v0)  # server 1 takes the first variate after the arrival's
    vs1 = _sel(is_arr | st0, v1, v0)
    mu0 = _sel(n0 == 1, p.inv_mu[1, 0], p.inv_mu[0, 0])  # 1/mu_n of the activity that starts
    mu1 = _sel(n1 == 1, p.inv_mu[1, 1], p.inv_mu[0, 1])
    tc0 = _sel(st0, t1 + vs0 * mu0, _sel(comp0, jnp.inf, s.tc0))
    tc1 = _sel(st1, t1 + vs1 * mu1, _sel(comp1, jnp.inf, s.tc1))

    end = jnp.minimum(t1, T)  # the segment's end: the event, or the horizon that ends the path first
    disc1 = jnp.exp(-p.gamma * end)

    # Records (outputs): frozen once done and for a void event.
    keep_ev = live if ok is None else live & ok
    real = keep_ev & (t1 <= T)
    upd = {"rec": s.rec + (real.astype(i64) | ((real & (mode != mode0)).astype(i64) << 32))}
    martingale = None
    if cv:  # the increments of the RENEWAL_CONTROL_COUNT martingales (mean zero given the past), summed by an
        # observer: the first order per clock on the segment (_age_controls); per variate v drawn at t (per slot),
        # exp(-gamma t) (v - 1) times the linear and quadratic features of its effect and the second order
        # exp(-gamma t) ((min(v, cap) - 1)^2 - its mean) dW_hat^2 of its stream
        rn = p.inv_sqrt_n
        xh0, xh1 = x0.astype(f64) * rn, x1.astype(f64) * rn
        first, upd["born"], upd["weight"] = _age_controls(s, p, spec, end, live, real, (arr0, arr1, comp0, comp1),
                                                          (arr0, arr1, st0, st1), t1, disc1, (x0, x1, n0, n1), keep)
        martingale = [first + (0.0,) * (RENEWAL_CONTROL_COUNT - 6)]
        for slot, used, val in ((slot0, used0, v0), (slot1, used1, v1)):
            w = keep(_sel(used & real, disc1 * (val - 1.0), 0.0))
            is_s = [slot == j for j in range(6)]
            d_w = p.cv_scale[0]  # jump of W_hat per unit of (v - 1)
            m2 = p.cv_m2[0]  # E[(min(v, cap) - 1)^2] of the slot's stream
            for j in range(1, 6):
                d_w = _sel(is_s[j], p.cv_scale[j], d_w)
                m2 = _sel(is_s[j], p.cv_m2[j], m2)
            w2 = keep(_sel(used & real, disc1 * ((jnp.minimum(val, p.cv_cap) - 1.0) ** 2 - m2), 0.0) * (d_w * d_w))
            # jumps of X_hat: -1 for an interarrival of its class, +1 for a service of its class
            e0 = keep(_sel(is_s[0], -rn, _sel(is_s[2] | is_s[3], rn, 0.0)))
            e1 = keep(_sel(is_s[1], -rn, _sel(is_s[4] | is_s[5], rn, 0.0)))
            martingale.append((0.0,) * 6 + (
                w * e0, w * e1, w * (2.0 * xh0 * e0), w * (2.0 * xh1 * e1), w * (xh0 * e1 + xh1 * e0))
                + tuple(_sel(is_s[j], w2, 0.0) for j in range(6)))
        martingale = tuple(martingale)
    # The observers (pss2x2_paths: the cost, X(T), sup X, W_hat at the record times; the diagnostics, a user's): the
    # state on [t0, min(t1, T)) with weight int exp(-gamma t) dt there (the cost integrated exactly: the state is
    # constant), the jump at t1 <= T; past T the path ends in the state held (the clock: (t0, min(t1, T)), the last
    # segment [t0, T] with no jump, so the state at T is its after). The weights are materialised once
    # (keep: every accumulator reads them); frozen for a void event and once done.
    seg = Segment(_event_view(x0_, x1_, s.code), keep((s.disc - disc1) / p.gamma),
                  _event_view(_sel(real, x0, x0_), _sel(real, x1, x1_), _sel(real, code, s.code)),
                  keep(_sel(real, disc1, 0.0)), interval=(t0, end), martingale=martingale)
    new_obs = path_observers(observer, cv).update(s.obs, seg, p)
    upd["obs"] = jax.tree_util.tree_map(lambda a, b: _sel(keep_ev, b, a), s.obs, new_obs)
    # the policy's memory (frozen for a void event; a policy whose memory is its mode: in the code)
    upd["mem"] = jax.tree_util.tree_map(lambda a, b: _sel(keep_ev, jnp.asarray(b, a.dtype), a), s.mem,
                                        None if policy.memory_is_mode else memory)
    if policy.checked:  # its refused assignments; two variates an event: an arrival (one drawn) leaves one start
        bad = bad | (is_arr & st0 & st1)
        upd["bad"] = s.bad + (keep_ev & bad).astype(i32)
    if debug:  # the policy's own invariants on the post-decision state
        after_mem = mode if policy.memory_is_mode else memory  # the materialised mode (the code's), not recomputed
        found = hk.violations_of(policy, jnp.stack([x0, x1]), jnp.stack([b0, b1]), jnp.stack([n0, n1]),
                                 jnp.stack([st0, st1]), after_mem, hk.event_code(is_arr, a1, c1), params)
        upd["viol"] = tuple(c + (keep_ev & f).astype(i32) for f, c in zip(found, s.viol))

    def new(a, b):  # the event's new dynamic state, or the old one for a void event
        return b if ok is None else _sel(ok, b, a)

    if cv:
        upd["born"] = tuple(new(a, b) for a, b in zip(s.born, upd["born"]))
        upd["weight"] = tuple(new(a, b) for a, b in zip(s.weight, upd["weight"]))

    return s._replace(
        draw=s.draw + jnp.uint32(1), t=new(s.t, t1), disc=new(s.disc, disc1), x=new(s.x, pack2(x0, x1)),
        code=new(s.code, code), ta0=new(s.ta0, ta0), ta1=new(s.ta1, ta1), tc0=new(s.tc0, tc0), tc1=new(s.tc1, tc1),
        **upd)


def _output(s: State, p: Params, observer=None, cv: bool = False):
    i32, f64 = jnp.int32, jnp.float64
    events, switches = unpack2(s.rec)
    o = path_observers(observer, cv).finish(s.obs, (1.0 - s.disc) / p.gamma, p)  # the mass: int_0^T exp(-gamma t) dt
    return {"cost": o["cost"], "events": events.astype(jnp.int64), "switches": switches,
            "w_rec": o["w_rec"],
            "x_T": jnp.stack(unpack2(o["x_T"])), "sup_x": jnp.stack(unpack2(o["sup"])),
            "viol": jnp.zeros(0, i32) if not s.viol else jnp.stack(s.viol),
            "eps": jnp.zeros(2, f64) if s.eps is None else s.eps,
            "cv": jnp.stack(o["cv"]) if cv else jnp.zeros(RENEWAL_CONTROL_COUNT, f64),
            "bad": jnp.zeros((), i32) if s.bad is None else s.bad,
            **({} if observer is None else {"observed": o["user"]})}


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def event_model(spec: sampling.Spec, debug: bool = False, cv: bool = False, observer: Observer | None = None,
                policy: hk.Policy2x2 = hk.BUILTIN) -> EventModel:
    """The event rule (:class:`~jaxq.sim.event.EventModel`) for a static sampler spec (cached, hence hashable and
    compiled once).

    A finished replication's outputs are frozen by the rule itself, so the driver runs it without masking.

    Args:
        spec: The primitives' sampler spec.
        debug: Accumulate the Definition 2.7 invariant counters.
        cv: The control variates (``Params.value``, ``cv_scale``, ``cv_cap`` and ``cv_m2`` must be set).
        observer: An :class:`~jaxq.mc.observer.Observer` of :class:`View` segments (the :data:`DIAGNOSTICS`, which
            need ``Params.hpc``, a user's, or several :func:`combined <jaxq.mc.observer.combine>`; output
            ``observed``).
        policy: The :class:`jaxq.policies.hook.Policy2x2` that decides, without its parameters
            (``Params.policy_params``; the built-ins are :data:`jaxq.policies.hook.BUILTIN`; output ``bad``: its
            refused assignments where it is ``checked``, ``viol``: its ``invariants`` under ``debug``, ``eps``: the
            Gaussian draw where it has ``perturb``).

    Returns:
        The event rule.
    """
    return EventModel(lambda k, p: _init(k, p, spec, debug, cv, observer, policy),
                      lambda s, p: _step(s, p, spec, debug, cv, observer, policy),
                      _done,
                      lambda s, p: _output(s, p, observer, cv), lambda s: unpack2(s.rec)[0], frozen_when_done=True)


def tail_bound(nth: ScaledPSS2x2, horizon: float, x_T: np.ndarray) -> np.ndarray:
    """Per-replication bound on the cost of the n-th system ``nth`` neglected after the horizon (module docstring).

    Args:
        nth: The n-th system (:meth:`jaxq.model.pss2x2.PSS2x2.at`).
        horizon: T.
        x_T: (reps, 2) the jobs of each class at T.

    Returns:
        The bound per replication.
    """
    system = nth.system
    gamma = system.gamma
    per = (np.asarray(x_T, np.float64) + 1.0 + np.asarray(system.ca2)) / gamma + np.asarray(nth.lam_n) / gamma**2
    return math.exp(-gamma * horizon) * (per @ np.asarray(system.h)) / nth.sqrt_n


# ------------------------------------------------------------------------------ exponential primitives
class CtmcState(NamedTuple):
    """The CTMC's state as scalars (under vmap every operation then runs along the replications).

    Attributes:
        x0: int32 jobs of class 1.
        x1: int32 jobs of class 2.
        s0: int32 class served by server 1 (-1 idle).
        s1: int32 class served by server 2.
        mode: int32: the mode the policy's memory records (``Policy2x2.mode``).
        switches: int32 mode switches.
        mem: The policy's memory.
        bad: int32: the policy's refused assignments (a checked policy).
    """

    x0: jnp.ndarray  # int32 jobs of class 1
    x1: jnp.ndarray  # int32 jobs of class 2
    s0: jnp.ndarray  # int32 class served by server 1 (-1 idle)
    s1: jnp.ndarray  # int32 class served by server 2
    mode: jnp.ndarray  # int32: the mode the policy's memory records (Policy2x2.mode)
    switches: jnp.ndarray  # int32
    mem: Any = None  # the policy's memory
    bad: jnp.ndarray | None = None  # int32: the policy's refused assignments (a checked policy)


def _ctmc_init(p: Params, policy: hk.Policy2x2):
    z, idle = jnp.int32(0), jnp.int32(pol.IDLE)
    memory = jax.tree_util.tree_map(jnp.asarray, policy.init(p.policy_params))
    return CtmcState(z, z, idle, idle, hk.mode_of(policy, memory), z, None if policy.memory_is_mode else memory,
                     z if policy.checked else None)


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


def _ctmc_transition(s: CtmcState, fired, p: Params, policy: hk.Policy2x2):
    a0, a1, d00, d10, d01, d11 = fired
    i32 = jnp.int32
    is_arr = a0 | a1
    done0, done1 = d00 | d10, d01 | d11
    real = is_arr | done0 | done1
    x0 = s.x0 + a0.astype(i32) - (d00 | d01).astype(i32)
    x1 = s.x1 + a1.astype(i32) - (d10 | d11).astype(i32)
    before = jnp.stack([jnp.where(done0, pol.IDLE, s.s0), jnp.where(done1, pol.IDLE, s.s1)])
    memory, serving, _, bad = hk.decision(policy, jnp.stack([x0, x1]), before,
                                          s.mode if policy.memory_is_mode else s.mem,
                                          hk.event_code(is_arr, a1.astype(i32), jnp.where(done0, 0, 1)),
                                          p.policy_params, real=real)
    # a self-loop is not an event: nothing is decided (the memory kept by the decision, the assignment here)
    s0 = jnp.where(real, serving[0], s.s0).astype(i32)
    s1 = jnp.where(real, serving[1], s.s1).astype(i32)
    mode = hk.mode_of(policy, memory)
    mem = None if policy.memory_is_mode else memory  # in the dtypes of s.mem (the decision keeps them)
    return CtmcState(x0, x1, s0, s1, mode, s.switches + (mode != s.mode).astype(i32), mem,
                     None if bad is None else s.bad + (real & bad).astype(i32)), ()


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


MODEL = MarkovModel(name="pss2x2", init=lambda p: _ctmc_init(p, hk.BUILTIN), counts=_ctmc_counts, rates=_ctmc_rates,
                    rate_bound=_ctmc_bound, transition=lambda s, f, p: _ctmc_transition(s, f, p, hk.BUILTIN),
                    observe=_ctmc_observe, records=True, one_hot=True)
MARKOV = as_markov(MODEL)
MARKOV_CV = as_markov(MODEL._replace(controls=_ctmc_controls))


@lru_cache(maxsize=replications.PROGRAMS_KEPT)
def markov(policy: hk.Policy2x2 = hk.BUILTIN, cv: bool = False) -> Markov:
    """:data:`MARKOV` (``cv``: :data:`MARKOV_CV`) under a :class:`jaxq.policies.hook.Policy2x2` without its parameters.

    ``state.bad`` counts its refused assignments where it is ``checked``.

    Args:
        policy: The policy that decides (its parameters are ``Params.policy_params``; the built-ins are
            :data:`jaxq.policies.hook.BUILTIN`, those two constants).
        cv: The martingale controls.

    Returns:
        The Markov statement.
    """
    return (MARKOV_CV if cv else MARKOV)._replace(init=lambda p: _ctmc_init(p, policy),
                                                  transition=lambda s, f, p: _ctmc_transition(s, f, p, policy))


def ctmc_tail_bound(nth: ScaledPSS2x2, r: float, steps: int, x_K: np.ndarray) -> np.ndarray:
    """Per-replication bound on the discounted cost of the n-th system ``nth`` neglected after K uniformised steps.

    Given X_K, at most one arrival per step: ``r^K / sqrt(n) sum_i h_i (X_i,K / gamma + lambda_n_i / gamma^2)``.

    Args:
        lam_n (array_like): (2,) lambda_n_i.
        h (array_like): (2,) the holding costs.
        gamma: The discount rate.
        n: The scale n.
        r: The discount factor per step ``Lambda / (Lambda + gamma)``.
        steps: K.
        x_K: (reps, 2) the jobs of each class after K steps.

    Returns:
        The bound per replication.
    """
    h, gamma = np.asarray(nth.system.h), nth.system.gamma
    return r**steps / nth.sqrt_n * (np.asarray(x_K, np.float64) @ h / gamma
                                    + float(np.sum(h * np.asarray(nth.lam_n))) / gamma**2)
