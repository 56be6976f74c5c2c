"""Tuned against theoretical policies of the n-th 2x2 system at several n.

For each n the switching level z and threshold Theta_n = ceil(c n^a) of the policy of Theorem 2.11 are tuned
(jaxq.tuning.prelimit: the search on common random numbers by default, ``--method gradient`` for Adam on
smoothed gradients); then J_n(tuned) and J_n(default: z*, the default Theta_n) are estimated on fresh
replications with common random numbers between them and compared with V0. The tuning's wall time is a column.

    python experiments/tune_prelimit.py [--small] [--system pss_T2T1] [--method search] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import jaxq  # noqa: F401
import jax  # noqa: E402
jax.config.update("jax_enable_x64", True)  # noqa: E402  (this script calls jaxq's internals: float64 for its process)
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.studies.storage import write_table
from jaxq.tuning import prelimit as TP
from jaxq.tuning.prelimit import tune_prelimit

HERE = os.path.dirname(os.path.abspath(__file__))


def run(system_name: str = "pss_T2T1", small: bool = False, out: str | None = None, method: str = "search") -> list[dict]:
    out = out or os.path.join(HERE, "results", "tune_prelimit")
    os.makedirs(out, exist_ok=True)
    s = load(path(system_name))
    a = analyze(s)
    ns = (16, 36) if small else (100, 400, 1000)
    its, reps, chains = (3, 16, 2) if small else (10, None, 3)
    rows = []
    for n in ns:
        r = tune_prelimit(s, n, seed=1, analysis=a,
                          procedure=TP.Procedure(method=method, iterations=its, reps=reps, chains=chains))
        ev = r.evaluation
        rows.append({
            "system": system_name, "n": n, "policy": a.policy, "z_star": a.z_star,
            "z_tuned": r.z, "z_lo": r.z_ci[0] if r.z_ci else None, "z_hi": r.z_ci[1] if r.z_ci else None,
            "c_tuned": r.c, "c_lo": r.c_ci[0] if r.c_ci else None, "c_hi": r.c_ci[1] if r.c_ci else None,
            "theta_theory": ev["theta_theory"], "theta_tuned": ev["theta_tuned"],
            "J_theory": ev["J_theory"], "J_theory_stderr": ev["J_theory_stderr"],
            "J_tuned": ev["J_tuned"], "J_tuned_stderr": ev["J_tuned_stderr"],
            "difference": ev["difference"], "difference_stderr": ev["difference_stderr"], "V0": a.V0,
            "method": r.method, "tune_s": r.cost["search_s"], "total_s": r.cost["wall_s"], "steps": r.cost["steps"],
            "eval_reps": ev["reps"], "eval_seed": ev["seed"],
        })
    write_table(Path(out), "tune_prelimit", rows)  # CSV (+ Parquet with pyarrow)
    figure(rows, os.path.join(out, "tune_prelimit.png"))
    return rows


def figure(rows, file):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.4), dpi=100)
    ax.errorbar(n, [r["J_theory"] for r in rows], yerr=[1.96 * r["J_theory_stderr"] for r in rows], fmt="o-",
                label="default (z*, default Theta_n)", capsize=3)
    ax.errorbar(n, [r["J_tuned"] for r in rows], yerr=[1.96 * r["J_tuned_stderr"] for r in rows], fmt="s--",
                label="tuned (z, c)", capsize=3)
    ax.axhline(rows[0]["V0"], color="k", lw=1, label="V0")
    ax.set(xscale="log", xlabel="n", ylabel="J_n", title=f"{rows[0]['system']} ({rows[0]['policy']})")
    ax.set_xticks(n, [str(v) for v in n])
    ax.minorticks_off()
    ax.legend()
    fig.tight_layout()
    fig.savefig(file)
    plt.close(fig)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--small", action="store_true")
    p.add_argument("--system", default="pss_T2T1")
    p.add_argument("--out", default=None)
    p.add_argument("--method", choices=("search", "gradient"), default="search")
    a = p.parse_args(sys.argv[1:])
    for row in run(a.system, a.small, a.out, a.method):
        print(row)
