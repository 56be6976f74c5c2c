"""M/M/c queue as a uniformised birth-death chain, simulated in lockstep over replications.

The CTMC with rates ``lambda`` (arrival) and ``min(x, c) mu`` (service completion) is uniformised
at ``Lambda = lambda + c mu``: every step is an arrival with probability ``lambda/Lambda``, a
completion with probability ``min(x, c) mu / Lambda``, otherwise a self-loop. The embedded chain
has the same stationary distribution as the CTMC, and each step stands for a mean time
``1/Lambda``, so stationary time averages are step averages over ``Lambda (T - T0)`` steps after
``Lambda T0`` warm-up steps.

Why this engine: one 32-bit random word per step, compared as an integer against thresholds, and
no data-dependent control flow, so all replications advance in lockstep as SIMD vector operations.
Probabilities are rounded to multiples of 2^-32 (relative bias below 1e-8, far under Monte Carlo
error). Replication r draws its words from ``fold_in(fold_in(PRNGKey(seed), r), page)`` in pages of
``PAGE`` steps, so results do not depend on the batch size, the chunking or the device count.
Checked against Erlang C in the tests. Warm-up and recording pages are two scans (no masking per
step), the sums within a page are int32 (exact: see ``simulate_mmc``) and added to int64 totals once
per page, and on a CPU each chunk is split over the cores (:mod:`jaxq.sim.lockstep`).
"""

from __future__ import annotations

import math
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.errors import InputError
from jaxq.sim.lockstep import run_replications
from jaxq.stats import mean_stderr

PAGE = 64  # steps per batch of random words (fixed: part of the random stream's definition)
TWO32 = 2.0**32


@partial(jax.jit, static_argnames=("c", "warm_pages", "pages", "page_sums"))
def _run(keys, lam, mu, c: int, warm_pages: int, pages: int, page_sums: str = "int32"):
    """Final state and counters of each replication (``page_sums``: dtype of the within-page sums)."""
    big = lam + c * mu
    p_up = jnp.floor(lam / big * TWO32).astype(jnp.uint32)
    d1 = jnp.floor(mu / big * TWO32).astype(jnp.uint32)  # c * d1 <= 2^32 - p_up: no overflow
    full = (jnp.uint32(0) - p_up).astype(jnp.uint32)  # 2^32 - p_up: with all servers busy, no self-loop
    small = jnp.dtype(page_sums)

    def step(cs, u, record):
        x, acc_x, acc_q, arrivals, waited, events = cs
        busy_all = x >= c
        d = jnp.where(busy_all, full, x.astype(jnp.uint32) * d1)
        up = u < p_up
        down = (~up) & ((u - p_up) < d)
        if record:  # sums within one page: exact in ``small`` (see simulate_mmc)
            acc_x += x.astype(small)
            acc_q += jnp.maximum(x - c, 0).astype(small)
            arrivals += up.astype(small)
            waited += (up & busy_all).astype(small)
        events += (up | down).astype(small)
        x = x + up.astype(jnp.int32) - down.astype(jnp.int32)
        return (x, acc_x, acc_q, arrivals, waited, events), None

    def one(key):
        def page(record):
            def body(carry, b):
                x, totals = carry
                words = jax.random.bits(jax.random.fold_in(key, b), (PAGE,), jnp.uint32)
                zero = jnp.zeros((), small)
                (x, *sums), _ = jax.lax.scan(lambda cs, u: step(cs, u, record), (x,) + (zero,) * 5, words)
                return (x, tuple(t + s.astype(jnp.int64) for t, s in zip(totals, sums))), None

            return body

        z64 = jnp.int64(0)
        carry = (jnp.int32(0), (z64,) * 5)
        carry, _ = jax.lax.scan(page(False), carry, jnp.arange(warm_pages, dtype=jnp.uint32))
        carry, _ = jax.lax.scan(page(True), carry, jnp.arange(warm_pages, warm_pages + pages, dtype=jnp.uint32))
        x, totals = carry
        return (x, *totals)

    return jax.vmap(one)(keys)


def simulate_mmc(lam: float, mu: float, c: int, reps: int = 64, warmup: float = 20.0, horizon: float = 200.0,
                 seed: int = 0, chunk: int | None = None, devices=None) -> dict:
    """Stationary statistics of M/M/c over [warmup, horizon], replicated.

    Args:
      lam, mu, c: arrival rate, service rate per server, number of servers.
      reps: replications (>= 2), each started empty.
      warmup, horizon: the time window of the averages (in mean uniformised time).
      seed: base seed (replication r uses ``fold_in(PRNGKey(seed), r)``).
      chunk: replications per compiled call; any value gives identical results.
      devices: devices to shard replications over (default: all local devices).
    Returns:
      ``mean_in_system``, ``mean_queue``, ``mean_idle``, ``p_wait`` with ``_stderr``, ``events``
      (arrivals and completions), ``steps``, ``wall_s`` and ``events_per_s`` (compilation excluded).
    """
    if not (lam > 0 and mu > 0 and c >= 1):
        raise InputError("mmc", f"need lambda > 0, mu > 0, c >= 1 (got {lam}, {mu}, {c})")
    if reps < 2:
        raise InputError("reps", "need at least 2 replications for a standard error")
    if not 0 <= warmup < horizon:
        raise InputError("horizon", f"need 0 <= warmup < horizon (got {warmup}, {horizon})")
    big = lam + c * mu
    warm_pages = math.ceil(big * warmup / PAGE)
    pages = max(1, math.ceil(big * (horizon - warmup) / PAGE))
    # within a page every sum is below PAGE * (largest x + PAGE) <= PAGE * (all steps + PAGE): int32 when that fits
    page_sums = "int32" if PAGE * ((warm_pages + pages + 1) * PAGE) < 2**31 else "int64"

    t0 = time.perf_counter()
    static = {"c": int(c), "warm_pages": warm_pages, "pages": pages, "page_sums": page_sums}
    cols, compile_s = run_replications(_run, (jnp.float64(lam), jnp.float64(mu)), static, reps, seed, chunk, devices)
    wall = time.perf_counter() - t0
    x, acc_x, acc_q, arrivals, waited, events = cols
    steps = pages * PAGE
    res = {}
    for name, per in (
        ("mean_in_system", acc_x / steps),
        ("mean_queue", acc_q / steps),
        ("mean_idle", c - (acc_x - acc_q) / steps),
        ("p_wait", waited / np.maximum(arrivals, 1)),
    ):
        res[name], res[name + "_stderr"] = mean_stderr(per)
    total = int(events.sum())
    res.update(reps=reps, servers=c, steps=steps, events=total, wall_s=wall,
               events_per_s=total / max(wall - compile_s, 1e-9))
    return res


def erlang_c(lam: float, mu: float, c: int) -> dict:
    """Exact stationary M/M/c: probability of wait (Erlang C), mean queue, mean in system, mean idle."""
    a = lam / mu
    rho = a / c
    if rho >= 1:
        raise InputError("mmc", f"unstable: lambda/(c mu) = {rho:.4g} >= 1")
    terms = [a**k / math.factorial(k) for k in range(c)] if c < 150 else None
    if terms is None:  # stable recursion for large c: Erlang B then C
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
    else:
        b = (a**c / math.factorial(c)) / (sum(terms) + a**c / math.factorial(c))
    pw = b / (1 - rho * (1 - b))
    lq = pw * rho / (1 - rho)
    return {"p_wait": pw, "mean_queue": lq, "mean_in_system": lq + a, "mean_idle": c - a}
