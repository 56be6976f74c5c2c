"""The search tuner of the prelimit policy: its line search on known functions, honest evaluation on fresh
replications, the tuned policy in one call (jaxq.simulate) and in an experiment file."""

import math

import numpy as np
import pytest

import jaxq
from jaxq.errors import InputError
from jaxq.tuning import prelimit
from jaxq.tuning.prelimit import EVALUATION, SEARCH, derived_seed, tune_prelimit


class _Quadratic:
    """A known objective on (z, theta): the search must land on its minimiser (no Monte Carlo)."""

    def __init__(self, z_opt, theta_opt):
        self.z_opt, self.theta_opt = z_opt, theta_opt
        self.values = {}

    key = staticmethod(prelimit._Candidates.key)

    def __call__(self, z, theta):
        k = self.key(z, theta)
        zz = 0.0 if z is None else (math.log(z / self.z_opt)) ** 2
        tt = 0.0 if theta is None else (math.log(theta / self.theta_opt)) ** 2
        self.values[k] = np.full(4, tt + zz)
        return float(self.values[k][0])

    best = prelimit._Candidates.best
    tied = prelimit._Candidates.tied


@pytest.mark.parametrize("theta_opt, z_opt", [(11, 0.5), (90, 0.5), (1, 0.05), (23, 1.3)])
def test_search_finds_the_minimiser_of_a_known_function(theta_opt, z_opt):
    """From the default (Theta 11, z* 0.5): the grids widen while the best point is on an edge (Theta 90 lies beyond
    the first grid's 88, Theta 1 below its 6, z 0.05 a decade below z*) and refine around it; the result lies within
    the final grid spacing of the optimum (Theta within a factor 2^(1/4) + rounding, z within 1.3)."""
    f = _Quadratic(z_opt, theta_opt)
    z, theta = prelimit._search(f, True, True, 0.5, 11)
    assert abs(math.log(theta / theta_opt)) <= math.log(2 ** 0.25) + math.log((theta_opt + 1) / theta_opt)
    assert abs(math.log(z / z_opt)) <= math.log(1.3)
    assert len(f.values) <= 20  # the search's cost: a few candidates


def test_search_single_parameter_policies():
    f = _Quadratic(0.7, 40)
    z, theta = prelimit._search(f, False, True, None, 11)
    assert z is None and 28 <= theta <= 57
    f = _Quadratic(0.8, 1)
    z, theta = prelimit._search(f, True, False, 0.5, None)
    assert theta is None and 0.6 <= z <= 1.1


def test_derived_seeds_never_equal_the_seed():
    for s in (0, 1, 7, 2**32 - 1):
        assert derived_seed(s, SEARCH) != s and derived_seed(s, EVALUATION) != s
        assert derived_seed(s, SEARCH) != derived_seed(s, EVALUATION)


@pytest.fixture(scope="module")
def t2t1_small():
    """pss_T2T1 at n = 16, where the default threshold (Theta = 2; ceil(16^0.34) = 3 under c = 1) costs too much
    (at n = 16 the class the threshold protects runs empty too often: a smaller switching level or threshold
    costs less)."""
    s = jaxq.load("pss_T2T1")
    return s, tune_prelimit(s, 16, seed=3,
                            procedure=prelimit.Procedure(reps=32),
                            evaluation=prelimit.Evaluation(evaluate_reps=128))


@pytest.mark.slow
def test_tuned_not_worse_than_a_bad_default(t2t1_small):
    s, r = t2t1_small
    ev = r.evaluation
    from jaxq.sim.pss2x2 import setup

    default = setup(s, 16).theta  # the default rule's Theta_16 (2 here; 3 under c = 1)
    assert ev["theta_default"] == default
    assert (ev["theta_tuned"], r.z) != (default, jaxq.analyze(s).z_star)  # the search moved z or Theta_n
    # better than the default beyond 4 standard errors of the paired difference
    assert ev["difference"] + 4 * ev["difference_stderr"] < 0
    # and better than (2.29)'s policy (Theta = 3, z*) beyond 4 standard errors, paired on the evaluation's replications
    tuned = jaxq.simulate(s, 16, 128, theta_constant=r.c, theta_rule="paper", seed=ev["seed"], switch_at=r.z)
    paper = jaxq.simulate(s, 16, 128, theta_rule="paper", seed=ev["seed"])
    assert paper.info["theta"] == 3
    d = prelimit._controlled(tuned) - prelimit._controlled(paper)  # cross-fitted per replication, as evaluate does
    assert d.mean() + 4 * d.std(ddof=1) / math.sqrt(d.size) < 0
    assert ev["J_tuned_ci95"][0] < ev["J_tuned"] < ev["J_tuned_ci95"][1]
    assert math.isclose(ev["ratio_default"], ev["J_default"] / ev["V0"])
    assert r.cost["steps"] <= 20 and r.cost["replications_search"] == 32 * r.cost["steps"]


@pytest.mark.slow
def test_final_estimate_uses_fresh_replications(t2t1_small):
    """The evaluation's seed is none of the search's, and its numbers are exactly a plain run on that seed."""
    s, r = t2t1_small
    ev = r.evaluation
    assert r.seeds["search"] != ev["seed"] and 3 not in (r.seeds["search"], ev["seed"])
    again = jaxq.simulate(s, 16, 128, seed=ev["seed"], switch_at=r.z, theta_constant=r.c, theta_rule="paper")
    assert again.value == pytest.approx(ev["J_tuned"], rel=1e-12)
    assert ev["theta_tuned"] == r.theta == again.info["theta"]
    # the search's own estimate of the chosen point comes from other replications
    chosen = next(row for row in r.trace if row["theta"] == r.theta and row["z"] == r.z)
    assert chosen["J"] != pytest.approx(ev["J_tuned"], rel=1e-9)


@pytest.mark.slow  # the gradient tuner (not the default search)
def test_gradient_method_evaluates_on_a_fresh_seed():
    s = jaxq.load("pss_T2T1")
    r = tune_prelimit(s, 16, seed=1,
                      procedure=prelimit.Procedure(method="gradient", reps=8, chains=2, iterations=2),
                      evaluation=prelimit.Evaluation(evaluate_reps=16))
    assert r.evaluation["seed"] not in r.seeds["search"] and len(r.seeds["search"]) == 4
    assert r.z_ci[0] <= r.z <= r.z_ci[1] and r.chains.shape == (2, 3, 2)


def test_bad_method_and_span_are_refused():
    s = jaxq.load("pss_T2T1")
    with pytest.raises(InputError, match="method"):
        tune_prelimit(s, 16, procedure=prelimit.Procedure(method="newton"))
    with pytest.raises(InputError, match="span"):
        tune_prelimit(s, 16, procedure=prelimit.Procedure(span="everywhere"))


def test_simulate_tuned_in_one_call(monkeypatch):
    monkeypatch.setattr(prelimit, "SEARCH_REPS", 32)
    r = jaxq.simulate("pss_T2T1", n=16, reps=64, policy="tuned", seed=5)
    t = r.info["tuned"]
    assert t["search_seed"] != 5 and t["theta"] == r.info["theta"] and t["z"] == r.info["switch_at"]
    lo, hi = r.ci95
    assert lo < r.value < hi and r.info["policy"] == "T2T1"
    with pytest.raises(InputError) as e:
        jaxq.simulate("pss_T2T1", n=16, reps=8, policy="tuned", switch_at=0.3)
    assert e.value.key == "switch_at"
    with pytest.raises(InputError) as e:  # a rule would rescale the tuned threshold behind the search's back
        jaxq.simulate("pss_T2T1", n=16, reps=8, policy="tuned", theta_rule="depth")
    assert e.value.key == "theta_rule"
    with pytest.raises(InputError) as e:  # the search's replications, named as the caller named them
        jaxq.simulate("pss_T2T1", n=16, reps=8, policy="tuned", tune_reps=1)
    assert e.value.key == "tune_reps"


def test_tuned_policy_in_an_experiment_file(tmp_path, monkeypatch):
    import csv

    from jaxq.studies import tuned_policy

    monkeypatch.setattr(prelimit, "SEARCH_REPS", 32)
    tuned_policy.parameters.cache_clear()
    exp = """[experiment]
study = "convergence"
systems = ["pss_T2T1"]
replications = 32
chunk = 16
[grid]
n = [16, 25]
policies = ["auto", "tuned"]
"""
    jaxq.run_experiment(exp, tmp_path / "run")
    rows = list(csv.DictReader(open(tmp_path / "run" / "summary.csv")))
    tuned = [r for r in rows if r["policy"] == "tuned"]
    auto = {r["n"]: r for r in rows if r["policy"] == "auto"}
    assert len(tuned) == 2 and len(auto) == 2
    for r in tuned:
        assert r["policy_used"] == "T2T1" and int(r["theta"]) >= 1 and float(r["switch_at"]) > 0
        assert int(r["theta"]) == math.ceil(round(float(r["theta_constant"]) * float(r["n"]) ** 0.34, 9))
        assert int(r["tuned_search_seed"]) != int(r["seed"])
        assert math.isfinite(float(r["J_hat"])) and float(r["J_hat_stderr"]) > 0
        assert r["X_hat_p_mean"] != "" and 0 <= float(r["idle_while_waiting_1"]) <= 1  # its diagnostics too
    # the records carry the tuned parameters, the same in every chunk
    recs = list(csv.DictReader(open(tmp_path / "run" / "records.csv")))
    for r in tuned:
        th = {x["tuned_theta"] for x in recs if x.get("point") == r["point"]}
        assert len(th) <= 1


def test_tuned_refused_where_nothing_is_tuned(tmp_path):
    exp = """[experiment]
study = "convergence"
systems = ["pss_P"]
replications = 8
[grid]
n = [16]
policies = ["tuned"]
"""
    with pytest.raises(InputError) as e:
        jaxq.run_experiment(exp, tmp_path / "run")
    assert e.value.key == "grid.policies" and "pss_P" in e.value.reason


def test_intervals_from_few_replications_use_students_t():
    """Two replications: the 95% interval of the tuned-minus-default difference is 12.7 standard errors wide on
    each side (Student's t, 1 degree of freedom), not the normal 1.96."""
    from jaxq.stats import t95
    from jaxq.tuning.prelimit import evaluate

    r = evaluate(jaxq.load("pss_T2"), 16, None, 3, reps=2, seed=5)
    lo, hi = r["difference_ci95"]
    assert (hi - r["difference"]) == pytest.approx(t95(2) * r["difference_stderr"])
    assert t95(2) == pytest.approx(12.706, rel=1e-4) and t95(10**6) == pytest.approx(1.96, rel=1e-3)
