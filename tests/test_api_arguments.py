"""The Python API checks its own arguments as the command line does, and the exact tuner is
free of the problem's units and says why a cost flat to float64 cannot be tuned."""

from __future__ import annotations

import math

import pytest

import jaxq
from jaxq.examples import path

PSS = path("pss_PP").read_text()


def _refused(call, key: str) -> str:
    with pytest.raises(jaxq.InputError) as e:
        call()
    assert e.value.key == key, str(e.value)
    return e.value.reason


@pytest.mark.parametrize("kwargs, key", [
    ({"reps": 1}, "reps"),  # one replication has no standard error (was NaN)
    ({"reps": True}, "reps"),  # was taken as 1
    ({"reps": 2.0}, "reps"),
    ({"record_times": [float("nan"), 1.0]}, "record_times[0]"),  # was W_hat 0 at the NaN time
    ({"record_times": "1"}, "record_times"),
    ({"record_times": [True]}, "record_times[0]"),
    ({"cv": "off"}, "cv"),  # was treated as True
    ({"cv": 1}, "cv"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**64}, "seed"),  # was an OverflowError from JAX
    ({"seed": 1.5}, "seed"),  # was a tracer TypeError
    ({"seed": None}, "seed"),
    ({"seed": True}, "seed"),
    ({"devices": 0}, "devices"),  # was TypeError: 'int' object is not iterable
    ({"devices": "x"}, "devices"),  # was ignored
    ({"devices": []}, "devices"),  # was ignored
    ({"devices": [1]}, "devices[0]"),
    ({"chunk": 0}, "chunk"),
    ({"policy": 3}, "policy"),
    ({"engine": None}, "engine"),
])
def test_simulate_checks_its_arguments(kwargs, key):
    _refused(lambda: jaxq.simulate("pss_PP", n=16, **{"reps": 4, **kwargs}), key)


def test_a_network_simulation_needs_two_replications_too():
    _refused(lambda: jaxq.simulate("network_N", 4, reps=1), "reps")


@pytest.mark.parametrize("call, key", [
    (lambda: jaxq.simulate_network_sde("network_N", paths=1), "paths"),  # was NaN standard errors
    (lambda: jaxq.simulate_network_sde("network_N", uc=["a", 1.0]), "uc[0]"),
    (lambda: jaxq.simulate_network_sde("network_N", seed=-1), "seed"),
    (lambda: jaxq.simulate_network_sde("network_N", cv="no"), "cv"),
    (lambda: jaxq.simulate_sde("pss_PP", paths=1), "paths"),
    (lambda: jaxq.simulate_sde("pss_PP", seed=2**32), "seed"),
    (lambda: jaxq.simulate_fastslow(1.2, 1.0, 0.3, [1, 2], reps=4, seed=-3), "seed"),
    (lambda: jaxq.tune("pss_PP", target="sde", seed=1.5), "seed"),
    (lambda: jaxq.run_experiment("x", "/nonexistent/never", seeds=[-1]), "seeds[0]"),
    (lambda: jaxq.run_experiment("x", "/nonexistent/never", resume="yes"), "resume"),
    (lambda: jaxq.run_experiment("x", ""), "out"),
    (lambda: jaxq.read_run(""), "out"),
    (lambda: jaxq.analyze("network_N", basis_pool=0), "basis_pool"),
])
def test_every_function_checks_its_own_arguments(call, key):
    _refused(call, key)


@pytest.mark.parametrize("call, key, kind", [
    (lambda: jaxq.simulate_sde("network_N"), "system", "'pss2x2'"),  # was AttributeError
    (lambda: jaxq.simulate_network_sde("pss_PP"), "network", "'network'"),  # was AttributeError
    (lambda: jaxq.tune("network_N"), "system", "'pss2x2'"),
    (lambda: jaxq.exact_cost("network_N", n=4), "system", "'pss2x2'"),
    (lambda: jaxq.threshold_term("network_N", n=4), "system", "'pss2x2'"),
])
def test_a_system_of_the_wrong_kind_is_refused_naming_it(call, key, kind):
    assert f"needs a {kind} system" in _refused(call, key)


@pytest.mark.parametrize("call, key", [
    (lambda: jaxq.load(""), "source"),  # was ": is a directory, not a file"
    (lambda: jaxq.load("   "), "source"),
    (lambda: jaxq.load(5), "source"),
    (lambda: jaxq.simulate("", 4), "system"),
    (lambda: jaxq.analyze(None), "system"),
])
def test_empty_or_wrong_sources_are_refused(call, key):
    _refused(call, key)


def test_the_model_loader_refuses_an_empty_path():
    from jaxq.model import load

    assert "empty path" in _refused(lambda: load(""), "system")


def test_checked_values_are_used_as_given():
    """The checks return the values the library gets: a count of devices becomes that many local devices,
    record times become floats; the documented results still come back."""
    r = jaxq.simulate("pss_PP", 16, 4, devices=1, record_times=[0, 1], seed=3)
    assert r.samples["W_hat_t"].shape == (4, 2) and math.isfinite(r.stderr)


def test_too_short_a_horizon_is_refused_by_the_api_too():
    assert "too short" in _refused(lambda: jaxq.simulate("pss_PP", 4, 4, horizon=1e-6), "horizon")


def test_a_switching_level_for_a_policy_that_never_switches_is_refused():
    assert "never switches" in _refused(lambda: jaxq.simulate("pss_P", 4, 4, switch_at=1.0), "switch_at")
    assert "never switches" in _refused(lambda: jaxq.simulate("pss_PP", 4, 4, policy="P@1", switch_at=1.0),
                                        "switch_at")


# ------------------------------------------------------------------------------------------ exact tuner
def _pss_pp_coefficients():
    a = jaxq.analyze("pss_PP")
    return (*a.mode_coefficients(), a.system.gamma), a.z_star


def test_exact_tuning_is_free_of_the_units_of_time_and_workload():
    """Time sped up 1e30 (J of order 1e-30) or workload scaled by 1e-20: the same minimiser, scaled. Before,
    L-BFGS's steps were of the size of the gradient in theta (about J) and it stalled at its start."""
    from jaxq.tuning.exact import tune_exact

    (bL, sL, bH, sH, g), z_star = _pss_pp_coefficients()
    k = 1e30
    r = tune_exact(bL * k, sL * math.sqrt(k), bH * k, sH * math.sqrt(k), g * k)
    assert r.z == pytest.approx(z_star, rel=1e-7)
    r = tune_exact(bL * 1e-20, sL * 1e-20, bH * 1e-20, sH * 1e-20, g)
    assert r.z == pytest.approx(z_star * 1e-20, rel=1e-7)


def test_a_cost_flat_to_float64_at_z_star_is_refused_naming_gamma(tmp_path):
    """pss_PP at gamma = 1e30: z* lies 35 decay lengths out, where J(0; z) changes in its 29th digit; the
    refusal names cost.gamma (it named --z-init, not given, and suggested the default start)."""
    f = tmp_path / "g30.toml"
    f.write_text(PSS.replace("gamma = 0.5", "gamma = 1e30"))
    reason = _refused(lambda: jaxq.tune(str(f)), "cost.gamma")
    assert "flat to float64" in reason and "--z-init" not in reason


def test_run_experiment_refuses_a_folder_with_files_unless_resumed(tmp_path):
    """As ``jaxq run``: without ``resume`` a non-empty folder (an earlier run's, or anyone's) is refused before any
    work, and nothing in it is touched."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("mine\n")
    reason = _refused(lambda: jaxq.run_experiment("experiments/collapse.toml", out), "--out")
    assert "not empty" in reason and "--resume" in reason
    assert [p.name for p in out.iterdir()] == ["summary.csv"] and (out / "summary.csv").read_text() == "mine\n"


def test_network_diffusion_of_a_transient_network_is_refused_by_the_api_too():
    """A negative spare capacity (network_N_understaffed): no long-run averages (the uniform-stability paper, Propositions 3.1-3.2)."""
    reason = _refused(lambda: jaxq.simulate_network_sde("network_N_understaffed", paths=8, horizon=1.0, warmup=0.5),
                      "system")
    assert "spare capacity" in reason
