"""Transience when the spare capacity is negative (seed 001, Propositions 3.1 and 3.2).

The N network with negative safety staffing (pool_size_hat < 0) has rho < 0. Under the SWC policy the
diffusion-scaled total <e, X_hat^n(t)> of the n-th system grows linearly in t (queues build up); the Euler
path of the diffusion (2.27) does the same. We record both along time.

Usage: python experiments/network_transience.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxq.diffusion.network import diffusion_limit  # noqa: E402
from jaxq.model.network import from_dict  # noqa: E402
from jaxq.sde.network_euler import simulate_diffusion  # noqa: E402
from jaxq.sim import network_ctmc as C  # noqa: E402
from jaxq.studies.storage import write_table

NEGATIVE_N = {
    "system": {
        "kind": "network",
        "lambda": [0.6, 1.1],
        "mu": [[1.0, 0.0], [1.5, 1.0]],
        "pool_size": [1.0, 0.5],
        "pool_size_hat": [-0.3, -0.2],
    }
}


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "network_transience"))
    a = ap.parse_args(argv)
    ns = [25, 100] if a.small else [100, 400, 1600]
    reps, horizon = (8, 20.0) if a.small else (32, 100.0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    net = from_dict(NEGATIVE_N)
    st = C.setup(net)
    dl = diffusion_limit(net, st.plan)
    times = np.linspace(0.0, horizon, 21)[1:-1]
    rows = []
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for n in ns:
        r = C.run(st, n, "swc", reps=reps, warmup=0.0, horizon=horizon, seed=21, snap_times=times)
        centre = (st.plan.xi * r["pool_sizes"]).sum(axis=1).sum()
        s_hat = (r["snapshots_all"].sum(axis=2) - centre) / np.sqrt(n)
        m, se = s_hat.mean(axis=0), s_hat.std(axis=0, ddof=1) / np.sqrt(reps)
        for t, v, e in zip(times, m, se):
            rows.append({"source": f"ctmc n={n}", "t": t, "sum_x_hat": v, "stderr": e, "spare_capacity": dl.spare_capacity})
        ax.errorbar(times, m, yerr=se, label=f"CTMC n={n}", capsize=2)
    d = simulate_diffusion(dl, [0.5, 0.5], [0.5, 0.5], "proportional", paths=64 if a.small else 256, dt=0.02,
                           horizon=horizon, warmup=0.0, seed=22, snaps=40)
    for t, v in zip(d["times"], d["mean_sum_path"]):
        rows.append({"source": "diffusion", "t": t, "sum_x_hat": v, "stderr": float("nan"), "spare_capacity": dl.spare_capacity})
    ax.plot(d["times"], d["mean_sum_path"], "k--", label="diffusion (Euler)")
    ax.set_title(f"N network, spare capacity {dl.spare_capacity:.3f} < 0")
    ax.set_xlabel("t")
    ax.set_ylabel("E <e, X_hat(t)>")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "network_transience.png", dpi=100)
    plt.close(fig)
    write_table(Path(out), "network_transience", rows)  # CSV (+ Parquet with pyarrow)
    growth = np.polyfit(times, m, 1)[0]
    print(f"spare capacity {dl.spare_capacity:.4f}; CTMC n={ns[-1]} growth rate of E<e,X_hat(t)>: {growth:.4f} per unit time")
    return rows


if __name__ == "__main__":
    main()
