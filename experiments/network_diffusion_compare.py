"""Prelimit vs diffusion limit: long-run averages of the class-dependent network under static priority.

Under ``priority`` the lower-priority class 2 holds the queue, so the limit control is u^c = e_2 (u^s is
irrelevant since B2 = 0 for class-dependent rates). We compare E<e, X_hat^n>^+ (scaled queue) and
E<e, X_hat^n>^- (scaled idleness) of the n-th system with those of the diffusion (2.27) by Euler.

Usage: python experiments/network_diffusion_compare.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import jaxq
from jaxq.diffusion.network import diffusion_limit
from jaxq.model import load
from jaxq.sde.network_euler import simulate_diffusion
from jaxq.sim import network_ctmc as C
from jaxq.studies.storage import write_table

EX = Path(jaxq.__file__).parent / "examples"


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "network_diffusion_compare"))
    a = ap.parse_args(argv)
    ns = [25, 100] if a.small else [25, 100, 400, 1600]
    reps, horizon = (8, 25.0) if a.small else (64, 200.0)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    net = load(EX / "network_classdep.toml")
    st = C.setup(net)
    dl = diffusion_limit(net, st.plan)
    d = simulate_diffusion(dl, [0.0, 1.0], [0.5, 0.5], "constant", paths=32 if a.small else 256, dt=0.01,
                           horizon=horizon, warmup=10.0, seed=41)
    rows = [{"source": "diffusion", "n": "inf", "queue_hat": d["mean_pos"], "queue_hat_stderr": d["mean_pos_stderr"],
             "idleness_hat": d["mean_neg"], "idleness_hat_stderr": d["mean_neg_stderr"]}]
    for n in ns:
        r = C.run(st, n, "priority", reps=reps, warmup=10.0, horizon=horizon, seed=42)
        rows.append({"source": "ctmc", "n": n, "queue_hat": r["mean_queue"].sum() / math.sqrt(n),
                     "queue_hat_stderr": math.sqrt((r["mean_queue_stderr"] ** 2).sum()) / math.sqrt(n),
                     "idleness_hat": r["mean_idleness_hat"], "idleness_hat_stderr": r["mean_idleness_hat_stderr"]})
    write_table(Path(out), "network_diffusion_compare", rows)  # CSV (+ Parquet with pyarrow)
    for row in rows:
        print({k: (round(float(v), 4) if not isinstance(v, str) else v) for k, v in row.items()})
    return rows


if __name__ == "__main__":
    main()
