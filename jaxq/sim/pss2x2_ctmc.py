"""The n-th 2x2 system with exponential primitives as a uniformised CTMC, simulated in lockstep.

With exponential interarrival and service times the system under any of the policies of
Definitions 2.7-2.10 is a CTMC on (x, serving, mode). Uniformise it at
``Lambda = lambda_1 + lambda_2 + max_i mu_i1 + max_i mu_i2``: each step is an arrival of class i
(probability ``lambda_i / Lambda``), a completion at busy server k (``mu_{serving_k, k} / Lambda``) or
a self-loop. The policy logic (:mod:`jaxq.policies.pss2x2`) is the same as in the event-driven engine
:mod:`jaxq.sim.pss2x2`; a self-loop is not an event, so it neither samples the mode nor dispatches.

The discounted cost is Rao-Blackwellised over the event times. The jump times T_k of the
uniformised chain form a Poisson process of rate Lambda independent of the jump chain X_k, so

    E int_0^inf exp(-gamma t) c(X_t) dt = sum_k E[c(X_k)] r^k / (Lambda + gamma),   r = Lambda/(Lambda+gamma),

and ``sum_k c(X_k) r^k / (Lambda + gamma)`` is an unbiased estimator of J_n with no time draws at all.
Truncating after K steps neglects at most (given X_K, since at most one arrival per step)

    r^K / sqrt(n) sum_i h_i (X_i,K / gamma + lambda_n_i / gamma^2),

reported as ``truncation_bound`` (its mean over replications).

Why this engine: one 32-bit random word per step and no data-dependent control flow, so all
replications advance in lockstep as vector operations. Replication r draws its words from
``fold_in(fold_in(PRNGKey(seed), r), page)`` in pages of ``PAGE`` steps: results do not depend on
the batch size, chunking or device count. Checked against the exact sparse solve of
:mod:`jaxq.sim.exact_ctmc` and against the event-driven engine in the tests.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.diffusion.workload import Analysis
from jaxq.errors import InputError
from jaxq.model.pss2x2 import PSS2x2
from jaxq.policies import pss2x2 as pol
from jaxq.sim.engine import replication_keys, replication_sharding
from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, build_params

PAGE = 64  # steps per page of random words (part of the random stream's definition)


def uniformization(lam_n, mu_n) -> tuple[float, float]:
    """``Lambda`` and the length ``max_i mu_i1`` of server 1's segment in [0, Lambda)."""
    m0, m1 = float(np.max(mu_n[:, 0])), float(np.max(mu_n[:, 1]))
    return float(np.sum(lam_n)) + m0 + m1, m0


def _step(carry, u, p):
    """One uniformised step from one 32-bit word ``u``."""
    x, serving, mode, w, acc, events, switches = carry
    ks = jnp.arange(2)
    acc = acc + w * jnp.dot(p["h_hat"], x.astype(jnp.float64))
    w = w * p["r"]

    v = u.astype(jnp.float64) * p["big"] * (1.0 / 2.0**32)
    lam1, lam12 = p["lam"][0], p["lam"][0] + p["lam"][1]
    busy = serving >= 0
    mu_k = p["mu"][jnp.maximum(serving, 0), ks]  # rate of each server's current job
    start_k = lam12 + jnp.array([0.0, 1.0]) * p["m0"]  # segment of server k
    done_k = busy & (v >= start_k) & (v < start_k + mu_k)
    is_arr = v < lam12
    cls_arr = jnp.where(v < lam1, 0, 1)
    real = is_arr | done_k[0] | done_k[1]
    k_done = jnp.where(done_k[0], 0, 1)
    c_done = serving[k_done]
    dx = jnp.where(is_arr, (ks == cls_arr).astype(jnp.int32), -(ks == c_done).astype(jnp.int32) * (~is_arr & real))
    x_new = x + dx
    serving_new = jnp.where(~is_arr & real & (ks == k_done), pol.IDLE, serving)

    workload = jnp.dot(p["alpha_inv"], x_new.astype(jnp.float64))
    mode_new = pol.sample_mode(mode, p["sampling"], is_arr, k_done, p["k1"], workload, p["level"], p["lower"], p["higher"])
    mode_new = jnp.where(real, mode_new, mode)
    i1, i2, k1 = p["i1"][mode_new], p["i2"][mode_new], p["k1"][mode_new]
    prio = pol.priority_class(p["rule"][mode_new], x_new, i1, i2, p["theta"])
    serving_new, _ = pol.dispatch(x_new, serving_new, k1, i2, prio)
    serving_new = jnp.where(real, serving_new, serving)
    return (x_new, serving_new, mode_new, w, acc, events + real, switches + (mode_new != mode)), None


@partial(jax.jit, static_argnames=("pages",))
def _run(keys, p, pages: int):
    def one(key):
        def page(carry, b):
            words = jax.random.bits(jax.random.fold_in(key, b), (PAGE,), jnp.uint32)
            carry, _ = jax.lax.scan(lambda c, u: _step(c, u, p), carry, words)
            return carry, None

        mode0 = jnp.where(0.0 < p["level"], p["lower"], p["higher"]).astype(jnp.int32)
        init = (jnp.zeros(2, jnp.int32), jnp.full(2, pol.IDLE, jnp.int32), mode0, jnp.float64(1.0),
                jnp.float64(0.0), jnp.int64(0), jnp.int32(0))
        out, _ = jax.lax.scan(page, init, jnp.arange(pages, dtype=jnp.uint32))
        return out

    return jax.vmap(one)(keys)


def simulate_cost(
    system: PSS2x2,
    n: float,
    reps: int,
    *,
    policy: str = "auto",
    seed: int = 0,
    theta_exponent: float = DEFAULT_THETA_EXPONENT,
    switch_at: float | None = None,
    rel_tol: float = 1e-4,
    chunk: int | None = None,
    devices=None,
    progress: Callable[[int], None] | None = None,
    analysis: Analysis | None = None,
) -> dict:
    """Monte Carlo estimate of J_n for exponential primitives (see the module docstring).

    Args:
      system: a 2x2 system whose primitives are all exponential.
      n, reps, policy, seed, theta_exponent, switch_at: as :func:`jaxq.sim.pss2x2.simulate_cost`.
      rel_tol: the number of steps K makes the state-free part of the tail bound ``rel_tol * V0``.
      chunk: replications per compiled call; devices: devices to shard over (default: all local).
      progress: called with the number of replications finished after each chunk.
    Returns:
      dict with ``J_hat``, ``stderr``, ``ci95``, ``V0``, ``theta``, ``steps``, ``horizon`` (the
      equivalent mean time K/Lambda), ``truncation_bound``, ``events``, ``wall_s``, ``compile_s``,
      ``events_per_s`` (compilation excluded) and per-replication ``J``.
    """
    if not system.exponential:
        raise InputError("system", "the uniformised engine needs exponential primitives; use the event engine")
    if not (isinstance(reps, (int, np.integer)) and reps >= 2):
        raise InputError("reps", f"need at least 2 replications, got {reps!r}")
    params, _, info, an = build_params(system, n, policy=policy, theta_exponent=theta_exponent,
                                       switch_at=switch_at, horizon=1.0, analysis=analysis)
    lam_n, mu_n = system.rates(n)
    big, m0 = uniformization(lam_n, mu_n)
    g = system.gamma
    r = big / (big + g)
    rn = math.sqrt(n)
    state_free = float(np.sum(system.h * lam_n)) / g**2 / rn
    steps_needed = math.log(rel_tol * an.V0 / state_free) / math.log(r) if state_free > rel_tol * an.V0 else 1.0
    pages = max(1, math.ceil(steps_needed / PAGE))
    steps = pages * PAGE
    p = {k: params[k] for k in ("alpha_inv", "level", "theta", "i1", "i2", "k1", "rule", "lower", "higher", "sampling")}
    p.update(h_hat=jnp.asarray(system.h / rn), lam=jnp.asarray(lam_n), mu=jnp.asarray(mu_n), big=jnp.float64(big),
             m0=jnp.float64(m0), r=jnp.float64(r))

    chunk = reps if chunk is None else max(1, min(chunk, reps))
    sharding = replication_sharding(devices)
    if sharding is not None:
        chunk = -(-chunk // sharding.mesh.size) * sharding.mesh.size
    t0 = time.perf_counter()
    _run.lower(replication_keys(0, 0, chunk), p, pages).compile()
    compile_s = time.perf_counter() - t0
    outs = []
    for lo in range(0, reps, chunk):  # chunks of replications
        m = min(chunk, reps - lo)
        keys = replication_keys(seed, lo, m)
        if m < chunk:
            keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], chunk - m, axis=0)])
        if sharding is not None:
            keys = jax.device_put(keys, sharding)
        outs.append([np.asarray(a)[:m] for a in _run(keys, p, pages)])
        if progress is not None:
            progress(m)
    wall = time.perf_counter() - t0
    x_K, _, _, _, acc, events, switches = (np.concatenate(c) for c in zip(*outs))
    J = acc / (big + g)
    mean, se = float(J.mean()), float(J.std(ddof=1) / math.sqrt(reps))
    bound = r**steps / rn * (x_K @ system.h / g + float(np.sum(system.h * lam_n)) / g**2)
    total = int(events.sum())
    return {
        "n": n, "reps": int(reps), "policy": info["policy"], "theta": info["theta"], "switch_at": info["switch_at"],
        "modes_used": info["modes_used"], "J_hat": mean, "stderr": se, "ci95": [mean - 1.96 * se, mean + 1.96 * se],
        "V0": an.V0, "steps": steps, "horizon": steps / big, "truncation_bound": float(bound.mean()),
        "events": total, "wall_s": wall, "compile_s": compile_s, "events_per_s": total / max(wall - compile_s, 1e-9),
        "J": J, "switches": switches,
    }
