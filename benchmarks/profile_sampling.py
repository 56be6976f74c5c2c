"""Per-event cost of the renewal-primitive sampling of the event engines: previous sampler vs new.

Run: ``python benchmarks/profile_sampling.py [--reps 10000] [--events 512] [--repeats 3] [--only NAME,...]``
(about two minutes on a 2-core CPU; ``--json`` prints the rows as JSON).

What is timed is the randomness of one event of the 2x2 event engine and nothing else: a vmapped
``lax.scan`` over events (``--reps`` replications, ``--events`` events each) whose step draws the
variates of two slots and adds them to the carry. The stream of each slot changes from event to
event (slot 0 an interarrival stream, slot 1 a service stream, as in the engine), so the per-stream
parameters are looked up as they are there.

* ``old``: ``reference_sampler.sample_with_key`` on ``fold_in(key, event)`` (what the engine did:
  a key per event, 53-bit uniforms from ``jax.random.bits``, ``jax.random.gamma``);
* ``new``: one :func:`jaxq.mc.rng.words` call per event (inline Threefry-2x32 on the event counter)
  and :func:`jaxq.sim.sampling.sample` (per-family exact transforms, no rejection loop but the rare
  gamma fallback).

Each configuration has all six streams of one family (``pss_spec``: the streams of the example
system ``pss_spec``, exponential, Erlang-4 and hyperexponential; ``mix``: one stream of each family but
deterministic), and the figure is the median of ``--repeats`` timed runs after a compiling one, in ns
per event (one event = two variates) on the whole machine. Ratios (``old/new``, ``new/exp``: against
the new exponential row) compare numbers measured in the same process.

The reference is a compiled sequential loop: numba (``@njit``, one core) drawing variates with
numpy's legacy generator exactly as the baseline of ``jaxq.bench.pss2x2`` does
(``-log(1 - random())``, ``gamma``, ``standard_normal``), in ns per variate and per core; a loop on
both cores costs half that per variate of the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxq  # noqa: F401
jax.config.update("jax_enable_x64", True)  # noqa: E402  (this script calls jaxq's internals: float64 for its process)
from jaxq.model.distributions import Dist
from jaxq.mc import rng
from jaxq.sim import sampling
from reference_sampler import sample_with_key  # this folder (python puts a script's folder first on the path)

FAMILIES = {  # deterministic is left out: its events draw nothing, XLA folds them away
    "exponential": ["exponential:1"] * 6,
    "erlang:0.5": ["erlang:0.5"] * 6,
    "erlang:0.25": ["erlang:0.25"] * 6,
    "hyperexponential:3": ["hyperexponential:3"] * 6,
    "lognormal:2": ["lognormal:2"] * 6,
    "gamma:0.5": ["gamma:0.5"] * 6,
    "gamma:2": ["gamma:2"] * 6,
    "pss_spec": ["exponential:1", "exponential:1", "erlang:0.25", "exponential:1", "exponential:1",
                 "hyperexponential:4"],
    "mix": ["exponential:1", "erlang:0.25", "gamma:0.5", "lognormal:2", "hyperexponential:3", "gamma:2"],
}


def _dists(names):
    out = []
    for s in names:
        name, _, scv = s.partition(":")
        out.append(Dist(name, float(scv)))
    return out


def _slots(e):
    """Stream indices of the two slots of event e (arrival stream, then a service stream)."""
    e = e.astype(jnp.int32)
    return jnp.stack([e % 2, 2 + (e // 2) % 4])


def _runner(kind, dists, reps, events):
    spec = sampling.spec_of(dists, proposals=1 if kind == "void" else sampling.DEFAULT_PROPOSALS)
    table = {k: jnp.asarray(v) for k, v in sampling.param_table(dists).items()}
    W = 2 * sampling.words_needed(spec)

    def event(key, e):
        idx = _slots(e)
        if kind == "old":
            return sample_with_key(jax.random.fold_in(key, e + 1), spec, table, idx), True
        if kind == "void":
            return sampling.sample_or_void(rng.words(key, e, W), spec, table, idx)
        return sampling.sample(rng.words(key, e, W), spec, table, idx, key, e), True

    def one(key):
        def body(carry, _):
            e, acc, done = carry
            v, ok = event(key, e)
            acc = jnp.where(ok, acc + v[0] + v[1], acc)  # a voided event is redone at the next step
            return (e + jnp.uint32(1), acc, done + jnp.where(ok, 1, 0)), None

        init = (jnp.uint32(0), jnp.zeros((), jnp.float64), jnp.zeros((), jnp.int32))
        (_, acc, done), _ = jax.lax.scan(body, init, None, length=events)
        return acc, done

    f = jax.jit(jax.vmap(one))
    base = jax.random.PRNGKey(0)
    keys = jax.vmap(lambda r: jax.random.fold_in(base, r))(jnp.arange(reps, dtype=jnp.uint32))
    return f, keys


def time_event(kind, dists, reps, events, repeats):
    """Median ns per completed event, the share of voided steps and the mean variate (about 1)."""
    f, keys = _runner(kind, dists, reps, events)
    t0 = time.perf_counter()
    acc, done = f(keys)
    acc.block_until_ready()
    compile_s = time.perf_counter() - t0
    ts, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        f(keys)[0].block_until_ready()
        ts.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    completed = int(np.sum(np.asarray(done)))
    return {
        "ns_per_event": statistics.median(ts) / completed * 1e9,
        "cpu_ns_per_event": statistics.median(cpu) / completed * 1e9,
        "voided": 1.0 - completed / (reps * events),
        "first_call_s": compile_s,
        "mean_variate": float(np.sum(np.asarray(acc))) / (2 * completed),
    }


def numba_per_variate(repeats, n=2_000_000):
    """ns per variate of numpy's samplers in a numba loop (one core), as the compiled baseline draws."""
    try:
        import numba
    except ImportError:
        return {}

    @numba.njit(cache=False)
    def loop(kind, a, n):
        np.random.seed(1)
        s = 0.0
        for _ in range(n):
            if kind == 0:
                s += np.random.random()
            elif kind == 1:
                s += -math.log(1.0 - np.random.random())
            elif kind == 2:
                x = 0.0
                for _ in range(4):
                    x -= math.log(1.0 - np.random.random())
                s += x / 4
            elif kind == 3:
                rate = 2.0 * a if np.random.random() < a else 2.0 * (1.0 - a)
                s += -math.log(1.0 - np.random.random()) / rate
            elif kind == 4:
                s += math.exp(a * np.random.standard_normal() - 0.5 * a * a)
            elif kind == 5:
                s += np.random.gamma(a, 1.0 / a)
        return s

    cases = {
        "random()": (0, 0.0),
        "exponential": (1, 0.0),
        "erlang:0.25": (2, 0.0),
        "hyperexponential:3": (3, 0.5 * (1 + math.sqrt(0.5))),
        "lognormal:2": (4, math.sqrt(math.log(3.0))),
        "gamma:0.5 (shape 2)": (5, 2.0),
        "gamma:2 (shape 0.5)": (5, 0.5),
    }
    out = {}
    for name, (kind, a) in cases.items():
        loop(kind, a, 10)
        ts = []
        for _ in range(repeats):
            t = time.perf_counter()
            loop(kind, a, n)
            ts.append(time.perf_counter() - t)
        out[name] = statistics.median(ts) / n * 1e9
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated configurations (default: all)")
    ap.add_argument("--no-old", action="store_true", help="skip the previous sampler")
    ap.add_argument("--no-numba", action="store_true", help="skip the numba reference")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = [s for s in args.only.split(",") if s] or list(FAMILIES)
    kinds = ("new", "void") if args.no_old else ("old", "new", "void")
    rows = []
    for name in names:
        dists = _dists(FAMILIES[name])
        row = {"config": name, "words_per_event": 2 * sampling.words_needed(sampling.spec_of(dists))}
        for kind in kinds:
            if kind == "void" and "gamma" not in sampling.spec_of(dists).methods:
                continue  # without gamma, sample_or_void is sample
            r = time_event(kind, dists, args.reps, args.events, args.repeats)
            row[kind] = r["ns_per_event"]
            row[f"{kind}_cpu"] = r["cpu_ns_per_event"]
            row[f"{kind}_first_call_s"] = r["first_call_s"]
            row[f"{kind}_mean_variate"] = r["mean_variate"]
            if kind == "void":
                row["voided"] = r["voided"]
        row["best"] = min(row["new"], row.get("void", math.inf))
        row["best_cpu"] = min(row["new_cpu"], row.get("void_cpu", math.inf))
        rows.append(row)
        if not args.json:
            cells = "  ".join(f"{k} {row[k]:7.1f}" for k in kinds if k in row)
            print(f"{name:20s} words {row['words_per_event']:2d}  {cells}  ns/event", flush=True)
    exp = next((r["best"] for r in rows if r["config"] == "exponential"), None)
    exp_cpu = next((r["best_cpu"] for r in rows if r["config"] == "exponential"), None)
    for r in rows:
        r["best_over_exponential"] = r["best"] / exp if exp else None
        r["best_cpu_over_exponential"] = r["best_cpu"] / exp_cpu if exp_cpu else None
    ref = {} if args.no_numba else numba_per_variate(args.repeats)
    if args.json:
        print(json.dumps({"reps": args.reps, "events": args.events, "rows": rows, "numba_ns_per_variate": ref}))
        return rows, ref
    print()
    print(f"ns per event (two variates), {args.reps} replications x {args.events} events, median of {args.repeats};")
    print("wall clock (CPU time of the process in brackets: steadier on a shared machine)")
    print("| configuration | words/event | old: fold_in + jax.random | new: sample (P = 4, fallback) "
          "| void: sample_or_void (P = 1, retried) | old / best new | best new / exponential |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        old = f"{r['old']:.1f} [{r['old_cpu']:.1f}]" if "old" in r else ""
        void = f"{r['void']:.1f} [{r['void_cpu']:.1f}] ({100 * r['voided']:.1f}% voided)" if "void" in r else ""
        oldnew = f"{r['old'] / r['best']:.1f}x" if "old" in r else ""
        rel = (f"{r['best_over_exponential']:.2f} [{r['best_cpu_over_exponential']:.2f}]"
               if r["best_over_exponential"] else "")
        new = f"{r['new']:.1f} [{r['new_cpu']:.1f}]"
        print(f"| {r['config']} | {r['words_per_event']} | {old} | {new} | {void} | {oldnew} | {rel} |")
    if ref:
        print()
        print("numba loop with numpy's generator, one core, ns per variate:")
        print("| draw | ns |")
        print("|---|---|")
        for k, v in ref.items():
            print(f"| {k} | {v:.1f} |")
    return rows, ref


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
