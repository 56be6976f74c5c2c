"""Why does J_n move away from V0 under T1T2 on pss_T1T2 (the switched-policies paper, case 2(c))?

Decomposition used (alpha = (1, 1), beta = (0.7, 0.3) and EHTC: sum_i lambda_i/alpha_i = sum_k beta_k = 1):

    W_hat(t) = M(t) + D(t) + U(t),
    D(t) = int_0^t b(Xi_s) ds,       b(xi) = sum_i (lambda_hat_i - sum_k mu_hat_ik xi_ik)/alpha_i   (2.13)
    U(t) = sqrt(n) sum_k beta_k I_k(t)                         (the prelimit of the reflection term L)

with Xi_s the actual allocation (server k busy with class i) and M a zero-mean martingale (up to O(n^-1/2)
renewal edge terms). The SDE (2.24) has E Z(t) = E int b*(Z) + E L(t). We measure E D(t), E U(t) on [0, t_end],
U split by the level of W (W = 0, 0 < W <= Theta, Theta < W <= Theta + sqrt(n)/4, above) and by server and mode,
plus time fractions (x_q = 0 with x_p > 0, W <= Theta, mode), switches, and the discounted cost per class.

Runs the real jaxq event rule (jaxq.sim.models.pss2x2) wrapped by a step that only adds accumulators.

    python experiments/t1t2_diagnosis.py [--small]
writes experiments/results/t1t2_diagnosis/{diagnosis.csv, sde.csv, diagnosis.png}.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from functools import lru_cache, partial
from pathlib import Path
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import jaxq  # noqa: F401
import jax  # noqa: E402
jax.config.update("jax_enable_x64", True)  # noqa: E402  (this script calls jaxq's internals: float64 for its process)
from jaxq.diffusion.workload import analyze
from jaxq.model import load
from jaxq.sim import event
from jaxq.sim import pss2x2 as simmod
from jaxq.sim.event import EventModel
from jaxq.sim.models import pss2x2 as model
from jaxq.studies.storage import write_table

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEM = os.path.join(HERE, "..", "jaxq", "examples", "pss_T1T2.toml")
OUT = os.path.join(HERE, "results", "t1t2_diagnosis")

# accumulator layout (integrals over [0, t_end])
ACC = (
    "t_mode_lower", "t_mode_higher",
    "U_W0", "U_W_le_theta", "U_W_theta_to_theta_plus_q", "U_W_above",  # U by level of W
    "U_server1", "U_server2", "U_mode_lower", "U_mode_higher",
    "D",  # int b(Xi_s) ds
    "int_x1", "int_x2",
    "t_xq0_xp_pos",  # LPC empty in the system while the HPC has jobs
    "t_W_le_theta",
    "t_idle1_Wpos", "t_idle2_Wpos",
)
IX = {k: j for j, k in enumerate(ACC)}


class DParams(NamedTuple):
    base: model.Params
    t_end: jnp.ndarray
    beta: jnp.ndarray
    mu_hat: jnp.ndarray
    lam_hat_w: jnp.ndarray
    hpc: jnp.ndarray


class DState(NamedTuple):
    s: model.State
    acc: jnp.ndarray
    cls_cost: jnp.ndarray
    x_end: jnp.ndarray
    sw_end: jnp.ndarray


def _init_d(key, p: DParams, spec):
    return DState(model.event_model(spec).init(key, p.base), jnp.zeros(len(ACC), jnp.float64),
                  jnp.zeros(2, jnp.float64), jnp.zeros(2, jnp.int32), jnp.zeros((), jnp.int32))


def _step_d(d: DState, p: DParams, spec):
    s = d.s
    new = model.event_model(spec).step(s, p.base)  # a void event (gamma) leaves t: dt = 0
    pol = p.base.policy
    t0, t1 = s.t, new.t
    dt = jnp.maximum(jnp.minimum(t1, p.t_end) - t0, 0.0)
    xi = model.queues(s)
    x = xi.astype(jnp.float64)
    serving, mode = model.serving_and_mode(s)
    rn = 1.0 / p.base.inv_sqrt_n
    idle = (serving == -1).astype(jnp.float64)
    W = jnp.dot(pol.alpha_inv, x)
    th = pol.theta.astype(jnp.float64)
    bins = jnp.stack([W == 0, (W > 0) & (W <= th), (W > th) & (W <= th + 0.25 * rn), W > th + 0.25 * rn])
    push = rn * p.beta * idle * dt  # (2,) sqrt(n) beta_k dI_k
    u = jnp.sum(push)
    lower = (mode == pol.lower).astype(jnp.float64)
    # drift of the actual allocation: sum_i lam_hat_i/alpha_i - sum_k mu_hat[c_k, k]/alpha[c_k] (busy k)
    c = jnp.maximum(serving, 0)
    busy = 1.0 - idle
    b_act = p.lam_hat_w - jnp.sum(busy * p.mu_hat[c, jnp.arange(2)] * pol.alpha_inv[c])
    hp = p.hpc
    xp, xq = jnp.where(hp == 0, x[0], x[1]), jnp.where(hp == 0, x[1], x[0])
    inc = jnp.zeros(len(ACC), jnp.float64)
    inc = inc.at[IX["t_mode_lower"]].set(lower * dt).at[IX["t_mode_higher"]].set((1 - lower) * dt)
    inc = inc.at[IX["U_W0"]:IX["U_W_above"] + 1].set(bins.astype(jnp.float64) * u)
    inc = inc.at[IX["U_server1"]].set(push[0]).at[IX["U_server2"]].set(push[1])
    inc = inc.at[IX["U_mode_lower"]].set(lower * u).at[IX["U_mode_higher"]].set((1 - lower) * u)
    inc = inc.at[IX["D"]].set(b_act * dt)
    inc = inc.at[IX["int_x1"]].set(x[0] * dt / rn).at[IX["int_x2"]].set(x[1] * dt / rn)
    inc = inc.at[IX["t_xq0_xp_pos"]].set(((xq == 0) & (xp > 0)).astype(jnp.float64) * dt)
    inc = inc.at[IX["t_W_le_theta"]].set((W <= th).astype(jnp.float64) * dt)
    inc = inc.at[IX["t_idle1_Wpos"]].set(idle[0] * (W > 0) * dt).at[IX["t_idle2_Wpos"]].set(idle[1] * (W > 0) * dt)
    # discounted cost per class on [t0, min(t1, H)] (new.disc = exp(-gamma min(t1, H)))
    cls = d.cls_cost + p.base.h_hat * x * (s.disc - new.disc) / p.base.gamma
    in_end = (p.t_end >= t0) & (p.t_end < t1)
    sw = d.sw_end + ((model.serving_and_mode(new)[1] != mode) & (t1 <= p.t_end)).astype(jnp.int32)
    return DState(new, d.acc + inc, cls, jnp.where(in_end, xi, d.x_end), sw)


def _output_d(d: DState, p: DParams):
    return {"acc": d.acc, "cls_cost": d.cls_cost, "x_end": d.x_end, "sw_end": d.sw_end, "w_rec": d.s.obs["w_rec"]}


@lru_cache(maxsize=None)
def event_model_d(spec) -> EventModel:
    return EventModel(partial(_init_d, spec=spec), partial(_step_d, spec=spec),
                      lambda d, p: model.event_model(spec).done(d.s, p.base), _output_d,
                      lambda d: model.real_events(d.s))


def run_point(system, an, n, reps, policy, seed, t_end, horizon, theta_constant=1.0):
    levels = simmod.Levels(theta_constant=theta_constant, theta_rule="paper")  # the rule of the committed records
    st = simmod.setup(system, n, policy=policy, horizon=horizon, record_times=(t_end,), analysis=an, levels=levels)
    md = an.modes
    params = DParams(st.params, jnp.float64(t_end), jnp.asarray(md.beta), jnp.asarray(system.mu_hat),
                     jnp.float64(np.sum(system.lambda_hat / md.alpha)), jnp.int32(an.p))
    t = time.perf_counter()
    out, _ = event.run(event_model_d(st.spec), params, reps, seed, batching=simmod.Batching(chunk=min(reps, 100)))
    wall = time.perf_counter() - t
    acc = np.asarray(out["acc"])
    rn = math.sqrt(n)
    row = {"policy": st.policy, "n": n, "reps": reps, "theta_constant": theta_constant, "theta": st.theta,
           "theta_hat": (st.theta or 0) / rn, "wall_s": round(wall, 1)}

    def put(name, v):
        row[name] = float(np.mean(v))
        row[name + "_stderr"] = float(np.std(v, ddof=1) / math.sqrt(len(v)))

    put("W_hat_end", np.asarray(out["w_rec"])[:, 0])
    xe = np.asarray(out["x_end"]) / rn
    put("Xhat1_end", xe[:, 0])
    put("Xhat2_end", xe[:, 1])
    for j, k in enumerate(ACC):
        put(k, acc[:, j])
    U = acc[:, IX["U_W0"]:IX["U_W_above"] + 1].sum(axis=1)
    put("U", U)
    put("M_residual", np.asarray(out["w_rec"])[:, 0] - U - acc[:, IX["D"]])
    cc = np.asarray(out["cls_cost"])
    put("J_class1", cc[:, 0])
    put("J_class2", cc[:, 1])
    put("J", cc.sum(axis=1))
    put("switches_to_t_end", np.asarray(out["sw_end"]).astype(float))
    return row


def sde_reference(an, t_end, paths=20000, dt=2e-4, seed=7, switch=True):
    """E Z(t_end), E int_0^t b*(Z), E L(t_end) for (2.24) (exact-reflection Euler steps, numpy)."""
    rng = np.random.default_rng(seed)
    bL, sL, bH, sH = an.mode_coefficients()
    zs = an.z_star if switch else np.inf
    z = np.zeros(paths)
    L = np.zeros(paths)
    D = np.zeros(paths)
    tH = np.zeros(paths)
    for _ in range(int(round(t_end / dt))):
        hi = z > zs
        b = np.where(hi, bH, bL)
        s = np.where(hi, sH, sL)
        g = b * dt + s * math.sqrt(dt) * rng.standard_normal(paths)
        e = -2.0 * s * s * dt * np.log1p(-rng.random(paths))
        zn = np.maximum(z + g, 0.5 * (g + np.sqrt(g * g + e)))
        L += zn - (z + g)
        D += b * dt
        tH += hi * dt
        z = zn
    se = lambda v: float(np.std(v, ddof=1) / math.sqrt(paths))  # noqa: E731
    return {"model": "SDE (2.24)" if switch else "RBM mode L", "t_end": t_end, "EZ": z.mean(), "EZ_stderr": se(z),
            "ED": D.mean(), "ED_stderr": se(D), "EL": L.mean(), "EL_stderr": se(L), "t_higher": tH.mean()}


def plot(rows, sde, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), dpi=100)
    for pol, mk in (("T1T2", "o-"), ("T1@1", "s--"), ("P@1", "^:")):
        rs = [r for r in rows if r["policy"] == pol and r["theta_constant"] == 1.0]
        if not rs:
            continue
        n = [r["n"] for r in rs]
        axes[0].errorbar(n, [r["W_hat_end"] for r in rs], [2 * r["W_hat_end_stderr"] for r in rs], fmt=mk, label=pol)
        axes[1].errorbar(n, [r["U"] for r in rs], [2 * r["U_stderr"] for r in rs], fmt=mk, label=pol)
        axes[2].plot(n, [r["U_W_le_theta"] + r["U_W0"] for r in rs], mk, label=f"{pol}: W<=Theta")
        axes[2].plot(n, [r["U_W_theta_to_theta_plus_q"] + r["U_W_above"] for r in rs], mk, alpha=0.5,
                     label=f"{pol}: W>Theta")
    axes[0].axhline(sde[0]["EZ"], color="k", lw=0.8, label="E Z (SDE)")
    axes[1].axhline(sde[0]["EL"], color="k", lw=0.8, label="E L (SDE)")
    axes[0].set_title("E W_hat(t_end)")
    axes[1].set_title("E U(t_end) = sqrt(n) sum beta_k I_k")
    axes[2].set_title("U split by workload level")
    for a in axes:
        a.set_xscale("log")
        a.set_xlabel("n")
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="seconds: n in {100, 400}, few replications")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    system = load(SYSTEM)
    an = analyze(system)
    t_end = 2.0
    if args.small:
        grid, reps, horizon, paths = (100, 400), 40, 4.0, 4000
        policies = ("T1T2", "T1@1")
    else:
        grid, reps, horizon, paths = (100, 400, 1600, 3200), 300, 12.0, 20000
        policies = ("T1T2", "T1@1", "P@1")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for pol in policies:
        for n in grid:
            r = run_point(system, an, n, reps, pol, 2024, t_end, horizon)
            r["horizon"] = horizon
            rows.append(r)
            print(f"{pol:5s} n={n:5d}  W_hat({t_end:g})={r['W_hat_end']:.3f}+-{r['W_hat_end_stderr']:.3f}  "
                  f"U={r['U']:.3f}  D={r['D']:.3f}  M={r['M_residual']:.3f}  J={r['J']:.3f} "
                  f"(c1 {r['J_class1']:.3f}, c2 {r['J_class2']:.3f})  [{r['wall_s']}s]", flush=True)
    # Theta sweep at fixed n (Theta_n = ceil(c n^(5/12))): the excess should scale with Theta_hat.
    n_sw = 400 if args.small else 1600
    for c in ((0.25, 2.0) if args.small else (0.1, 0.25, 0.5, 2.0)):
        r = run_point(system, an, n_sw, reps, "T1T2", 2024, t_end, horizon, theta_constant=c)
        r["horizon"] = horizon
        rows.append(r)
        print(f"T1T2 c={c:4.2f} n={n_sw} Theta={r['theta']} W_hat={r['W_hat_end']:.3f}+-{r['W_hat_end_stderr']:.3f} "
              f"X1={r['Xhat1_end']:.3f} X2={r['Xhat2_end']:.3f} U={r['U']:.3f} J={r['J']:.3f} "
              f"(c1 {r['J_class1']:.3f}, c2 {r['J_class2']:.3f})", flush=True)
    # Definition 2.7 invariant counters of the event rule itself (all must be 0).
    chk = simmod.simulate(system, n_sw, 20 if args.small else 50, policy="T1T2", seed=1, analysis=an,
                          truncation=simmod.Truncation(horizon=horizon),
                          outputs=simmod.Outputs(debug=True))
    viol = chk.info["violations"]
    print("violations (T1T2, n=%d):" % n_sw, viol)
    with open(os.path.join(args.out, "violations.csv"), "w") as f:
        f.write("n,reps," + ",".join(viol) + "\n")
        f.write(f"{n_sw},{chk.reps}," + ",".join(str(v) for v in viol.values()) + "\n")
    sde = [sde_reference(an, t_end, paths=paths), sde_reference(an, t_end, paths=paths, switch=False)]
    for s in sde:
        print(s)
    write_table(Path(args.out), "diagnosis", rows)
    write_table(Path(args.out), "sde", sde)
    plot(rows, sde, os.path.join(args.out, "diagnosis.png"))
    return rows, sde


if __name__ == "__main__":
    main()
