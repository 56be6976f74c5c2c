"""Concentration of the LAP stationary occupancies around r psi* as r grows (seed 003).

Seed 003 shows that under LAP the stationary occupancies Psi^r_ij deviate from r psi*_ij by
O(r^(1/2 + eps)). We simulate the underloaded example under ``lap`` for r = 25 ... 6400, measure
E|Psi^r_ij - r psi*_ij| (time average, summed over activities) and fit its log-log slope in r.

Usage: python experiments/network_lap_concentration.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import jaxq  # noqa: E402
from jaxq.model import load  # noqa: E402
from jaxq.sim import network_ctmc as C  # noqa: E402
from jaxq.studies.storage import write_table

EX = Path(jaxq.__file__).parent / "examples"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "network_lap_concentration"))
    a = ap.parse_args(argv)
    rs = [25, 50, 100] if a.small else [25, 100, 400, 1600, 6400]
    reps, warmup, horizon = (8, 5.0, 25.0) if a.small else (32, 10.0, 60.0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    st = C.setup(load(EX / "network_lap.toml"))
    rows = []
    for r in rs:
        res = C.run(st, r, "lap", reps=reps, warmup=warmup, horizon=horizon, seed=31)
        rows.append(
            {
                "r": r,
                "abs_dev": float(res["mean_abs_dev"].sum()),
                "abs_dev_stderr": float(np.sqrt((res["mean_abs_dev_stderr"] ** 2).sum())),
                "rms_dev": float(np.sqrt((res["rms_dev"] ** 2).sum())),
                "max_rel_fluid_error": float(np.abs(res["mean_busy"] / r - st.fluid_z).max()),
                "mean_queue_total": float(res["mean_queue"].sum()),
            }
        )
    slope, icept = np.polyfit(np.log([x["r"] for x in rows]), np.log([x["abs_dev"] for x in rows]), 1)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    rr = np.array([x["r"] for x in rows], float)
    ax.errorbar(rr, [x["abs_dev"] for x in rows], yerr=[x["abs_dev_stderr"] for x in rows], fmt="o", label="simulated")
    ax.plot(rr, np.exp(icept) * rr**slope, "-", label=f"fit r^{slope:.3f}")
    ax.plot(rr, rows[0]["abs_dev"] * (rr / rr[0]) ** 0.5, ":", label="r^(1/2)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("r")
    ax.set_ylabel("sum_ij E|Psi_ij - r psi*_ij|")
    ax.set_title("LAP: deviations from the equilibrium")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "network_lap_concentration.png", dpi=100)
    plt.close(fig)
    write_table(Path(out), "network_lap_concentration", rows)  # CSV (+ Parquet with pyarrow)
    print(f"fitted exponent {slope:.3f} (paper: deviations O(r^(1/2+eps)))")
    for row in rows:
        print(row)
    return {"exponent": float(slope), "rows": rows}


if __name__ == "__main__":
    main()
