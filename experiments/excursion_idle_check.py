"""Where the T2 rule's dedicated server idles: the excursion model's lost service against the simulated path.

The excursion rule (jaxq.policies.excursion) weighs the held jobs against the service that the T2 rule's dedicated
server k1 loses when the protected queue p runs empty *in the bulk*: the other class q waits, so the other server
serves q and p's queue makes excursions below Theta_n. Near the bottom of the workload the picture differs: q's
queue empties, the other server turns to p, p's queue drains with the workload, and k1 idles there too, where the
limit idles as well (the workload's reflection at 0 in Definition 2.10) and a larger Theta_n does not help. This
script measures both with an observer of the path (docs/guides/observers.md) on the random
systems of case T2 at the rule's levels, beside the model's prediction ``lost / mu_{p k1}``:

* ``idle_bulk``: k1 idle while a job of q waits and the scaled workload ``W = (x_1 / alpha_1 + x_2 / alpha_2) /
  sqrt(n)`` exceeds twice the held jobs' workload ``2 Theta_n / (alpha_p sqrt(n))`` (the excursions the model
  describes);
* ``idle_waiting``: k1 idle while a job of q waits, anywhere (the diagnostics' ``idle_while_waiting``);
* ``idle``: k1 idle at all.

Shares of time under the discounted occupation measure, 64 replications.

    python experiments/excursion_idle_check.py     # about 8 minutes on 2 cores

Writes ``idle_check.csv`` and ``idle_check.png`` (each measured share against the prediction, log-log) to
experiments/results/excursion_idle_check/.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import jax.numpy as jnp

import jaxq
from jaxq.policies import excursion
from jaxq.policies import pss2x2 as pol
from jaxq.precision import float64
from jaxq.studies.random_draw import draw_system
from jaxq.studies.storage import write_table

HERE = os.path.dirname(os.path.abspath(__file__))
REPS, SEED = 64, 3
NS = (1000, 10000)
KEYS = ("idle", "idle_waiting", "idle_bulk")


def idle_observer(p: int, k1: int, alpha, sqrt_n: float, bulk: float) -> jaxq.Observer:
    """Shares of time (discounted occupation measure) that server ``k1`` idles: at all, while a job of the other
    class waits, and while one waits with the scaled workload ``(x_1 / alpha_1 + x_2 / alpha_2) / sqrt(n)`` above
    ``bulk``."""
    q = 1 - p

    def update(acc, seg, params):
        v = seg.held
        x = (v.x0, v.x1)
        serving_q = (v.s0 == q).astype(jnp.int32) + (v.s1 == q).astype(jnp.int32)
        q_waits = x[q] - serving_q > 0
        idle = (v.s0 if k1 == 0 else v.s1) < 0
        above = (v.x0 / alpha[0] + v.x1 / alpha[1]) / sqrt_n > bulk  # the workload (2.10)
        w = seg.weight
        return {"idle": acc["idle"] + jnp.where(idle, w, 0.0),
                "idle_waiting": acc["idle_waiting"] + jnp.where(idle & q_waits, w, 0.0),
                "idle_bulk": acc["idle_bulk"] + jnp.where(idle & q_waits & above, w, 0.0)}

    return jaxq.Observer(init=lambda params: {k: jnp.float64(0.0) for k in KEYS}, update=update,
                         finish=lambda acc, mass, params: {k: acc[k] / mass for k in KEYS})


@float64  # jaxq's internals below the API are called here: float64, as the API computes
def check(label: str, system, analysis, n: float, reps: int = REPS) -> dict:
    """One system of case T2 at ``n`` under the excursion rule: the model's predicted idle share of the dedicated
    server and the three measured shares (module docstring) with their standard errors."""
    resolved = pol.resolve(analysis, "auto", None)
    m = resolved.lower
    if resolved.rules.lower != pol.RULE_T2 or math.isfinite(resolved.z):
        raise ValueError(f"{label}: a single-mode T2 policy is checked here, not {analysis.policy}")
    theta = excursion.levels(analysis, resolved, n).theta
    held = excursion.held_queue(system, analysis.modes, m, pol.RULE_T2, float(theta))
    p, k1 = held.p, int(analysis.modes.k1[m])
    alpha = tuple(float(a) for a in analysis.modes.alpha)
    watch = idle_observer(p, k1, alpha, math.sqrt(n), 2.0 * theta / (alpha[p] * math.sqrt(n)))
    r = jaxq.simulate(system, n, reps, seed=SEED, observers={"k1": watch})
    if r.info["theta"] != theta:
        raise AssertionError(f"{label}: the run used Theta_n = {r.info['theta']}, the rule chose {theta}")
    row = {"system": label, "n": int(n), "theta": theta, "server": k1 + 1, "class": p + 1,
           "predicted": held.lost / float(system.mu[p, k1]), "J_over_V0": r.estimates["J_hat"].value / analysis.V0}
    for k in KEYS:
        e = r.estimates[f"k1_{k}"]
        row[k], row[f"{k}_stderr"] = float(e.value), float(e.stderr)
    return row


def figure(rows, file) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 4), sharey=True)
    lo, hi = 1e-6, 0.3
    for ax, k in zip(axes, KEYS):
        for n, mark in ((1000, "s"), (10000, "^")):
            pts = [r for r in rows if r["n"] == n]
            ax.scatter([r["predicted"] for r in pts], [max(r[k], lo) for r in pts], marker=mark, s=16,
                       alpha=0.7, label=f"n = {n:g}")
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), title=k.replace("_", " "),
               xlabel="predicted lost service / mu (excursion model)")
    axes[0].set_ylabel(f"measured share of time (below {lo:g}: at {lo:g})")
    axes[0].legend(fontsize=8)
    fig.suptitle("Dedicated server of the T2 rule: the 40 random systems of case T2 at the excursion rule's Theta_n")
    fig.tight_layout()
    fig.savefig(file, dpi=110)
    plt.close(fig)


def main() -> None:
    out = Path(HERE, "results", "excursion_idle_check")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in NS:
        for j in range(40):
            d = draw_system(0, "T2", j)
            rows.append(check(d.label, d.system, d.analysis, n))
        write_table(out, "idle_check", rows)
    figure(rows, out / "idle_check.png")
    for n in NS:
        g = [r for r in rows if r["n"] == n]
        for k in KEYS:
            ratio = sorted(r[k] / r["predicted"] for r in g)
            print(f"n = {n:g}, {k}: measured / predicted median {ratio[len(ratio) // 2]:.3g}, "
                  f"10% {ratio[len(ratio) // 10]:.3g}, 90% {ratio[9 * len(ratio) // 10]:.3g}")


if __name__ == "__main__":
    main()
