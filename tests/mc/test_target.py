"""Runs that stop at a precision target (jaxq.mc.target): the plan, the stops, the prefix of the fixed run, bias.

The rule is checked on a synthetic simulator whose standard error and seconds per replication are known; the
simulators themselves (2x2, network, a user's MarkovModel, the workload SDE) on the prefix property and, for the
2x2 system, on unbiasedness against the exact J_n of the truncated chain over several seeds.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import jaxq
from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.mc.rng import PILOT, derived_seed
from jaxq.mc.result import Estimate, SimResult
from jaxq.mc.target import AHEAD, PILOT_EVENTS, PILOT_FIRST, Target, checked_target, plan, relative_stderr, run_to_target, safety

_spec = importlib.util.spec_from_file_location("markov_examples", Path(__file__).parents[1] / "sim" / "markov_examples.py")
ex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ex)


def fake(sigma=1.0, value=2.0, per_rep=0.01, compile_s=0.5, events=10):
    """A simulator with standard error sigma / sqrt(reps), per_rep seconds and ``events`` events a replication;
    records its calls."""
    calls = []

    def run(reps, seed):
        calls.append((reps, seed))
        est = Estimate(value, sigma / math.sqrt(reps))
        return SimResult("J_hat", {"J_hat": est}, reps, events * reps, compile_s + per_rep * reps, compile_s, "fake")

    return run, calls


def test_the_plan_is_the_pilots_variance_over_the_target_squared_with_its_safety_factor():
    """The first stage plans more than 128 replications: the larger pilot plans the run."""
    run, calls = fake(sigma=1.0, value=2.0)
    res = run_to_target(run, 7, Target(0.01, pilot_reps=128))
    q = (1.0 / math.sqrt(128)) / 2.0
    want = math.ceil(128 * (q / 0.01) ** 2 * safety(128))
    p = derived_seed(7, PILOT)
    assert calls == [(PILOT_FIRST, p), (128, p), (want, 7)]
    assert res.reps == want and res.info["stopped_by"] == "target" and res.info["rel_se"] <= 0.01
    pilots_s = 0.5 + 0.01 * PILOT_FIRST + 0.5 + 1.28
    assert res.info["pilot"] == {"seed": p, "reps": 128, "rel_se": q, "wall_s": pytest.approx(pilots_s),
                                 "stages": [PILOT_FIRST, 128], "ahead": 0}
    assert res.wall_s == pytest.approx(pilots_s + 0.5 + 0.01 * want)  # both pilots' time counts
    assert res.events == 10 * (PILOT_FIRST + 128 + want) and res.warnings == ()
    assert derived_seed(7, PILOT) != 7


def test_a_short_run_of_an_expensive_system_is_planned_by_the_first_stage_alone():
    """Where the first 16 replications plan at most 128 and 128 would cost more than PILOT_EVENTS events, the larger
    pilot does not run: at n = 10^6 a verdict pays for 16 pilot replications, not 128."""
    run, calls = fake(sigma=1.0, value=20.0, events=PILOT_EVENTS / 100)
    res = run_to_target(run, 7, Target(0.01))
    q = (1.0 / math.sqrt(PILOT_FIRST)) / 20.0
    want = math.ceil(PILOT_FIRST * (q / 0.01) ** 2 * safety(PILOT_FIRST))
    assert PILOT_FIRST < want <= 128
    assert calls == [(PILOT_FIRST, derived_seed(7, PILOT)), (want, 7)]
    assert res.info["pilot"]["stages"] == [PILOT_FIRST] and res.info["pilot"]["reps"] == PILOT_FIRST


def test_a_cheap_larger_pilot_plans_the_run_as_a_pilot_of_128_alone_would():
    """Where 128 replications cost at most PILOT_EVENTS events the larger pilot runs whatever the first planned, and
    the run is the one it plans (a small system's run does not depend on the first stage)."""
    short, calls = fake(sigma=1.0, value=20.0, events=PILOT_EVENTS / 128)
    res = run_to_target(short, 7, Target(0.01))
    assert [c[0] for c in calls] == [PILOT_FIRST, 128, 128] and res.info["pilot"]["stages"] == [PILOT_FIRST, 128]


def test_an_expensive_first_stage_that_plans_a_long_run_hands_it_to_the_larger_pilot():
    """128 replications cost more than PILOT_EVENTS, but the 16 plan more than 128: the 128 plan the run."""
    run, calls = fake(sigma=1.0, value=2.0, events=PILOT_EVENTS)
    res = run_to_target(run, 7, Target(0.01))
    q = (1.0 / math.sqrt(128)) / 2.0
    assert [c[0] for c in calls] == [PILOT_FIRST, 128, math.ceil(128 * (q / 0.01) ** 2 * safety(128))]
    assert res.info["pilot"]["stages"] == [PILOT_FIRST, 128]


def test_an_expensive_first_stage_with_an_estimate_of_zero_is_refused_without_the_larger_pilot():
    run, calls = fake(sigma=1.0, value=0.0, events=PILOT_EVENTS)
    with pytest.raises(InputError, match=r"^rel_se: the pilot's estimate is 0 .* over 16 replications"):
        run_to_target(run, 0, Target(0.01))
    assert [c[0] for c in calls] == [PILOT_FIRST]


def test_few_max_reps_make_a_pilot_of_one_stage():
    for cap in (10, 17, 31):  # under twice the first stage: the larger would mostly repeat it
        run, calls = fake(sigma=1.0, value=100.0)
        run_to_target(run, 0, Target(0.01, max_reps=cap))
        assert calls[0][0] == cap and calls[1][1] == 0  # one pilot, then the run
    run, calls = fake(sigma=1.0, value=100.0)
    run_to_target(run, 0, Target(0.01, max_reps=32))
    assert [c[0] for c in calls[:2]] == [PILOT_FIRST, 32]


def test_the_larger_pilot_is_skipped_where_the_budget_cannot_also_pay_the_runs_compilation():
    """First stage 5 + 1.6 s; the 128 and a run as long need 25.6 s and the run compiles again (5 s): with 40 s
    the budget leaves 40 - 6.6 - 5 = 28.4 s, of which 23.4 after the run's compilation: no larger pilot."""
    run, calls = fake(sigma=1.0, value=2.0, per_rep=0.1, compile_s=5.0)
    res = run_to_target(run, 0, Target(0.01, budget=40.0))
    assert [c[0] for c in calls[:-1]] == [PILOT_FIRST]
    assert res.info["stopped_by"] == "budget" and abs(res.reps - (40.0 - 6.6 - 5.0) / 0.1) <= 1  # rounding


def test_a_budget_that_cannot_afford_the_larger_pilot_and_its_run_keeps_the_first_stages_plan():
    run, calls = fake(sigma=1.0, value=2.0, per_rep=0.1, compile_s=0.5)
    # the first stage took 0.5 + 1.6 s; 128 more and a run as long need 25.6 s, more than the 25 s budget leaves
    res = run_to_target(run, 0, Target(0.01, budget=25.0))
    assert [c[0] for c in calls[:-1]] == [PILOT_FIRST] and res.info["stopped_by"] == "budget"
    assert res.reps == int((25.0 - 2.1 - 0.5) // 0.1)


def test_the_run_never_has_fewer_replications_than_its_pilot():
    """A pilot that already meets the target plans a run as long as itself: the run's control variates are fitted
    on its own replications, and a shorter run was noisier than the pilot measured."""
    run, calls = fake(sigma=1.0, value=100.0)
    res = run_to_target(run, 3, Target(0.01, pilot_reps=64))
    assert calls[-1] == (64, 3) and res.reps == 64
    run, calls = fake(sigma=1.0, value=100.0, events=PILOT_EVENTS)  # the larger pilot is not run
    res = run_to_target(run, 3, Target(0.01, pilot_reps=64))
    assert calls[-1] == (PILOT_FIRST, 3) and res.reps == PILOT_FIRST


def test_max_reps_refuses_an_unreachable_target_before_the_run_or_stops_there():
    run, calls = fake(sigma=1.0, value=1.0)
    with pytest.raises(InputError, match=r"^rel_se: the target 0.001 needs about .* more than max_reps = 500"):
        run_to_target(run, 0, Target(0.001, max_reps=500))
    assert [c[0] for c in calls] == [PILOT_FIRST, 128]  # only the pilot ran: the larger stage decided
    run, calls = fake(sigma=1.0, value=1.0)
    res = run_to_target(run, 0, Target(0.001, max_reps=500, strict=False))
    assert res.reps == 500 and res.info["stopped_by"] == "max_reps"
    assert any("stopped by max_reps" in w for w in res.warnings)


def test_the_budget_stops_the_run_at_what_fits():
    run, calls = fake(sigma=1.0, value=1.0, per_rep=0.01, compile_s=0.5)
    res = run_to_target(run, 0, Target(1e-4, max_reps=10**9, budget=20.0))
    # the pilots took 0.5 + 0.16 and 0.5 + 1.28 s; the run may compile again (0.5 s)
    assert res.info["pilot"]["stages"] == [PILOT_FIRST, 128]
    assert res.info["stopped_by"] == "budget" and res.reps == int((20.0 - 2.44 - 0.5) // 0.01)
    assert res.wall_s <= 20.0 + 1e-9
    with pytest.raises(InputError, match="^budget: the pilot"):
        run_to_target(fake(per_rep=0.1)[0], 0, Target(1e-4, max_reps=10**9, budget=2.5))


def test_a_run_that_ends_above_its_target_says_so():
    def run(reps, seed):  # the pilot is precise, the run is not: the plan falls short
        se = 0.001 if seed != 0 else 0.5
        return SimResult("J_hat", {"J_hat": Estimate(1.0, se)}, reps, reps, 1.0, 0.0, "fake")

    res = run_to_target(run, 0, Target(0.01))
    assert res.info["stopped_by"] == "target" and res.info["rel_se"] == 0.5
    assert any("above the target" in w for w in res.warnings)


@pytest.mark.parametrize("bad", [0.0, -0.1, math.nan, math.inf, 1.0, True, "0.1"])
def test_bad_targets_are_refused(bad):
    with pytest.raises(InputError, match="^rel_se: "):
        checked_target(Target(bad))
    with pytest.raises(InputError, match="^max_reps: "):
        checked_target(Target(0.01, max_reps=1))
    with pytest.raises(InputError, match="^budget: "):
        checked_target(Target(0.01, budget=-1.0))


def test_a_pilot_estimate_of_zero_is_refused():
    run = lambda reps, seed: SimResult("J_hat", {"J_hat": Estimate(0.0, 0.1)}, reps, reps, 1.0, 0.0, "fake")  # noqa
    with pytest.raises(InputError, match="^rel_se: the pilot's estimate is 0"):
        run_to_target(run, 0, Target(0.01))


def test_relative_stderr_takes_the_worst_entry_and_skips_exact_zeros():
    res = SimResult(None, {"q": Estimate(np.array([2.0, 0.0, 4.0]), np.array([0.2, 0.0, 0.2]))}, 2, 2, 1.0, 0.0, "x")
    assert relative_stderr(res, "q") == pytest.approx(0.1)


def test_a_targeted_2x2_run_is_the_prefix_of_the_fixed_run_and_meets_its_target():
    res = jaxq.simulate("pss_P", n=16, rel_se=0.004, seed=3)
    fixed = jaxq.simulate("pss_P", n=16, reps=res.reps, seed=3)
    assert res.value == fixed.value and res.stderr == fixed.stderr
    assert res.info["pilot"]["ahead"] == AHEAD * PILOT_FIRST  # its first 16 ran beside the pilot's first stage
    assert res.info["stopped_by"] == "target" and res.stderr <= 0.004 * res.value
    assert res.to_dict()["rel_se_target"] == 0.004 and res.to_dict()["stopped_by"] == "target"


def test_a_run_planned_by_the_first_stage_alone_is_still_the_prefix_of_the_fixed_run(monkeypatch):
    """With the larger pilot priced out (as at n = 10^6), 16 pilot replications plan a 2x2 run: it is replications
    0 .. R-1 of the seed, at least 16."""
    import jaxq.mc.target as target

    monkeypatch.setattr(target, "PILOT_EVENTS", 1.0)
    res = jaxq.simulate("pss_T2", n=16, rel_se=0.01, seed=5)
    assert res.info["pilot"]["stages"] == [PILOT_FIRST] and res.reps >= PILOT_FIRST
    fixed = jaxq.simulate("pss_T2", n=16, reps=res.reps, seed=5)
    assert res.value == fixed.value and res.stderr == fixed.stderr
    assert res.info["pilot"]["ahead"] == AHEAD * PILOT_FIRST


def test_the_printed_line_names_the_pilots_stages(capsys, monkeypatch):
    import jaxq.mc.target as target

    assert main(["simulate", "pss_T2", "--n", "16", "--rel-se", "0.05"]) == 0
    assert "pilot 16 then 128 replications" in capsys.readouterr().out
    monkeypatch.setattr(target, "PILOT_EVENTS", 1.0)
    assert main(["simulate", "pss_T2", "--n", "16", "--rel-se", "0.05"]) == 0
    assert "pilot 16 replications" in capsys.readouterr().out


@pytest.mark.slow
def test_targeted_runs_of_the_network_the_markov_model_and_the_sde_are_prefixes():
    net = jaxq.simulate("network_N", n=25, rel_se=0.02, seed=1, horizon=40.0, warmup=5.0)
    fixed = jaxq.simulate("network_N", n=25, reps=net.reps, seed=1, horizon=40.0, warmup=5.0)
    assert np.array_equal(net.estimates["mean_queue"].value, fixed.estimates["mean_queue"].value)
    assert net.info["pilot"]["ahead"] == AHEAD * PILOT_FIRST
    assert net.info["rel_se_of"] == "mean_queue"  # a plan that fell short (this seed's, by 0.3%) says so
    assert net.info["rel_se"] <= 0.02 or any("above the target 0.02" in w for w in net.warnings)
    kw = dict(horizon=5.0, discount=0.5, params=ex.MMCM_PARAMS)
    mk = jaxq.simulate(ex.MMCM, rel_se=0.01, seed=2, **kw)
    again = jaxq.simulate(ex.MMCM, reps=mk.reps, seed=2, **kw)
    assert all(mk.estimates[k].value == again.estimates[k].value for k in again.estimates)
    assert mk.info["pilot"]["ahead"] == AHEAD * PILOT_FIRST
    assert max(e.stderr / e.value for e in mk.estimates.values()) == mk.info["rel_se"]  # every estimate targeted
    sde = jaxq.simulate_sde("pss_P", rel_se=0.005, seed=4)
    assert sde.value == jaxq.simulate_sde("pss_P", paths=sde.reps, seed=4).value
    assert sde.info["pilot"]["ahead"] == AHEAD * PILOT_FIRST


def test_no_replications_run_ahead_under_a_budget():
    """With a budget the pilot's seconds plan the run: they must not depend on the run's own replications."""
    res = jaxq.simulate("pss_T2", n=16, rel_se=0.05, seed=5, budget=600)
    assert res.info["pilot"]["ahead"] == 0
    fixed = jaxq.simulate("pss_T2", n=16, reps=res.reps, seed=5)
    assert res.value == fixed.value and res.stderr == fixed.stderr


def test_a_targeted_sde_run_taken_whole_from_its_pilots_batch_reports_a_true_speed():
    """Its path-steps per second are over the share of the pilot's batch its paths took, not over no time."""
    r = jaxq.simulate_sde("pss_P", rel_se=0.05, seed=4, max_reps=AHEAD * PILOT_FIRST)
    assert r.reps == AHEAD * PILOT_FIRST and r.info["pilot"]["ahead"] == r.reps
    assert r.info["path_steps_per_s"] <= 20 * r.events_per_s


@pytest.mark.slow
def test_targeted_estimates_are_unbiased_for_the_exact_cost():
    """Five seeds at n = 16, each to 0.5%: their mean within 4 standard errors of the exact J_n (the truncated
    chain of jaxq.exact_cost), so a pilot that plans the replications leaves no bias at this resolution."""
    exact = jaxq.exact_cost("pss_P", 16)["J"]
    runs = [jaxq.simulate("pss_P", n=16, rel_se=0.005, seed=s) for s in range(5)]
    mean = np.mean([r.value for r in runs])
    se = math.sqrt(sum(r.stderr**2 for r in runs)) / len(runs)
    assert abs(mean - exact) <= 4 * se


@pytest.mark.parametrize("args, key", [
    (["--rel-se", "0"], "rel-se"), (["--rel-se", "-0.01"], "rel-se"), (["--rel-se", "nan"], "rel-se"),
    (["--rel-se", "0.01", "--reps", "10"], "rel-se"), (["--budget", "5"], "budget"), (["--max-reps", "5"], "max-reps"),
    (["--rel-se", "0.01", "--max-reps", "1"], "max-reps"), (["--rel-se", "0.01", "--budget", "-1"], "budget"),
    (["--rel-se", "1e-6", "--max-reps", "100"], "rel-se"),
])
def test_bad_targets_on_the_command_line_give_one_line_and_exit_code_2(args, key, capsys):
    assert main(["simulate", "pss_P", "--n", "4", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"jaxq: error: {key}: "), err
