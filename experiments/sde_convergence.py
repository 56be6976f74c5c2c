"""Weak convergence of the reflected-SDE schemes: error of V_hat against dt, per scheme and system.

For each system (single mode: pss_P; dual mode, switching at z*: pss_T2T2, pss_T2T1) and each scheme
(projected Euler, exact reflection, skew-exact) the discounted cost V_hat(dt) is estimated with the same
paths count at a ladder of steps; the weak error ``V_hat - V_exact`` (V_exact from the HJB ODE) is plotted
log-log with a 95% band, and the order is fitted by weighted least squares on log|error| against log dt,
using only the steps whose error exceeds 2 standard errors (weights (error / stderr)^2: the delta method).
A second panel compares the law of Z(20) (skew scheme, pss_T2T1) with the exact stationary density.

Usage: python experiments/sde_convergence.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import jaxq  # noqa: E402
import jax  # noqa: E402
jax.config.update("jax_enable_x64", True)  # noqa: E402  (this script calls jaxq's internals: float64 for its process)
from jaxq.diffusion import stationary  # noqa: E402
from jaxq.diffusion.workload import analyze  # noqa: E402
from jaxq.model import load  # noqa: E402
from jaxq.sde.estimators import SCHEMES, SdeTruncation, stationary_check, wcp_coefficients, wcp_value  # noqa: E402
from jaxq.studies.storage import write_table

EX = Path(jaxq.__file__).parent / "examples"


def fit_order(dts, err, se):
    """Weighted least-squares slope of log|err| on log dt over significant points: (slope, stderr, count)."""
    dts, err, se = map(np.asarray, (dts, err, se))
    keep = np.abs(err) > 2 * se
    if keep.sum() < 2:
        return math.nan, math.nan, int(keep.sum())
    x, y = np.log(dts[keep]), np.log(np.abs(err[keep]))
    w = (err[keep] / se[keep]) ** 2
    a = np.stack([np.ones_like(x), x], 1)
    cov = np.linalg.inv(a.T @ (w[:, None] * a))
    coef = cov @ (a.T @ (w * y))
    resid = y - a @ coef
    dof = max(int(keep.sum()) - 2, 0)
    scale = max(1.0, float(w @ resid**2) / dof) if dof else 1.0  # inflate by the lack of fit
    return float(coef[1]), float(math.sqrt(cov[1, 1] * scale)), int(keep.sum())


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "sde_convergence"))
    ap.add_argument("--paths", type=int, default=None)
    a = ap.parse_args(argv)
    systems = ["pss_T2T2"] if a.small else ["pss_P", "pss_T2T2", "pss_T2T1"]
    dts = [0.2, 0.1] if a.small else [0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625]
    paths = a.paths or (256 if a.small else 40000)
    horizon = 3.0 if a.small else None
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in systems:
        an = analyze(load(EX / f"{name}.toml"))
        for scheme in SCHEMES:
            for k, dt in enumerate(dts):  # independent seeds: the errors at different dt are independent
                r = wcp_value(an, 0.0, None, dt=dt, truncation=SdeTruncation(horizon), paths=paths, seed=11 + k,
                              scheme_name=scheme)
                rows.append({
                    "system": name, "case": an.case, "scheme": scheme, "dt": dt, "paths": paths,
                    "V_hat": r.value, "stderr": r.stderr, "V_exact": r["V_exact"],
                    "error": r["V_hat"] - r["V_exact"], "horizon": r["horizon"],
                    "truncation_bound": r["truncation_bound"], "path_steps_per_s": r["path_steps_per_s"],
                })
                print(f"{name:9s} {scheme:6s} dt={dt:<8g} err={rows[-1]['error']:+.5f} +/- {r.stderr:.5f}", flush=True)
    write_table(Path(out), "errors", rows)  # CSV (+ Parquet with pyarrow)
    orders = []
    for name in systems:
        for scheme in SCHEMES:
            sel = [r for r in rows if r["system"] == name and r["scheme"] == scheme]
            slope, sd, n = fit_order([r["dt"] for r in sel], [r["error"] for r in sel], [r["stderr"] for r in sel])
            orders.append({"system": name, "scheme": scheme, "order": slope, "order_stderr": sd, "points_used": n,
                           "error_at_finest": sel[-1]["error"], "stderr_at_finest": sel[-1]["stderr"],
                           "path_steps_per_s": float(np.median([r["path_steps_per_s"] for r in sel]))})
    write_table(Path(out), "orders", orders)  # CSV (+ Parquet with pyarrow)
    # stationary law check (skew scheme, dual mode with negative upper drift)
    an = analyze(load(EX / ("pss_T2T2.toml" if a.small else "pss_T2T1.toml")))
    params, _ = wcp_coefficients(an)
    st = stationary_check(params, dt=0.05 if a.small else 0.01, paths=paths, seed=12, time_t=4.0 if a.small else 20.0)
    fig, axes = plt.subplots(1, len(systems) + 1, figsize=(4.2 * (len(systems) + 1), 3.6))
    colors = {"euler": "C3", "exact": "C0", "skew": "C2"}
    for ax, name in zip(axes, systems):
        for scheme in SCHEMES:
            sel = [r for r in rows if r["system"] == name and r["scheme"] == scheme]
            d = np.array([r["dt"] for r in sel])
            e = np.abs([r["error"] for r in sel])
            s = np.array([r["stderr"] for r in sel])
            o = next(x for x in orders if x["system"] == name and x["scheme"] == scheme)
            lab = f"{scheme}: order {o['order']:.2f}±{1.96 * o['order_stderr']:.2f}" if o["points_used"] >= 2 else \
                f"{scheme}: within noise"
            ax.plot(d, e, "o-", color=colors[scheme], label=lab)
            ax.fill_between(d, np.maximum(e - 1.96 * s, 1e-5), e + 1.96 * s, color=colors[scheme], alpha=0.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("dt")
        ax.set_ylabel("|V_hat - V_exact|")
        ax.set_title(f"{name} ({rows[[r['system'] for r in rows].index(name)]['case']})", fontsize=9)
        ax.legend(fontsize=7)
    ax = axes[-1]
    levels, b, s = (np.asarray(v) for v in params)
    top = float(np.quantile(st["samples"], 0.999))
    x = np.linspace(0, top, 400)
    ax.hist(st["samples"], bins=80, range=(0, top), density=True, alpha=0.5, label="Z(T), skew scheme")
    ax.plot(x, stationary.stationary_density(x, levels, b, s), "k-", label="speed-measure density")
    ax.set_title(f"stationary law: KS {st['ks']:.4f} (crit. {st['threshold']:.4f})", fontsize=9)
    ax.set_xlabel("z")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "sde_convergence.png", dpi=100 if not a.small else 50)
    plt.close(fig)
    for o in orders:
        print(f"{o['system']:9s} {o['scheme']:6s} order {o['order']:.3f} +/- {1.96 * o['order_stderr']:.3f} "
              f"({o['points_used']} points)  error at finest {o['error_at_finest']:+.5f} +/- {o['stderr_at_finest']:.5f}")
    print(f"stationary KS {st['ks']:.4f} threshold {st['threshold']:.4f} passed {st['passed']}")
    return {"rows": rows, "orders": orders, "stationary": {k: v for k, v in st.items() if k != "samples"}}


if __name__ == "__main__":
    main()
