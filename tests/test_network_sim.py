"""The network CTMC and the diffusion Euler scheme against exact values (4 standard errors)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import gammaln

import jaxq
from jaxq.cli import main
from jaxq.diffusion.network import diffusion_limit
from jaxq.model import load
from jaxq.model.network import from_dict
from jaxq.sde.network_euler import simulate_diffusion
from jaxq.sim import network_ctmc as C

EX = Path(jaxq.__file__).parent / "examples"


def erlang_c(c: int, a: float) -> float:
    """Probability of wait in M/M/c with offered load a < c."""
    k = np.arange(c)
    head = np.exp(k * math.log(a) - gammaln(k + 1)).sum()
    tail = math.exp(c * math.log(a) - gammaln(c + 1)) * c / (c - a)
    return tail / (head + tail)


def within(est, se, exact):
    est, se, exact = (np.atleast_1d(np.asarray(v, float)) for v in (est, se, exact))
    assert np.all(np.abs(est - exact) <= 4 * se + 1e-12), (est, se, exact)


@pytest.mark.parametrize("engine", C.ENGINES)
def test_erlang_c_single_pool(engine):
    st = C.setup(load(EX / "network_mmc.toml"))
    r = C.run(st, 16, "priority", reps=48, warmup=20.0, horizon=300.0, seed=1, engine=engine)
    c, a = int(r["pool_sizes"][0]), float(r["arrival_rates"][0])
    pw = erlang_c(c, a)
    within(r["p_wait"], r["p_wait_stderr"], pw)
    within(r["mean_queue"], r["mean_queue_stderr"], pw * a / (c - a))
    within(r["mean_idle"], r["mean_idle_stderr"], c - a)  # E[idle] = N - lambda/mu exactly


@pytest.mark.parametrize("engine", C.ENGINES)
def test_cobham_nonpreemptive_priority(engine):
    """Two classes, one pool, equal rates: W_k = C(c, a) / (c mu) / ((1 - s_{k-1})(1 - s_k))."""
    net = from_dict({"system": {"kind": "network", "lambda": [0.4, 0.6], "mu": [[1.0], [1.0]],
                                "pool_size": [1.0], "pool_size_hat": [0.5]}})
    st = C.setup(net)
    r = C.run(st, 16, "priority", reps=48, warmup=20.0, horizon=300.0, seed=2, engine=engine)
    c, lam = int(r["pool_sizes"][0]), r["arrival_rates"]
    w0 = erlang_c(c, lam.sum()) / c
    sig = np.cumsum(lam) / c
    wq = w0 / ((1 - np.r_[0.0, sig[:-1]]) * (1 - sig))
    within(r["mean_queue"], r["mean_queue_stderr"], lam * wq)


@pytest.fixture(scope="module")
def classdep():
    return C.setup(load(EX / "network_classdep.toml"))


@pytest.mark.parametrize("policy", ["priority", "lap", "swc"])
def test_class_dependent_mean_idleness_is_exact(classdep, policy):
    r = C.run(classdep, 25, policy, reps=48, warmup=20.0, horizon=200.0, seed=3)
    mu_i = np.array([2.0, 1.0])
    exact = r["pool_sizes"].sum() - (r["arrival_rates"] / mu_i).sum()
    within(r["mean_idle_total"], r["mean_idle_total_stderr"], exact)
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])


@pytest.mark.parametrize("policy", ["priority", "lqfs"])
def test_prelimit_identity_3_6_pool_dependent(policy):
    """N network (pool-dependent rates): sum_j w_j E[Y_hat_j] = rho_n exactly for a stable policy."""
    st = C.setup(load(EX / "network_N.toml"))
    r = C.run(st, 36, policy, reps=48, warmup=20.0, horizon=200.0, seed=6)
    np.testing.assert_allclose(r["idleness_weights"], [1.0, 1.0 / 1.5])
    within(r["weighted_idleness_hat"], r["weighted_idleness_hat_stderr"], r["spare_capacity_n"])
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])


def test_lap_underloaded_rate_balance():
    st = C.setup(load(EX / "network_lap.toml"))
    assert st.scaling == "underloaded"
    r = C.run(st, 40, "lap", reps=32, warmup=10.0, horizon=100.0, seed=4)
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])
    busy = r["mean_busy"]
    assert np.all(busy[~st.plan.basic] == 0)  # LAP uses basic activities only


def test_swc_allocation_is_a_maximum_flow(classdep):
    """Greedy leaf elimination against a max-flow LP: maximal number of busy servers given x."""
    p = C.make_params(classdep, 25, "swc", 1.0, 2.0)
    tree = classdep.plan.basic
    rng = np.random.default_rng(0)
    big_n = np.asarray(p["N"])
    idx = np.argwhere(tree)
    for _ in range(6):
        x = rng.integers(0, 40, size=2)
        z = np.asarray(C.swc_allocation(np.asarray(x, np.int32), p))
        assert np.all(z.sum(axis=1) <= x) and np.all(z.sum(axis=0) <= big_n) and np.all(z >= 0)
        a_ub = np.zeros((4, len(idx)))
        for e, (i, j) in enumerate(idx):
            a_ub[i, e] = 1
            a_ub[2 + j, e] = 1
        lp = linprog(-np.ones(len(idx)), A_ub=a_ub, b_ub=np.r_[x, big_n], bounds=(0, None), method="highs")
        assert z.sum() == pytest.approx(-lp.fun)


def test_identity_3_6_by_euler():
    net = load(EX / "network_N.toml")
    st = C.setup(net)
    dl = diffusion_limit(net, st.plan)
    r = simulate_diffusion(dl, [0.5, 0.5], [0.3, 0.7], "proportional", paths=64, dt=0.02, horizon=100.0,
                           warmup=10.0, seed=5)
    assert r["idleness_weight"] == pytest.approx(1 + 0.7 * (-0.5) / 1.5)
    within(r["identity_rhs"], r["identity_rhs_stderr"], dl.spare_capacity)


def test_cli_simulate_json_and_reproducible(capsys):
    args = ["network", "simulate", str(EX / "network_mmc.toml"), "--n", "16", "--policy", "priority",
            "--reps", "8", "--horizon", "30", "--warmup", "5", "--seed", "7", "--json"]
    assert main(args) == 0
    a = json.loads(capsys.readouterr().out)
    for k in ("mean_in_system", "mean_queue", "mean_idle", "mean_busy", "p_wait", "events_per_s"):
        assert k in a and (k == "events_per_s" or k + "_stderr" in a)
    assert main(args + ["--chunk", "3"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["mean_queue"] == b["mean_queue"] and a["p_wait"] == b["p_wait"]
