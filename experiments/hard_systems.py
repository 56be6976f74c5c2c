"""The hard random systems settled: every random threshold system whose J_n / V0 under the default policy (the
``excursion`` rule, a = 0.34) exceeds 1.3 at n = 10^4 in the random-systems study
(``experiments/results/random_systems_excursion/summary.csv``), taken to n = 10^5 (and 10^6 for as many as fit),
with a verdict each.

At every n the default policy's J_n is estimated to a standard error of at most 0.5% of V0 (a precision target in
units of V0: a 32-replication pilot on its own seed plans the replications, and the estimate is the prefix of the
fixed run with the seed of the study, so it is unbiased; ``jaxq.mc.target.plan``). Then, per system, the gap ``J_n / V0 - 1`` is fitted as ``C n^-r``
(weighted least squares on the logarithms, the points whose gap is above 2 standard errors, the covariance scaled
by the residuals when they exceed their errors, a Student t interval), and the verdict is

* ``converging`` where the 95% interval of r is above 0 (with the rate r and its interval);
* ``not converging`` where it is below 0 (the gap grows with n);
* ``at V0`` where the gap at the largest n is within 2 standard errors of 0;
* ``undecided`` otherwise.

Beside each J_n: ``threshold_term_over_V0`` (Delta_n / V0, the part of the gap the threshold itself costs, from the
limit; empty where the formula does not apply), and the idle and mode diagnostics of the run.

    python experiments/hard_systems.py                      # n = 10^2 ... 10^5 for all (about an hour, 2 cores)
    python experiments/hard_systems.py --n 1000000 --limit 4   # 10^6 for the four worst (resumable: rows kept)
    python experiments/hard_systems.py --n 1000000 --systems T2_017 T2T1_019   # 10^6 for the systems named

Writes ``experiments/results/hard_systems/``: ``runs.csv`` (one row per system and n, rewritten as runs finish; a row above the target runs again with a
pilot four times as long),
``summary.csv`` (the rows with the fitted rate and the verdict of their system), ``verdicts.md`` and
``gap.png``.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time

import numpy as np
from scipy import stats

import jaxq
from jaxq.precision import in_float64
from jaxq.studies.random_draw import draw
from jaxq.studies.stats import loglog_rate

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "results", "random_systems_excursion", "summary.csv")
OUT = os.path.join(HERE, "results", "hard_systems")
SEED = 1  # the random-systems study's seed: the replications are a prefix of the study's
SE_OF_V0 = 0.005  # the standard error to reach, as a share of V0
MAX_REPS = 20_000
PILOT = 32  # the fewest replications a run has: 8 control coefficients fitted on 14 once tripled the standard error
RUN_COLUMNS = ["system", "case", "n", "reps", "V0", "J_hat", "J_hat_stderr", "J_over_V0", "J_over_V0_stderr",
               "variance_reduction", "theta", "switch_at", "threshold_term_over_V0", "idle_while_waiting_1",
               "idle_while_waiting_2", "stopped_by", "events", "wall_s"]


def hard_systems(limit: float = 1.3) -> list[tuple[str, str, float]]:
    """``(label, case, J_n / V0)`` of the threshold systems above ``limit`` at n = 10^4, worst first."""
    with open(SOURCE) as f:
        rows = [r for r in csv.DictReader(f) if r["n"] == "10000" and float(r["J_over_V0"]) > limit]
    return [(r["system"], r["case"], float(r["J_over_V0"])) for r in sorted(rows, key=lambda r: -float(r["J_over_V0"]))]


def run_point(system, label: str, case: str, n: int, pilot_reps: int = PILOT, min_reps: int = 0) -> dict:
    """J_n of the default policy to a standard error of at most SE_OF_V0 V0: a pilot of PILOT replications on its
    own seed (``derived_seed(SEED, PILOT)``) measures the standard error, and the run is replications
    ``0 .. R-1`` of the study's seed with ``R`` from the pilot alone (:func:`jaxq.mc.target.plan`, its safety
    factor, never fewer than the pilot's nor than ``min_reps``: an accelerator wants thousands at once), so the
    estimate is unbiased (the target is absolute, in units of V0, which a relative target on J_n cannot state
    before J_n is known)."""
    from jaxq.mc import replications
    from jaxq.mc.rng import PILOT as PILOT_SEED, derived_seed
    from jaxq.mc.target import plan
    from jaxq.mc.result import with_work_of
    from jaxq.sim import pss2x2

    t0 = time.perf_counter()
    # the run has at least the pilot's replications: its first run beside the pilot, in one batch (bit for bit)
    with replications.ahead(derived_seed(SEED, PILOT_SEED), SEED, pilot_reps):
        pilot = pss2x2.simulate(system, n, pilot_reps, seed=derived_seed(SEED, PILOT_SEED))
        v0 = float(pilot.info["V0"])
        reps = int(min(max(plan(pilot.stderr, pilot_reps, SE_OF_V0 * v0), min_reps), MAX_REPS))
        res = with_work_of(pss2x2.simulate(system, n, reps, seed=SEED), pilot)
    wall = time.perf_counter() - t0
    diag = res.info.get("diagnostics") or {}
    idle = diag.get("idle_while_waiting") or [math.nan, math.nan]
    term = jaxq.threshold_term(system, n=n)
    return {"system": label, "case": case, "n": n, "reps": res.reps, "V0": v0, "J_hat": res.value,
            "J_hat_stderr": res.stderr, "J_over_V0": res.value / v0, "J_over_V0_stderr": res.stderr / v0,
            "variance_reduction": res.main.variance_reduction, "theta": res.info.get("theta"),
            "switch_at": res.info.get("switch_at"), "threshold_term_over_V0": "" if term is None else term / v0,
            "idle_while_waiting_1": idle[0], "idle_while_waiting_2": idle[1],
            "stopped_by": "target" if reps < MAX_REPS else "max_reps", "events": res.events, "wall_s": wall}


def fit_rate(ns, gaps, ses) -> tuple[float, float, float, float, int]:
    """``(r, r_low, r_high, C, points)``: gap = C n^-r fitted by :func:`jaxq.studies.stats.loglog_rate` (weighted
    least squares on logarithms, the covariance never below what the errors give) over the points with gap > 2 se,
    with a Student t 95% interval (NaN with fewer than 2 points; with 2 the line is exact and the interval from the
    errors alone, normal quantile)."""
    keep = [(n, g, s) for n, g, s in zip(ns, gaps, ses) if g > 2 * s]
    m = len(keep)
    if m < 2:
        return math.nan, math.nan, math.nan, math.nan, m
    slope, sd, c = loglog_rate(*zip(*keep), errors_floor=True)
    q = stats.t.ppf(0.975, m - 2) if m > 2 else stats.norm.ppf(0.975)
    return -slope, -slope - q * sd, -slope + q * sd, c, m


def verdict(rows: list[dict]) -> dict:
    rows = sorted(rows, key=lambda r: r["n"])
    ns = [r["n"] for r in rows]
    gaps = [r["J_over_V0"] - 1 for r in rows]
    ses = [r["J_over_V0_stderr"] for r in rows]
    r, lo, hi, c, m = fit_rate(ns, gaps, ses)
    last = rows[-1]
    if gaps[-1] <= 2 * ses[-1]:
        v = f"at V0 (gap within 2 standard errors at n = {last['n']:.0e})"
    elif m >= 2 and lo > 0:
        v = f"converging, rate {r:.2f} [{lo:.2f}, {hi:.2f}]"
    elif m >= 2 and hi < 0:
        v = f"not converging (gap grows, exponent {r:.2f} [{lo:.2f}, {hi:.2f}])"
    else:
        v = "undecided"
    return {"rate": r, "rate_low": lo, "rate_high": hi, "C": c, "fit_points": m, "verdict": v}


def read_runs(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        out = []
        for r in csv.DictReader(f):
            r = {k: (v if k in ("system", "case", "stopped_by") or v == "" else float(v)) for k, v in r.items()}
            r["n"] = int(r["n"])
            out.append(r)
        return out


def write_outputs(runs: list[dict]) -> None:
    by_system: dict[str, list[dict]] = {}
    for r in runs:
        by_system.setdefault(r["system"], []).append(r)
    verdicts = {s: verdict(rows) for s, rows in by_system.items()}
    cols = RUN_COLUMNS + ["rate", "rate_low", "rate_high", "fit_points", "verdict"]
    with open(os.path.join(OUT, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for s in by_system:
            for r in sorted(by_system[s], key=lambda r: r["n"]):
                w.writerow({**r, **verdicts[s]})
    lines = ["| system | case | largest n | J_n / V0 there | Delta_n / V0 | fitted rate r [95%] | verdict |",
             "|---|---|---|---|---|---|---|"]
    worst_first = sorted(by_system, key=lambda s: -max(by_system[s], key=lambda r: r["n"])["J_over_V0"])
    for s in worst_first:
        rows = by_system[s]
        last = max(rows, key=lambda r: r["n"])
        v = verdicts[s]
        rate = "" if math.isnan(v["rate"]) else f"{v['rate']:.2f} [{v['rate_low']:.2f}, {v['rate_high']:.2f}]"
        term = last["threshold_term_over_V0"]
        lines.append(f"| {s} | {last['case']} | {last['n']:.0e} | {last['J_over_V0']:.4f} +- "
                     f"{last['J_over_V0_stderr']:.4f} | {'' if term == '' else f'{term:.3f}'} | {rate} | {v['verdict']} |")
    with open(os.path.join(OUT, "verdicts.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s, rows in by_system.items():
        rows = sorted(rows, key=lambda r: r["n"])
        ax.errorbar([r["n"] for r in rows], [max(r["J_over_V0"] - 1, 1e-4) for r in rows],
                    yerr=[2 * r["J_over_V0_stderr"] for r in rows], marker="o", ms=3, lw=0.8, label=s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("J_n / V0 - 1 (default policy; bars: 2 standard errors)")
    ax.set_title("The hard random systems: the gap to V0 against n")
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "gap.png"), dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--limit", type=int, default=None, help="only the first (worst) systems")
    ap.add_argument("--systems", nargs="+", default=None, help="only these systems (labels, e.g. T2T2_015)")
    ap.add_argument("--budget", type=float, default=None, help="stop starting new runs after this many seconds")
    ap.add_argument("--min-reps", type=int, default=0,
                    help="at least this many replications per run (an accelerator's size: experiments/gpu/)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "runs.csv")
    runs = read_runs(path)
    done = {(r["system"], r["n"]) for r in runs if r["J_over_V0_stderr"] <= SE_OF_V0}
    missed = {(r["system"], r["n"]) for r in runs} - done  # run again with a 4x pilot (the same pilot plans the same)
    print(f"{len(done)} points kept, {len(runs) - len(done)} to run again", flush=True)
    hard = hard_systems()[: args.limit]
    if args.systems is not None:
        unknown = sorted(set(args.systems) - {h[0] for h in hard})
        if unknown:
            raise SystemExit(f"--systems: not hard systems: {', '.join(unknown)}")
        hard = [h for h in hard if h[0] in args.systems]
    print(f"{len(hard)} systems above 1.3 V0 at n = 10^4: {', '.join(h[0] for h in hard)}", flush=True)
    with in_float64():
        systems = {d.label: d.system for d in draw(0, 40)}  # the study's draw: draw_seed 0, 40 per case
    start = time.perf_counter()
    for n in args.n:  # every system at one n before the next n (worst first): a spent budget leaves whole n's
        for label, case, ratio in hard:
            if (label, n) in done:
                continue
            if args.budget is not None and time.perf_counter() - start > args.budget:
                print("budget spent; rerun to continue", flush=True)
                write_outputs(runs)
                return
            row = run_point(systems[label], label, case, n, 4 * PILOT if (label, n) in missed else PILOT,
                            args.min_reps)
            runs = [r for r in runs if (r["system"], r["n"]) != (label, n)] + [row]
            with open(path + ".tmp", "w", newline="") as f:  # rewritten whole after every run (atomic rename)
                w = csv.DictWriter(f, fieldnames=RUN_COLUMNS)
                w.writeheader()
                w.writerows(runs)
            os.replace(path + ".tmp", path)
            print(f"{label} n={n}: J/V0 = {row['J_over_V0']:.4f} +- {row['J_over_V0_stderr']:.4f} "
                  f"({row['reps']} reps, VR {row['variance_reduction']:.0f}, {row['wall_s']:.0f} s)", flush=True)
    write_outputs(runs)


if __name__ == "__main__":
    main()
