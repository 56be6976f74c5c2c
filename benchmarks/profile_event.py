"""Where a step of the event-driven 2x2 engine spends its time: XLA's own per-kernel profile, per family.

Run: ``python benchmarks/profile_event.py [--reps 2048] [--families exponential,gamma:2] [--cpu 1] [--json]``
(about 15 s per family on a CPU).

The 2x2 system's event rule (:func:`jaxq.sim.models.pss2x2.event_model`, plain: no control variates) on the event
driver (:func:`jaxq.sim.event.program`), ``pss_P`` at n = 100 with one family in all six streams, a horizon
so far away that no replication finishes: every step of the traced calls is a real event of every
replication. XLA:CPU runs a step as a sequence of kernels (one loop over the replications per array the step
produces, "fusions", and copies of loop state); ``jax.profiler`` records each kernel's duration, so the
median duration of a kernel over the steps of a call, divided by the replications, is its cost per event.
Each kernel is labelled by what its fused computation contains (``threefry``: a Threefry-2x32 block, 20
xor; ``exp``, ``log`` (the written-out one: its final polynomial), ``quantile`` (a normal quantile's
rational functions), ``policy`` (the decision packed into the new ``code``), ``copy``, ``other``), and the
table gives, per family, the sum over kernels (ns per event, single core: ``--cpu`` pins the process to
one core; the profiler adds about 0.2 ns per kernel and event at 2048 replications) and the share of each
label. The medians of ``--repeats`` traced calls are taken (shared machines are noisy).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import statistics
import sys
import tempfile

FAMILIES = ("exponential", "erlang:0.5", "hyperexponential:3", "lognormal:2", "gamma:2", "gamma:0.5", "gamma:0.7",
            "gamma:3")


def _label(ops: collections.Counter) -> str:
    if ops["xor"] >= 18:
        return "threefry"
    if ops["exponential"]:
        return "exp"
    if ops["select"] >= 20 and ops["shift-left"] >= 4:
        return "policy"
    if ops["multiply"] >= 30 and ops["sqrt"]:
        return "quantile"
    if ops["multiply"] >= 10 and ops["bitcast-convert"] >= 2:
        return "log"
    return "other"


def _fusion_ops(hlo: str) -> dict[str, collections.Counter]:
    """Op counts of every fused computation, by the name of the fusion instruction that calls it."""
    comps = {}
    for block in re.split(r"\n(?=%|ENTRY)", hlo):
        name = block.split(" ", 1)[0].lstrip("%")
        comps[name] = collections.Counter(re.findall(r"= \S+ ([a-z][a-z-]*)\(", block))
    out = {}
    for m in re.finditer(r"%(\S+) = \S+ fusion\(.*?calls=%([\w.\-]+)", hlo):
        out[m.group(1)] = comps.get(m.group(2), collections.Counter())
    return out


def profile(family: str, reps: int, repeats: int) -> dict:
    import jax
    from jax.profiler import ProfileData

    import jaxq  # noqa: F401

    jax.config.update("jax_enable_x64", True)  # this script calls jaxq's internals: float64 for its process
    from jaxq.bench.pss2x2 import family_system
    from jaxq.mc import replications, rng
    from jaxq.sim import event, pss2x2
    from jaxq.sim.models import pss2x2 as model

    st = pss2x2.setup(family_system(family), 100, policy="P", horizon=1e6)
    prog = event.program(model.event_model(st.spec, False, False), 128, 1)
    states = prog.start(rng.keys(0, 0, reps), st.params)
    exe = jax.jit(prog.advance).lower(states, st.params).compile()
    ops = _fusion_ops(exe.as_text())
    states, _, work = exe(states, st.params)
    jax.block_until_ready(states)
    best: dict[str, float] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            with jax.profiler.trace(d):
                states, _, work = exe(states, st.params)
                jax.block_until_ready(states)
            data = ProfileData.from_file(glob.glob(f"{d}/**/*.xplane.pb", recursive=True)[0])
        durations = collections.defaultdict(list)
        for plane in data.planes:
            for line in plane.lines:
                for ev in line.events:
                    durations[ev.name].append(ev.duration_ns)
        for name, d in durations.items():
            if len(d) >= 64 and not name.startswith("end:") and "Thunk" not in name:  # once per step
                best[name] = min(best.get(name, float("inf")), statistics.median(d))
    kernels = {k: v / reps for k, v in best.items()}
    labels = collections.Counter()
    for k, v in kernels.items():
        labels["copy" if k.startswith("copy") else _label(ops.get(k, collections.Counter()))] += v
    events = int(work) / reps  # events per replication per call (= steps: nothing finishes)
    return {"family": family, "method": st.spec.methods[0], "reps": reps, "steps_per_call": events,
            "ns_per_event": sum(kernels.values()), "by_label": dict(labels.most_common()),
            "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1]))}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--cpu", type=int, default=None, help="pin the process to this core")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    rows = []
    for fam in args.families.split(","):
        r = profile(fam.strip(), args.reps, args.repeats)
        rows.append(r)
        if not args.json:
            share = ", ".join(f"{k} {v:.1f}" for k, v in r["by_label"].items())
            print(f"{r['family']:20s} {r['method']:17s} {r['ns_per_event']:6.1f} ns/event ({share})", flush=True)
    exp = next((r["ns_per_event"] for r in rows if r["family"] == "exponential"), None)
    if exp and not args.json:
        print("per event against exponential: " + ", ".join(f"{r['family']} {r['ns_per_event'] / exp:.2f}x"
                                                           for r in rows))
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
    return rows


if __name__ == "__main__":
    main()
