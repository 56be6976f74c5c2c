"""The truncation bias of J_n counts: the default truncation is extended until its bound is at most a tenth of
the standard error left by the control variates, and whatever bound remains widens ci95 (one-sided, as the SDE
estimators do: the same TruncatedEstimate)."""

import math

import pytest

import jaxq
from jaxq.sim import pss2x2
from jaxq.mc.result import TruncatedEstimate

# An overloaded system (lambda_hat large) at n = 1: J_n ~ 313 with a standard error of ~0.009 after the control
# variates; the truncation sized against J_hat alone (bound <= 1e-3 J_hat) left a bias of ~20 standard errors.
UNSTABLE = {"kind": "pss2x2", "lambda": [0.7, 0.6], "mu": [[0.4, 0.6], [0.8, 1.2]], "lambda_hat": [40.0, 40.0],
            "mu_hat": [[1.0, 0.5], [1.0, 0.5]], "interarrival": ["exponential", "exponential"],
            "service": [["exponential", "exponential"], ["exponential", "exponential"]]}


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    f = tmp_path_factory.mktemp("sys") / "unstable.toml"
    lines = ["[system]"] + [f"{k} = {v!r}".replace("'", '"') for k, v in UNSTABLE.items()]
    f.write_text("\n".join(lines) + "\n\n[cost]\nh = [1.0, 1.0]\ngamma = 0.5\n")
    return jaxq.load(f)


@pytest.fixture(scope="module")
def runs(system):
    short = pss2x2.simulate(system, 1, 1000)  # the default truncation, unchecked
    bounded = jaxq.simulate(system, 1, 1000)
    # the same replications (same seeds, same engine) truncated much later: the reference for both
    ref = pss2x2.simulate(system, 1, 1000, truncation=pss2x2.Truncation(steps=3 * bounded.info["steps"]))
    return short, bounded, ref


def test_the_default_truncation_alone_misses_its_bias(runs):
    short, _, ref = runs
    assert short.engine == "uniformized" and short.info["truncation_bound"] > 4 * short.stderr
    assert ref.value - short.value > 4 * short.stderr  # the bias the old rule let through
    lo, hi = short.ci95  # ... which the widened interval now covers
    assert lo <= ref.value <= hi and math.isclose(hi - short.value, 1.96 * short.stderr + short.info["truncation_bound"])


def test_the_truncation_is_extended_to_a_tenth_of_the_standard_error(runs):
    _, bounded, ref = runs
    assert bounded.info["truncation_bound"] <= pss2x2.STDERR_SHARE * bounded.stderr
    assert bounded.info["steps"] > runs[0].info["steps"] and bounded.warnings == ()
    assert abs(bounded.value - ref.value) <= 4 * bounded.stderr
    lo, hi = bounded.ci95
    assert lo <= ref.value <= hi


def test_a_bound_that_remains_widens_ci95_and_is_said(system, monkeypatch):
    monkeypatch.setattr(pss2x2, "EXTENSIONS", 0)  # no longer runs: the bound of the default truncation remains
    r = jaxq.simulate(system, 1, 1000)
    bound = r.info["truncation_bound"]
    assert bound > pss2x2.STDERR_SHARE * r.stderr
    assert len(r.warnings) == 1 and "standard errors" in r.warnings[0] and "ci95 is widened" in r.warnings[0]
    lo, hi = r.ci95
    assert math.isclose(lo, r.value - 1.96 * r.stderr) and math.isclose(hi, r.value + 1.96 * r.stderr + bound)
    assert r.to_dict()["ci95"] == [lo, hi] and r.to_dict()["warnings"] == list(r.warnings)


def test_one_interval_rule_for_sde_and_prelimit():
    from jaxq.sde import estimators

    assert estimators.TruncatedEstimate is TruncatedEstimate
    r = jaxq.simulate("pss_PP", 16, 64, horizon=2.0)  # a horizon given: used as given, its bound in ci95
    assert isinstance(r.main, TruncatedEstimate) and r.main.tail == r.info["truncation_bound"] > 0
    assert math.isclose(r.ci95[1], r.value + 1.96 * r.stderr + r.info["truncation_bound"])


def test_the_system_is_analysed_once_per_call_reruns_included(monkeypatch):
    """jaxq.simulate analyses the system once and passes the analysis down, also to a run the truncation check
    repeats with a longer horizon."""
    import jaxq
    from jaxq.diffusion import workload

    calls = []
    analyze = workload.analyze
    monkeypatch.setattr(pss2x2, "analyze", lambda *a, **k: calls.append(1) or analyze(*a, **k))
    longer = pss2x2._longer_truncation
    asked = []

    def once_longer(res, gamma, rel_tol, se_floor):  # ask for one rerun, then the real rule
        if not asked:
            asked.append(1)
            return "horizon", res.info["horizon"] * 1.5, res.info["horizon"] * 1.5
        return longer(res, gamma, rel_tol, se_floor)

    monkeypatch.setattr(pss2x2, "_longer_truncation", once_longer)
    r = jaxq.simulate("pss_T2T1", n=100, reps=16, seed=1, engine="event")
    assert asked and len(calls) == 1, (asked, calls)
    assert r.info["horizon"] > pss2x2.default_horizon(jaxq.load("pss_T2T1"), 100, scale=jaxq.analyze("pss_T2T1").V0)
