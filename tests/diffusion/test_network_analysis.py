"""Analytics of many-server networks: LP (2.3)/SPP, CRP, Phi, B1/B2, spare capacity, LAP; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import jaxq
from jaxq.cli import main
from jaxq.diffusion.network import b_matrices, diffusion_limit, spare_capacity_n
from jaxq.errors import InputError
from jaxq.model import load
from jaxq.model.network import from_dict
from jaxq.planning.lap import activity_priorities, class_priorities, lap_equilibrium, validate_activity_order
from jaxq.planning.network_lp import resolve_scaling, solve_static_plan, tree_duals

EX = Path(jaxq.__file__).parent / "examples"


def _net(**kw):
    return from_dict({"system": {"kind": "network", **kw}})


def _plan(net):
    plan = solve_static_plan(net.lam, net.mu, net.nu)
    return plan, resolve_scaling(net.scaling, plan, net.has_second_order)


def test_n_network_by_hand():
    net = load(EX / "network_N.toml")
    plan, scaling = _plan(net)
    assert scaling == "halfin-whitt" and plan.crp and plan.graph_is_tree
    np.testing.assert_allclose(plan.xi, [[0.6, 0.0], [0.4, 1.0]], atol=1e-12)
    dl = diffusion_limit(net, plan)
    # Dominant pool 1: B1 = diag(mu_i1), B2_ij = mu_ij - mu_i1 on leaf pools (2.33).
    np.testing.assert_allclose(dl.B1, np.diag([1.0, 1.5]), atol=1e-12)
    np.testing.assert_allclose(dl.B2, [[0.0, 0.0], [0.0, -0.5]], atol=1e-12)
    # l_i = lambda_hat_i - sum_j mu_ij xi_ij nu_hat_j (2.14)
    np.testing.assert_allclose(dl.ell, [0.2 - 0.6 * 0.5, -0.1 - (1.5 * 0.4 * 0.5 + 1.0 * 0.3)], atol=1e-12)
    assert dl.spare_capacity == pytest.approx(0.1 + 0.7 / 1.5, abs=1e-12)
    assert dl.network_type == "dominant-pool" and dl.b1_diagonal
    # rho_n -> rho (2.35)
    assert spare_capacity_n(net, plan, 1e8, dl.basis_pool) == pytest.approx(dl.spare_capacity, abs=1e-3)


def test_class_dependent_spare_capacity_is_exact_idleness():
    net = load(EX / "network_classdep.toml")
    plan, _ = _plan(net)
    dl = diffusion_limit(net, plan)
    mu_i = np.array([2.0, 1.0])
    np.testing.assert_allclose(dl.B1, np.diag(mu_i), atol=1e-12)
    np.testing.assert_allclose(dl.B2, 0.0, atol=1e-12)
    # (2.34)/(3.6): rho = sum nu_hat - sum lambda_hat / mu_i, and N^n - sum lambda^n/mu = sqrt(n) rho
    assert dl.spare_capacity == pytest.approx(net.nu_hat.sum() - (net.lambda_hat / mu_i).sum(), abs=1e-12)
    for basis in range(2):
        b1, b2 = b_matrices(net.mu, plan.basic, basis)
        np.testing.assert_allclose(b1, np.diag(mu_i), atol=1e-12)


def test_phi_and_b_matrices_are_consistent():
    net = load(EX / "network_M.toml")
    plan, _ = _plan(net)
    dl = diffusion_limit(net, plan)
    rng = np.random.default_rng(0)
    for _ in range(5):
        alpha = rng.normal(size=2)
        beta = rng.normal(size=3)
        beta[-1] += alpha.sum() - beta.sum()  # (alpha, beta) in D
        phi = dl.phi(alpha, beta)
        np.testing.assert_allclose(phi.sum(axis=1), alpha, atol=1e-12)  # (2.22)
        np.testing.assert_allclose(phi.sum(axis=0), beta, atol=1e-12)
        assert np.all(phi[~dl.tree] == 0)
        lhs = (net.mu * phi).sum(axis=1)  # (2.24)
        np.testing.assert_allclose(lhs, dl.B1 @ alpha + dl.B2 @ beta, atol=1e-12)
    assert dl.basis_pool == 1 and dl.network_type == "dominant-pool"
    np.testing.assert_allclose(dl.B1, np.diag([1.0, 1.2]), atol=1e-12)


def test_spp_duals_match_tree_equations():
    for name in ("network_N.toml", "network_M.toml", "network_lap.toml"):
        net = load(EX / name)
        plan, _ = _plan(net)
        nu_i, alpha = tree_duals(net.mu, net.nu, plan.basic)
        np.testing.assert_allclose(plan.workload, nu_i, atol=1e-9)
        np.testing.assert_allclose(plan.alpha, alpha, atol=1e-9)
        assert plan.alpha.sum() == pytest.approx(1.0)
        assert (plan.workload * net.lam).sum() == pytest.approx(plan.rho)  # rho = sum nu_i lambda_i


def test_lp_value_against_brute_force():
    """LP (2.3) value against an independent formulation (max over pools as epigraph, via dense LP)."""
    rng = np.random.default_rng(1)
    tree = np.array([[1, 1, 0], [0, 1, 1]], bool)
    for _ in range(3):
        mu = np.where(tree, rng.uniform(0.5, 2.0, tree.shape), 0.0)
        nu = rng.uniform(0.5, 1.5, 3)
        lam = rng.uniform(0.3, 1.0, 2)
        plan = solve_static_plan(lam, mu, nu)
        # minimise t subject to pool loads <= t with variables routing rates r_ij = mu nu xi
        idx = np.argwhere(tree)
        c = np.r_[np.zeros(len(idx)), 1.0]
        a_ub = np.zeros((3, len(idx) + 1))
        a_eq = np.zeros((2, len(idx) + 1))
        for e, (i, j) in enumerate(idx):
            a_ub[j, e] = 1.0 / (mu[i, j] * nu[j])
            a_eq[i, e] = 1.0
        a_ub[:, -1] = -1
        r = linprog(c, A_ub=a_ub, b_ub=np.zeros(3), A_eq=a_eq, b_eq=lam, method="highs-ipm")
        assert plan.rho == pytest.approx(r.fun, rel=1e-7)


@pytest.mark.parametrize(
    "kw, key",
    [
        ({"lambda": [0.6, 1.1], "mu": [[1.0, 0.1], [1.5, 1.0]], "pool_size": [1.0, 0.5]}, "system.mu"),  # cycle
        ({"lambda": [1.2], "mu": [[1.0]], "pool_size": [1.0]}, "system.lambda"),
        ({"lambda": [1.0], "mu": [[1.0]], "pool_size": [1.0], "scaling": "underloaded"}, "system.lambda"),
        ({"lambda": [0.5], "mu": [[1.0]], "pool_size": [1.0], "scaling": "halfin-whitt"}, "system.lambda"),
        ({"lambda": [1.0, 1.0], "mu": [[1.0, 1.0], [1.0, 1.0]], "pool_size": [1.0, 1.0]}, "system.mu"),
        ({"lambda": [1.0], "mu": [[1.0, 0.0]], "pool_size": [1.0, 1.0]}, "system.mu"),
        ({"lambda": [1.0], "mu": [[1.0, 2.0]], "pool_size": [1.0]}, "system.mu"),
        ({"lambda": [-1.0], "mu": [[1.0]], "pool_size": [1.0]}, "system.lambda.0"),
        ({"lambda": [1.0], "mu": [[1.0]], "pool_size": [1.0], "foo": 1}, "system.foo"),
    ],
)
def test_bad_networks_are_refused(kw, key):
    with pytest.raises(InputError) as e:
        _plan(_net(**kw))
    assert e.value.key.startswith(key)


def test_lap_priorities_and_equilibrium():
    net = load(EX / "network_lap.toml")
    plan, scaling = _plan(net)
    assert scaling == "underloaded" and plan.rho < 1
    tree = plan.basic
    assert class_priorities(tree) == [0, 2, 1]
    order = activity_priorities(tree)
    assert order == [(0, 0), (2, 1), (1, 0), (1, 1)]
    eq = lap_equilibrium(net.lam, net.mu, net.nu, tree)
    # by hand: psi11 = 0.5; psi32 = 0.3; class 2 takes the rest of pool 1 (0.5 -> rate 0.75) and 0.25 of pool 2
    np.testing.assert_allclose(eq.psi, [[0.5, 0.0], [0.5, 0.25], [0.0, 0.3]], atol=1e-12)
    assert eq.assumption_holds and np.all(eq.unserved == 0)
    np.testing.assert_allclose((eq.psi * net.mu).sum(axis=1), net.lam, atol=1e-12)  # rate balance
    assert np.all(eq.psi.sum(axis=0) <= net.nu + 1e-12)
    # A user order the algorithm can produce is accepted; one it cannot is refused.
    assert validate_activity_order(tree, [(2, 1), (0, 0), (1, 0), (1, 1)]) == [(2, 1), (0, 0), (1, 0), (1, 1)]
    with pytest.raises(InputError):
        validate_activity_order(tree, [(1, 0), (1, 1), (0, 0), (2, 1)])  # class 2 is not a leaf first
    with pytest.raises(InputError):
        validate_activity_order(tree, [(0, 0), (1, 0), (2, 1), (1, 1)])  # class 2's edges not consecutive


def test_cli_analyze_json(capsys):
    assert main(["network", "analyze", str(EX / "network_M.toml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("xi_star", "tree", "spare_capacity", "B1", "lap_activity_order", "lap_psi_star"):
        assert k in out
    assert out["spare_capacity"] == pytest.approx(0.5 / 1.0 + 0.54 / 1.2)
    assert out["lap_activity_order"][0] == [1, 1]


def test_cli_bad_input_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[system]\nkind = "network"\nlambda = [1.0, 1.0]\nmu = [[1.0]]\npool_size = [1.0]\n')
    assert main(["network", "analyze", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxq: error: system.mu") and err.count("\n") == 1
    assert main(["network", "simulate", str(EX / "network_N.toml"), "--n", "-3", "--json"]) == 2
