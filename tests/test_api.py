"""The public API at ``import jaxq``: every entry point works on bundled systems and returns its documented type."""

from __future__ import annotations

import numpy as np
import pytest

import jaxq
from jaxq.diffusion.network_analysis import NetworkAnalysis
from jaxq.diffusion.workload import Analysis


def test_the_api_is_listed_and_documented():
    import importlib.metadata
    import inspect

    listed = ("load", "example_names", "analyze", "simulate", "simulate_sde", "simulate_network_sde", "tune",
              "solve_fastslow", "simulate_fastslow", "run_experiment", "read_run", "SimResult", "Estimate")
    assert set(listed) <= set(jaxq.__all__) and len(set(jaxq.__all__)) == len(jaxq.__all__)
    assert jaxq.__version__ == importlib.metadata.version("jaxq")
    for name in set(jaxq.__all__) - {"__version__"}:  # a summary sentence heads every docstring (the reference's)
        doc = inspect.getdoc(getattr(jaxq, name))
        assert doc and doc.split("\n\n")[0].rstrip().endswith("."), name
    assert "pss_PP" in jaxq.example_names() and "network_N" in jaxq.example_names()
    with pytest.raises(AttributeError):
        jaxq.no_such_function  # noqa: B018


def test_load_analyze_simulate_the_2x2_system():
    s = jaxq.load("pss_T2T1")
    from jaxq.examples import path

    assert jaxq.load(path("pss_T2T1")).lam.tolist() == s.lam.tolist()
    a = jaxq.analyze(s)
    assert isinstance(a, Analysis) and a.policy == "T2T1" and a.case == "dual"
    r = jaxq.simulate(s, 64, 48, seed=1)
    assert isinstance(r, jaxq.SimResult) and r.engine == "event" and r.primary == "J_hat"
    assert r.main.controlled and np.isfinite(r.value) and r.stderr > 0 and r.events > 0
    d = r.to_dict()
    for k in ("J_hat", "stderr", "ci95", "J_plain", "stderr_plain", "variance_reduction", "cv_coefficients", "V0",
              "events_per_s", "engine"):
        assert k in d, k
    sde = jaxq.simulate_sde(s, paths=64, dt=0.02)
    assert sde.primary == "V_hat" and "V_exact" in sde.info


def test_network_analysis_and_simulation():
    net = jaxq.load("network_N")
    an = jaxq.analyze(net)
    assert isinstance(an, NetworkAnalysis) and an.spare_capacity == pytest.approx(0.5666666666666667)
    r = jaxq.simulate(net, 16, 16, policy="lap", warmup=1.0, horizon=8.0)
    assert r["mean_queue"].shape == (2,) and r["mean_queue_stderr"].shape == (2,)
    d = jaxq.simulate_network_sde(net, paths=8, dt=0.05, horizon=4.0, warmup=1.0)
    assert np.isfinite(d["mean_neg"]) and d.info["identity_lhs"] == pytest.approx(an.spare_capacity)


@pytest.mark.slow  # a second check: -m slow
def test_tune_fastslow_and_run_experiment(tmp_path):
    s = jaxq.load("pss_PP")
    t = jaxq.tune(s)
    assert t.z == pytest.approx(jaxq.analyze(s).z_star, rel=1e-6)
    sol = jaxq.solve_fastslow(1.2, 1.0, 0.3, discount=None)
    assert sol.queue_thresholds[0] <= sol.queue_thresholds[1]
    sim = jaxq.simulate_fastslow(1.2, 1.0, 0.3, [1, 2], reps=4, steps=1000, warmup=100)
    assert np.isfinite(sim["average_cost"])
    rec = jaxq.run_experiment('[experiment]\nstudy = "convergence"\nsystem = "pss_P"\nreplications = 4\n'
                              'chunk = 4\n[grid]\nn = [9]\nhorizon = 1.0\n', tmp_path / "run")
    points, records = jaxq.read_run(tmp_path / "run")
    assert len(points) == 1 and records[0]["J"].shape == (4,) and rec["tables"]["summary"][0]["reps"] == 4
