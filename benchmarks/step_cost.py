"""What a step of the 2x2 event engine costs on a small batch, with XLA:CPU's loop options and without.

Run: ``python benchmarks/step_cost.py [--systems pss_P,pss_T2T2] [--lanes 8,16,24,32] [--n 1e6] [--cpu 0]
[--out FILE]`` (about two minutes on a CPU).

The engine as a targeted run at large n runs it: the event rule of a bundled system with its control variates and
diagnostics (:func:`jaxq.sim.models.pss2x2.event_model`), ``lanes`` replications in lockstep on one device pinned to
one core (``--cpu``), at n = 10^6 with a horizon no replication reaches. Each setting runs in a child process, with
``JAXQ_LOOP_OPTIONS=off`` (XLA's defaults) and with jaxq's loop options (:data:`jaxq.xla_flags.LOOP_OPTIONS`: every
while loop compiled as one function, loops not unrolled); a call of 64 blocks of 128 events is timed after one that
compiles, and the best of ``--repeats`` calls is kept. The table gives microseconds a step (one event of every
replication) and their ratio; the JSON record the machine (its CPU model and vector width) and every row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

BLOCK, BLOCKS = 128, 64


def measure(systems: list[str], lanes: list[int], n: float, repeats: int) -> list[dict]:
    """Microseconds a step per system and batch size, in this process (its XLA options as set)."""
    import jax

    import jaxq  # noqa: F401  (XLA's options, before its first computation)
    from jaxq.bench import verdict
    from jaxq.mc import rng
    from jaxq.mc.observer import combine
    from jaxq.sim import event, pss2x2
    from jaxq.sim.models import pss2x2 as model

    jax.config.update("jax_enable_x64", True)  # jaxq's internals: float64 for this process
    every = dict(verdict.systems())
    rows = []
    for name in systems:
        st = pss2x2.setup(every[name], n, horizon=1e9 / (2.0 * float(sum(every[name].at(n).lam_n))))
        rule = model.event_model(st.spec, False, True, combine({"diagnostics": model.DIAGNOSTICS}), st.policy2x2)
        prog = event.program(rule, BLOCK, BLOCKS)
        for size in lanes:
            states = prog.start(rng.keys(0, 0, size), st.params)
            exe = jax.jit(prog.advance).lower(states, st.params).compile()
            states, _, _ = exe(states, st.params)
            jax.block_until_ready(states)
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                states, _, _ = exe(states, st.params)
                jax.block_until_ready(states)
                best = min(best, time.perf_counter() - t)
            rows.append({"system": name, "lanes": size, "us_per_step": best / (BLOCK * BLOCKS) * 1e6})
    return rows


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", default="pss_P,pss_T2T2")
    ap.add_argument("--lanes", default="8,16,24,32")
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=0, help="the core the children are pinned to")
    ap.add_argument("--out", default=None, help="write the JSON record here")
    ap.add_argument("--child", choices=("on", "off"), default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    systems, lanes = args.systems.split(","), [int(v) for v in args.lanes.split(",")]
    if args.child is not None:  # one setting, in its own process: XLA reads its options once
        os.sched_setaffinity(0, {args.cpu})
        print(json.dumps(measure(systems, lanes, args.n, args.repeats)))
        return {}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    for setting in ("off", "on"):
        env = {**os.environ, "JAXQ_LOOP_OPTIONS": setting, "JAXQ_CACHE_DIR": "off",
               "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
               "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
        done = subprocess.run([sys.executable, __file__, "--child", setting, "--systems", args.systems, "--lanes",
                               args.lanes, "--n", str(args.n), "--repeats", str(args.repeats), "--cpu", str(args.cpu)],
                              env=env, capture_output=True, text=True, check=True)
        out[setting] = json.loads(done.stdout.strip().splitlines()[-1])
    import jaxq.bench
    from jaxq import xla_flags

    rows = [{"system": a["system"], "lanes": a["lanes"], "us_per_step_off": a["us_per_step"],
             "us_per_step_on": b["us_per_step"], "ratio": a["us_per_step"] / b["us_per_step"]}
            for a, b in zip(out["off"], out["on"])]
    record = {"machine": jaxq.bench.machine(),
              "n": args.n, "block": BLOCK, "blocks": BLOCKS, "loop_options": xla_flags.LOOP_OPTIONS, "rows": rows}
    print(f"{'system':10s} {'reps':>5s} {'off us/step':>12s} {'on us/step':>11s} {'off/on':>7s}")
    for r in rows:
        print(f"{r['system']:10s} {r['lanes']:5d} {r['us_per_step_off']:12.3f} {r['us_per_step_on']:11.3f} "
              f"{r['ratio']:7.2f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
    return record


if __name__ == "__main__":
    main()
