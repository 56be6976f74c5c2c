"""``jaxq sde`` and ``jaxq network sde`` on hard inputs: progress totals, large discount rates, steps coarse
against the discount rate or the drift (a drift far stronger than the diffusion), a truncated tail far above
the Monte Carlo error, a horizon that is not a whole number of blocks.

Monte Carlo checks compare with the exact ODE value ``V_exact`` within 4 standard errors (no tuned tolerance).
"""

import json
import math

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.diffusion import hjb
from jaxq.diffusion.value import marginal
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.sde import coefficients as C
from jaxq.sde import driver, euler, exact_step
from jaxq.sde.estimators import MAX_DRIFT_DT, SCHEMES, SdeTruncation, default_dt, discounted_cost, drift_time, value_of


def _system(tmp_path, gamma: float):
    """pss_PP with the discount rate ``gamma``."""
    src = path("pss_PP").read_text()
    assert "gamma = 0.5" in src
    f = tmp_path / f"pp_{gamma:g}.toml"
    f.write_text(src.replace("gamma = 0.5", f"gamma = {gamma!r}"))
    return str(f)


class _Stop(InputError):
    pass


@pytest.fixture
def announced(monkeypatch):
    """Record every ``Bar.start(total, unit)`` and stop the command there (before any work)."""
    from jaxq.cli import progress

    seen = []

    def start(self, total, unit):
        seen.append((self.desc, float(total), unit))
        raise _Stop("probe", "stopped at the announcement")

    monkeypatch.setattr(progress.Bar, "start", start)
    return seen


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("jaxq: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_sde_gives_a_bar_and_announces_its_path_steps(announced, capsys):
    assert main(["sde", "pss_PP", "--paths", "16", "--dt", "1e-9"]) == 2
    assert "stopped at the announcement" in capsys.readouterr().err
    (desc, total, unit), = announced
    assert desc == "sde" and unit == "path-steps"
    assert total >= 16 * 1.0 / 1e-9  # the horizon is longer than 1 at gamma = 0.5: over 1.6e10 path-steps


def test_network_sde_announces_its_path_steps(announced, capsys):
    assert main(["network", "sde", "network_N", "--paths", "8", "--horizon", "1e6", "--dt", "1e-3"]) == 2
    capsys.readouterr()
    (desc, total, unit), = announced
    assert desc == "network sde" and unit == "path-steps"
    assert total == pytest.approx(8 * 1e6 / 1e-3)


def test_default_horizon_follows_the_discount_time_scale():
    from jaxq.sde.estimators import default_horizon, truncation_bound

    for gamma in (0.5, 1e3, 1e6, 1e10, 1e30):
        tol = 1e-4 * 1.0 / gamma**1.5  # the size of V for a large gamma
        t = default_horizon(0.0, 2.4, 1.8, gamma, tol)
        assert truncation_bound(0.0, 2.4, 1.8, gamma, t) <= tol
        assert truncation_bound(0.0, 2.4, 1.8, gamma, 0.99 * t) > tol  # the smallest such T (to 0.5%)
        assert 1.0 / gamma < t < 100.0 / gamma


def test_sde_large_gamma_small_dt_finishes_with_a_short_horizon(tmp_path, capsys):
    f = _system(tmp_path, 1e10)
    assert main(["sde", f, "--paths", "8", "--dt", "1e-12", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["horizon"] < 1e-8 and r["dt"] == 1e-12
    assert math.isfinite(r["V_hat"]) and math.isfinite(r["stderr"])


@pytest.mark.parametrize("gamma", [1.0, 1e3, 1e6])
def test_sde_default_dt_matches_the_exact_value(tmp_path, capsys, gamma):
    assert main(["sde", _system(tmp_path, gamma), "--paths", "1000", "--seed", "7", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["dt"] <= 1e-3 * min(1.0, 1.0 / gamma) * (1 + 1e-12)
    assert r["stderr"] > 0 and r["truncation_bound"] <= 1e-4 * r["V_exact"]
    # the truncated tail only lowers V_hat: V_exact lies in [V_hat - 4 se, V_hat + 4 se + bound]
    assert -4 * r["stderr"] <= r["V_exact"] - r["V_hat"] <= 4 * r["stderr"] + r["truncation_bound"], r


@pytest.mark.parametrize("gamma, dt", [(1e3, 1e-3), (1e6, 1e-6), (1e7, 0.01)])
def test_sde_refuses_a_step_too_coarse_for_gamma(tmp_path, capsys, gamma, dt):
    assert main(["sde", _system(tmp_path, gamma), "--paths", "8", "--dt", repr(dt)]) == 2
    cap = capsys.readouterr()
    line = _one_error_line(cap.err)
    assert line.startswith("jaxq: error: dt:") and "gamma" in line and "nan" not in cap.out.lower()


def test_sde_gamma_1e7_with_the_control_variate_is_finite_and_right(tmp_path, capsys):
    assert main(["sde", _system(tmp_path, 1e7), "--paths", "512", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["V_hat"] is not None and r["stderr"] > 0
    assert -4 * r["stderr"] <= r["V_exact"] - r["V_hat"] <= 4 * r["stderr"] + r["truncation_bound"], r


def test_skew_scheme_stays_in_the_state_space_with_steps_long_against_the_level():
    """A level far below sqrt(dt): a step from above the level can reach 0; Z must stay >= 0 and the control
    finite (before: Z < 0 and V'(Z) = NaN in the control variate)."""
    from jaxq.sde import coefficients as C
    from jaxq.sde import skew
    from jaxq.sde.driver import TimeGrid, Record, simulate
    from jaxq.sde.estimators import value_of

    p = C.wcp(-2.125, 1.466, -2.375, 1.789, 0.003)
    times = np.arange(1, 33) * 0.01
    r = simulate(skew.SCHEME, p, 0.0, 1.0, TimeGrid(0.01, 0.32), 256, seed=0, record=Record(times, value_of(p, 1.0)))
    assert np.all(r["snaps"] >= 0.0)
    assert np.all(np.isfinite(r["control"])) and np.all(np.isfinite(r["cost"]))


def test_network_sde_horizon_shorter_than_a_step_names_dt(capsys):
    assert main(["network", "sde", "network_N", "--paths", "8", "--warmup", "0", "--horizon", "0.001"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("jaxq: error: dt:") and "warmup < horizon" not in line
    assert main(["network", "sde", "network_N", "--paths", "8", "--warmup", "0", "--horizon", "0.001",
                 "--dt", "0.0005", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_neg"] is not None


# ------------------------------------------------------------------ steps against the drift
PP = (-2.125, 1.466287829861518, -2.375, 1.7888543819998317, 1.6080667591662747)  # pss_PP: bL, sL, bH, sH, z*


def _strong_drift(tmp_path, lam: str) -> str:
    """pss_P (one mode) with the first class's lambda_hat = ``lam``: drift b ~ lam, sigma ~ 1.3."""
    src = path("pss_P").read_text()
    assert "lambda_hat = [-0.5, -0.5]" in src
    f = tmp_path / f"p_{lam}.toml"
    f.write_text(src.replace("lambda_hat = [-0.5, -0.5]", f"lambda_hat = [{lam}, -0.5]"))
    return str(f)


# A drift step far longer than the diffusion's length scale sigma^2 / |b|


def test_reflected_end_has_no_cancellation_for_a_huge_negative_drift():
    """``(g + sqrt(g^2 + e)) / 2`` for g = -1e7 and e ~ 1e-3 was 0 (or a few ulps of |g|); it is ``e / (4 |g|)``."""
    u = np.linspace(0.01, 0.99, 99)
    g = -1e7
    e = -2.0 * 1e-3 * np.log1p(-u)
    got = np.asarray(exact_step.reflected_end(np.zeros_like(u), np.full_like(u, g), 1e-3, u))
    want = e / (2.0 * (np.sqrt(g * g + e) - g))  # the same number, written without cancellation
    np.testing.assert_allclose(got, want, rtol=1e-13)  # e: JAX's and numpy's log1p differ in the last ulp
    assert np.all(got > 0)


def test_sde_with_a_huge_drift_is_refused_not_zero(tmp_path, capsys):
    """b = -1e10: V_hat was 6e-11 against V_exact 1.7e-10 (-196 stderr, exit 0); the default step that resolves
    the drift (1.7e-22) makes the job too large, which the error says, naming dt."""
    assert main(["sde", _strong_drift(tmp_path, "-1e10"), "--paths", "64", "--json"]) == 2
    cap = capsys.readouterr()
    line = _one_error_line(cap.err)
    assert line.startswith("jaxq: error: dt:") and "drift" in line and "too large" in line
    assert cap.out == ""


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("lam", ["-1e6", "-1e25"])
def test_sde_refuses_a_step_that_does_not_resolve_the_drift(tmp_path, capsys, scheme, lam):
    """Every scheme: euler read V_hat = 0 +- 0 ("-100%, +0.00 stderr"), skew and exact lost the end point to
    cancellation; from z0 > 0 the first step's trapezoid cost was 1e6 times the value."""
    f = _strong_drift(tmp_path, lam)
    assert main(["sde", f, "--paths", "8", "--dt", "1e-3", "--scheme", scheme, "--z0", "1"]) == 2
    cap = capsys.readouterr()
    line = _one_error_line(cap.err)
    assert line.startswith("jaxq: error: dt:") and "b^2 dt / sigma^2" in line and "use dt <=" in line
    assert cap.out == ""


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_dual_mode_step_must_resolve_the_drift(scheme):
    """Both modes (the WCP switches between two): pss_PP's drifts x30 and z* / 30 at dt = 1e-3 gave skew -3%
    (-74 stderr), exact +1.2%, euler -87%; now refused. The library (``jaxq.simulate_sde``) shares the rule."""
    bL, sL, bH, sH, z = PP
    p = C.wcp(30 * bL, sL, 30 * bH, sH, z / 30)
    tau = drift_time(p)
    assert tau == pytest.approx(min((sL / bL) ** 2, (sH / bH) ** 2) / 900)
    with pytest.raises(InputError) as e:
        discounted_cost(p, 0.5, 0.0, dt=1e-3, paths=8, scheme_name=scheme)
    assert e.value.key == "dt" and f"{MAX_DRIFT_DT * tau:.3g}" in e.value.reason
    assert default_dt(0.5, tau) == pytest.approx(0.01 * tau)  # the default step resolves the drift
    assert default_dt(0.5, drift_time(C.wcp(bL, sL, bH, sH, z))) == 1e-3  # the examples keep their default step


def test_skew_is_right_at_the_largest_drift_step_accepted():
    """b^2 dt / sigma^2 = MAX_DRIFT_DT in the stronger mode (pss_PP's drifts scaled, z* with them), dual mode
    from 0, at the discount rate 10 (a short horizon): V_hat within 4 stderr (+ the tail) of the ODE value."""
    bL, sL, bH, sH, z = PP
    gamma, dt = 10.0, 1e-3
    f = math.sqrt(MAX_DRIFT_DT / (dt * max((bL / sL) ** 2, (bH / sH) ** 2)))
    p = C.wcp(f * bL, sL, f * bH, sH, z / f)
    exact = float(hjb.switching_cost(0.0, z / f, f * bL, sL, f * bH, sH, gamma))
    r = discounted_cost(p, gamma, 0.0, dt=dt * (1 - 1e-12), truncation=SdeTruncation(scale=exact), paths=2000, seed=3)
    assert -4 * r.stderr <= exact - r.value <= 4 * r.stderr + r["truncation_bound"], (r.value, r.stderr, exact)


# The truncated tail is a one-sided bias: the interval includes its bound


def test_sde_ci_includes_the_truncation_bound(capsys):
    """z0 = 1e6: V_hat = 1999797.9017 +- 0.0005 with CI [1999797.9007, 1999797.9027] against V_exact = 1999990.5
    (the gap is the truncated tail, at most the reported bound); the interval now reaches up by the bound."""
    assert main(["sde", "pss_PP", "--paths", "8", "--z0", "1e6", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    lo, hi = r["ci95"]
    bound, se = r["truncation_bound"], r["stderr"]
    assert bound > 100 * se  # the case in point: the tail dominates the Monte Carlo error
    assert lo == pytest.approx(r["V_hat"] - 1.96 * se, rel=1e-15)
    assert hi == pytest.approx(r["V_hat"] + 1.96 * se + bound, rel=1e-15)
    assert lo <= r["V_exact"] <= hi


def test_sde_zero_stderr_has_no_error_in_stderr(capsys):
    """z0 = 1e30: every path gives the same cost (stderr 0); error_in_stderr was 0.0 ("+0.00 stderr")."""
    assert main(["sde", "pss_PP", "--paths", "8", "--z0", "1e30", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["stderr"] == 0 and r["error_in_stderr"] is None
    assert r["ci95"][0] <= r["V_exact"] <= r["ci95"][1]
    assert main(["sde", "pss_PP", "--paths", "8", "--z0", "1e30"]) == 0
    out = capsys.readouterr().out
    assert "(n/a stderr)" in out and "95% CI" in out and "+0.00 stderr" not in out


def test_simulate_sde_interval_includes_the_truncation_bound():
    """The Python API's ``ci95`` is the same one-sided interval (a short horizon: a large bound)."""
    import jaxq

    r = jaxq.simulate_sde(jaxq.load("pss_PP"), paths=16, dt=0.01, horizon=2.0, z0=1.0)
    lo, hi = r.ci95
    assert r["truncation_bound"] > 0.1
    assert hi == pytest.approx(r.value + 1.96 * r.stderr + r["truncation_bound"], rel=1e-14)
    assert r.to_dict()["ci95"] == [lo, hi]


# The horizon asked for, not rounded up to a whole block of 64 steps


@pytest.mark.parametrize("horizon, dt, steps", [("1", "0.1", 10), ("0.5", "0.001", 500)])
def test_sde_runs_the_horizon_asked_for(capsys, horizon, dt, steps):
    """--horizon 1 --dt 0.1 reported horizon 6.4 (64 steps); --horizon 0.5 --dt 0.001 ran to 0.512."""
    assert main(["sde", "pss_PP", "--paths", "8", "--horizon", horizon, "--dt", dt, "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["steps"] == steps and r["horizon"] == pytest.approx(float(horizon), rel=1e-12)
    assert r["events"] == 8 * steps


def test_masked_steps_weigh_nothing_in_the_cost_and_the_control():
    """10 steps of a 64-step block: the cost and the Ito-sum control are the sums over exactly those steps,
    recomputed from Z at every step (Euler far from 0, so dM = Z_{k+1} - Z_k - b h)."""
    b, s, gamma, h, n = -0.5, 1.3, 0.5, 0.1, 10
    p = C.wcp(b, s, b, s, None)
    vf = value_of(p, gamma)
    times = np.arange(n + 1) * h
    r = driver.simulate(euler.SCHEME, p, 20.0, gamma, driver.TimeGrid(h, n * h), 16, seed=2, record=driver.Record(times, vf))
    assert r["steps"] == n and r["horizon"] == pytest.approx(n * h)
    z = np.asarray(r["snaps"])
    assert np.all(z > 0)  # no projection: the increments are the martingale's plus the drift
    w0, w1 = (float(w) for w in driver.step_weights(gamma, h))
    disc = np.exp(-gamma * h * np.arange(n))
    cost = (disc * (w0 * z[:, :-1] + w1 * z[:, 1:])).sum(axis=1)
    np.testing.assert_allclose(r["cost"], cost, rtol=1e-12)
    dm = z[:, 1:] - z[:, :-1] - b * h
    ctl = (disc * np.asarray(marginal(vf, z[:, :-1])) * dm).sum(axis=1)
    np.testing.assert_allclose(r["control"], ctl, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_a_whole_number_of_blocks_runs_as_before(monkeypatch):
    """128 steps run the unmasked program; the masked one, forced on, weighs every step and gives the same bits
    (the masked program changes nothing but the weight of steps past the end)."""
    bL, sL, bH, sH, z = PP
    p = C.wcp(bL, sL, bH, sH, z)
    args = (SCHEMES["skew"], p, 0.3, 0.5, driver.TimeGrid(0.05, 128 * 0.05), 16)
    kw = dict(seed=4, record=driver.Record([1.0, 6.4], value_of(p, 0.5)))
    plain = driver.simulate(*args, **kw)
    program = driver.program
    monkeypatch.setattr(driver, "program", lambda *a: program(*a[:5], True))
    masked = driver.simulate(*args, **kw)
    assert plain["steps"] == masked["steps"] == 128
    for k in ("cost", "snaps", "control"):
        np.testing.assert_array_equal(plain[k], masked[k])
