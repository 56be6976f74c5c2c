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

The engine runs all replications in lockstep, as :mod:`jaxq.sim.birth_death` does: one 32-bit random
word per step, compared as an integer against the thresholds ``floor(p 2^32)`` of the event
probabilities (so probabilities are rounded to multiples of 2^-32, a relative bias below 1e-8, with the
left-over words self-loops), no data-dependent control flow, x and y in int32. Replication r draws its
words from ``fold_in(fold_in(PRNGKey(seed), r), page)`` in pages of ``PAGE`` steps (steps past ``steps``
in the last page are drawn and ignored), so results do not depend on the batch size, the chunking or
the device count; on a CPU each chunk is split over the cores (:mod:`jaxq.sim.lockstep`).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.sim.lockstep import run_replications
from jaxq.stats import mean_stderr


PAGE = 64  # steps per batch of random words (fixed: part of the random stream's definition)
TWO32 = 2.0**32
NEVER = 2**31 - 1  # population threshold of a slow server that is never used


def decide(x, y, n_thr):
    """Threshold policy: slow jobs after the decision, ``min(y + (x-1)^+, max(y, #{m: x+y >= n_m}))``."""
    target = jnp.sum(x + y >= n_thr).astype(x.dtype)
    k = jnp.minimum(y + jnp.maximum(x - 1, 0), jnp.maximum(y, target))
    return x - (k - y), k


@jax.jit
def _run(keys, lam, mu1, mu2, n_thr, alpha, warmup, steps):
    """Discounted sum and average-cost total of each replication over ``ceil(steps / PAGE)`` pages."""
    K = n_thr.shape[0]
    gamma = lam + mu1 + K * mu2
    rho = gamma / (alpha + gamma)
    p_arr = jnp.floor(lam / gamma * TWO32).astype(jnp.uint32)
    p_fast = jnp.floor((lam + mu1) / gamma * TWO32).astype(jnp.uint32)
    d2 = jnp.maximum(jnp.floor(mu2 / gamma * TWO32), 1.0).astype(jnp.uint32)  # p_fast + K d2 <= 2^32
    idx = jnp.arange(PAGE, dtype=jnp.int64)

    def step(carry, nu):
        x, y, disc, weight, total = carry
        n, u = nu
        active = n < steps
        cost = x + y
        disc = disc + jnp.where(active, weight * cost.astype(jnp.float64), 0.0)
        weight = weight * rho
        total = total + jnp.where(active & (n >= warmup), cost, 0).astype(jnp.int64)
        arrival = u < p_arr
        fast = (~arrival) & (u < p_fast)
        slow = (u >= p_fast) & ((u - p_fast) // d2 < y.astype(jnp.uint32))  # slow server j = (u - p_fast) // d2
        x = jnp.where(arrival, x + 1, jnp.where(fast, jnp.maximum(x - 1, 0), x))
        y = jnp.where(slow, y - 1, y)
        x, y = decide(x, y, n_thr)
        return (x, y, disc, weight, total), None

    pages = (steps + PAGE - 1) // PAGE  # traced: one compilation serves every run length

    def one(key):
        def page(b, carry):
            words = jax.random.bits(jax.random.fold_in(key, b.astype(jnp.uint32)), (PAGE,), jnp.uint32)
            carry, _ = jax.lax.scan(step, carry, (b * PAGE + idx, words))
            return carry

        z = jnp.int32(0)
        carry = (z, z, jnp.float64(0.0), jnp.float64(1.0), jnp.int64(0))
        _, _, disc, _, total = jax.lax.fori_loop(jnp.int64(0), pages, page, carry)
        return disc / (alpha + gamma), total

    return jax.vmap(one)(keys)


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
      dict with ``value_empty``, ``average_cost`` and their ``_stderr``, ``reps``, ``steps``, ``wall_s``,
      ``compile_s`` and ``updates_per_s`` (replications x steps per second, compilation excluded).
    """
    if not (lam > 0 and mu1 > 0 and mu2 > 0 and alpha > 0):
        raise InputError("rates", f"need lam, mu1, mu2, alpha > 0 (got {lam}, {mu1}, {mu2}, {alpha})")
    if not (0 <= warmup < steps < 2**31) or reps < 2:
        raise InputError("steps", f"need 0 <= warmup < steps < 2^31 and reps >= 2 (got {warmup}, {steps}, {reps})")
    n_thr = np.array([NEVER if q is None else min(int(q) + 1, NEVER) for q in q_thresholds], dtype=np.int32)
    f = jnp.float64
    args = (f(lam), f(mu1), f(mu2), jnp.asarray(n_thr), f(alpha), jnp.int64(warmup), jnp.int64(steps))
    t0 = time.perf_counter()
    (disc, total), compile_s = run_replications(_run, args, {}, int(reps), seed, chunk)
    wall = time.perf_counter() - t0
    avg = total / (steps - warmup)
    (v, v_se), (g, g_se) = mean_stderr(disc), mean_stderr(avg)
    return {"value_empty": v, "value_empty_stderr": v_se, "average_cost": g, "average_cost_stderr": g_se,
            "reps": reps, "steps": steps, "wall_s": wall, "compile_s": compile_s,
            "updates_per_s": reps * steps / max(wall - compile_s, 1e-9)}
