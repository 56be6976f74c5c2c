"""`jaxq simulate` and `jaxq tune`: a default horizon whose truncation bound is small
against the estimate, the too-short horizon rule of `jaxq run`, `--switch-at` refused where it would be
ignored, and a flat cost refused naming its real cause."""

from __future__ import annotations

import json
import math

import pytest

from jaxq.cli import main
from jaxq.examples import path

PSS = path("pss_PP").read_text()


def _json(argv, capsys) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _refused(argv, capsys, key: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"jaxq: error: {key}: "), err
    return err


@pytest.fixture(scope="module")
def huge_scv(tmp_path_factory):
    """pss_PP with the erlang:0.5 service replaced by a gamma law of SCV 1e30: V0 is about 1e15, far above J_4."""
    f = tmp_path_factory.mktemp("scv") / "gam_huge.toml"
    f.write_text(PSS.replace('"erlang:0.5"', '"gamma:1e30"'))
    return f


@pytest.mark.slow
def test_default_horizon_is_not_sized_by_a_meaningless_v0(huge_scv, capsys):
    """Was: T = 1 (from 1e-4 V0), J_hat 0.175 +- 0.009 with a printed bound 6.7, against 0.752 +- 0.015 at T = 30."""
    argv = ["simulate", str(huge_scv), "--n", "4", "--reps", "256", "--seed", "5"]
    d = _json(argv, capsys)
    assert d["truncation_bound"] <= 1e-3 * max(d["J_hat"], d["stderr"])
    ref = _json([*argv, "--horizon", "30"], capsys)
    assert abs(d["J_hat"] - ref["J_hat"]) <= 4 * math.hypot(d["stderr"], ref["stderr"])
    assert d["horizon"] > 1.0 and d["V0"] > 1e14


def test_default_horizon_scale_is_at_most_the_no_departure_cost(huge_scv):
    from jaxq.model import load
    from jaxq.model.validate import pss_cost_scale, pss_default_horizon, pss_no_departure_cost

    system = load(huge_scv)
    v0 = 1.1e15
    assert pss_cost_scale(system, 4, v0) == pss_no_departure_cost(system, 4) < 20
    assert pss_default_horizon(system, 4, v0) == pytest.approx(math.log(1e4) / system.gamma)
    assert pss_cost_scale(system, 4, 0.5) == 0.5  # V0 where it is the smaller scale


def test_extension_of_the_truncation_aims_at_rel_tol():
    """The longer truncation of a run whose bound is too large: the bound shrinks like exp(-gamma T) (event
    engine) or r^K (uniformised, r = Lambda / (Lambda + gamma)); none when the bound is small already."""
    import numpy as np

    from jaxq.sim.pss2x2 import _longer_truncation
    from jaxq.mc.result import Estimate, SimResult

    def result(engine, bound, **info):
        est = {"J_hat": Estimate(1.0, 0.01)}
        return SimResult("J_hat", est, 2, 0, 0.0, 0.0, engine, {}, {"truncation_bound": bound, **info})

    gamma = 0.5
    assert _longer_truncation(result("event", 1e-3, horizon=20.0), gamma, 1e-4) is None
    key, t, _ = _longer_truncation(result("event", 0.05, horizon=20.0), gamma, 1e-4)
    assert key == "horizon" and 0.05 * math.exp(-gamma * (t - 20.0)) == pytest.approx(1e-4)
    key, k, t = _longer_truncation(result("uniformized", 0.05, horizon=2.0, steps=2000), gamma, 1e-4)
    r = 1000.0 / (1000.0 + gamma)
    assert key == "steps" and isinstance(k, int) and 0.05 * r ** (k - 2000) <= 1e-4 < 0.05 * r ** (k - 2001)
    assert np.isfinite(t)
    # a bound of 0.15 standard errors (0.0015 against 0.01): a rerun, unless the standard error is held to a floor
    # (a precision target's rel_se: 0.02 of J_hat = 1, so the bound is 0.075 of it)
    assert _longer_truncation(result("event", 1.5e-3, horizon=20.0), gamma, 1e-2) is not None
    assert _longer_truncation(result("event", 1.5e-3, horizon=20.0), gamma, 1e-2, 0.02) is None
    assert _longer_truncation(result("event", 1.5e-3, horizon=20.0), gamma, 1e-2, 0.005) is not None


def test_a_precision_target_holds_the_truncation_to_the_standard_error_asked_for():
    """A targeted run (rel_se 0.1) whose standard error ends far below the target (the pilot's 128 replications) keeps
    its default horizon (rel_tol 1e-2: a bound near the standard error reached, a twelfth of the one asked for) where
    a fixed run of the same replications, held to its own standard error, is lengthened; given the target's se_floor
    the fixed run is the targeted run, bit for bit. The default horizon follows rel_tol."""
    import jaxq
    from jaxq.sim import pss2x2

    kw = dict(n=16, seed=4, engine="event", rel_tol=1e-2)
    targeted = jaxq.simulate("pss_T2", rel_se=0.1, **kw)
    assert "truncation_reruns" not in targeted.info and targeted.stderr < 0.02 * targeted.value
    assert pss2x2.STDERR_SHARE * targeted.stderr < targeted.info["truncation_bound"] <= pss2x2.STDERR_SHARE * 0.1 * targeted.value
    assert targeted.info["horizon"] < pss2x2.default_horizon(jaxq.load("pss_T2"), 16, scale=targeted.info["V0"])
    fixed = jaxq.simulate("pss_T2", reps=targeted.reps, **kw)
    assert fixed.info["truncation_reruns"] >= 1 and fixed.info["horizon"] > targeted.info["horizon"]
    held = jaxq.simulate("pss_T2", reps=targeted.reps, se_floor=0.1, **kw)
    assert held.value == targeted.value and held.stderr == targeted.stderr


@pytest.mark.parametrize("key, value", [("se_floor", -0.1), ("se_floor", float("nan")), ("se_floor", 1.0),
                                        ("rel_tol", 0.0), ("rel_tol", -1e-4), ("rel_tol", float("inf"))])
def test_truncation_shares_out_of_range_are_refused_by_name(key, value):
    import jaxq
    from jaxq.errors import InputError

    with pytest.raises(InputError) as e:
        jaxq.simulate("pss_T2", n=16, reps=8, engine="event", **{key: value})
    assert e.value.key == key


def test_too_short_a_horizon_is_refused_as_jaxq_run_refuses_it(capsys):
    """Was J_hat 0 +- 0; the rule and the words of `jaxq run`'s grid.horizon."""
    err = _refused(["simulate", "pss_PP", "--n", "4", "--horizon", "1e-6"], capsys, "horizon")
    assert "too short" in err and "arrivals per replication" in err


def test_check_pss_horizon_reads_as_the_study_check():
    from jaxq.model import load
    from jaxq.errors import InputError
    from jaxq.model.validate import check_pss_horizon

    system = load("pss_PP")
    check_pss_horizon(system, 9, None, "grid.horizon", "pss_PP")  # the simulator's own horizon passes
    check_pss_horizon(system, 9, 1.0, "grid.horizon", "pss_PP")
    with pytest.raises(InputError) as e:
        check_pss_horizon(system, 9, 1e-300, "grid.horizon", "pss_PP")
    assert e.value.key == "grid.horizon" and e.value.reason.startswith("pss_PP, n = 9: horizon 1e-300 is too short")


@pytest.mark.parametrize("extra", [["pss_P"], ["pss_PP", "--policy", "P@1"], ["pss_PP", "--policy", "T2"]])
def test_switch_at_is_refused_where_the_policy_never_switches(extra, capsys):
    err = _refused(["simulate", *extra, "--n", "4", "--reps", "2", "--switch-at", "1"], capsys, "switch_at")
    assert "never switches" in err


@pytest.mark.slow  # about 20 s; the fast set checks the same refusal through the API (tests/test_api_arguments.py)
def test_tune_on_a_flat_cost_names_gamma_not_z_init(tmp_path, capsys):
    """gamma = 1e30: it named --z-init (not given) and suggested starting where the default start already was."""
    f = tmp_path / "g30.toml"
    f.write_text(PSS.replace("gamma = 0.5", "gamma = 1e30"))
    err = _refused(["tune", str(f)], capsys, "cost.gamma")
    assert "--z-init" not in err and "flat to float64" in err


def test_a_looser_rel_tol_is_a_looser_truncation_check():
    """rel_tol = 1e-2 asks for a truncation bound of about 1e-2 of the cost: accepted up to 10 rel_tol of J_hat (the
    check against 1e-3 refused every such run, and its reruns shortened the horizon)."""
    import jaxq

    r = jaxq.simulate("pss_P", 16, 256, rel_tol=1e-2)
    assert 0 < r.info["truncation_bound"] <= 0.1 * r.value
