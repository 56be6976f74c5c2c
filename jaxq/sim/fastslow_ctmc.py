"""Simulation of one fast and K identical slow servers under a threshold policy (seed 002).

The uniformised CTMC (rate ``gamma = lam + mu1 + K mu2``): each step draws one event: an arrival
(prob. lam/gamma), a fast completion (mu1/gamma, fictitious if x = 0), or a completion of slow
server j (mu2/gamma each, fictitious if j is idle); then the threshold policy of
:mod:`jaxq.mdp.structure` assigns queued jobs (decisions after every event, fictitious ones
included; threshold policies are idempotent, so this is the continuous-time system).

Estimators per replication, started empty (post-decision state (0, 0)), conditioned on the
uniformised jump chain (holding times integrated out):
  * discounted cost (6): ``sum_n rho^n c(S_n) / (alpha + gamma)``, ``rho = gamma/(alpha+gamma)``,
    over ``steps`` steps (choose ``rho^steps`` negligible);
  * average cost: ``mean of c(S_n)`` over steps ``warmup <= n < steps``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.sim.engine import Engine, simulate
from jaxq.stats import mean_stderr


class Params(NamedTuple):
    """Rates, thresholds and run lengths (all arrays; K = ``n_thr.shape[0]``)."""

    lam: jax.Array
    mu1: jax.Array
    mu2: jax.Array
    n_thr: jax.Array  # population thresholds n_1 <= ... <= n_K (int64; huge = never)
    alpha: jax.Array
    warmup: jax.Array
    steps: jax.Array


class State(NamedTuple):
    key: jax.Array
    x: jax.Array
    y: jax.Array
    n: jax.Array
    disc: jax.Array  # running discounted sum of costs
    weight: jax.Array  # rho^n
    total: jax.Array  # sum of costs over the averaging window


def decide(x, y, n_thr):
    """Threshold policy: slow jobs after the decision, ``min(y + (x-1)^+, max(y, #{m: x+y >= n_m}))``."""
    target = jnp.sum(x + y >= n_thr)
    k = jnp.minimum(y + jnp.maximum(x - 1, 0), jnp.maximum(y, target))
    return x - (k - y), k


def _init(key, p: Params) -> State:
    z = jnp.float64(0.0)
    return State(key, jnp.int64(0), jnp.int64(0), jnp.int64(0), z, jnp.float64(1.0), z)


def _step(s: State, p: Params) -> State:
    K = p.n_thr.shape[0]
    gamma = p.lam + p.mu1 + K * p.mu2
    rho = gamma / (p.alpha + gamma)
    cost = (s.x + s.y).astype(jnp.float64)
    disc = s.disc + s.weight * cost / (p.alpha + gamma)
    total = s.total + jnp.where(s.n >= p.warmup, cost, 0.0)
    key, sub = jax.random.split(s.key)
    u = jax.random.uniform(sub) * gamma
    slow = jnp.floor((u - p.lam - p.mu1) / p.mu2).astype(jnp.int64)  # index of the slow server
    x = jnp.where(u < p.lam, s.x + 1, jnp.where(u < p.lam + p.mu1, jnp.maximum(s.x - 1, 0), s.x))
    y = jnp.where((u >= p.lam + p.mu1) & (slow < s.y), s.y - 1, s.y)
    x, y = decide(x, y, p.n_thr)
    return State(key, x, y, s.n + 1, disc, s.weight * rho, total)


def _done(s: State, p: Params):
    return s.n >= p.steps


ENGINE = Engine(_init, _step, _done)


def simulate_costs(lam, mu1, mu2, q_thresholds, *, alpha=0.1, steps=20_000, warmup=2_000, reps=64,
                   seed=0, chunk=None) -> dict:
    """Monte Carlo discounted cost from empty and average cost of a threshold policy.

    Args:
      lam, mu1, mu2: rates (K identical slow servers).
      q_thresholds: queue thresholds ``q_1 <= ... <= q_K`` (K = 2: ``[q_L, q_H]``); None = never.
      alpha: discount rate of the discounted estimate.
      steps, warmup: uniformised steps per replication and steps discarded for the average.
      reps, seed, chunk: replications, base seed, replications per compiled call.
    Returns:
      dict with ``value_empty``, ``average_cost`` and their ``_stderr``, ``reps``, ``steps``.
    """
    n_thr = np.array([2**40 if q is None else int(q) + 1 for q in q_thresholds], dtype=np.int64)
    f = jnp.float64
    p = Params(f(lam), f(mu1), f(mu2), jnp.asarray(n_thr), f(alpha), jnp.int64(warmup), jnp.int64(steps))
    out = simulate(ENGINE, p, reps, seed, chunk=chunk)
    disc = np.asarray(out.disc)
    avg = np.asarray(out.total) / (steps - warmup)
    (v, v_se), (g, g_se) = mean_stderr(disc), mean_stderr(avg)
    return {"value_empty": v, "value_empty_stderr": v_se, "average_cost": g, "average_cost_stderr": g_se,
            "reps": reps, "steps": steps}
