"""The best levels of Theorem 2.11's policy family on the random systems that the default rule leaves above 1.3.

Can *any* threshold of the family bring J_n / V0 within 1.3 at n = 10^4 on these systems, or is the target out of
the family's reach there? For every random system (experiments/random_systems_excursion.toml's draw) whose J_n /
V0 at 10^4 under the excursion rule exceeds 1.3, J_n is estimated on a grid of levels: Theta_n on integers of a
log grid in [1, 4 sqrt(n)] (12 points) and, for a policy that switches modes, z at z* times 4^k, k = -3..3
(z = 64 z*: almost never leaves the lower mode; z*/64: almost always in the upper one). All grid points share
the replications (common random numbers), so the surface is smooth in the levels; then every integer Theta from
floor(b / 2^(1/2)) to ceil(b 2^(1/2)) around the grid's best b, at z within a factor 2 of it (steps of 2^(1/2)),
is tried. The best point
found is then estimated again on fresh replications (a seed the search never used), beside the excursion rule's
levels on the same replications: the search's minimum is biased down (the least of many noisy estimates), the
fresh estimate is not.

    python experiments/family_best.py                   # about 30 minutes on 2 cores
    python experiments/family_best.py --systems T2_025 T2T2_015 --out /tmp/x

A stopped run goes on where it stopped (systems already in family_best.csv are kept).

Writes ``family_best.csv`` (one row per system: the best levels, J_n / V0 of the best and of the excursion rule on
fresh replications with standard errors), ``surface.csv`` (every point tried) and ``family_best.md`` to
experiments/results/family_best/, after every system.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time
from pathlib import Path

import numpy as np

from jaxq.diffusion.workload import analyze
from jaxq.policies.thresholds import Levels
from jaxq.precision import float64
from jaxq.sim import pss2x2 as sim
from jaxq.studies.random_draw import draw_system
from jaxq.studies.storage import write_table

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "results", "random_systems_excursion", "summary.csv")
N = 10_000
SEARCH_REPS, SEARCH_SEED = 16, 1  # the study's replications and seed at 10^4
EVAL_REPS, EVAL_SEED = 64, 2  # fresh replications for the best point and the rule's levels
Z_GRID = 4.0 ** np.arange(-3, 4)  # x z*
THETA_POINTS = 12


def above(limit: float = 1.3, n: int = N) -> list[str]:
    """The labels of the threshold systems above ``limit`` at ``n`` under the excursion rule, worst first."""
    with open(SUMMARY) as f:
        rows = [r for r in csv.DictReader(f) if r["n"] == str(n) and float(r["J_over_V0"]) > limit]
    return [r["system"] for r in sorted(rows, key=lambda r: -float(r["J_over_V0"]))]


def _run(system, an, n, reps, seed, levels):
    r = sim.simulate(system, float(n), reps, policy="auto", analysis=an, seed=seed,
                     truncation=sim.Truncation(engine="event", block=64), levels=levels,
                     outputs=sim.Outputs(cv=True))
    e = r.estimates["J_hat"]
    return e.value / an.V0, e.stderr / an.V0, r.info["theta"], r.info["switch_at"]


def _at(z, theta) -> Levels:
    return Levels.absolute(z, 0.0, float(theta))  # Theta_n = ceil(theta n^0) = theta


@float64  # jaxq's internals below the API are called here: float64, as the API computes
def best_levels(label: str, system, n: int = N, *, theta_points: int = THETA_POINTS, z_grid=Z_GRID,
                search_reps: int = SEARCH_REPS, eval_reps: int = EVAL_REPS, log=print) -> tuple[dict, list[dict]]:
    """The grid search and the fresh estimate for one system (module docstring): its row and the surface.
    ``theta_points`` (the log grid of Theta_n), ``z_grid`` (factors of z*) and the replications make it smaller."""
    an = analyze(system)
    dual = an.policy in ("T2T2", "T1T2", "T2T1")
    thetas = sorted({int(t) for t in np.round(np.geomspace(1.0, 4.0 * math.sqrt(n), theta_points))})
    zs = [float(an.z_star * f) for f in z_grid] if dual else [None]
    surface = []
    t0 = time.perf_counter()

    def tried(z, theta, stage):
        ratio, se, th, zz = _run(system, an, n, search_reps, SEARCH_SEED, _at(z, theta))
        surface.append({"system": label, "stage": stage, "theta": th, "z": zz, "z_over_z_star":
                        None if zz is None else zz / an.z_star, "J_over_V0": ratio, "stderr": se})
        return ratio

    for z in zs:
        for th in thetas:
            tried(z, th, "grid")
    best = min(surface, key=lambda r: r["J_over_V0"])
    near_t = range(max(1, math.floor(best["theta"] / 2 ** 0.5)), math.ceil(best["theta"] * 2 ** 0.5) + 1)
    near_z = [best["z"] * 2.0 ** (k / 2) for k in (-2, -1, 0, 1, 2)] if dual else [None]
    done = {(r["theta"], r["z"]) for r in surface}
    for z in near_z:
        for th in near_t:
            if (th, z) not in done:
                tried(z, th, "refine")
    best = min(surface, key=lambda r: r["J_over_V0"])
    fresh, fresh_se, _, _ = _run(system, an, n, eval_reps, EVAL_SEED, _at(best["z"], best["theta"]))
    rule, rule_se, rule_theta, rule_z = _run(system, an, n, eval_reps, EVAL_SEED, Levels())
    row = {"system": label, "policy": an.policy, "n": n, "V0": an.V0, "z_star": an.z_star,
           "best_theta": best["theta"], "best_z": best["z"], "best_search": best["J_over_V0"],
           "best_fresh": fresh, "best_fresh_stderr": fresh_se, "excursion_theta": rule_theta,
           "excursion_z": rule_z, "excursion_fresh": rule, "excursion_fresh_stderr": rule_se,
           "points": len(surface), "seconds": time.perf_counter() - t0}
    where = "-" if best["z"] is None else f"{best['z'] / an.z_star:.3g} z*"
    log(f"{label} ({an.policy}): best {fresh:.3f} +- {fresh_se:.3f} at Theta {best['theta']}, z {where}; "
        f"excursion {rule:.3f} +- "
        f"{rule_se:.3f} (Theta {rule_theta}); {len(surface)} points, {row['seconds']:.0f} s")
    return row, surface


def markdown(rows) -> str:
    head = ("| system | policy | V0 | best Theta_n | best z / z* | best J_n / V0 (fresh, +- se) | "
            "excursion J_n / V0 (same replications) | excursion Theta_n, z / z* |\n|---|---|---|---|---|---|---|---|\n")
    zf = (lambda z, r: "-" if z is None or (isinstance(z, float) and math.isnan(z)) else f"{z / r['z_star']:.3g}")
    return head + "\n".join(
        f"| {r['system']} | {r['policy']} | {r['V0']:.4g} | {r['best_theta']} | {zf(r['best_z'], r)} | "
        f"{r['best_fresh']:.3f} +- {r['best_fresh_stderr']:.3f} | {r['excursion_fresh']:.3f} +- "
        f"{r['excursion_fresh_stderr']:.3f} | {r['excursion_theta']}, {zf(r['excursion_z'], r)} |" for r in rows) + "\n"


def _read(file: Path) -> list[dict]:
    if not file.exists():
        return []
    with open(file) as f:
        return [{k: _value(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _value(v: str):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return None if v == "" else v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", nargs="*", help="labels CASE_jjj of the study's draw (default: those above 1.3)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "family_best"))
    args = ap.parse_args()
    labels = args.systems or above()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, surface = _read(out / "family_best.csv"), _read(out / "surface.csv")  # a stopped run goes on
    done = {r["system"] for r in rows}
    for label in labels:
        if label in done:
            continue
        case, j = label.rsplit("_", 1)
        row, pts = best_levels(label, draw_system(0, case, int(j)).system)
        rows.append(row)
        surface += pts
        write_table(out, "family_best", rows)
        write_table(out, "surface", surface)
        (out / "family_best.md").write_text(markdown(rows), encoding="utf-8")


if __name__ == "__main__":
    main()
