"""Where the control variates are weakest, measured: the 160 random threshold systems of the excursion study at
n = 10^4, 128 replications each, with the first-order controls alone and with the second-order ones.

The run is the study's (``experiments/random_systems_excursion.toml``: draw seed 0, 40 systems per case, the
default policy, seed 1), with 128 replications instead of 16: the study's 16 are its prefix. From the same
replications, per system:

* ``vr_first_128``, ``vr_128``: the variance reduction of the first-order controls (the 11 of the CTMC: V'(W_hat)
  dW_hat per stream, the renewal clocks' martingales in their age filtration; the linear and quadratic basis) and of
  all 17 (with the six second-order ones,
  ``((min(v, K_n) - 1)^2 - E[(min(v, K_n) - 1)^2]) dW_hat^2`` per stream, ``K_n = 1 + 2 sqrt(n)``), the full sets
  (128 replications afford them);
* ``vr_first_16``, ``vr_16``: the same two sets at 16 replications, the size of the study, where the replications
  afford only a coarse set of three (``jaxq.stats.controlled_mean``): the old coarse set (V' summed, the two linear
  controls) and the new one (V' summed, the second-order ones summed, the linear ones summed), each as the ratio
  of the summed plain and controlled variances of the eight disjoint blocks of 16.

    python experiments/controls_floor.py              # about 40 minutes on 2 cores (resumable: rows kept)
    python experiments/controls_floor.py --summary    # the table of the results page from the CSV
    python experiments/controls_floor.py --summary --csv experiments/results/controls_floor/systems_variate.csv

Writes ``experiments/results/controls_floor/systems.csv``. ``systems_variate.csv`` beside it is the same run with the
first-order controls of the variates (a weight fixed when the variate is drawn), before the age filtration.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "controls_floor")
CASES = ("T2", "T2T2", "T1T2", "T2T1")
N, REPS, BLOCK, SEED = 10_000, 128, 16, 1
FIRST_ORDER = tuple(range(11))  # the CTMC's controls; the renewal rule's first 11 columns
OLD_COARSE = (tuple(range(6)), (6,), (7,))  # the coarse set before the second-order controls
COLUMNS = ["system", "case", "laws", "max_scv", "J_over_V0", "plain_rel_se_128", "vr_first_128", "vr_128",
           "vr_first_16", "vr_16", "wall_s"]


def variance_reductions(J, C) -> dict:
    """The four variance reductions of one system's replications (module docstring)."""
    from jaxq.sim.models.pss2x2 import coarse_controls
    from jaxq.stats import controlled_mean

    idx = np.arange(len(J))

    def ratio(c, coarse, size):
        plain = ctl = 0.0
        for b in range(0, len(J), size):
            m = controlled_mean(J[b:b + size], c[b:b + size], idx[b:b + size], coarse=coarse)
            plain, ctl = plain + m.plain_stderr ** 2, ctl + m.stderr ** 2
        return plain / ctl

    first = C[:, list(FIRST_ORDER)]
    return {"vr_first_128": ratio(first, OLD_COARSE, len(J)), "vr_128": ratio(C, coarse_controls(C.shape[1]), len(J)),
            "vr_first_16": ratio(first, OLD_COARSE, BLOCK), "vr_16": ratio(C, coarse_controls(C.shape[1]), BLOCK)}


def summary(rows: list[dict]) -> str:
    """Min, quartiles and max of each variance reduction, and the weakest systems."""
    lines = ["| variance reduction at n = 10^4 | min | 25% | median | 75% | max |", "|---|---|---|---|---|---|"]
    names = {"vr_first_16": "first-order, 16 replications (coarse)", "vr_16": "with second order, 16 (coarse)",
             "vr_first_128": "first-order, 128 replications", "vr_128": "with second order, 128"}
    for key, label in names.items():
        v = np.array([float(r[key]) for r in rows])
        q = np.quantile(v, [0, 0.25, 0.5, 0.75, 1])
        lines.append(f"| {label} | " + " | ".join(f"{x:.1f}" if x < 100 else f"{x:.0f}" for x in q) + " |")
    lines += ["", f"{len(rows)} systems; the ten weakest with the first-order controls at 16 replications "
              "(first-order -> with second order, at 16 and at 128):"]
    for r in sorted(rows, key=lambda r: float(r["vr_first_16"]))[:10]:
        lines.append(f"{r['system']:9s} {float(r['vr_first_16']):6.1f} -> {float(r['vr_16']):6.1f}   "
                     f"{float(r['vr_first_128']):6.1f} -> {float(r['vr_128']):6.1f}   {r['laws']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--summary", action="store_true", help="print the table from the CSV and stop")
    ap.add_argument("--limit", type=int, default=None, help="only the first systems (a check)")
    ap.add_argument("--raw", default=None, help="also keep each system's J and controls here (.npz)")
    ap.add_argument("--csv", default=os.path.join(OUT, "systems.csv"), help="the table written (or summarised)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    path = args.csv
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    if args.summary:
        print(summary(rows))
        return

    from jaxq.precision import in_float64
    from jaxq.sim import pss2x2
    from jaxq.studies.storage import atomic_write
    from jaxq.studies.random_draw import draw

    done = {r["system"] for r in rows}
    with in_float64():
        drawn = [d for d in draw(0, 40) if d.case in CASES][: args.limit]
    for d in drawn:
        if d.label in done:
            continue
        t0 = time.perf_counter()
        res = pss2x2.simulate(d.system, N, REPS, seed=SEED)
        J, C = np.asarray(res.samples["J"]), np.asarray(res.samples["controls"])
        if args.raw:
            np.savez(os.path.join(args.raw, f"{d.label}.npz"), J=J, C=C)
        laws = list(d.system.interarrival) + [d.system.service[i][k] for i in range(2) for k in range(2)]
        row = {"system": d.label, "case": d.case, "laws": " ".join(str(x) for x in laws),
               "max_scv": max(x.scv for x in laws), "J_over_V0": res.main.plain / res.info["V0"],
               "plain_rel_se_128": res.main.plain_stderr / res.main.plain, **variance_reductions(J, C),
               "wall_s": time.perf_counter() - t0}
        rows.append(row)
        table = io.StringIO()  # rewritten whole after every system (atomically: a killed run keeps the last file)
        w = csv.DictWriter(table, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
        atomic_write(path, table.getvalue().encode())
        print(f"{d.label}: VR first-order {row['vr_first_128']:.1f} -> {row['vr_128']:.1f} at 128, "
              f"{row['vr_first_16']:.1f} -> {row['vr_16']:.1f} at 16 ({row['wall_s']:.0f} s)", flush=True)
    print(summary(rows))


if __name__ == "__main__":
    main()
