"""Maps of the optimal thresholds q_L <= q_H of one fast and two slow servers (seed 002).

Solves a grid of (load, mu2/mu1) at once with ``vmap`` (:func:`jaxq.mdp.fastslow.solve_many`), for
the average cost and for a discounted cost, and writes ``fastslow_map.csv`` and ``fastslow_map.png``
to ``experiments/results/fastslow_map/``.

    python experiments/fastslow_map.py [--small]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from jaxq.mdp.fastslow import solve_many
from jaxq.studies.storage import write_table

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "fastslow_map")


def run(small: bool = False, out: str = OUT, alpha: float = 0.05) -> list[dict]:
    loads = np.linspace(0.1, 0.9, 3 if small else 9)
    ratios = np.linspace(0.1, 0.9, 3 if small else 9)  # mu2 / mu1, mu1 = 1
    L, R = np.meshgrid(loads, ratios, indexing="ij")
    mu2 = R.ravel()
    lam = L.ravel() * (1.0 + 2.0 * mu2)
    rows = []
    for crit, disc in (("average", None), ("discounted", np.full(lam.size, alpha))):
        t = time.perf_counter()
        res = solve_many(lam, np.ones_like(lam), mu2, disc, truncation=127 if small else 255)
        wall = time.perf_counter() - t
        key = "average_cost" if disc is None else "value_empty"
        for i in range(lam.size):
            rows.append({"criterion": crit, "load": L.ravel()[i], "lam": lam[i], "mu1": 1.0, "mu2": mu2[i],
                         "alpha": "" if disc is None else alpha, "q_L": int(res["q_thresholds"][i, 0]),
                         "q_H": int(res["q_thresholds"][i, 1]), "cost": float(res[key][i]),
                         "threshold_structure": bool(res["threshold"][i]), "converged": bool(res["converged"][i]),
                         "N": res["N"], "batch_wall_s": wall})
    os.makedirs(out, exist_ok=True)
    write_table(Path(out), "fastslow_map", rows)  # CSV (+ Parquet with pyarrow)
    _plot(rows, loads, ratios, os.path.join(out, "fastslow_map.png"))
    return rows


def _plot(rows, loads, ratios, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(8, 6.5), constrained_layout=True)
    for r, crit in enumerate(("average", "discounted")):
        sel = [x for x in rows if x["criterion"] == crit]
        for c, key in enumerate(("q_L", "q_H")):
            Z = np.array([x[key] for x in sel], dtype=float).reshape(len(loads), len(ratios))
            ax = axes[r, c]
            im = ax.imshow(Z.T, origin="lower", aspect="auto", cmap="viridis",
                           extent=(loads[0], loads[-1], ratios[0], ratios[-1]))
            for i, a in enumerate(loads):
                for j, b in enumerate(ratios):
                    ax.text(a, b, f"{int(Z[i, j])}", ha="center", va="center", fontsize=7, color="w")
            ax.set(title=f"{key} ({crit})", xlabel="load lam / (mu1 + 2 mu2)", ylabel="mu2 / mu1")
            fig.colorbar(im, ax=ax)
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="3 x 3 grid (seconds)")
    args = ap.parse_args()
    rows = run(args.small)
    print(f"{len(rows)} cases -> {OUT}; all threshold-structured: {all(r['threshold_structure'] for r in rows)}")
