"""``jaxq sde`` and ``jaxq network sde`` on hard inputs: progress totals, large discount rates, coarse steps.

Monte Carlo checks compare with the exact ODE value ``V_exact`` within 4 standard errors (no tuned tolerance).
"""

import json
import math

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.examples import path


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
    from jaxq.sde.driver import simulate
    from jaxq.sde.estimators import value_of

    p = C.wcp(-2.125, 1.466, -2.375, 1.789, 0.003)
    times = np.arange(1, 33) * 0.01
    r = simulate(skew.SCHEME, p, 0.0, 1.0, 0.01, 0.32, 256, seed=0, times=times, value=value_of(p, 1.0))
    assert np.all(r["snaps"] >= 0.0)
    assert np.all(np.isfinite(r["control"])) and np.all(np.isfinite(r["cost"]))


def test_network_sde_horizon_shorter_than_a_step_names_dt(capsys):
    assert main(["network", "sde", "network_N", "--paths", "8", "--warmup", "0", "--horizon", "0.001"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("jaxq: error: dt:") and "warmup < horizon" not in line
    assert main(["network", "sde", "network_N", "--paths", "8", "--warmup", "0", "--horizon", "0.001",
                 "--dt", "0.0005", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_neg"] is not None
