# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Weak convergence to the reflected SDE and state-space collapse (the switched-policies paper)
#
# Under the policy of Theorem 2.11 the scaled workload W_hat^n(t) = (X_1/alpha_1 + X_2/alpha_2)/sqrt(n)
# converges in law to Z(t), the reflected SDE (2.24) with the optimal switching (2.25), and the
# high-priority class collapses: sup_[0,T] X_hat_p^n -> 0. Both studies run through the experiment runner.
#
# `JAXQ_NOTEBOOK_SMALL=1`: a seconds-long run (CI). `JAXQ_NOTEBOOK_OUT`: where runs are stored.

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import jaxq

SMALL = os.environ.get("JAXQ_NOTEBOOK_SMALL", "0") == "1"
ROOT = Path(os.environ.get("JAXQ_NOTEBOOK_OUT", Path(tempfile.gettempdir()) / "jaxq-notebooks"))

# %% [markdown]
# ## The law of W_hat^n(2) against Z(2)

# %%
weak_text = f"""
[experiment]
study = "weak"
system = "pss_PP"
replications = {8 if SMALL else 800}
chunk = {8 if SMALL else 200}
[grid]
n = {[9, 16] if SMALL else [100, 400, 1600]}
times = [2.0]
sde_paths = {16 if SMALL else 10000}
sde_chunk = {16 if SMALL else 5000}
sde_dt = {0.05 if SMALL else 0.001}
"""
out = ROOT / "weak"
rec = jaxq.run_experiment(weak_text, out, resume=True)
points, records = jaxq.read_run(out)
for r in rec["tables"]["summary"]:
    print(f"n = {r['n']:>6}: KS distance {r['ks']:.3f} (95% sampling noise {r['ks_noise_95']:.3f}), "
          f"E W_hat = {r['mean_W_hat']:.3f} +- {r['mean_W_hat_stderr']:.3f}, E Z = {r['mean_Z']:.3f}")

# %%
qs = np.linspace(0.01, 0.99, 99)
z = next(r for p, r in zip(points, records) if p["engine"] == "sde")["Z@2"]
fig, ax = plt.subplots(figsize=(4.5, 4), layout="constrained")
for p, r in zip(points, records):
    if p["engine"] == "pss":
        ax.plot(np.quantile(z, qs), np.quantile(r["W_hat@2"], qs), ".-", label=f"n = {p['n']}")
ax.plot([0, np.quantile(z, 0.99)], [0, np.quantile(z, 0.99)], "k--", label="Z(2)")
ax.set_xlabel("quantiles of Z(2)")
ax.set_ylabel("quantiles of W_hat^n(2)")
ax.legend()
plt.show()

# %% [markdown]
# ## State-space collapse: E sup_[0,T] X_hat_p^n

# %%
collapse_text = f"""
[experiment]
study = "collapse"
systems = ["pss_P", "pss_PP"]
replications = {4 if SMALL else 64}
chunk = {4 if SMALL else 32}
[grid]
n = {[9, 16] if SMALL else [100, 1000, 10000]}
horizon = {1.0 if SMALL else 5.0}
"""
out = ROOT / "collapse"
rec = jaxq.run_experiment(collapse_text, out, resume=True)
fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
for system in dict.fromkeys(r["system"] for r in rec["tables"]["summary"]):
    rows = [r for r in rec["tables"]["summary"] if r["system"] == system]
    ax.errorbar([r["n"] for r in rows], [r["sup_X_hat_p"] for r in rows],
                yerr=[1.96 * r["sup_X_hat_p_stderr"] for r in rows], fmt="o-", capsize=3,
                label=f"{system} ({rows[0]['policy_used']}), HPC {rows[0]['hpc']}")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("n")
ax.set_ylabel("E sup X_hat_p")
ax.legend()
plt.show()
