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
# # J_n converges to the lower bound V0 (Theorem 2.11 of the switched-policies paper)
#
# The n-th 2x2 system, started empty, runs under the policy the theory picks for it (P, T2, PP, T2T2,
# T1T2 or T2T1). Its discounted cost J_n tends to the WCP lower bound V0 as n grows. This notebook runs
# a convergence study through the experiment runner (resumable: rerunning it reuses finished chunks)
# and draws J_n against n and |J_n - V0| against n.
#
# Size: set `JAXQ_NOTEBOOK_SMALL=1` for a seconds-long run (CI); the default takes a few minutes on a
# laptop CPU. `JAXQ_NOTEBOOK_OUT` chooses where the run is stored (default: a temporary directory).

# %%
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import jaxq

SMALL = os.environ.get("JAXQ_NOTEBOOK_SMALL", "0") == "1"
OUT = Path(os.environ.get("JAXQ_NOTEBOOK_OUT", Path(tempfile.gettempdir()) / "jaxq-notebooks")) / "convergence"

# %% [markdown]
# ## The experiment
# The same text could live in a file and run with `jaxq run FILE`; `systems` are bundled examples.

# %%
n_values = [9, 16] if SMALL else [100, 400, 1600, 6400]
text = f"""
[experiment]
study = "convergence"
systems = ["pss_P", "pss_PP", "pss_T1T2"]
replications = {4 if SMALL else 64}
chunk = {4 if SMALL else 32}
seeds = [7]
[grid]
n = {n_values}
{"horizon = 2.0" if SMALL else ""}
"""
record = jaxq.run_experiment(text, OUT, resume=True)
summary, fits = record["tables"]["summary"], record["tables"]["fits"]
print(f"{record['replications']} replications, {record['events']} events, {record['compute_s']:.1f} s of compute")

# %% [markdown]
# ## J_n against n with 95% intervals and the lower bound V0

# %%
systems = list(dict.fromkeys(r["system"] for r in summary))
fig, axes = plt.subplots(1, len(systems), figsize=(4 * len(systems), 3.2), layout="constrained")
for ax, system in zip(np.atleast_1d(axes), systems):
    rows = [r for r in summary if r["system"] == system]
    n = np.array([r["n"] for r in rows], dtype=float)
    ax.errorbar(n, [r["J_hat"] for r in rows], yerr=[1.96 * r["J_hat_stderr"] for r in rows], fmt="o-", capsize=3)
    ax.axhline(rows[0]["V0"], color="k", ls="--", label="V0")
    ax.set_xscale("log")
    ax.set_title(f"{system} ({rows[0]['policy_used']})")
    ax.set_xlabel("n")
    ax.legend()
plt.show()

# %% [markdown]
# ## |J_n - V0| against n (log-log) and the fitted rate

# %%
for f in fits:
    rate = "-" if f["rate"] is None else f"{f['rate']:.3f}"
    print(f"{f['system']:<10} {f['policy_used']:<5} rate {rate}")
fig, ax = plt.subplots(figsize=(5, 3.5), layout="constrained")
for system in systems:
    rows = [r for r in summary if r["system"] == system]
    ax.loglog([r["n"] for r in rows], [abs(r["gap"]) for r in rows], "o-", label=system)
ax.set_xlabel("n")
ax.set_ylabel("|J_n - V0|")
ax.legend()
plt.show()
print("tables and figures written under", OUT)
