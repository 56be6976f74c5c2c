"""A network whose n-th system has no positive spare capacity has no long-run averages under any policy: its
simulation says so in its warnings, with the growth measured over the two halves of the window."""

import numpy as np
import pytest

import jaxq
from jaxq.cli import main


@pytest.fixture(scope="module")
def lap():
    return jaxq.simulate("network_N_understaffed", 100, 16, policy="lap", warmup=20.0, horizon=100.0, seed=1)


def test_a_negative_spare_capacity_is_said_with_its_growth(lap):
    g = lap.info["growth"]
    assert lap.info["spare_capacity_n"] < 0
    assert g["second_half"] > g["first_half"] and g["per_time"] > 4 * g["per_time_stderr"]
    assert len(lap.warnings) == 1 and lap.warnings[0].startswith("not stationary") and "rho_n = -0.4333" in lap.warnings[0]
    assert f"{g['first_half']:.4g} over [20, 60]" in lap.warnings[0] and lap.to_dict()["warnings"] == list(lap.warnings)
    # the halves are consistent with the whole window's average ...
    whole = float(np.mean(lap.samples["mean_in_system"].sum(axis=1)))
    assert np.isclose(whole, 0.5 * (g["first_half"] + g["second_half"]))


def test_the_second_half_agrees_with_a_run_over_it_alone(lap):
    g = lap.info["growth"]
    direct = jaxq.simulate("network_N_understaffed", 100, 16, policy="lap", warmup=60.0, horizon=100.0, seed=1)
    x = direct.samples["mean_in_system"].sum(axis=1)
    assert abs(float(np.mean(x)) - g["second_half"]) <= 4 * float(np.std(x, ddof=1) / np.sqrt(x.size)) + 1e-9


@pytest.mark.slow  # no false alarm: tests/sim/test_diagnostics.py (the 2x2 examples at their default) in the fast set
def test_a_stationary_network_has_no_warning():
    r = jaxq.simulate("network_N", 100, 8, policy="lap", warmup=5.0, horizon=30.0)
    assert r.info["spare_capacity_n"] > 0 and r.warnings == () and "growth" not in r.info


@pytest.mark.slow  # a simulation's note on the command line in the fast set: tests/diffusion/test_hpc_tie.py
def test_the_cli_prints_it_as_a_note(capsys):
    assert main(["network", "simulate", "network_N_understaffed", "--n", "100", "--reps", "4", "--policy", "lap",
                 "--horizon", "40", "--warmup", "10", "--json"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("jaxq: note: not stationary") and err.count("\n") == 1
