"""Fast/slow MDP (the fast/slow-servers paper): value iteration against independent exact methods, structure, CLI."""

import json

import numpy as np
import pytest

import jaxq  # noqa: F401  (float64)
import jax.numpy as jnp
from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.mdp import exact
from jaxq.mdp import structure as st
from jaxq.mdp.fastslow import solve, solve_many
from jaxq.mdp.layout import heterogeneous, identical
from jaxq.mdp.operators import assign, assignment_tables, events, slow_rate_matrix
from jaxq.mdp.policy import greedy_policy

LAM, MU1, MU2, ALPHA = 1.2, 1.0, 0.3, 0.05


@pytest.fixture(scope="module")
def avg():
    return solve(LAM, MU1, MU2)


@pytest.fixture(scope="module")
def disc():
    return solve(LAM, MU1, MU2, discount=ALPHA)


def test_operators_match_paper_7_9_to_11():
    """(7) and (9)-(11) written out by hand for K = 2 against the generic JAX operators."""
    N, lam, mu1, mu2 = 12, 0.7, 1.3, 0.4
    f = np.random.default_rng(0).normal(size=(N + 1, 3))
    lay = identical(2)
    idx, ok = assignment_tables(lay, N)
    Q = np.asarray(assign(jnp.asarray(f), idx, ok))
    for x in range(N + 1):
        for y in range(3):
            ks = range(y, min(2, max(x - 1, 0) + y) + 1)
            assert Q[x, y] == pytest.approx(min(f[x + y - k, k] for k in ks))  # (7)
    P = np.asarray(events(jnp.asarray(f), lam, mu1, slow_rate_matrix(lay, jnp.array([mu2]))))
    up = lambda x: min(x + 1, N)  # noqa: E731  (truncation: arrivals lost at N)
    for x in range(N + 1):
        d = max(x - 1, 0)
        assert P[x, 0] == pytest.approx(lam * f[up(x), 0] + mu1 * f[d, 0] + 2 * mu2 * f[x, 0])  # (9)
        assert P[x, 1] == pytest.approx(lam * f[up(x), 1] + mu1 * f[d, 1] + mu2 * f[x, 0] + mu2 * f[x, 1])  # (10)
        assert P[x, 2] == pytest.approx(lam * f[up(x), 2] + mu1 * f[d, 2] + 2 * mu2 * f[x, 1])  # (11)


def test_average_matches_policy_iteration_and_linear_solve(avg):
    lay, N = avg.problem.layout, avg.N
    pol, (g, h), _ = exact.policy_iteration(lay, N, LAM, MU1, [MU2])
    assert np.array_equal(pol[: avg.X + 1], avg.policy[: avg.X + 1])
    g_vi, _ = exact.average_cost(lay, N, LAM, MU1, [MU2], avg.policy)
    assert g_vi == pytest.approx(g, rel=1e-10)
    assert avg.average_cost == pytest.approx(g, rel=1e-8)
    assert avg.bounds[0] <= g * (1 + 1e-12) and g <= avg.bounds[1] * (1 + 1e-12)
    assert np.allclose(avg.value[: avg.X + 1], h[: avg.X + 1], rtol=1e-6, atol=1e-6)


def test_discounted_matches_policy_iteration(disc):
    lay, N = disc.problem.layout, disc.N
    pol, V, _ = exact.policy_iteration(lay, N, LAM, MU1, [MU2], alpha=ALPHA)
    assert np.array_equal(pol[: disc.X + 1], disc.policy[: disc.X + 1])
    assert disc.value_empty == pytest.approx(V[0, 0], rel=1e-9)
    gamma = LAM + MU1 + 2 * MU2  # VI converges to (alpha + gamma) V*, (13)
    assert np.allclose(disc.value[: disc.X + 1], (ALPHA + gamma) * V[: disc.X + 1], rtol=1e-8)


def test_discounted_matches_linear_program():
    sol = solve(LAM, MU1, MU2, discount=0.3, truncation=31, verify=False)
    V = exact.discounted_lp(sol.problem.layout, sol.N, LAM, MU1, [MU2], 0.3)
    assert sol.value_empty == pytest.approx(V[0, 0], rel=1e-7)


def test_theorem1_structure_and_inequalities(avg, disc):
    for sol in (avg, disc):
        q_L, q_H = sol.queue_thresholds
        assert 0 <= q_L <= q_H
        assert sol.verified and sol.converged
        assert sol.structure["threshold"] and sol.structure["matches_thresholds"]
        assert all(sol.inequalities_hold.values())
        # Theorem 1 written out: both idle -> 0 / 1 / min(2, q); one idle -> 1 iff q >= q_H - 1
        for x in range(2, sol.X + 1):
            q = x - 1
            both = 0 if q < q_L else (1 if q < q_H else min(2, q))
            assert sol.policy[x, 0] == both
            assert sol.policy[x, 1] == (2 if q >= q_H - 1 else 1)
            assert sol.policy[x, 2] == 2


def test_thresholds_move_with_slow_rate():
    """A slower slow server is used later (q_L grows as mu2 falls)."""
    q_fast = solve(0.5, 1.0, 0.4).queue_thresholds
    q_slow = solve(0.5, 1.0, 0.1).queue_thresholds
    assert q_slow[0] > q_fast[0] and q_slow[1] >= q_fast[1]


def test_structure_detects_non_threshold_policy():
    lay, N = identical(2), 20
    pol = st.threshold_policy(lay, N, [4, 7])
    s = st.structure(lay, pol, N)
    assert s["threshold"] and s["population_thresholds"] == [4, 7]
    bad = pol.copy()
    bad[10, 0] = 0  # stop using the slow servers at one long queue
    s = st.structure(lay, bad, N)
    assert not s["monotone"] and not s["threshold"] and s["violations"] > 0


def test_k_slow_and_heterogeneous_match_policy_iteration():
    for mu2 in ([0.3, 0.3, 0.3], [0.45, 0.25, 0.1]):
        sol = solve(1.0, 1.0, mu2, verify=False, truncation=63)
        lay = sol.problem.layout
        assert lay.kind == ("identical" if mu2[0] == mu2[1] else "heterogeneous")
        pol, (g, _), _ = exact.policy_iteration(lay, sol.N, 1.0, 1.0, sol.problem.mu2)
        assert sol.average_cost == pytest.approx(g, rel=1e-8)
        assert np.array_equal(pol[: sol.X + 1], sol.policy[: sol.X + 1])
        assert isinstance(sol.structure["threshold"], bool)


def test_heterogeneous_layout_reduces_to_identical():
    lay_h = heterogeneous([0.3, 0.3000000001])
    sol_i = solve(1.0, 1.0, 0.3, verify=False, truncation=31)
    pol, (g, _), _ = exact.policy_iteration(lay_h, 31, 1.0, 1.0, [0.3, 0.3000000001])
    assert g == pytest.approx(sol_i.average_cost, rel=1e-7)


def test_solve_many_matches_solve():
    out = solve_many([1.2, 0.5], [1.0, 1.0], [0.3, 0.1], truncation=127)
    for i, (lam, mu2) in enumerate([(1.2, 0.3), (0.5, 0.1)]):
        s = solve(lam, 1.0, mu2)
        assert list(out["q_thresholds"][i]) == s.queue_thresholds
        assert out["average_cost"][i] == pytest.approx(s.average_cost, rel=1e-7)
        assert out["threshold"][i]


@pytest.mark.parametrize("kw", [
    dict(lam=-1, mu1=1, mu2=0.3, discount=0.1), dict(lam=1, mu1=1, mu2=1.0, discount=0.1),
    dict(lam=2, mu1=1, mu2=0.5), dict(lam=1, mu1=1, mu2=0.3, discount=0.0),
    dict(lam=1, mu1=1, mu2=[0.2, 0.3], slow_servers=3),
])
def test_bad_input(kw):
    with pytest.raises(InputError):
        solve(**kw)


def test_cli_json_and_exit_codes(capsys, monkeypatch):
    monkeypatch.setenv("JAXQ_CACHE_DIR", "off")  # keep the test session's jax config untouched
    assert main(["fastslow", "--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--average", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["q_L"], res["q_H"]) == (1, 2)
    assert res["threshold_structure"] is True
    assert set(res["inequalities"]) == {f"K{i}" for i in range(1, 7)} and all(res["inequalities"].values())
    assert res["average_cost"] == pytest.approx(3.9951187042, rel=1e-8)
    assert main(["fastslow", "--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--discount", "0.05", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert "value_empty" in res and isinstance(res["policy"], list)
    assert main(["fastslow", "--lam", "3", "--mu1", "1", "--mu2", "0.5", "--average"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxq: error: lam: unstable") and err.count("\n") == 1


def test_greedy_policy_ties_go_to_fewer_slow_jobs():
    lay, N = identical(2), 5
    pol = greedy_policy(lay, N, np.zeros((N + 1, 3)))
    assert np.array_equal(pol, np.tile(np.arange(3), (N + 1, 1)))


def test_lightly_loaded_average_cost_converges_within_its_bounds():
    """lam = 1e-6: the average cost (about 1e-6) cannot meet a 1e-10 relative tolerance through the round-off of
    relative values of order 10-10^4 (the solver used to refuse the system as 'too extreme'); the stopping rule
    accepts the round-off floor and the returned bounds contain policy iteration's exact g."""
    lam = 1e-6
    s = solve(lam, MU1, MU2)
    pol, (g, _), _ = exact.policy_iteration(s.problem.layout, s.N, lam, MU1, [MU2])
    assert s.bounds[0] <= g <= s.bounds[1] and s.bounds[1] - s.bounds[0] <= 1e-5 * g
    assert np.array_equal(pol[: s.X + 1], s.policy[: s.X + 1])
