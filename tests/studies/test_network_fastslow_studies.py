"""The network and fast/slow studies run by the experiment runner: tables, figures, resume, and their numbers
against exact values (identity (3.6), exact fast/slow costs, growth under negative spare capacity)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.studies import experiment as ex
from jaxq.studies import runner

NETWORK = """
[experiment]
study = "network"
systems = ["network_N"]
replications = 6
chunk = 3
seeds = [1]
[grid]
n = [16, 36]
policies = ["priority", "lap"]
warmup = 2.0
horizon = 20.0
hist_bins = 12
diffusion = true
sde_paths = 6
dt = 0.05
"""

FASTSLOW = """
[experiment]
study = "fastslow"
replications = 4
chunk = 2
[grid]
loads = [0.9]
ratios = [0.3]
slow_servers = [2, 3]
heterogeneous = [[0.6, 0.2]]
criteria = ["average", "discounted"]
alpha = 0.1
simulate = true
steps = 2000
warmup = 500
policy_iteration = true
best_threshold = true
"""


def experiment(text, file, **grid):
    data = tomllib.loads(text)
    data["grid"].update(grid)
    return ex.from_dict(data, Path(file))


@pytest.mark.slow
def test_network_study_runs_and_resumes_bit_identical(tmp_path, monkeypatch):
    exp = experiment(NETWORK, tmp_path / "net.toml")
    rec = runner.run(exp, tmp_path / "full", progress=False)
    rows = rec["tables"]["summary"]
    assert {(r["policy"], r["n"]) for r in rows} == {(p, n) for p in ("priority", "lap") for n in (16, 36, None)}
    for f in ("summary.csv", "fits.csv", "density.png", "tightness.png", "run.json", "records.csv"):
        assert (tmp_path / "full" / f).is_file(), f
    for r in rows:
        assert np.isfinite(r["queue_hat"]) and np.isfinite(r["idleness_hat"])
    monkeypatch.setenv(runner.FAIL_AFTER_ENV, "3")
    with pytest.raises(runner.SimulatedKill):
        runner.run(exp, tmp_path / "killed", progress=False)
    monkeypatch.delenv(runner.FAIL_AFTER_ENV)
    again = runner.run(exp, tmp_path / "killed", resume=True, progress=False)
    assert again["chunks_reused"] == 3
    for f in ("summary.csv", "fits.csv", "records.csv"):
        assert (tmp_path / "full" / f).read_bytes() == (tmp_path / "killed" / f).read_bytes(), f


@pytest.mark.slow
def test_network_study_numbers(tmp_path):
    """Identity (3.6) in the prelimit (N network, pool-dependent rates) and LAP using basic activities only."""
    exp = experiment(NETWORK.replace("replications = 6", "replications = 32").replace("chunk = 3", "chunk = 32"),
                     tmp_path / "numbers.toml", n=[25], policies=["priority"], horizon=150.0, diffusion=False, hist_bins=0)
    out = tmp_path / "out"
    row = runner.run(exp, out, progress=False)["tables"]["summary"][0]
    assert abs(row["weighted_idleness_hat"] - row["spare_capacity_n"]) <= 4 * row["weighted_idleness_hat_stderr"]


@pytest.mark.slow
def test_transience_grows_with_negative_spare_capacity(tmp_path):
    exp = experiment(NETWORK.replace("network_N", "network_N_understaffed"), tmp_path / "t.toml", n=[25],
                     policies=["swc"], warmup=0.0, horizon=20.0, times=[2.0, 10.0, 19.0], hist_bins=0, engine="event",
                     control="proportional", uc=[0.5, 0.5], us=[0.5, 0.5])
    rec = runner.run(exp, tmp_path / "out", progress=False)
    assert (tmp_path / "out" / "transience.png").is_file() and "transient" in rec["tables"]
    rows = rec["tables"]["summary"]
    assert rows[0]["spare_capacity"] < 0 and all(r["growth_rate"] > 0 for r in rows)


@pytest.mark.slow
def test_fastslow_study_against_exact_values(tmp_path):
    exp = experiment(FASTSLOW, tmp_path / "fs.toml")
    rec = runner.run(exp, tmp_path / "out", progress=False)
    rows = rec["tables"]["summary"]
    assert len(rows) == 3 * 2 and (tmp_path / "out" / "kslow.png").is_file()  # (K = 2, 3, heterogeneous) x criteria
    for r in rows:
        assert r["converged"]
        if r["kind"] == "identical":
            assert r["simulation_agrees"], r  # Monte Carlo cost of the optimal threshold policy within 4 s.e.
            if r["K"] == 2:
                assert r["q_L"] <= r["q_H"] and r["threshold"]
        if r["criterion"] == "average":
            assert r["pi_agrees"] and r["gap"] >= 0


@pytest.mark.slow
def test_cli_runs_a_network_experiment_file(tmp_path, capsys):
    f = tmp_path / "net.toml"
    f.write_text(NETWORK.replace("n = [16, 36]", "n = [16]").replace("diffusion = true", "diffusion = false"))
    assert main(["run", str(f), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    assert main(["run", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--resume", "--json"]) == 0
    assert '"chunks_reused": 4' in capsys.readouterr().out
