"""Check a convergence study's small-n points against the exact J_n (no Monte Carlo).

For every row of a study's ``summary.csv`` with n <= ``--n-max`` this solves the truncated chain of that system
(the phases of its Erlang / hyperexponential primitives in the state) under the policy the row used, with the
same Theta_n and switching level (:func:`jaxq.exact_cost`), and prints the estimate's distance to it in standard
errors (the horizon's cut-off tail, ``truncation_bound``, counted on the estimate's side).

Run: ``python experiments/exact_check.py experiments/results/convergence_1e5 [--n-max 100] [--rtol 1e-4]
[--systems pss_P,pss_PP]`` (the six example systems at n = 100: about 17 minutes, most of it pss_T2T2, whose
chain needs a cap of 337 jobs, 4.1 million states and 4 GB; the others take 1-60 s each). Exits 1 when some
point is more than 4 standard errors away.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

import jaxq


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("study", help="a study's output directory (with summary.csv)")
    ap.add_argument("--n-max", type=float, default=100.0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--max-states", type=float, default=1.6e7)
    ap.add_argument("--systems", default=None, help="comma-separated (default: every system of the study)")
    args = ap.parse_args(argv)
    keep = None if args.systems is None else set(args.systems.split(","))
    rows = [r for r in csv.DictReader(open(Path(args.study) / "summary.csv"))
            if float(r["n"]) <= args.n_max and (keep is None or r["system"] in keep)]
    # the run's threshold rule (a run recorded before [grid] theta_rule existed used (2.29)'s c = 1)
    manifest = Path(args.study) / "manifest.json"
    grid = json.loads(manifest.read_text())["experiment"]["grid"] if manifest.exists() else {}
    rule = grid.get("theta_rule", "paper")
    worst = 0.0
    print(f"{'system':10s} {'policy':7s} {'n':>6s} {'theta':>5s} {'J_hat':>9s} {'stderr':>8s} {'exact J_n':>10s} "
          f"{'z':>6s} {'states':>9s} {'s':>6s}")
    for r in rows:
        t0 = time.perf_counter()
        switch_at = float(r["switch_at"]) if r["switch_at"] else None
        try:
            ex = jaxq.exact_cost(r["system"], float(r["n"]), policy=r["policy_used"], switch_at=switch_at,
                                 theta_exponent=float(r["theta_exponent"]), theta_rule=rule, rtol=args.rtol,
                                 max_states=args.max_states)
        except jaxq.InputError as e:
            print(f"{r['system']:10s} {r['policy_used']:7s} {float(r['n']):6g}  not solved: {e}")
            continue
        assert ex["theta"] == (int(r["theta"]) if r["theta"] else None), (ex, r)
        J, se, tb = float(r["J_hat"]), float(r["J_hat_stderr"]), float(r["truncation_bound"] or 0.0)
        gap = J - ex["J"]  # the estimate of J_T sits below J_n by at most the truncation bound
        z = (gap + min(tb, max(0.0, -gap))) / se
        worst = max(worst, abs(z))
        print(f"{r['system']:10s} {r['policy_used']:7s} {float(r['n']):6g} {r['theta'] or '-':>5s} {J:9.5f} {se:8.5f} "
              f"{ex['J']:10.5f} {z:6.2f} {ex['states']:9d} {time.perf_counter() - t0:6.1f}", flush=True)
    print(f"largest |z|: {worst:.2f}")
    return 0 if worst <= 4.0 and math.isfinite(worst) else 1


if __name__ == "__main__":
    sys.exit(main())
