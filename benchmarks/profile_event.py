"""Where a step of the event-driven 2x2 engine spends its time: ablations, measured side by side.

Run: ``python benchmarks/profile_event.py [--reps R] [--horizon T]`` (about a minute on a CPU).

The 2x2 system's event rule (:func:`jaxq.sim.models.pss2x2.engine`) is run on the event driver
(:func:`jaxq.sim.event.run`: all replications in one chunk, policy P, n = 100) on two systems
(``pss_P``: exponential primitives, one uniform per variate; ``pss_spec``: Erlang-4 and hyperexponential
services, four uniforms per variate) in three variants, each in a fresh process so that nothing compiled
leaks between them:

* ``full``: the engine as shipped;
* ``cheap_rng``: the counter-based Threefry generator (``fold_in`` per event and ``bits``) replaced by a
  splitmix64-style hash of (key, counter): a few integer operations per word instead of twenty rounds;
* ``cheap_rng_no_log``: as ``cheap_rng``, and every ``log`` in the samplers replaced by ``u - 1``; what is
  left is the cheap hash, the event logic, the policy, the cost integration and the driver (masking,
  scan and while loop). (Constant variates are no ablation: simultaneous events change the dynamics.)

The ablated variants are not correct simulations (they exist to time the pieces); their events per
second are comparable because every variant runs the same number of replications over the same
horizon, and the rate counts the events each one actually ran.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

VARIANTS = ("full", "cheap_rng", "cheap_rng_no_log")

CHILD = r"""
import json, sys
import jax, jax.numpy as jnp
import jaxq
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import event, pss2x2, sampling
from jaxq.sim.models import pss2x2 as model

variant, name, reps, horizon = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])


def _mix(x):
    x = (x ^ (x >> jnp.uint64(33))) * jnp.uint64(0xFF51AFD7ED558CCD)
    x = (x ^ (x >> jnp.uint64(33))) * jnp.uint64(0xC4CEB9FE1A85EC53)
    return x ^ (x >> jnp.uint64(33))


if variant in ("cheap_rng", "cheap_rng_no_log"):
    def fold_in(key, data):
        k = key.astype(jnp.uint64)
        h = _mix((k[0] << jnp.uint64(32) | k[1]) + jnp.asarray(data).astype(jnp.uint64) * jnp.uint64(0x9E3779B97F4A7C15))
        return jnp.stack([(h >> jnp.uint64(32)).astype(jnp.uint32), h.astype(jnp.uint32)])

    def open_uniforms(key, shape):
        k = key.astype(jnp.uint64)
        base = k[0] << jnp.uint64(32) | k[1]
        n = 1
        for d in shape:
            n *= d
        idx = jnp.arange(1, n + 1, dtype=jnp.uint64).reshape(shape)
        bits = _mix(base + idx * jnp.uint64(0x9E3779B97F4A7C15)) >> jnp.uint64(11)
        return (bits.astype(jnp.float64) + 0.5) * (2.0 ** -53)

    jax.random.fold_in = fold_in  # the event rule's per-event keys (and the replication keys)
    sampling.open_uniforms = open_uniforms
if variant == "cheap_rng_no_log":
    sampling.jnp = type("jnp_no_log", (), {k: getattr(jnp, k) for k in dir(jnp) if not k.startswith("__")})
    sampling.jnp.log = lambda u: u - 1.0

st = pss2x2.setup(load(path(name)), 100, policy="P", horizon=horizon)
rule = model.engine(st.spec)  # traced (with the patches above) on the first run


def rate(seed):
    out, timing = event.run(rule, st.params, reps, seed, chunk=reps)
    return float(out["events"].sum()) / (timing.wall_s - timing.compile_s)


rate(0)  # compiles
rates = sorted(rate(k) for k in (1, 2, 3))
print(json.dumps({"variant": variant, "system": name, "events_per_s": rates[1]}))
"""


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10_000)
    ap.add_argument("--horizon", type=float, default=8.0)
    args = ap.parse_args(argv)
    rows = []
    for name in ("pss_P", "pss_spec"):
        for variant in VARIANTS:
            out = subprocess.run([sys.executable, "-c", CHILD, variant, name, str(args.reps), str(args.horizon)],
                                 capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        full = rows[-len(VARIANTS)]["events_per_s"]
        for r in rows[-len(VARIANTS):]:
            r["ns_per_event"] = 1e9 / r["events_per_s"]
            r["speedup_vs_full"] = r["events_per_s"] / full
            print(f"{name:9s} {r['variant']:17s} {r['events_per_s']:10.3g} ev/s {r['ns_per_event']:7.1f} ns/event "
                  f"x{r['speedup_vs_full']:.2f}", flush=True)
    return rows


if __name__ == "__main__":
    main()
