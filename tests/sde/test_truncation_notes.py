"""The workload SDE's truncation against its standard error, and a switching level on a single-mode system."""

from __future__ import annotations

import pytest

import jaxq
from jaxq.cli import main
from jaxq.errors import InputError


@pytest.mark.slow  # a second check: -m slow
def test_a_default_horizon_whose_bound_exceeds_a_tenth_of_the_stderr_is_extended_once():
    """pss_PP's default horizon leaves a bound of 0.2 standard errors at 2000 paths (the control makes the
    standard error small): the same paths run again, longer, and the time of both runs counts."""
    r = jaxq.simulate_sde("pss_PP", paths=2000)
    assert r.info["truncation_reruns"] == 1
    assert r.info["truncation_bound"] <= 0.1 * r.stderr and r.warnings == ()
    first = jaxq.simulate_sde("pss_PP", paths=2000, horizon=30.375)  # the default horizon, given
    assert first.info["truncation_bound"] > 0.1 * first.stderr
    assert r.events == first.events + 2000 * r.info["steps"]


def test_a_given_horizon_whose_bound_exceeds_a_tenth_of_the_stderr_is_said():
    r = jaxq.simulate_sde("pss_PP", paths=200, horizon=0.001)
    assert "truncation_reruns" not in r.info
    assert len(r.warnings) == 1 and "standard errors: the estimate may be low" in r.warnings[0]
    assert r.ci95[1] >= r.value + r.info["truncation_bound"]


def test_a_switching_level_on_a_single_mode_system_is_refused(capsys):
    with pytest.raises(InputError, match="^switch_at: the system is single-mode"):
        jaxq.simulate_sde("pss_P", paths=100, switch_at=1.0)
    assert main(["sde", "pss_P", "--switch-at", "1", "--paths", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("jaxq: error: switch_at: the system is single-mode")
