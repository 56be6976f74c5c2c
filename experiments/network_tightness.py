"""Tightness of the stationary laws of X_hat^n over n for the N and M networks under SWC (seed 001).

Theorem 2.1 (iv): with spare capacity rho_n > 0 the invariant distributions of X_hat^n are tight,
uniformly over SWC policies. We simulate the n-th system under the ``swc`` policy for n = 25 ... 6400,
record the time-weighted histogram of <e, X_hat^n> and its idleness E<e, X_hat>^- and queue E<e, X_hat>^+,
and check that they settle as n grows (and that the idleness approaches the spare capacity for the
class-dependent part of (3.6)).

Usage: python experiments/network_tightness.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxq  # noqa: E402
from jaxq.diffusion.network import diffusion_limit  # noqa: E402
from jaxq.model import load  # noqa: E402
from jaxq.sim import network_ctmc as C  # noqa: E402
from jaxq.studies.storage import write_table

EX = Path(jaxq.__file__).parent / "examples"


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "network_tightness"))
    ap.add_argument("--policy", default="swc")
    a = ap.parse_args(argv)
    ns = [25, 100] if a.small else [25, 100, 400, 1600, 6400]
    reps, warmup, horizon = (8, 5.0, 25.0) if a.small else (32, 10.0, 60.0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, name in zip(axes, ("N", "M")):
        net = load(EX / f"network_{name}.toml")
        st = C.setup(net)
        rho = diffusion_limit(net, st.plan).spare_capacity
        for n in ns:
            r = C.run(st, n, a.policy, reps=reps, warmup=warmup, horizon=horizon, seed=11)
            q_hat = r["mean_queue"].sum() / math.sqrt(n)
            rows.append(
                {
                    "network": name,
                    "n": n,
                    "policy": a.policy,
                    "spare_capacity": rho,
                    "mean_idleness_hat": r["mean_idleness_hat"],
                    "mean_idleness_hat_stderr": r["mean_idleness_hat_stderr"],
                    "mean_queue_hat": q_hat,
                    "mean_idle_hat": r["mean_idle_total"] / math.sqrt(n),
                    "events_per_s": r["events_per_s"],
                }
            )
            e = r["hist_edges"]
            ax.plot(0.5 * (e[1:] + e[:-1]), r["hist_density"][-1], label=f"n={n}")
        ax.set_title(f"{name} network, {a.policy}: density of <e, X_hat^n>")
        ax.set_xlabel("<e, X_hat>")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "network_tightness.png", dpi=100)
    plt.close(fig)
    write_table(Path(out), "network_tightness", rows)  # CSV (+ Parquet with pyarrow)
    for row in rows:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    return rows


if __name__ == "__main__":
    main()
