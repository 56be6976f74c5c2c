"""Where the control variates are weakest: what the random systems with the least variance reduction share.

Reads the committed 240-system run (``experiments/results/random_systems/summary.csv`` and ``systems.csv``; the
root rule at n = 10^4, 16 replications, the coarse controls) and prints, for each feature of a system or of its
run, Spearman's rank correlation with log(variance reduction) and its p-value, then the systems with the weakest
controls with their primitives. Nothing is simulated.

    python experiments/weak_controls.py [--n 10000] [--rule root@0.34] [--worst 10]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

RESULTS = Path(__file__).resolve().parent / "results" / "random_systems"


def _num(x: str) -> float:
    try:
        return float(x)
    except ValueError:
        return float("nan")


def _scvs(laws: str) -> list[float]:
    """The SCVs of a ``family:scv family:scv ...`` column of systems.csv."""
    return [float(t.split(":")[1]) for t in laws.split()]


def features(rows: list[dict], systems: dict) -> dict[str, np.ndarray]:
    """Per row: the run's deviations from the limit and the system's variability."""
    def col(f):
        return np.array([f(r) for r in rows], dtype=float)

    return {
        "|J_n/V0 - 1|": col(lambda r: abs(_num(r["J_over_V0"]) - 1)),
        "mean X_hat_p (collapse)": col(lambda r: _num(r["X_hat_p_mean"])),
        "sup X_hat_p": col(lambda r: _num(r["sup_X_hat_p"])),
        "idling with jobs waiting": col(lambda r: _num(r["idle_while_waiting_1"]) + _num(r["idle_while_waiting_2"])),
        "threshold term / V0": col(lambda r: _num(r["threshold_term_over_V0"])),
        "max interarrival SCV": col(lambda r: max(_scvs(systems[r["system"]]["interarrival"]))),
        "max SCV of all primitives": col(lambda r: max(_scvs(systems[r["system"]]["interarrival"] + " "
                                                              + systems[r["system"]]["service"]))),
        "gamma": col(lambda r: _num(systems[r["system"]]["gamma"])),
        "switching rate": col(lambda r: _num(r["switch_rate"])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="10000")
    ap.add_argument("--rule", default="root@0.34")
    ap.add_argument("--worst", type=int, default=10)
    args = ap.parse_args()
    rows = [r for r in csv.DictReader(open(RESULTS / "summary.csv"))
            if r["n"] == args.n and r["rule"] == args.rule]
    systems = {r["system"]: r for r in csv.DictReader(open(RESULTS / "systems.csv"))}
    vr = np.array([float(r["variance_reduction"]) for r in rows])
    reps = sorted({r["reps"] for r in rows})
    print(f"{len(rows)} systems at n = {args.n} ({args.rule}, replications {', '.join(reps)}): variance reduction "
          f"min {vr.min():.1f}, median {np.median(vr):.0f}, max {vr.max():.0f}")
    f = features(rows, systems)
    print(f"{'feature':28s} {'systems':>7s} {'rho':>6s} {'p':>8s}")
    for name, v in f.items():
        ok = np.isfinite(v)
        rho, p = spearmanr(v[ok], np.log(vr[ok]))
        print(f"{name:28s} {int(ok.sum()):7d} {rho:+6.2f} {p:8.1e}")
    weak = vr <= np.quantile(vr, 0.1)
    print(f"weakest tenth ({int(weak.sum())} systems) against the rest, medians: max SCV "
          f"{np.median(f['max SCV of all primitives'][weak]):.1f} / {np.median(f['max SCV of all primitives'][~weak]):.1f}, "
          f"|J_n/V0 - 1| {np.median(f['|J_n/V0 - 1|'][weak]):.3f} / {np.median(f['|J_n/V0 - 1|'][~weak]):.3f}")
    for i in np.argsort(vr)[:args.worst]:
        s = systems[rows[i]["system"]]
        print(f"{rows[i]['system']:9s} VR {vr[i]:6.1f}  J_n/V0 {_num(rows[i]['J_over_V0']):.3f}  "
              f"{s['interarrival']} | {s['service']}")


if __name__ == "__main__":
    main()
