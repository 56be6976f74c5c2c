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

What makes a step cheap (issue 9; the outputs are bit-identical to the first float version, see
tests/test_bitidentical.py): the word is compared with integer thresholds that give exactly the
float64 comparisons of ``u Lambda / 2^32`` with the segment ends (:func:`words_below`), so a step has
no float conversion of the word; the servers, the mode and the within-page event and switch counts
live in one int32 (one output array per step instead of six); two-element lookups are selects
(:func:`jaxq.policies.pss2x2.pick`), not gathers; and on a CPU each chunk is split over the cores
(:mod:`jaxq.sim.lockstep`).
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
from jaxq.sim.lockstep import run_replications
from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, build_params
from jaxq.stats import mean_stderr

PAGE = 64  # steps per page of random words (part of the random stream's definition)
TWO32 = 2**32


def uniformization(lam_n, mu_n) -> tuple[float, float]:
    """``Lambda`` and the length ``max_i mu_i1`` of server 1's segment in [0, Lambda)."""
    m0, m1 = float(np.max(mu_n[:, 0])), float(np.max(mu_n[:, 1]))
    return float(np.sum(lam_n)) + m0 + m1, m0


def _point(u: int, big: float) -> float:
    """Where the word ``u`` falls in [0, Lambda): ``u Lambda / 2^32``, rounded as float64."""
    return (np.float64(u) * np.float64(big)) * (1.0 / 2.0**32)


def words_below(level: float, big: float) -> int:
    """The number of 32-bit words u with ``_point(u) < level``.

    ``_point`` is non-decreasing in u, so ``_point(u) < level`` holds exactly when u is below this
    count: comparing the word itself with it gives the same answer as the float64 comparison.
    """
    c = int(min(max(math.ceil(level / big * 2.0**32), 0), TWO32))
    while c > 0 and not _point(c - 1, big) < level:
        c -= 1
    while c < TWO32 and _point(c, big) < level:
        c += 1
    return c


def word_thresholds(lam_n, mu_n) -> dict:
    """Integer thresholds on the step's word for the segments of [0, Lambda).

    ``arr_last``: the last word of an arrival (``lam_1 + lam_2``); ``cls0_last``: of a class-1 arrival;
    ``seg_start[k]``: the first word of server k's segment (mod 2^32); ``seg_len[c, k]``: how many words
    complete a class-c job at server k. A word u completes server k's job of class c exactly when
    ``(u - seg_start[k]) mod 2^32 < seg_len[c, k]``.
    """
    big, m0 = uniformization(lam_n, mu_n)
    lam1 = float(lam_n[0])
    lam12 = float(np.float64(lam_n[0]) + np.float64(lam_n[1]))
    starts = [lam12 + 0.0 * m0, lam12 + 1.0 * m0]
    first = [words_below(s, big) for s in starts]
    seg_len = [[words_below(starts[k] + float(mu_n[c, k]), big) - first[k] for k in range(2)] for c in range(2)]
    n1, n12 = words_below(lam1, big), words_below(lam12, big)
    if n1 < 1:  # positive rates (the model's rule) make both counts at least 1
        raise InputError("rates", f"arrival rates {lam_n.tolist()} too small for 32-bit uniformisation")
    return {
        "cls0_last": np.uint32(n1 - 1), "arr_last": np.uint32(n12 - 1),
        "seg_start": np.array([f % TWO32 for f in first], np.uint32), "seg_len": np.array(seg_len, np.uint32),
    }


# The discrete part of a replication's state packed in one int32: bits 0-1 serving_1 + 1, bits 2-3
# serving_2 + 1, bit 4 the mode; bits 5-11 count mode switches and bits 12-18 events within the current
# page (at most PAGE each), added to the int64/int32 totals at the end of every page.
_SWITCH, _EVENT = 5, 12


def _unpack(code):
    return (code & 3) - 1, ((code >> 2) & 3) - 1, (code >> 4) & 1


def _segment_len(serving, lens):
    """Words that complete this server's job: ``lens[serving]``, none when idle."""
    return jnp.where(serving == 0, lens[0], jnp.where(serving == 1, lens[1], jnp.uint32(0)))


def _step(carry, u, p):
    """One uniformised step from one 32-bit word ``u`` (scalars; vmapped over replications)."""
    x0, x1, code, w, acc = carry
    s0, s1, mode = _unpack(code)
    f64 = jnp.float64
    acc = acc + w * jnp.dot(p["h_hat"], jnp.stack([x0, x1]).astype(f64))
    w = w * p["r"]

    is_arr = u <= p["arr_last"]
    cls1 = u > p["cls0_last"]
    lens, start = p["seg_len"], p["seg_start"]
    done0 = (u - start[0]) < _segment_len(s0, lens[:, 0])  # server 1's segment (never overlaps the arrivals)
    done1 = (u - start[1]) < _segment_len(s1, lens[:, 1])
    real = is_arr | done0 | done1
    comp = ~is_arr & real
    k_done = jnp.where(done0, 0, 1)
    c_done = jnp.where(done0, s0, s1)
    i32 = jnp.int32
    x0 = x0 + jnp.where(is_arr, (~cls1).astype(i32), -((c_done == 0) & comp).astype(i32))
    x1 = x1 + jnp.where(is_arr, cls1.astype(i32), -((c_done == 1) & comp).astype(i32))
    x_new = jnp.stack([x0, x1])
    s0n = jnp.where(comp & done0, pol.IDLE, s0)
    s1n = jnp.where(comp & ~done0, pol.IDLE, s1)

    workload = jnp.dot(p["alpha_inv"], x_new.astype(f64))
    mode_new = pol.sample_mode(mode, p["sampling"], is_arr, k_done, p["k1"], workload, p["level"], p["lower"], p["higher"])
    mode_new = jnp.where(real, mode_new, mode)  # a self-loop is not an event
    i1, i2, k1 = pol.pick(p["i1"], mode_new), pol.pick(p["i2"], mode_new), pol.pick(p["k1"], mode_new)
    prio = pol.priority_class(pol.pick(p["rule"], mode_new), x_new, i1, i2, p["theta"])
    serving, _ = pol.dispatch(x_new, jnp.stack([s0n, s1n]), k1, i2, prio)
    s0n = jnp.where(real, serving[0], s0)
    s1n = jnp.where(real, serving[1], s1)
    low = (s0n + 1) | ((s1n + 1) << 2) | (mode_new << 4)
    code = low + (code & ~31) + ((mode_new != mode).astype(i32) << _SWITCH) + (real.astype(i32) << _EVENT)
    return x0, x1, code, w, acc


@partial(jax.jit, static_argnames=("pages",))
def _run(keys, p, pages: int):
    def one(key):
        def page(carry, b):
            x0, x1, code, w, acc, events, switches = carry
            words = jax.random.bits(jax.random.fold_in(key, b), (PAGE,), jnp.uint32)
            (x0, x1, code, w, acc), _ = jax.lax.scan(lambda c, u: (_step(c, u, p), None), (x0, x1, code, w, acc), words)
            events = events + (code >> _EVENT)
            switches = switches + ((code >> _SWITCH) & 127)
            return (x0, x1, code & 31, w, acc, events, switches), None

        mode0 = jnp.where(0.0 < p["level"], p["lower"], p["higher"]).astype(jnp.int32)
        z = jnp.int32(0)
        init = (z, z, mode0 << 4, jnp.float64(1.0), jnp.float64(0.0), jnp.int64(0), jnp.int32(0))
        (x0, x1, code, w, acc, events, switches), _ = jax.lax.scan(page, init, jnp.arange(pages, dtype=jnp.uint32))
        s0, s1, mode = _unpack(code)
        return jnp.stack([x0, x1]), jnp.stack([s0, s1]), mode, w, acc, events, switches

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
    steps: int | None = None,
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
      steps: K itself instead (rounded up to whole pages of 64 steps), e.g. to fix the work in a benchmark.
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
    big, _ = uniformization(lam_n, mu_n)
    g = system.gamma
    r = big / (big + g)
    rn = math.sqrt(n)
    state_free = float(np.sum(system.h * lam_n)) / g**2 / rn
    steps_needed = math.log(rel_tol * an.V0 / state_free) / math.log(r) if state_free > rel_tol * an.V0 else 1.0
    if steps is not None:
        if not (isinstance(steps, (int, np.integer)) and steps >= 1):
            raise InputError("steps", f"need a positive whole number of steps, got {steps!r}")
        steps_needed = steps
    pages = max(1, math.ceil(steps_needed / PAGE))
    steps = pages * PAGE
    p = {k: params[k] for k in ("alpha_inv", "level", "theta", "i1", "i2", "k1", "rule", "lower", "higher", "sampling")}
    p.update(h_hat=jnp.asarray(system.h / rn), r=jnp.float64(r))
    p.update({k: jnp.asarray(v) for k, v in word_thresholds(lam_n, mu_n).items()})

    t0 = time.perf_counter()
    cols, compile_s = run_replications(_run, (p,), {"pages": pages}, reps, seed, chunk, devices, progress)
    wall = time.perf_counter() - t0
    x_K, _, _, _, acc, events, switches = cols
    J = acc / (big + g)
    mean, se = mean_stderr(J)
    bound = r**steps / rn * (x_K @ system.h / g + float(np.sum(system.h * lam_n)) / g**2)
    total = int(events.sum())
    return {
        "n": n, "reps": int(reps), "policy": info["policy"], "theta": info["theta"], "switch_at": info["switch_at"],
        "modes_used": info["modes_used"], "J_hat": mean, "stderr": se, "ci95": [mean - 1.96 * se, mean + 1.96 * se],
        "V0": an.V0, "steps": steps, "horizon": steps / big, "truncation_bound": float(bound.mean()),
        "events": total, "wall_s": wall, "compile_s": compile_s, "events_per_s": total / max(wall - compile_s, 1e-9),
        "J": J, "switches": switches,
    }
