"""Tuned against theoretical policies of the n-th 2x2 system at several n (issue: autodiff tuning).

For each n the switching level z and threshold constant c of the policy of Theorem 2.11 are tuned by
Adam on antithetic Gaussian-smoothing gradients (jaxq.tuning.prelimit), several independent chains
giving confidence intervals; then J_n(tuned) and J_n(theory: z*, c = 1) are estimated with common
random numbers and compared with V0.

    python experiments/tune_prelimit.py [--small] [--system pss_T2T1] [--out DIR]
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
from jaxq.tuning.prelimit import tune_prelimit

HERE = os.path.dirname(os.path.abspath(__file__))


def run(system_name: str = "pss_T2T1", small: bool = False, out: str | None = None) -> list[dict]:
    out = out or os.path.join(HERE, "results", "tune_prelimit")
    os.makedirs(out, exist_ok=True)
    s = load(path(system_name))
    a = analyze(s)
    ns = (16, 36) if small else (25, 100, 400)
    its, reps, chains = (3, 16, 2) if small else (10, 128, 3)
    rows = []
    for n in ns:
        r = tune_prelimit(s, n, iterations=its, reps=reps, chains=chains, seed=1, analysis=a)
        ev = r.evaluation
        rows.append({
            "system": system_name, "n": n, "policy": a.policy, "z_star": a.z_star,
            "z_tuned": r.z, "z_lo": r.z_ci[0] if r.z_ci else None, "z_hi": r.z_ci[1] if r.z_ci else None,
            "c_tuned": r.c, "c_lo": r.c_ci[0] if r.c_ci else None, "c_hi": r.c_ci[1] if r.c_ci else None,
            "theta_theory": ev["theta_theory"], "theta_tuned": ev["theta_tuned"],
            "J_theory": ev["J_theory"], "J_theory_stderr": ev["J_theory_stderr"],
            "J_tuned": ev["J_tuned"], "J_tuned_stderr": ev["J_tuned_stderr"],
            "difference": ev["difference"], "difference_stderr": ev["difference_stderr"], "V0": a.V0,
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
                label="theory (z*, c = 1)", capsize=3)
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
    a = p.parse_args(sys.argv[1:])
    for row in run(a.system, a.small, a.out):
        print(row)
