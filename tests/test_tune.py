"""Tuning the switching level on the exact cost: L-BFGS finds the smooth-fit z* and V0."""

import pytest

from jaxq.cli import main
from jaxq.diffusion.workload import analyze
from jaxq.examples import path
from jaxq.model import load
from jaxq.tuning.exact import tune_exact


@pytest.mark.parametrize("name", ["pss_PP", "pss_T2T2", "pss_T1T2", "pss_T2T1"])  # server- and class-switched
def test_exact_tuning_finds_z_star_and_v0(name):
    a = analyze(load(path(name)))
    r = tune_exact(*a.mode_coefficients(), a.system.gamma)
    assert abs(r.z / a.z_star - 1) < 1e-3
    assert abs(r.cost * a.cost_scale() / a.V0 - 1) < 1e-4
    assert r.trajectory[-1][1] <= r.trajectory[0][1]


def test_tune_cli(tmp_path, capsys):
    fig = tmp_path / "traj.png"
    assert main(["tune", str(path("pss_PP")), "--json", "--figure", str(fig)]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    for k in ("z_tuned", "z_star", "cost_tuned", "V0", "iterations"):
        assert k in r
    assert r["z_tuned"] == pytest.approx(r["z_star"], rel=1e-3)
    assert fig.stat().st_size > 1000


def test_tune_refuses_single_mode_and_bad_start(capsys):
    assert main(["tune", str(path("pss_P"))]) == 2
    assert "single-mode" in capsys.readouterr().err
    assert main(["tune", str(path("pss_PP")), "--z-init", "-1"]) == 2
    assert "--z-init" in capsys.readouterr().err
