"""Tuning the switching level on the exact cost: L-BFGS finds the smooth-fit z* and V0."""

import math

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


@pytest.mark.parametrize("name", ["pss_PP", "pss_T2T1"])
def test_exact_tuning_converges_from_any_start_across_the_decay_lengths(name):
    """J(0; z) is concave beyond its inflection point; a start there (pss_PP: z = 5, 6, 8) made L-BFGS creep
    uphill until the iteration cap (its curvature pairs had s y <= 0); its memory now restarts on such a pair."""
    from jaxq.diffusion import hjb

    a = analyze(load(path(name)))
    coef = (*a.mode_coefficients(), a.system.gamma)
    longest = float(hjb.length_scale(*coef))
    for z0 in (0.01 * longest, 0.5 * longest, longest, 1.5 * longest):
        r = tune_exact(*coef, z_init=z0)
        assert abs(r.z / a.z_star - 1) < 1e-3, (z0, r.z)


def test_tune_says_why_a_start_far_out_cannot_move(capsys):
    """Far beyond the decay lengths J(0; z) is flat and concave: the refusal names --z-init, not --max-iter."""
    assert main(["tune", str(path("pss_PP")), "--z-init", "10", "--max-iter", "50"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--z-init" in err and "nearly flat" in err


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


@pytest.mark.slow  # the gradient tuner (not the default search)
def test_smoothed_gradient_in_c_against_exact_solves():
    """The antithetic Gaussian-smoothing estimate of d/dc E J_n(ceil((c + tau eps) n^a)) on an exponential
    system, against the same derivative computed from exact sparse solves at every threshold."""
    import math

    import numpy as np
    from scipy.stats import norm

    from jaxq.sim.exact_ctmc import discounted_cost
    from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, Levels
    from jaxq.tuning.prelimit import smoothed_gradient

    s = load(path("pss_T2"))
    a = analyze(s)
    n, c, tau = 16, 1.0, 0.3
    scale = n**DEFAULT_THETA_EXPONENT
    ks = np.arange(0, 13)
    J = np.array([discounted_cost(s, n, a.active, "T2", theta=int(k), cap=40, check=False)["J"] for k in ks])
    # P(Theta = k) for Theta = max(ceil(c scale + tau scale eps), 0), and its derivative in c
    up = norm.cdf((ks - c * scale) / (tau * scale))
    lo = np.where(ks == 0, 0.0, norm.cdf((ks - 1 - c * scale) / (tau * scale)))
    dup = -norm.pdf((ks - c * scale) / (tau * scale)) / tau
    dlo = np.where(ks == 0, 0.0, -norm.pdf((ks - 1 - c * scale) / (tau * scale)) / tau)
    assert (up - lo).sum() > 1 - 1e-9
    exact_grad = float(np.sum(J * (dup - dlo)))
    levels = Levels.absolute(None, DEFAULT_THETA_EXPONENT, c)  # (z, c) = (none: single mode, c absolute)
    g, se, _ = smoothed_gradient(s, n, levels, 2000, 5, (0.2, tau), "T2", a)
    assert abs(g[1] - exact_grad) <= 4 * se[1], (g[1], exact_grad, se[1])
    assert abs(g[0]) <= 4 * se[0]  # J does not depend on z in a single-mode policy: the z-estimate has mean 0
    assert math.isfinite(exact_grad) and se[1] < 0.02 * J.mean()  # a sharp comparison


def test_prelimit_tuning_reports_intervals(capsys):
    import json

    assert main(["tune", str(path("pss_T2T1")), "--target", "prelimit", "--n", "16", "--reps", "16", "--chains", "2",
                 "--iterations", "3", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["z_ci"][0] <= r["z_tuned"] <= r["z_ci"][1] and r["c_ci"][0] <= r["c_tuned"] <= r["c_ci"][1]
    for k in ("cost_tuned", "cost_theory", "difference", "V0"):
        assert math.isfinite(r[k])


@pytest.mark.slow
def test_sde_tuning_close_to_z_star():
    from jaxq.tuning.sde import tune_sde

    a = analyze(load(path("pss_T2T1")))
    r = tune_sde(a.mode_coefficients(), a.system.gamma, paths=400, dt=0.05, chains=2, iterations=5, taus=(0.3, 0.1))
    assert r.z_ci[0] <= r.z <= r.z_ci[1]
    # the hard policy at the tuned level costs within 2% of V_WCP(0) (the cost is flat near z*)
    assert a.wcp_cost(0.0, switch_at=r.z) <= 1.02 * a.V_wcp0
    assert abs(r.smoothing_bias_at_z_star) < 0.1 * a.V_wcp0


def test_tune_experiment_small(tmp_path, experiment_script):
    mod = experiment_script("tune_prelimit")
    rows = mod.run(small=True, out=str(tmp_path))
    assert len(rows) == 2 and (tmp_path / "tune_prelimit.png").exists()
    assert all(math.isfinite(r["J_tuned"]) and math.isfinite(r["difference"]) for r in rows)


@pytest.mark.slow
def test_t1t2_diagnosis_small(tmp_path, experiment_script):
    """The workload split W = M + D + U runs, the engine's Definition 2.7 counters stay 0, and under T1T2 with
    c = 1 the idleness push happens in the lower mode (none in the upper mode), as the README explains."""
    mod = experiment_script("t1t2_diagnosis")
    rows, sde = mod.main(["--small", "--out", str(tmp_path)])
    viol = (tmp_path / "violations.csv").read_text().splitlines()[1].split(",")[2:]
    assert all(v == "0" for v in viol)
    for r in rows:
        if r["policy"] == "T1T2" and r["theta_constant"] == 1.0:
            assert r["U_mode_higher"] <= 0.05 * r["U_mode_lower"]
            assert abs(r["M_residual"]) <= 4 * max(r["U_stderr"], 0.05) + 0.3  # the residual martingale part is small
    assert (tmp_path / "diagnosis.png").exists() and (tmp_path / "diagnosis.csv").exists()


@pytest.mark.slow
def test_tune_sde_at_a_large_discount_rate(tmp_path, capsys):
    """gamma = 200: the SDE horizon is 0.0035, so the old default dt = 0.02 was longer than it (an error naming
    `dt` the user never set); the default step now follows 1/gamma and a too coarse --dt is refused naming it."""
    import re

    f = tmp_path / "pss_PP_g200.toml"
    f.write_text(re.sub(r"(?m)^gamma\s*=.*$", "gamma = 200.0", path("pss_PP").read_text()))
    assert main(["tune", str(f), "--target", "sde", "--paths", "16", "--chains", "2", "--iterations", "2"]) == 0
    capsys.readouterr()
    assert main(["tune", str(f), "--target", "sde", "--paths", "16", "--chains", "2", "--dt", "0.01"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dt" in err and "gamma dt" in err


def test_tune_sde_refuses_a_step_that_does_not_resolve_the_drift(capsys):
    """As ``jaxq sde``: b^2 dt / sigma^2 > 0.3 is refused naming --dt (pss_PP: dt above 0.143), before any work."""
    assert main(["tune", "pss_PP", "--target", "sde", "--paths", "16", "--chains", "2", "--dt", "0.18"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dt" in err and "drift" in err
