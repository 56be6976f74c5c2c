"""The n-th 2x2 system on both drivers against the exact CTMC solve (4 stderr), invariants, chunking, CLI."""

import json
import math

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.policy_table import RULE_NAMES, SAMPLING_NAMES
from jaxq.policies import pss2x2 as pol
from jaxq.policies.thresholds import theta_level
from jaxq.sim import exact_ctmc
from jaxq.sim.models.pss2x2 import VIOLATIONS
from jaxq.sim.pss2x2 import default_horizon, setup, simulate
from jaxq.sim import pss2x2 as PT

N = 16
REPS = 4000
T = 25.0
# Record W_hat at (0, 1, horizon): one recorder shape for all exponential runs, hence one compilation.
CASES = ("pss_P", "pss_T2", "pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1")


@pytest.fixture(scope="module")
def systems():
    return {name: load(path(name)) for name in CASES + ("pss_spec",)}


def _theta(system, policy="auto", switch_at=None):
    """Theta_n of the simulator's default threshold rule at n = N (0 for a policy without a threshold)."""
    return setup(system, N, policy=policy, levels=PT.Levels(switch_at=switch_at)).theta or 0


def _exact(system, mode, rule, theta=0):
    ex = exact_ctmc.discounted_cost(system, N, mode, rule, theta=theta, cap=40)
    assert ex["truncation_change"] < 1e-6
    return ex["J"]


def _sim(system, policy, horizon=T, seed=0):
    return simulate(
        system, N, REPS, policy=policy, seed=seed, truncation=PT.Truncation(horizon=horizon),
                    outputs=PT.Outputs(record_times=(0.0, 1.0, horizon), debug=True))


def _no_violations(r):
    assert r.engine == "event"
    assert set(r["violations"]) == set(VIOLATIONS)
    assert sum(r["violations"].values()) == 0, r["violations"]


@pytest.mark.parametrize(
    "name,policy,rule,mode_of",
    [
        ("pss_P", "auto", "P", "active"),  # Theorem 2.11 1(a)
        ("pss_T2", "auto", "T2", "active"),  # Theorem 2.11 1(b)
        ("pss_P", "T1@1", "T1", 0),  # the T1 rule, w.r.t. a fixed mode
        ("pss_T2", "P@2", "P", 1),
    ],
)
def test_matches_exact_ctmc(systems, name, policy, rule, mode_of):
    sy = systems[name]
    an = analyze(sy)
    mode = an.active if mode_of == "active" else mode_of
    theta = _theta(sy, policy)
    exact = _exact(sy, mode, rule, theta)
    r = _sim(sy, policy)
    assert r["policy"] == (an.policy if policy == "auto" else policy)
    assert r["theta"] == (None if rule == "P" else theta)
    assert r["truncation_bound"] < 0.1 * r.stderr
    assert abs(r["J_hat"] - exact) <= 4 * r.stderr
    assert r.stderr < 0.02 * exact
    _no_violations(r)
    # Path recorders: W_hat(0) = 0 and W_hat(T) from X_hat(T); sup over [0, T] dominates X_hat(T).
    alpha = an.modes.alpha
    assert np.all(r["W_hat_t"][:, 0] == 0.0)
    np.testing.assert_allclose(r["W_hat_t"][:, 2], r["X_hat_T"] @ (1 / alpha), rtol=1e-12)
    assert np.all(r["sup_X_hat"] >= r["X_hat_T"])
    assert r["J"].shape == (REPS,)


@pytest.mark.parametrize(
    "name,policy,rules,sampling",
    [
        ("pss_P", "PP", ("P", "P"), "k1"),  # server-switched modes: k1 changes with the mode
        ("pss_P", "T2T2", ("T2", "T2"), "k1"),
        ("pss_T2", "T1T2", ("T1", "T2"), "every"),  # class-switched modes
        ("pss_T2", "T2T1", ("T2", "T1"), "every"),
    ],
)
def test_switching_policies_match_exact_ctmc(systems, name, policy, rules, sampling):
    """Definition 2.10 forced on an exponential system (active mode below z, the other above)."""
    sy = systems[name]
    lo = analyze(sy).active
    ex = exact_ctmc.discounted_cost(
        sy, N, lo, rules[0], theta=_theta(sy, policy, 0.5), cap=30,
        switching=exact_ctmc.Switching(1 - lo, rules[1], sampling, 0.5)
    )
    assert ex["truncation_change"] < 1e-4
    r = simulate(sy, N, REPS, policy=policy, seed=3, truncation=PT.Truncation(horizon=T),
                 levels=PT.Levels(switch_at=0.5),
                 outputs=PT.Outputs(record_times=(0.0, 1.0, T), debug=True))
    assert r["switch_at"] == 0.5 and r["switches"].mean() > 10
    assert abs(r["J_hat"] - ex["J"]) <= 4 * r.stderr
    _no_violations(r)


def test_truncation_bound_is_an_upper_bound(systems):
    """A short horizon: J_T <= J <= J_T + bound, both within 4 standard errors."""
    sy = systems["pss_P"]
    exact = _exact(sy, analyze(sy).active, "P")
    r = _sim(sy, "P", horizon=T / 8, seed=1)
    assert r["truncation_bound"] > 0.1
    assert r["J_hat"] - 4 * r.stderr <= exact
    assert exact <= r["J_hat"] + r["truncation_bound"] + 4 * r.stderr
    assert r["J_hat"] < exact - 4 * r.stderr  # the short horizon really cuts something off


def test_default_horizon_makes_tail_negligible(systems):
    sy = systems["pss_P"]
    an = analyze(sy)
    T0 = default_horizon(sy, N, scale=an.V0)
    st = setup(sy, N)
    assert float(st.params.horizon) == pytest.approx(T0) and st.horizon == pytest.approx(T0)
    lam_n, _ = sy.rates(N)
    state_free = math.exp(-sy.gamma * T0) * float(sy.h @ (lam_n / sy.gamma**2 + 2 / sy.gamma)) / math.sqrt(N)
    assert state_free == pytest.approx(1e-4 * an.V0, rel=1e-9)


# every policy on every bundled case (about 10 s of programs): the three tests that read the grid run with the slow
# checks; the fast set runs each policy through the exact-chain comparisons below. The root rule keeps z* (the
# default rule's own levels: tests/policies/test_excursion.py)
@pytest.fixture(scope="module")
def six_by_six(systems):
    out = {}
    for name in CASES:
        for policy in ("auto",) + tuple(pol.POLICIES):
            out[name, policy] = simulate(systems[name], N, 5, policy=policy, seed=3, outputs=PT.Outputs(debug=True),
                                         levels=PT.Levels(theta_rule="root"))
    return out


@pytest.mark.slow
def test_all_policies_run_on_all_cases(systems, six_by_six):
    for (name, policy), r in six_by_six.items():
        an = analyze(systems[name])
        assert r["policy"] == (an.policy if policy == "auto" else policy)
        assert np.isfinite(r["J_hat"]) and r["J_hat"] > 0 and r.events > 0
        _no_violations(r)
        uses_theta = pol.uses_threshold(pol.POLICIES[r["policy"]])
        assert (r["theta"] is not None) == uses_theta
        if an.case == "dual" and pol.POLICIES[r["policy"]].dual:
            assert r["switch_at"] == pytest.approx(an.z_star)
            assert r["switches"].sum() > 0  # the current mode does change
        else:
            assert np.all(r["switches"] == 0)


@pytest.mark.slow
def test_mode_sampling_times(systems, six_by_six):
    """PP/T2T2 sample only at k1 completions: far fewer switches than T1T2/T2T1 (every event)."""
    for name in ("pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1"):
        few = six_by_six[name, "PP"]["switches"].sum() + six_by_six[name, "T2T2"]["switches"].sum()
        many = six_by_six[name, "T1T2"]["switches"].sum() + six_by_six[name, "T2T1"]["switches"].sum()
        assert few < many


@pytest.mark.slow
def test_identical_for_any_chunk_size(systems, six_by_six):
    a = six_by_six["pss_T2T2", "auto"]
    b = simulate(systems["pss_T2T2"], N, 5, seed=3, outputs=PT.Outputs(debug=True),
                 batching=PT.Batching(chunk=2), levels=PT.Levels(theta_rule="root"))
    for k in ("J", "sup_X_hat", "X_hat_T", "switches"):
        np.testing.assert_array_equal(a[k], b[k])
    assert a.events == b.events


def test_switch_at_is_honoured(systems):
    sy = systems["pss_T2T1"]
    st = setup(sy, 100.0, levels=PT.Levels(switch_at=0.25))
    assert st.switch_at == 0.25 and float(st.params.policy.level) == pytest.approx(10 * 0.25)
    st = setup(sy, 100.0, policy="P")
    assert st.switch_at is None and st.modes_used == [analyze(sy).lower + 1]


def test_theta_levels():
    assert theta_level(16, 5 / 12) == 4
    assert theta_level(10**6, 5 / 12) == 317
    assert theta_level(2**12, 5 / 12) == 32  # exact power: no spurious round-up


@pytest.mark.parametrize("engine", ["event", pytest.param("uniformized", marks=pytest.mark.slow)])
def test_cli_done_when(systems, capsys, engine):
    """`jaxq simulate` at n = 16, 4000 replications: within 4 stderr of the exact value, stderr < 2%."""
    for name, rule in (("pss_P", "P"), ("pss_T2", "T2")):
        sy = systems[name]
        theta = _theta(sy)
        exact = _exact(sy, analyze(sy).active, rule, theta=theta)
        argv = ["simulate", str(path(name)), "--n", "16", "--reps", str(REPS), "--json", "--seed", "2", "--engine", engine]
        assert main(argv) == 0
        r = json.loads(capsys.readouterr().out)
        assert r["engine"] == engine
        for k in ("n", "reps", "policy", "theta", "J_hat", "stderr", "ci95", "V0", "horizon"):
            assert k in r
        for k in ("truncation_bound", "events", "wall_s", "events_per_s"):
            assert k in r
        assert r["theta"] == (None if rule == "P" else theta)
        assert abs(r["J_hat"] - exact) <= 4 * r["stderr"] and r["stderr"] < 0.02 * exact


@pytest.mark.parametrize(
    "argv,key",
    [
        (["--n", "0.5"], "n"),
        (["--n", "16", "--reps", "1"], "reps"),
        (["--n", "16", "--theta-exponent", "1.5"], "theta_exponent"),
        (["--n", "16", "--switch-at", "-1"], "switch_at"),
        (["--n", "16", "--horizon", "-3"], "horizon"),
    ],
)
def test_cli_bad_input(argv, key, capsys):
    assert main(["simulate", str(path("pss_T2"))] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"jaxq: error: {key}:") and err.count("\n") == 1


# ------------------------------------------------------------------------- the uniformised driver
SAMPLING = dict(enumerate(SAMPLING_NAMES))  # the policy table's codes -> exact_ctmc's names
RULES = RULE_NAMES


def exact_of(system, policy, switch_at=None):
    st = setup(system, N, policy=policy, levels=PT.Levels(switch_at=switch_at))  # the default rule's levels
    res = pol.resolve(analyze(system), policy, st.switch_at)
    theta = st.theta or 0
    return exact_ctmc.discounted_cost(system, N, res.lower, RULES[res.rules.lower], theta=theta, cap=50,
                                      switching=exact_ctmc.Switching(res.higher, RULES[res.rules.higher],
                                      SAMPLING[res.rules.sampling], res.z))["J"]


@pytest.mark.parametrize("name, policy, switch_at", [
    ("pss_P", "auto", None),
    ("pss_T2", "auto", None),
    ("pss_P", "T1T2", 0.4),  # a switching policy sampled at every event
    ("pss_T2", "PP", 0.3),  # sampled at completions of the single-activity server
])
def test_uniformized_agrees_with_exact_solve(systems, name, policy, switch_at):
    s = systems[name]
    r = simulate(s, N, 1500, policy=policy, seed=11,
                 levels=PT.Levels(switch_at=switch_at))
    assert r.engine == "uniformized"
    v = exact_of(s, policy, switch_at)
    assert abs(r.value - v) <= 4 * r.stderr + r["truncation_bound"], (r.value, v, r.stderr)
    assert r.stderr < 0.05 * v
    assert r["truncation_bound"] < 1e-3 * v


@pytest.mark.slow  # chunk invariance of the shared driver: tests/mc/test_replications.py in the fast set
def test_uniformized_chunks_give_identical_results(systems):
    a = simulate(systems["pss_T2"], N, 20, seed=3)
    b = simulate(systems["pss_T2"], N, 20, seed=3, batching=PT.Batching(chunk=7))
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])


def test_engine_choice(systems):
    with pytest.raises(InputError, match="exponential"):
        simulate(systems["pss_PP"], N, 10, truncation=PT.Truncation(engine="uniformized"))
    with pytest.raises(InputError, match="event engine"):
        simulate(systems["pss_P"], N, 10, truncation=PT.Truncation(engine="uniformized"),
                 outputs=PT.Outputs(debug=True))
    assert simulate(systems["pss_PP"], N, 4).engine == "event"
    assert simulate(systems["pss_P"], N, 4, outputs=PT.Outputs(record_times=(1.0,))).engine == "event"
