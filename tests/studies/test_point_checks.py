"""The check of an experiment file's grid before anything runs: each distinct point (system, policy, n, exponent) is
checked once, whatever the seeds; the counter of points checked moves as the check goes."""

from collections import Counter

import pytest

from jaxq.policies import thresholds
from jaxq.studies import experiment as ex

CONV = """
[experiment]
study = "convergence"
systems = ["pss_T2T1", "pss_T2"]
replications = 4
chunk = 2
seeds = [0, 1, 2, 3, 4]
[grid]
n = [100, 1000, 10000]
theta_rule = "excursion"
"""
RANDOM = """
[experiment]
study = "random_systems"
replications = 4
chunk = 2
seeds = [0, 1, 2]
[grid]
per_case = 2
cases = ["T2T1"]
n = [100, 1000]
rules = ["excursion@0.34", "root@0.34"]
"""


@pytest.fixture
def counted(monkeypatch):
    """The calls of the threshold rules' levels (the excursion rule's search behind them), by (system, rule, n)."""
    calls = Counter()
    levels = thresholds.rule_levels

    def counting(rule, analysis, resolved, n, *a, **k):
        calls[(analysis.V0, rule, float(n))] += 1
        return levels(rule, analysis, resolved, n, *a, **k)

    monkeypatch.setattr(thresholds, "rule_levels", counting)
    return calls


@pytest.mark.parametrize("text, distinct", [(CONV, 2 * 3), (RANDOM, 2 * 2 * 2)], ids=["convergence", "random_systems"])
def test_each_distinct_point_is_checked_once_whatever_the_seeds(tmp_path, counted, text, distinct):
    f = tmp_path / "x.toml"
    f.write_text(text)
    exp = ex.load_experiment(f)
    assert len(exp.points) == distinct * len(exp.seeds)
    assert len(counted) == distinct
    assert set(counted.values()) == {1}


def test_the_counter_moves_point_by_point_to_every_point(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text(CONV)
    told = []
    exp = ex.load_experiment(f, progress=told.append)
    assert len(told) == 6  # one call per grid point checked, each for its 5 seeds
    assert set(told) == {5}
    assert sum(told) == len(exp.points)


def test_a_study_that_does_not_count_is_counted_when_it_returns(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text("""
[experiment]
study = "fastslow"
replications = 2
chunk = 1
seeds = [0, 1]
[grid]
loads = [0.3, 0.6]
ratios = [0.25]
slow_servers = [2]
criteria = ["average"]
""")
    told = []
    exp = ex.load_experiment(f, progress=told.append)
    assert sum(told) == len(exp.points) > 0
