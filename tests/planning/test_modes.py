"""LP (2.7) and its modes: Lemmas 2.1, 3.1-3.3 of the switched-policies paper."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxq.errors import InputError
from jaxq.planning.modes import mode_from_xi11, modes, solve_lp


def product_system(a1, a2, b1, x):
    """A product-form system on the EHTC: lambda_1/alpha_1 = x, lambda_2/alpha_2 = 1 - x."""
    alpha = np.array([a1, a2])
    beta = np.array([b1, 1 - b1])
    return np.array([x * a1, (1 - x) * a2]), np.outer(alpha, beta)


def check_lp_solution(xi, lam, mu):
    assert np.all(xi >= -1e-12)
    np.testing.assert_allclose((xi * mu).sum(axis=1), lam, rtol=1e-10)
    np.testing.assert_allclose(xi.sum(axis=0), 1.0, rtol=1e-10)  # Lemma 2.1.1: column-stochastic


def test_spec_example():
    m = modes([0.7, 0.6], [[0.4, 0.6], [0.8, 1.2]])
    assert m.rho_star == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(m.alpha, [1.0, 2.0])
    np.testing.assert_allclose(m.beta, [0.4, 0.6])
    # (3.3): xi_11 of mode 1 = max(0, 0.7/0.4 - 1.5) = 0.25, of mode 2 = min(1.75, 1) = 1
    np.testing.assert_allclose(m.xi[0], [[0.25, 1.0], [0.75, 0.0]])
    np.testing.assert_allclose(m.xi[1], [[1.0, 0.5], [0.0, 0.5]])
    assert m.switching == "server"  # max lambda/alpha = 0.7 > max beta = 0.6
    assert m.zero.tolist() == [[1, 1], [1, 0]]
    assert m.i1.tolist() == [1, 1] and m.k1.tolist() == [1, 0]


@settings(max_examples=60, deadline=None)
@given(
    a1=st.floats(0.2, 5.0),
    a2=st.floats(0.2, 5.0),
    b1=st.floats(0.05, 0.95),
    x=st.floats(0.05, 0.95),
)
def test_modes_of_random_product_form_systems(a1, a2, b1, x):
    lam, mu = product_system(a1, a2, b1, x)
    if np.any(np.abs(lam[:, None] - mu) < 1e-6 * np.maximum(lam[:, None], mu)) or abs(x - b1) < 1e-6 or abs(x - (1 - b1)) < 1e-6:
        return  # degenerate; covered by its own test
    m = modes(lam, mu)
    for k in range(2):
        check_lp_solution(m.xi[k], lam, mu)
        # a nondegenerate mode: exactly one zero and a full column (0,1)^T or (1,0)^T
        assert (m.xi[k] <= 1e-12).sum() == 1
        assert any(np.allclose(m.xi[k][:, c], e) for c in range(2) for e in ([1, 0], [0, 1]))
    # every convex combination is an LP solution (2.9), and (3.2) parametrises the segment
    mid = 0.5 * (m.xi[0] + m.xi[1])
    check_lp_solution(mid, lam, mu)
    np.testing.assert_allclose(mode_from_xi11(mid[0, 0], lam, m.alpha, m.beta), mid, atol=1e-12)
    # Lemma 3.3: (3.5) <=> class-switched (zeros in one column), (3.6) <=> server-switched (one row)
    crit = np.max(lam / m.alpha) - np.max(m.beta)
    (r1, c1), (r2, c2) = m.zero
    if crit < 0:
        assert m.switching == "class" and c1 == c2 and r1 != r2
    else:
        assert m.switching == "server" and r1 == r2 and c1 != c2
    # the single-activity server is dedicated to the dual-activity class
    for k in range(2):
        assert m.xi[k][m.i2[k], m.k1[k]] == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(mu=st.lists(st.floats(0.2, 3.0), min_size=4, max_size=4), s=st.floats(0.1, 0.9))
def test_lemma_2_1_unique_solution_without_product_form(mu, s):
    mu = np.array(mu).reshape(2, 2)
    if abs(mu[0, 0] * mu[1, 1] - mu[0, 1] * mu[1, 0]) < 0.05:
        return
    # scale lambda onto rho* = 1, then the LP's optimal face is a single point
    lam = np.array([s, 1 - s])
    rho, lo, hi = solve_lp(lam, mu)
    lam = lam / rho
    rho, lo, hi = solve_lp(lam, mu)
    assert rho == pytest.approx(1.0)
    np.testing.assert_allclose(lo, hi, atol=1e-7)
    with pytest.raises(InputError, match="product form"):
        modes(lam, mu)


def test_lemma_2_1_multiple_solutions_with_product_form():
    lam, mu = product_system(1.0, 2.0, 0.4, 0.7)
    rho, lo, hi = solve_lp(lam, mu)
    assert rho == pytest.approx(1.0) and not np.allclose(lo, hi)


@pytest.mark.parametrize(
    "lam, mu, match",
    [
        ([0.6, 0.6], [[0.4, 0.6], [0.8, 1.2]], "rho\\* = 0.9 != 1 \\(underloaded\\)"),
        ([0.9, 0.6], [[0.4, 0.6], [0.8, 1.2]], "overloaded"),
        ([0.6, 0.6], [[0.4, 0.6], [0.8, 1.2]], "EHTC"),
        ([0.4, 1.2], [[0.4, 0.6], [0.8, 1.2]], "degenerate"),
    ],
)
def test_invalid_first_order_data(lam, mu, match):
    with pytest.raises(InputError, match=match):
        modes(lam, mu)


def test_a_near_zero_rate_is_named_not_reported_as_a_solver_error():
    """An arrival rate of 1e-20 makes LP (2.7)'s coefficients mu / lambda 1e19: HiGHS refused it as a "model
    error"; the refusal now says which coefficients are out of the range it accepts."""
    with pytest.raises(InputError, match=r"span 1\.33 \.\. 6e\+19, beyond the range HiGHS accepts"):
        solve_lp(np.array([1e-20, 0.6]), np.array([[0.4, 0.6], [0.8, 1.2]]))
