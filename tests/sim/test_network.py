"""The network CTMC on both drivers and the diffusion Euler scheme against exact values (4 standard errors);
the one transition of the model against an independent plain-Python statement of the four policies."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import gammaln

import jax
import jax.numpy as jnp

import jaxq
from jaxq.cli import main
from jaxq.diffusion.network_analysis import analyze
from jaxq.errors import InputError
from jaxq.model import load
from jaxq.model.network import from_dict
from jaxq.policies import network as pol
from jaxq.sde.network_euler import Control, EulerGrid, simulate_diffusion
from jaxq.sim import network as C
from jaxq.sim.models import network as M
from jaxq.mc.replications import Batching

ENGINES = ("event", "uniformized")
# the closed-form checks run on the event driver in the fast set, on both with the slow checks (the two drivers are
# compared with each other in the fast set: test_the_two_drivers_agree)
ENGINES_FAST = ("event", pytest.param("uniformized", marks=pytest.mark.slow))

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


@pytest.mark.parametrize("engine", ENGINES_FAST)
def test_erlang_c_single_pool(engine):
    st = analyze(load(EX / "network_mmc.toml"))
    r = C.simulate(st, 16, "priority", reps=48, seed=1, engine=engine, window=C.Window(warmup=20.0, horizon=300.0))
    c, a = int(r["pool_sizes"][0]), float(r["arrival_rates"][0])
    pw = erlang_c(c, a)
    within(r["p_wait"], r["p_wait_stderr"], pw)
    within(r["mean_queue"], r["mean_queue_stderr"], pw * a / (c - a))
    within(r["mean_idle"], r["mean_idle_stderr"], c - a)  # E[idle] = N - lambda/mu exactly


@pytest.mark.parametrize("engine", ENGINES_FAST)
def test_cobham_nonpreemptive_priority(engine):
    """Two classes, one pool, equal rates: W_k = C(c, a) / (c mu) / ((1 - s_{k-1})(1 - s_k))."""
    net = from_dict({"system": {"kind": "network", "lambda": [0.4, 0.6], "mu": [[1.0], [1.0]],
                                "pool_size": [1.0], "pool_size_hat": [0.5]}})
    r = C.simulate(net, 16, "priority", reps=48, seed=2, engine=engine, window=C.Window(warmup=20.0, horizon=300.0))
    c, lam = int(r["pool_sizes"][0]), r["arrival_rates"]
    w0 = erlang_c(c, lam.sum()) / c
    sig = np.cumsum(lam) / c
    wq = w0 / ((1 - np.r_[0.0, sig[:-1]]) * (1 - sig))
    within(r["mean_queue"], r["mean_queue_stderr"], lam * wq)


@pytest.fixture(scope="module")
def classdep():
    return analyze(load(EX / "network_classdep.toml"))


@pytest.mark.parametrize("policy", [*(pytest.param(p, marks=pytest.mark.slow) for p in ("priority", "lap")), "swc"])
def test_class_dependent_mean_idleness_is_exact(classdep, policy):
    r = C.simulate(classdep, 25, policy, reps=48, seed=3, window=C.Window(warmup=20.0, horizon=200.0))
    mu_i = np.array([2.0, 1.0])
    exact = r["pool_sizes"].sum() - (r["arrival_rates"] / mu_i).sum()
    within(r["mean_idle_total"], r["mean_idle_total_stderr"], exact)
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])


@pytest.mark.parametrize("policy", [pytest.param("priority", marks=pytest.mark.slow), "lqfs"])
def test_prelimit_identity_3_6_pool_dependent(policy):
    """N network (pool-dependent rates): sum_j w_j E[Y_hat_j] = rho_n exactly for a stable policy."""
    r = C.simulate(load(EX / "network_N.toml"), 36, policy, reps=48, seed=6,
                   window=C.Window(warmup=20.0, horizon=200.0))
    np.testing.assert_allclose(r["idleness_weights"], [1.0, 1.0 / 1.5])
    within(r["weighted_idleness_hat"], r["weighted_idleness_hat_stderr"], r["spare_capacity_n"])
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])


@pytest.mark.slow
def test_lap_underloaded_rate_balance():
    st = analyze(load(EX / "network_lap.toml"))
    assert st.scaling == "underloaded"
    r = C.simulate(st, 40, "lap", reps=32, seed=4, window=C.Window(warmup=10.0, horizon=100.0))
    within(r["throughput"], r["throughput_stderr"], r["arrival_rates"])
    busy = r["mean_busy"]
    assert np.all(busy[~st.plan.basic] == 0)  # LAP uses basic activities only


def test_swc_allocation_is_a_maximum_flow(classdep):
    """Greedy leaf elimination against a max-flow LP: maximal number of busy servers given x."""
    lay, p = C.make_params(classdep, 25, "swc")
    tree = classdep.plan.basic
    rng = np.random.default_rng(0)
    big_n = np.asarray(p.N)
    idx = np.argwhere(tree)
    for _ in range(6):
        x = rng.integers(0, 40, size=2)
        alloc = pol.swc_allocation([int(v) for v in x], [int(v) for v in big_n], lay)
        z = np.zeros(tree.shape, np.int64)
        for e, v in alloc.items():
            z[e] = int(v)
        assert np.all(z.sum(axis=1) <= x) and np.all(z.sum(axis=0) <= big_n) and np.all(z >= 0)
        a_ub = np.zeros((4, len(idx)))
        for e, (i, j) in enumerate(idx):
            a_ub[i, e] = 1
            a_ub[2 + j, e] = 1
        lp = linprog(-np.ones(len(idx)), A_ub=a_ub, b_ub=np.r_[x, big_n], bounds=(0, None), method="highs")
        assert z.sum() == pytest.approx(-lp.fun)


@pytest.mark.slow
def test_identity_3_6_by_euler():
    dl = analyze(load(EX / "network_N.toml")).diffusion
    control, window = Control("proportional", [0.5, 0.5], [0.3, 0.7]), EulerGrid(dt=0.02, horizon=100.0, warmup=10.0)
    r = simulate_diffusion(dl, control, paths=64, window=window, seed=5)
    assert r["idleness_weight"] == pytest.approx(1 + 0.7 * (-0.5) / 1.5)
    within(r["identity_rhs"], r["identity_rhs_stderr"], dl.spare_capacity)  # controlled (the default)
    est = r.estimates["identity_rhs"]
    within(est.plain, est.plain_stderr, dl.spare_capacity)
    assert est.variance_reduction > 3, est.variance_reduction
    c = r.samples["controls"]  # the Ito sums have mean zero
    assert np.all(np.abs(c.mean(axis=0)) <= 4 * c.std(axis=0, ddof=1) / np.sqrt(c.shape[0]))
    # results do not depend on chunking (the fit is cross-fitted by path index)
    b = simulate_diffusion(dl, control, paths=64, window=window, seed=5, batching=Batching(chunk=24))
    assert b["identity_rhs"] == r["identity_rhs"] and b["mean_neg_stderr"] == r["mean_neg_stderr"]


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


# ------------------------------------------------------------- the transition, stated independently
def reference_transition(policy, lam_n, mu_n, big_n, edges, q, z, event, lap_order, class_order):
    """The four policies in plain Python (numpy), written from their definitions: event = ("a", i) or ("c", i, j)."""
    I, J = z.shape
    q, z = q.copy(), z.copy()
    served = None
    if policy == "swc":
        x = q + z.sum(axis=1)
        if event[0] == "a":
            x[event[1]] += 1
        else:
            x[event[1]] -= 1
        cap_i, cap_j, new = x.copy(), big_n.copy(), np.zeros_like(z)
        for i, j in lap_order:  # greedy leaf elimination
            f = min(cap_i[i], cap_j[j])
            new[i, j] = f
            cap_i[i] -= f
            cap_j[j] -= f
        served = new.sum() > z.sum()
        return x - new.sum(axis=1), new, served
    idle = big_n - z.sum(axis=0)
    if event[0] == "a":
        i = event[1]
        pools = [j for j in range(J) if edges[i, j] and idle[j] > 0]
        if policy == "priority":
            key = lambda j: j  # noqa: E731
        elif policy == "lap":
            key = lambda j: lap_order.index((i, j))  # noqa: E731
        else:  # lqfs: largest idle fraction, lowest index on ties
            key = lambda j: (-idle[j] / big_n[j], j)  # noqa: E731
        if pools:
            z[i, min(pools, key=key)] += 1
        else:
            q[i] += 1
        return q, z, bool(pools)
    _, i, j = event
    z[i, j] -= 1
    classes = [c for c in range(I) if edges[c, j] and q[c] > 0]
    if policy == "priority":
        key = lambda c: c  # noqa: E731
    elif policy == "lap":
        key = lambda c: class_order.index(c)  # noqa: E731
    else:
        key = lambda c: (-q[c], c)  # noqa: E731
    if classes:
        c = min(classes, key=key)
        z[c, j] += 1
        q[c] -= 1
    return q, z, served


@pytest.mark.parametrize("example,policy", [("network_N", "priority"), ("network_N", "lqfs"), ("network_M", "lqfs"),
                                            ("network_classdep", "lap"), ("network_classdep", "swc"),
                                            ("network_lap", "lap")])
def test_transition_matches_an_independent_statement(example, policy):
    """Random states, every possible event: the JAX transition (both drivers use it) against the reference."""
    an = analyze(load(EX / f"{example}.toml"))
    lay, p = C.make_params(an, 9, policy)  # small pools: full and empty pools are common
    I, J = lay.num_i, lay.num_j
    big_n = np.asarray(p.N)
    edges = np.zeros((I, J), bool)
    for e in lay.edges:
        edges[e] = True
    step = jax.jit(lambda s, fired: M.transition(s, fired, p, lay))
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(30):
        z = np.zeros((I, J), np.int64)
        room = big_n.copy()
        for i, j in rng.permutation(lay.edges):
            z[i, j] = rng.integers(0, room[j] + 1) if rng.random() < 0.8 else room[j]
            room[j] -= z[i, j]
        q = rng.integers(0, 4, size=I)
        if lay.swc:  # the policy's own states: z = z(x)
            q, z, _ = reference_transition("swc", None, None, big_n, edges, q + z.sum(axis=1), np.zeros_like(z),
                                           ("a", 0), an.lap.order, an.lap.class_order)
            q[0] -= 1
        events = [("a", i) for i in range(I)] + [("c", i, j) for (i, j) in lay.edges if z[i, j] > 0]
        for ev in events:
            fired = [jnp.bool_(ev == ("a", i)) for i in range(I)] + [jnp.bool_(ev == ("c", i, j)) for i, j in lay.edges]
            s = M.State(tuple(jnp.int32(v) for v in q), tuple(jnp.int32(z[e]) for e in lay.edges))
            s1, rec = step(s, tuple(fired))
            q_ref, z_ref, served = reference_transition(policy, None, None, big_n, edges, np.asarray(q), z, ev,
                                                        an.lap.order, an.lap.class_order)
            np.testing.assert_array_equal(np.asarray(s1.q), q_ref)
            np.testing.assert_array_equal(np.asarray(s1.z), [z_ref[e] for e in lay.edges])
            if ev[0] == "a":
                assert int(rec["waited"][ev[1]]) == int(not served)
            checked += 1
    assert checked > 100


def test_the_two_drivers_agree():
    net = load(EX / "network_N.toml")
    kw = dict(reps=48, window=C.Window(warmup=5.0, horizon=60.0), seed=3)
    a = C.simulate(net, 16, "priority", engine="event", **kw)
    b = C.simulate(net, 16, "priority", engine="uniformized", **kw)
    assert a.engine == "event" and b.engine == "uniformized" and b.events > 0
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait", "mean_abs_dev", "rms_dev"):
        d = np.abs(np.asarray(a[k]) - np.asarray(b[k]))
        assert np.all(d <= 4 * np.hypot(a[k + "_stderr"], b[k + "_stderr"]) + 1e-12), (k, a[k], b[k])
    np.testing.assert_allclose(b["hist_density"].sum(axis=1) * np.diff(b["hist_edges"])[0], 1.0, rtol=1e-9)


@pytest.mark.slow
def test_the_uniformised_window_is_the_one_asked_for():
    """A window shorter than one uniformised step is the initial state, on both drivers (the uniformised one
    used to average whole pages of 64 steps whatever the horizon), and a window of a few steps is not a page."""
    net = load(EX / "network_N.toml")
    kw = dict(reps=8, seed=2)
    a = C.simulate(net, 4, "priority", engine="event", window=C.Window(warmup=0.0, horizon=1e-300), **kw)
    b = C.simulate(net, 4, "priority", engine="uniformized", window=C.Window(warmup=0.0, horizon=1e-300), **kw)
    np.testing.assert_array_equal(a["mean_in_system"], b["mean_in_system"])
    assert a.events == 0
    c = C.simulate(net, 4, "priority", engine="uniformized", window=C.Window(warmup=0.0, horizon=1e-3), **kw)
    d = C.simulate(net, 4, "priority", engine="uniformized", window=C.Window(warmup=0.0, horizon=0.1), **kw)
    assert not np.array_equal(c["mean_in_system"], d["mean_in_system"])


def test_batching_does_not_change_results_and_bad_options_are_refused():
    net = load(EX / "network_mmc.toml")
    kw = dict(reps=10, window=C.Window(warmup=1.0, horizon=6.0), seed=5, engine="uniformized")
    a = C.simulate(net, 16, "swc", **kw)
    b = C.simulate(net, 16, "swc", batching=C.Batching(chunk=3), **kw)
    for k in ("mean_in_system", "p_wait", "mean_idle"):
        np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(a["hist_density"], b["hist_density"])
    assert a.events == b.events
    with pytest.raises(InputError, match="snap_times"):
        C.simulate(net, 16, "swc", outputs=C.NetworkOutputs(snap_times=np.array([1.0])), **kw)
    with pytest.raises(InputError, match="engine"):
        C.simulate(net, 16, "swc", reps=4, engine="fast")


def test_snapshots_on_the_event_driver():
    net = load(EX / "network_N.toml")
    r = C.simulate(net, 16, "swc", reps=8, seed=1, window=C.Window(warmup=0.0, horizon=10.0),
                   outputs=C.NetworkOutputs(snap_times=[1.0, 5.0]))
    assert r.engine == "event" and r["snapshots"].shape == (2, 2) and r.samples["snapshots"].shape == (8, 2, 2)
