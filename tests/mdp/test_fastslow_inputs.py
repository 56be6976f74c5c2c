"""Inputs of the fast/slow system (the fast/slow-servers paper): costs below value iteration's round-off resolution, and
the simulator's checks of its threshold policy (integers >= 0, nondecreasing, stable, slower slow servers)."""

import math

import numpy as np
import pytest

import jaxq  # noqa: F401  (float64)
from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.mdp.fastslow import FLOOR_RTOL, solve, solve_many
from jaxq.sim.fastslow import StepWindow, simulate

MU1, MU2 = 1.0, 0.3


@pytest.mark.parametrize("lam", [1e-20, 1e-12])
def test_average_cost_below_round_off_is_refused(lam):
    """The spread of T h - h cannot fall below an ulp of the relative values (about 566 at N = 31): an average cost
    of about lam / mu1 = 1e-20 came back as 5e-21 in [0, 1e-20] and 'converged'; now an InputError naming lam."""
    with pytest.raises(InputError, match="round-off resolution") as e:
        solve(lam, MU1, MU2)
    assert e.value.key == "lam"


def test_cli_refuses_average_cost_below_round_off(capsys, monkeypatch):
    monkeypatch.setenv("JAXQ_CACHE_DIR", "off")
    assert main(["fastslow", "--lam", "1e-20", "--mu1", "1", "--mu2", "0.3", "--average", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("jaxq: error: lam: the average cost") and err.count("\n") == 1


def test_lightly_loaded_average_cost_within_the_floor_tolerance_still_solves():
    """lam = 1e-8: the round-off floor stops the iteration with bounds 1.4e-6 apart relative (below FLOOR_RTOL);
    the average cost lam / mu1 (1 + O(lam)) lies inside them."""
    s = solve(1e-8, MU1, MU2)
    lo, hi = s.bounds
    assert s.converged and lo <= 1e-8 * (1 + 1e-7) and 1e-8 <= hi and hi - lo <= FLOOR_RTOL * s.average_cost


@pytest.mark.parametrize("lam", [1e-20, 1e-14])
def test_discounted_value_of_a_vanishing_load_keeps_its_digits(lam):
    """V*(0, 0) = lam / (alpha + lam) V*(1, 0) exactly, and V*(1, 0) = 1 / (alpha + mu1) + O(lam) (one job at
    the fast server, the slow ones idle below q_L): 1e-20 gave 1.8985e-19 (0.3% off, bounds 0.66% apart)."""
    alpha = 0.05
    s = solve(lam, MU1, MU2, discount=alpha)
    exact = lam / (alpha + lam) / (alpha + MU1)  # relative error O(lam): about 20 lam
    slack = 1e-13 + 1e3 * lam
    assert s.value_empty == pytest.approx(exact, rel=slack)
    lo, hi = s.bounds
    assert hi - lo <= 1e-10 * exact and lo <= exact * (1 + slack) and exact * (1 - slack) <= hi


def test_solve_many_flags_an_unresolved_average_cost():
    out = solve_many([1e-20, 1.2], [MU1, MU1], [MU2, MU2], truncation=31)
    assert out["converged"].tolist() == [False, True]
    out = solve_many([1e-20, 1.2], [MU1, MU1], [MU2, MU2], discount=[0.05, 0.05], truncation=31)
    assert out["converged"].tolist() == [True, True]
    assert out["value_empty"][0] == pytest.approx(1e-20 / 0.05 / 1.05, rel=1e-10)


@pytest.mark.parametrize("args, key, what", [
    ((2.0, MU1, MU2, [1, 2]), "lam", "unstable"),  # lam >= mu1 + 2 mu2 = 1.6
    ((1.6, MU1, MU2, [1, 2]), "lam", "unstable"),
    ((1.4, MU1, MU2, [1, None]), "lam", "unstable"),  # one slow server used: capacity 1.3 ...
    ((1.2, MU1, MU2, [None, None]), "lam", "unstable"),  # ... none: capacity mu1 = 1
    ((1.2, MU1, 1.5, [1, 2]), "mu2", "slower"),
    ((1.2, MU1, MU1, [1, 2]), "mu2", "slower"),
    ((1.2, MU1, MU2, "12"), "q_thresholds", "list"),
    ((1.2, MU1, MU2, 3), "q_thresholds", "list"),
    ((1.2, MU1, MU2, []), "q_thresholds", "list"),
    ((1.2, MU1, MU2, np.array([[1, 2]])), "q_thresholds", "list"),
    ((1.2, MU1, MU2, [1.5, 2.5]), "q_thresholds[0]", "integer"),
    ((1.2, MU1, MU2, [1, 2.0]), "q_thresholds[1]", "integer"),
    ((1.2, MU1, MU2, [math.nan, 2]), "q_thresholds[0]", "integer"),
    ((1.2, MU1, MU2, [True, 2]), "q_thresholds[0]", "integer"),
    ((1.2, MU1, MU2, [-1, 2]), "q_thresholds[0]", "at least 0"),
    ((1.2, MU1, MU2, [2, 1]), "q_thresholds[1]", "nondecreasing"),
    ((1.2, MU1, MU2, [None, 2]), "q_thresholds[1]", "nondecreasing"),
])
def test_simulate_refuses_what_the_model_excludes(args, key, what):
    with pytest.raises(InputError, match=what) as e:
        simulate(*args, reps=2, window=StepWindow(steps=200, warmup=10))
    assert e.value.key == key


def test_simulate_takes_integer_thresholds_of_any_integer_type():
    """numpy integers, a tuple or an array and None for a slow server left unused (stable: 1.2 < 1 + 0.3)."""
    a = simulate(1.2, MU1, MU2, (np.int32(1), None), reps=2, cv=False, window=StepWindow(steps=200, warmup=10))
    b = simulate(1.2, MU1, MU2, [1, None], reps=2, cv=False, window=StepWindow(steps=200, warmup=10))
    assert a["average_cost"] == b["average_cost"] and math.isfinite(a["average_cost"])
