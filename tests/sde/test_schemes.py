"""Reflected SDE schemes (jaxq.sde) and the exact stationary law (jaxq.diffusion.stationary).

Every Monte Carlo check compares with an independent exact value within 4 standard errors (or a KS
critical value): the ODE solution of the HJB (jaxq.diffusion.hjb), the closed-form law of reflected
Brownian motion with drift, and the speed-measure stationary density.
"""

import math

import jax
import numpy as np
import pytest
from scipy import integrate, stats

from jaxq.cli import main
from jaxq.diffusion import hjb, stationary
from jaxq.errors import InputError
from jaxq.sde import coefficients as C
from jaxq.sde import euler, exact_step, skew
from jaxq.sde.driver import TimeGrid, Record, simulate, step_weights
from jaxq.sde.estimators import SdeTruncation, discounted_cost, stationary_check, terminal_values, truncation_bound
from jaxq.sde.smoothed import smoothed_cost
from jaxq.mc.replications import Batching

G = 0.5
T2T1 = (0.2857142857142856, 1.6278820596099706, -0.7857142857142856, 2.073644135332772)  # bL, sL, bH, sH
JUMP = (-1.0, 1.0, -2.0, 2.0)  # sigma doubles at the level, b/sigma continuous


def rbm_cdf(x, t, b, s):
    """P(Z_t <= x) for reflected BM with drift b, coefficient s, started at 0 (closed form)."""
    st = s * math.sqrt(t)
    return stats.norm.cdf((x - b * t) / st) - np.exp(2 * b * x / s**2) * stats.norm.cdf((-x - b * t) / st)


def test_lamperti_round_trip_and_validation():
    p = C.piecewise([0.5, 1.5], [1.0, -1.0, -2.0], [1.0, 2.0, 0.5])
    z = np.linspace(0, 4, 41)
    y = np.asarray(C.to_lamperti(p, z))
    assert np.allclose(C.from_lamperti(p, y), z)
    assert np.allclose(C.lamperti_levels(p), [0.5, 1.0])
    assert np.all(np.diff(y) > 0)
    with pytest.raises(InputError):
        C.piecewise([0.5], [1.0], [1.0])
    with pytest.raises(InputError):
        C.piecewise([0.5], [1.0, 1.0], [1.0, -1.0])
    with pytest.raises(InputError):
        C.piecewise([1.0, 0.5], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])


def test_step_weights_integrate_the_linear_interpolation():
    for h in (1e-3, 0.3):
        w0, w1 = step_weights(G, h)
        q0 = integrate.quad(lambda s: math.exp(-G * s) * (1 - s / h), 0, h)[0]
        q1 = integrate.quad(lambda s: math.exp(-G * s) * s / h, 0, h)[0]
        assert float(w0) == pytest.approx(q0, rel=1e-10) and float(w1) == pytest.approx(q1, rel=1e-8)


@pytest.mark.parametrize("levels, b, s", [([], [-1.0], [1.5]), ([0.5], list(JUMP[::2]), list(JUMP[1::2])),
                                          ([0.4, 1.0], [0.5, -0.2, -1.0], [1.0, 2.0, 0.7])])
def test_stationary_density_is_a_density_with_its_cdf(levels, b, s):
    f = lambda x: float(stationary.stationary_density(x, levels, b, s))  # noqa: E731
    edges = [0.0] + list(levels) + [np.inf]
    assert sum(integrate.quad(f, lo, hi)[0] for lo, hi in zip(edges[:-1], edges[1:])) == pytest.approx(1.0, abs=1e-9)
    for x in (0.2, 0.45, 0.7, 1.3, 3.0):
        cut = [0.0] + [c for c in levels if c < x] + [x]
        q = sum(integrate.quad(f, lo, hi)[0] for lo, hi in zip(cut[:-1], cut[1:]))
        assert float(stationary.stationary_cdf(x, levels, b, s)) == pytest.approx(q, abs=1e-10)
    x = np.linspace(0, 40, 4001)
    d = stationary.stationary_density(x, levels, b, s)
    if not levels:  # single mode: exponential with rate 2|b|/s^2
        assert np.allclose(d, 2 / 1.5**2 * np.exp(-2 / 1.5**2 * x))
    with pytest.raises(InputError):
        stationary.stationary_density(x, levels, b[:-1] + [0.5], s)


def test_stationary_mean_matches_the_hjb_in_the_abelian_limit():
    """gamma V(0) -> E_pi Z as gamma -> 0: the density's convention at the jump of sigma is the HJB's."""
    for bL, sL, bH, sH in (JUMP, T2T1):
        z = 0.7
        g = 1e-5
        abel = g * float(hjb.switching_cost(0.0, z, bL, sL, bH, sH, g))
        assert abel == pytest.approx(stationary.stationary_mean([z], [bL, bH], [sL, sH]), rel=1e-3)


def test_exact_step_has_the_exact_law_of_reflected_bm_at_any_step():
    """Constant coefficients: Z(t) of the exact-reflection scheme with a coarse step is exact in law."""
    b, s = -0.5, 1.3
    p = C.wcp(b, s, b, s, None)
    z = terminal_values(p, 0.0, [0.5, 2.0], dt=0.25, paths=20000, seed=1, scheme_name="exact")
    for j, t in enumerate((0.5, 2.0)):
        assert stats.kstest(z[:, j], lambda x: rbm_cdf(x, t, b, s)).pvalue > 1e-3
    # projected Euler at the same step is visibly wrong (atom at 0): the test can fail
    ze = terminal_values(p, 0.0, [2.0], dt=0.25, paths=20000, seed=1, scheme_name="euler")
    assert stats.kstest(ze[:, 0], lambda x: rbm_cdf(x, 2.0, b, s)).pvalue < 1e-6


def test_results_do_not_depend_on_batching():
    p = C.wcp(*T2T1, 0.6)
    a = simulate(skew.SCHEME, p, 0.0, G, TimeGrid(0.05, 2.0), 16, seed=4, record=Record([1.0]))
    b = simulate(skew.SCHEME, p, 0.0, G, TimeGrid(0.05, 2.0), 24, seed=4, record=Record([1.0]),
                 batching=Batching(chunk=16))  # two batches, one padded
    # path r depends only on r, bit for bit (every batch is a whole number of vectors)
    np.testing.assert_array_equal(a["cost"], b["cost"][:16])
    np.testing.assert_array_equal(a["snaps"], b["snaps"][:16])
    assert b["cost"].shape == (24,) and not np.allclose(b["cost"][16:], a["cost"][:8])
    assert a["horizon"] == 40 * 0.05 and a["steps"] == 40  # exactly ceil(T / dt) steps (the last block masked)


@pytest.fixture(scope="module")
def dual_costs():
    bL, sL, bH, sH = T2T1
    out = {}
    for z in (0.55, 1.5):
        exact = float(hjb.switching_cost(0.0, z, bL, sL, bH, sH, G))
        out[z] = exact, discounted_cost(C.wcp(bL, sL, bH, sH, z), G, 0.0, dt=0.01, truncation=SdeTruncation(20.0),
                                        paths=10000, seed=5)
    return out


@pytest.mark.parametrize("z", [0.55, 1.5])
def test_skew_scheme_discounted_cost_against_the_ode(dual_costs, z):
    exact, r = dual_costs[z]
    tail = r["truncation_bound"]
    assert r.value - 4 * r.stderr - tail <= exact <= r.value + 4 * r.stderr + tail


@pytest.mark.slow  # the skew scheme's discounted cost against the ODE stays in the fast set
def test_skew_scheme_stationary_law_ks():
    """The law of Z(20) (about 8 relaxation times) against the speed-measure density, KS at level 1e-3."""
    bL, sL, bH, sH = JUMP
    r = stationary_check(C.wcp(bL, sL, bH, sH, 0.5), dt=0.01, paths=20000, seed=6, time_t=20.0)
    assert r["passed"], r["ks"]
    assert abs(r["mean"] - r["mean_exact"]) <= 4 * r["mean_stderr"]


def test_truncation_bound_covers_the_rbm_tail():
    b, s, t = -0.5, 1.3, 6.0
    # exact tail: int_T^inf e^{-g t} E Z_t dt with E Z_t from the closed-form law
    mean = lambda u: integrate.quad(lambda x: 1 - rbm_cdf(x, u, b, s), 0, 60)[0]  # noqa: E731
    tail = integrate.quad(lambda u: math.exp(-G * u) * mean(u), t, 80, limit=200)[0]
    assert tail <= truncation_bound(0.0, abs(b), s, G, t) <= 50 * tail


@pytest.mark.slow  # the smoothed gradient against exact solves: tests/tuning/test_tune.py in the fast set
def test_smoothed_cost_gradient_is_the_pathwise_derivative():
    f = jax.jit(jax.value_and_grad(lambda z: smoothed_cost(z, 0.05, T2T1, G, 3, 64, 0.02, 4.0)[0]))
    v, g = f(1.2)
    e = 1e-4
    assert float(g) == pytest.approx(float((f(1.2 + e)[0] - f(1.2 - e)[0]) / (2 * e)), rel=1e-4)
    exact_grad = float(jax.grad(lambda z: hjb.switching_cost(0.0, z, *T2T1, G))(1.2))
    assert float(g) * exact_grad > 0


def test_cli_json_and_errors(capsys):
    rc = main(["sde", "jaxq/examples/pss_T2T2.toml", "--paths", "200", "--dt", "0.05", "--horizon", "5", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    import json

    d = json.loads(out)
    for k in ("V_hat", "stderr", "V_exact", "dt", "paths", "scheme", "z0", "switch_at", "horizon",
              "truncation_bound", "wall_s", "path_steps_per_s"):
        assert k in d
    assert d["scheme"] == "skew" and d["switch_at"] == pytest.approx(0.5226679520740065)
    for bad in (["--dt", "-1"], ["--scheme", "bogus"], ["--z0", "-1"], ["--paths", "1"], ["--switch-at", "-2"]):
        assert main(["sde", "jaxq/examples/pss_T2T2.toml", "--json"] + bad) == 2
        assert "jaxq: error:" in capsys.readouterr().err


def test_scheme_metadata():
    assert {euler.SCHEME.name, exact_step.SCHEME.name, skew.SCHEME.name} == {"euler", "exact", "skew"}


def test_each_scheme_states_its_weak_order_as_its_module_and_the_guide_do():
    """``Scheme.order`` is the weak order each scheme's module states (euler 1/2: the projection's boundary bias;
    exact 1/2 with a jump of sigma; skew none: its error is below the Monte Carlo noise), the SDE guide states the
    same, and the convergence study's recorded fits agree with each module's observed order (3 standard errors)."""
    import csv
    from pathlib import Path

    from jaxq.sde.estimators import SCHEMES
    from jaxq.sde.smoothed import SCHEME as SMOOTHED

    root = Path(__file__).resolve().parents[2]
    stated = {"euler": 0.5, "exact": 0.5, "skew": None}
    modules = {"euler": euler, "exact": exact_step, "skew": skew}
    assert set(SCHEMES) == set(stated)
    for name, sch in SCHEMES.items():
        assert sch.name == name and sch.order == stated[name] == modules[name].WEAK_ORDER
    assert SMOOTHED.order == exact_step.WEAK_ORDER  # the smoothed cost runs the exact step
    guide = " ".join((root / "docs" / "guides" / "sde.md").read_text().split())
    for phrase in ("`euler` weak order 1/2 (`order` 0.5", "`exact` weak order 1/2 (`order` 0.5)",
                   "`skew`: none stated (`order` None"):
        assert phrase in guide, phrase
    rows = list(csv.DictReader(open(root / "experiments" / "results" / "sde_convergence" / "orders.csv")))
    for row in rows:
        observed = getattr(modules[row["scheme"]], "OBSERVED_WEAK_ORDER", None)
        if observed is None or int(row["points_used"]) < 3:
            continue
        assert abs(float(row["order"]) - observed) < 3 * float(row["order_stderr"]), row

