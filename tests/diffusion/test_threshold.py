"""The threshold term of J_n - V0 (jaxq.diffusion.threshold): closed form against the HJB's closed forms and
an independent finite-difference solve of the same ODE."""

import math

import numpy as np
import pytest
from scipy.sparse import diags
from scipy.sparse.linalg import spsolve

from jaxq.diffusion import hjb
from jaxq.diffusion.threshold import discounted_cost, threshold_term
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2 as PT

COEFFS = [  # (bL, sL, bH, sH, gamma, level)
    (-0.714, 1.651, -0.786, 1.803, 0.5, 0.8),
    (0.3, 1.0, -1.2, 2.0, 0.2, 1.5),   # a lower mode with positive drift
    (-2.0, 0.5, -3.0, 0.7, 1.0, 0.1),
]


def fd_value(f, levels, b, s, gamma, L=40.0, N=80000):
    """u(0) of gamma u = b u' + s^2 u''/2 + f on [0, L], u'(0) = 0, u'(L) = f'(L)/gamma: central differences."""
    z = np.linspace(0.0, L, N + 1)
    h = z[1] - z[0]
    j = np.searchsorted(np.asarray(levels, float), z, side="right")
    bz, D = np.asarray(b)[j], np.asarray(s)[j] ** 2 / 2
    lo, up, mid = D / h**2 - bz / (2 * h), D / h**2 + bz / (2 * h), -2 * D / h**2 - gamma
    rhs = -f(z)
    slope = (f(L + 1e-6) - f(L)) / 1e-6 / gamma
    rhs[N] -= up[N] * 2 * h * slope
    lo, up = lo.copy(), up.copy()
    lo[N] += up[N]
    up[0] += lo[0]
    A = diags([lo[1:], mid, up[:-1]], [-1, 0, 1], format="csc")
    return float(spsolve(A, rhs)[0])


@pytest.mark.parametrize("c", COEFFS)
def test_linear_cost_is_the_hjb_closed_form(c):
    bL, sL, bH, sH, g, z = c
    assert discounted_cost([1.0], [], g, [bL], [sL]) == pytest.approx(float(hjb.rbm_value(0.0, bL, sL, g)), rel=1e-12)
    two = discounted_cost([1.0], [], g, [bL, bH], [sL, sH], [z])
    assert two == pytest.approx(float(hjb.switching_cost(0.0, z, bL, sL, bH, sH, g)), rel=1e-12)
    for z0 in (0.3 * z, 2.5 * z):  # from another starting point too
        got = discounted_cost([1.0], [], g, [bL, bH], [sL, sH], [z], z0=z0)
        assert got == pytest.approx(float(hjb.switching_cost(z0, z, bL, sL, bH, sH, g)), rel=1e-10)


@pytest.mark.parametrize("c", COEFFS)
@pytest.mark.parametrize("theta", [0.05, 0.7, 3.0])
def test_capped_cost_matches_finite_differences(c, theta):
    """f(z) = min(theta, alpha z) with the kink below, at or above the switching level."""
    bL, sL, bH, sH, g, z = c
    alpha = 2.0
    got = discounted_cost([alpha, 0.0], [theta / alpha], g, [bL, bH], [sL, sH], [z])
    f = lambda x: np.minimum(theta, alpha * x)  # noqa: E731
    coarse, fine = (fd_value(f, [z], [bL, bH], [sL, sH], g, N=N) for N in (80000, 320000))
    # the boundary and kink rows make the scheme first order: the error shrinks with h, and at h = 1e-4 it is
    # below 5e-5 of the value
    assert abs(fine - got) < 0.6 * abs(coarse - got) or abs(fine - got) < 1e-9
    assert got == pytest.approx(fine, rel=5e-5, abs=1e-8)
    assert 0 < got < theta / g  # between the costs of f = 0 and f = theta


def test_threshold_terms_of_the_bundled_cases():
    th = math.ceil(1e6 ** (5 / 12)) / 1e3  # Theta_hat at n = 10^6, a = 5/12
    terms = {}
    for name in ("pss_P", "pss_PP", "pss_T2", "pss_T2T2", "pss_T1T2", "pss_T2T1"):
        an = analyze(load(path(name)))
        terms[an.policy] = threshold_term(an, an.policy, th)
        assert threshold_term(an, "P" if an.policy != "P" else "PP", th) is None  # not the theorem's policy
        if an.policy in ("T2", "T2T2", "T2T1", "T1T2"):
            assert threshold_term(an, an.policy, 1e-12) == pytest.approx(0.0, abs=1e-9)  # vanishes with Theta_hat
            h, al, p, q, g = an.system.h, an.modes.alpha, an.p, an.q, an.system.gamma
            small = 1e-4  # first order: the held queue costs (h_p - h_q alpha_q / alpha_p) Theta_hat / gamma (T2
            # rule) or h_p Theta_hat / gamma plus the shifted switching level's first-order effect (T1 rule)
            d = threshold_term(an, an.policy, small) / small
            if an.policy != "T1T2":
                assert d == pytest.approx((h[p] - h[q] * al[q] / al[p]) / g, rel=1e-2)
    assert terms["P"] == 0.0 and terms["PP"] == 0.0
    assert terms["T2T2"] == 0.0  # h_p alpha_p = h_q alpha_q in pss_T2T2: holding p costs nothing extra
    # values quoted in README (n = 10^6, a = 5/12)
    assert terms["T2T1"] == pytest.approx(0.2795, abs=1e-4)
    assert terms["T1T2"] == pytest.approx(1.2688, abs=1e-4)
    assert terms["T2"] == pytest.approx(0.2134, abs=1e-4)


def test_beyond_the_switching_level_and_the_public_api():
    import jaxq

    an = analyze(load(path("pss_T2T1")))
    assert threshold_term(an, "T2T1", 0.99 * an.z_star) is not None
    assert threshold_term(an, "T2T1", an.z_star) is None  # the held jobs alone reach z*: not modelled
    # the term is that of z*: a run switching elsewhere has none
    assert threshold_term(an, "T2T1", 0.1, switch_at=an.z_star) == threshold_term(an, "T2T1", 0.1) is not None
    assert threshold_term(an, "T2T1", 0.1, switch_at=2.0 * an.z_star) is None
    assert jaxq.threshold_term("pss_T2T1", 10**6, theta_exponent=5 / 12, theta_rule="paper") == pytest.approx(
        0.2795, abs=1e-4)
    assert jaxq.threshold_term("pss_P", 100) == 0.0
    # the default exponent, (2.29)'s c = 1: Theta_n = ceil(n^0.34) = 51 at n = 10^5
    an2 = analyze(load(path("pss_T2")))
    assert jaxq.threshold_term("pss_T2", 1e5, theta_rule="paper") == pytest.approx(
        threshold_term(an2, "T2", 51 / math.sqrt(1e5)))
    # the root rule: Theta_n = ceil(c n^0.34) with c = sqrt(D) / 3, D the excursion depth
    from jaxq.sim.pss2x2 import setup
    theta = setup(load(path("pss_T2")), 1e5, levels=PT.Levels(theta_rule="root")).theta
    assert theta != 51
    assert jaxq.threshold_term("pss_T2", 1e5, theta_rule="root") == pytest.approx(
        threshold_term(an2, "T2", theta / math.sqrt(1e5)))
    # the default rule (excursion): its Theta_n; None where it moves the switching level away from z*
    theta = setup(load(path("pss_T2")), 1e5).theta
    assert jaxq.threshold_term("pss_T2", 1e5) == pytest.approx(threshold_term(an2, "T2", theta / math.sqrt(1e5)))
    st = setup(load(path("pss_T2T1")), 1e4)
    assert not math.isclose(st.switch_at, an.z_star) and jaxq.threshold_term("pss_T2T1", 1e4) is None
    with pytest.raises(jaxq.InputError, match="^n: "):
        jaxq.threshold_term("pss_T2", 0.5)
    with pytest.raises(jaxq.InputError, match="^system: this needs a 'pss2x2' system"):
        jaxq.threshold_term("network_N", 100)


@pytest.mark.parametrize("c", COEFFS[:2])
def test_a_cost_that_jumps_at_the_switching_level_matches_finite_differences(c):
    """``offsets``: f(z) = z + 0.4 above the switching level (a mode that costs a constant more)."""
    bL, sL, bH, sH, g, z = c
    got = discounted_cost([1.0], [], g, [bL, bH], [sL, sH], [z], offsets=[0.0, 0.4])
    f = lambda x: x + np.where(x >= z, 0.4, 0.0)  # noqa: E731
    fine = fd_value(f, [z], [bL, bH], [sL, sH], g, N=320000)
    assert got == pytest.approx(fine, rel=5e-5, abs=1e-8)
    # a constant offset everywhere adds offset / gamma
    assert discounted_cost([1.0], [], g, [bL, bH], [sL, sH], [z], offsets=[0.4, 0.4]) == pytest.approx(
        discounted_cost([1.0], [], g, [bL, bH], [sL, sH], [z]) + 0.4 / g, rel=1e-12)


def test_the_batch_gives_the_one_by_one_numbers_bit_for_bit():
    """``discounted_costs`` (a batch of problems of one shape, at z0 = 0) is ``discounted_cost`` problem by problem,
    to the last bit: the same operations on arrays, the exponentials by math.exp, one LAPACK solve per problem."""
    from jaxq.diffusion.threshold import discounted_costs

    rng = np.random.default_rng(7)
    size = 200
    b0, b1 = rng.uniform(-2.0, 1.0, size), rng.uniform(-3.0, 0.5, size)
    s0, s1 = rng.uniform(0.3, 2.0, size), rng.uniform(0.3, 2.0, size)
    w = rng.uniform(0.01, 1.0, size)
    z = w + rng.uniform(1e-6, 3.0, size)
    step, g = rng.uniform(-1.0, 1.0, size), 0.37
    cases = [  # (slopes, kinks, b, s, levels, offsets): no break point, a kink, a level, a kink below a level
        ([1.0], [], [b0], [s0], (), None),
        ([0.8, 0.0], [w], [b0], [s0], (), None),
        ([1.0], [], [b0, b1], [s0, s1], (z,), None),
        ([0.0], [], [b0, b1], [s0, 1.3], (z,), (0.0, step)),
        ([1.7, 0.0], [w], [b0, b1], [s0, s1], (z,), (0.0, step)),
        ([1.7, 0.3, 0.0], [w, z + 1.0], [b0, b1], [s0, s1], (z,), (0.0, step)),  # a kink above the level too
    ]
    for slopes, kinks, b, s, levels, offsets in cases:
        got = discounted_costs(slopes, kinks, g, b, s, levels, offsets)

        def at(x, i):
            return x[i] if np.ndim(x) else x

        want = [discounted_cost([at(x, i) for x in slopes], [at(x, i) for x in kinks], g, [at(x, i) for x in b],
                                [at(x, i) for x in s], [at(x, i) for x in levels],
                                offsets=None if offsets is None else [at(x, i) for x in offsets])
                for i in range(size)]
        assert got.tolist() == want
    with pytest.raises(ValueError, match="one order"):  # a kink above the level in some problems
        discounted_costs([1.0, 0.0], [z], g, [b0, b1], [s0, s1], (w + 1.0,))
