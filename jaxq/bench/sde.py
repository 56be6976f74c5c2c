"""Throughput of the reflected-SDE schemes (path-steps per second) for 10^4 and 10^6 paths.

``bench(quick)`` returns rows ``{engine, scheme, paths, steps, path_steps_per_s, compile_s}``; quick uses
256 and 1024 paths (batches of 256: one compilation per scheme), ``JAXQ_BENCH_TINY=1`` 256 paths of 64
steps. Run as a script to print them.
"""

from __future__ import annotations

import time

import jaxq  # noqa: F401
from jaxq.bench.sizes import tiny
from jaxq.sde import coefficients as C
from jaxq.sde.driver import simulate
from jaxq.sde.estimators import SCHEMES

T2T1 = (0.2857142857142856, 1.6278820596099706, -0.7857142857142856, 2.073644135332772, 0.5471922382896093)


def bench(quick: bool = False) -> list[dict]:
    """Path-steps per second of each scheme on the T2T1 WCP diffusion (dt = 1e-3)."""
    params = C.wcp(*T2T1)
    dt = 1e-3
    quick = quick or tiny()
    sizes = (256,) if tiny() else (256, 1024) if quick else (10000, 1000000)
    rows = []
    for name, scheme in SCHEMES.items():
        for paths in sizes:
            chunk = 256 if quick else min(paths, 1 << 16)
            steps = 64 if quick else (2048 if paths <= 10000 else 256)
            t0 = time.perf_counter()
            simulate(scheme, params, 0.0, 0.5, dt, 64 * dt, min(paths, chunk), seed=0, chunk=chunk)  # compile + 1 block
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            simulate(scheme, params, 0.0, 0.5, dt, 64 * dt, min(paths, chunk), seed=1, chunk=chunk)
            one_block = time.perf_counter() - t0
            t0 = time.perf_counter()
            r = simulate(scheme, params, 0.0, 0.5, dt, steps * dt, paths, seed=2, chunk=chunk)
            wall = time.perf_counter() - t0
            rows.append({
                "engine": "sde", "scheme": name, "paths": paths, "steps": r["steps"],
                "path_steps_per_s": paths * r["steps"] / wall, "compile_s": max(first - one_block, 0.0),
            })
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
