"""experiments/exact_check.py: a study's small-n points against the exact J_n (z in standard errors, exit 1 beyond 4)."""

import csv
import functools

import pytest

import jaxq

FIELDS = ["system", "policy_used", "theta", "theta_exponent", "switch_at", "n", "J_hat", "J_hat_stderr",
          "truncation_bound"]


@functools.cache
def _exact() -> dict:
    """The exact value the study's rows are placed around (solved once for both studies)."""
    return jaxq.exact_cost("pss_PP", 4, rtol=1e-6)


def _study(tmp_path, offset_in_se):
    ex = _exact()
    se = 0.01
    with open(tmp_path / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerow(dict(system="pss_PP", policy_used="PP", theta="", theta_exponent=0.34, switch_at=ex["switch_at"],
                        n=4, J_hat=ex["J"] + offset_in_se * se, J_hat_stderr=se, truncation_bound=0.0))
        w.writerow(dict(system="pss_P", policy_used="P", theta="", theta_exponent=0.34, switch_at="", n=1000,
                        J_hat=1.0, J_hat_stderr=se, truncation_bound=0.0))  # beyond --n-max: not checked
    return tmp_path


@pytest.mark.slow
def test_points_near_the_exact_value_pass_and_far_ones_fail(tmp_path, capsys, experiment_script):
    mod = experiment_script("exact_check")
    assert mod.main([str(_study(tmp_path, 1.0)), "--n-max", "10"]) == 0
    out = capsys.readouterr().out
    assert "pss_PP" in out and "pss_P " not in out and "largest |z|: 1.00" in out
    assert mod.main([str(_study(tmp_path, -5.0)), "--n-max", "10"]) == 1
    assert "largest |z|: 5.00" in capsys.readouterr().out
