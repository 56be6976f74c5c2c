"""Variance reduction of the control variates from the diffusion limit, against n.

For each bundled system of Theorem 2.11 (the policy the theory picks) and n = 10^2 ... 10^5, runs
``jaxq.simulate`` with its default control variates and reports ``variance_reduction`` = (plain standard
error / controlled standard error)^2, the controlled and plain estimates, and the effective speed-up (events
per second x variance reduction). Exponential systems run on both drivers. The SDE row is ``jaxq sde`` at
dt = 1e-3 for each system. Same seed, same numbers.

    python benchmarks/variance_reduction.py [--reps 128] [--max-n 100000] [--out benchmarks/results/cv.json]
    python benchmarks/variance_reduction.py --models [--out benchmarks/results/cv_models.json]

prints a Markdown table (docs/results/variance-reduction.md's) and writes the rows as JSON. ``--models``: the other models' controls
instead (network N under priority on both drivers, M/M/c in the Halfin-Whitt regime, one fast and two slow
servers, the network diffusion's Euler scheme), one row per reported mean.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import jaxq
import jax  # noqa: E402
jax.config.update("jax_enable_x64", True)  # noqa: E402  (this script calls jaxq's internals: float64 for its process)
from jaxq.serialize import to_jsonable
from jaxq.sim.network import simulate_mmc

SYSTEMS = ("pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1")


def rows(reps: int, ns, sde_paths: int, seed: int):
    for name in SYSTEMS:
        system = jaxq.load(name)
        engines = ("uniformized", "event") if system.exponential else ("event",)
        for engine in engines:
            for n in ns:
                t = time.perf_counter()
                r = jaxq.simulate(system, n, reps, engine=engine, seed=seed)
                e = r.main
                yield {"system": name, "policy": r["policy"], "engine": engine, "n": n, "reps": reps,
                       "J_hat": e.value, "stderr": e.stderr, "J_plain": e.plain, "stderr_plain": e.plain_stderr,
                       "variance_reduction": e.variance_reduction, "V0": r["V0"], "events_per_s": r.events_per_s,
                       "effective_events_per_s": r.events_per_s * e.variance_reduction,
                       "wall_s": time.perf_counter() - t}
        s = jaxq.simulate_sde(system, paths=sde_paths, dt=1e-3, seed=seed)
        yield {"system": name, "policy": "SDE (skew, dt = 1e-3)", "engine": "sde", "n": None, "reps": sde_paths,
               "J_hat": s.value, "stderr": s.stderr, "J_plain": s.main.plain, "stderr_plain": s.main.plain_stderr,
               "variance_reduction": s.main.variance_reduction, "V0": s.info["V_exact"],
               "events_per_s": s.info["path_steps_per_s"],
               "effective_events_per_s": s.info["path_steps_per_s"] * s.main.variance_reduction, "wall_s": s.wall_s}


def model_rows(reps: int, seed: int):
    """Variance reduction of the Markov models' and the network diffusion's controls."""
    net = jaxq.load("network_N")

    def row(model, engine, n, r, keys):
        for k in keys:
            e = r.estimates[k]
            yield {"model": model, "engine": engine, "n": n, "reps": r.reps, "estimate": k, "value": e.value,
                   "stderr": e.stderr, "plain": e.plain, "stderr_plain": e.plain_stderr,
                   "variance_reduction": e.variance_reduction, "events_per_s": r.events_per_s,
                   "wall_s": r.wall_s}

    for engine in ("uniformized", "event"):
        for n in (100, 400):
            r = jaxq.simulate(net, n, reps=reps, policy="priority", engine=engine, seed=seed, hist_bins=0)
            yield from row("network_N, priority", engine, n, r, ("mean_queue", "mean_idle"))
    for c in (100, 400):  # Halfin-Whitt: lambda = c - sqrt(c), mu = 1
        r = simulate_mmc(c - c ** 0.5, 1.0, c, reps=reps, seed=seed)
        yield from row("M/M/c, lambda = c - sqrt(c)", "uniformized", c, r, ("mean_queue", "mean_in_system"))
    r = jaxq.simulate_fastslow(1.2, 1.0, 0.5, [3, 8], reps=reps, seed=seed)
    yield from row("fast/slow (lambda 1.2, mu 1, 0.5, 0.5; q = 3, 8)", "uniformized", None, r,
                   ("value_empty", "average_cost"))
    r = jaxq.simulate_network_sde(net, paths=reps, seed=seed)
    yield from row("network_N diffusion (Euler, dt = 0.01)", "euler", None, r, ("mean_neg", "mean_pos"))


def model_table(rs) -> str:
    lines = ["| model | engine | n | estimate | controlled | plain | VR |", "|---|---|---|---|---|---|---|"]
    for r in rs:
        n = "" if r["n"] is None else f"{r['n']:g}"
        cols = [np.atleast_1d(np.asarray(r[k], float)) for k in ("value", "stderr", "plain", "stderr_plain",
                                                                    "variance_reduction")]
        for i, (v, se, pv, pse, vr) in enumerate(zip(*cols)):  # vector estimates (per class): a row each
            name = r["estimate"] + (f"[{i + 1}]" if cols[0].size > 1 else "")
            lines.append(f"| {r['model']} | {r['engine']} | {n} | {name} | {v:.4f} ± {se:.4f} | {pv:.4f} ± {pse:.4f} "
                         f"| {vr:.3g} |")
    return "\n".join(lines)


def table(rs) -> str:
    ns = sorted({r["n"] for r in rs if r["n"] is not None})
    head = "| system | policy | engine | " + " | ".join(f"n = {n:g}" for n in ns) + " | SDE, dt = 1e-3 |"
    lines = [head, "|" + "---|" * (4 + len(ns))]
    for name in SYSTEMS:
        sde = next((r for r in rs if r["system"] == name and r["engine"] == "sde"), None)
        for engine in ("uniformized", "event"):
            sel = {r["n"]: r for r in rs if r["system"] == name and r["engine"] == engine}
            if not sel:
                continue
            pol = next(iter(sel.values()))["policy"]
            cells = [f"{sel[n]['variance_reduction']:.3g}" if n in sel else "" for n in ns]
            sde_cell = f"{sde['variance_reduction']:.3g}" if sde and engine == ("uniformized" if len(
                {r["engine"] for r in rs if r["system"] == name}) > 2 else "event") else ""
            lines.append(f"| {name} | {pol} | {engine} | " + " | ".join(cells) + f" | {sde_cell} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=128)
    ap.add_argument("--max-n", type=float, default=1e5)
    ap.add_argument("--sde-paths", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--models", action="store_true", help="the other models' controls (see the docstring)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    out = Path(a.out or Path(__file__).parent / "results" / ("cv_models.json" if a.models else "cv.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    if a.models:
        done = list(model_rows(a.reps, a.seed))
        out.write_text(json.dumps(to_jsonable(done), indent=1) + "\n")
        print(model_table(done))
        return
    ns = [n for n in (100, 1000, 10_000, 100_000) if n <= a.max_n]
    done = []
    for r in rows(a.reps, ns, a.sde_paths, a.seed):
        done.append(r)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
        out.write_text(json.dumps(to_jsonable(done), indent=1) + "\n")  # a run cut short keeps what it measured
    print(table(done))


if __name__ == "__main__":
    main()
