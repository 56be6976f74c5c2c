"""Throughput of the fast/slow value iteration and CTMC simulator (rows for ``jaxq bench``)."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from jaxq.bench.sizes import tiny
from jaxq.mdp.layout import identical
from jaxq.mdp.value_iteration import VIParams, solver
from jaxq.sim.fastslow_ctmc import simulate_costs


def _vi_row(N: int, reps: int) -> dict:
    lay = identical(2)
    f = jnp.float64
    p = VIParams(f(1.2), f(1.0), jnp.array([0.3]), f(0.05), f(0.0), jnp.int64(4000))  # tol 0: fixed count
    t = time.perf_counter()
    run = solver(lay, N, False)
    r = run(p)
    jax.block_until_ready(r)
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(reps):
        r = run(p)
        jax.block_until_ready(r)
    dt = (time.perf_counter() - t) / reps
    return {"engine": "fastslow_vi", "size": (N + 1) * lay.C, "reps": reps,
            "updates_per_s": int(r.iterations) * (N + 1) * lay.C / dt, "compile_s": compile_s}


def _ctmc_row(reps: int, steps: int) -> dict:
    t = time.perf_counter()
    simulate_costs(1.2, 1.0, 0.3, [1, 2], steps=steps, warmup=0, reps=reps, seed=0)
    first = time.perf_counter() - t
    t = time.perf_counter()
    simulate_costs(1.2, 1.0, 0.3, [1, 2], steps=steps, warmup=0, reps=reps, seed=1)
    dt = time.perf_counter() - t
    return {"engine": "fastslow_ctmc", "size": steps, "reps": reps, "updates_per_s": reps * steps / dt,
            "compile_s": max(first - dt, 0.0)}


def bench(quick: bool) -> list[dict]:
    """State updates per second of value iteration (states x Bellman updates) and of the simulator
    (uniformised steps x replications); ``compile_s`` is the first-call overhead."""
    quick = quick or tiny()  # JAXQ_BENCH_TINY=1: a dry run
    return [_vi_row(255 if quick else 1023, 2 if quick else 5),
            _ctmc_row(32 if quick else 256, 2_000 if quick else 20_000)]


if __name__ == "__main__":
    for row in bench(quick=True):
        print(row)
