"""Events per second of the network CTMC (jaxq.sim.network_ctmc) on this machine."""

from __future__ import annotations

import time
from pathlib import Path

import jaxq
from jaxq.bench.sizes import tiny
from jaxq.model import load
from jaxq.sim import network_ctmc as C

EX = Path(jaxq.__file__).parent / "examples"


def bench(quick: bool) -> list[dict]:
    """Rows with keys engine, n, reps, events_per_s, compile_s (compile_s = first call minus second)."""
    quick = quick or tiny()  # JAXQ_BENCH_TINY=1: a dry run
    st = C.setup(load(EX / "network_N.toml"))
    cases = [(100, 64, "priority"), (100, 64, "swc")] if quick else [
        (100, 256, "priority"), (1600, 256, "priority"), (100, 256, "swc"), (1600, 256, "swc")]
    horizon = 10.0 if quick else 40.0
    rows = []
    for n, reps, policy in cases:
        t0 = time.perf_counter()
        C.run(st, n, policy, reps=reps, warmup=1.0, horizon=horizon, seed=0)
        first = time.perf_counter() - t0
        res = C.run(st, n, policy, reps=reps, warmup=1.0, horizon=horizon, seed=1)
        rows.append({
            "engine": f"network_ctmc[{policy}]",
            "n": n,
            "reps": reps,
            "events_per_s": res["events_per_s"],
            "compile_s": max(0.0, first - res["wall_s"]),
        })
    return rows


if __name__ == "__main__":
    for row in bench(quick=False):
        print(row)
