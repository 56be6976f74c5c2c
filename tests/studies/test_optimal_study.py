"""The ``optimal`` study run by the experiment runner: its summary holds jaxq.optimal's J*_n, at most the exact J_n
of Theorem 2.11's policy, and it refuses a system that is not a 2x2 system, naming the key."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import jaxq
from jaxq.errors import InputError
from jaxq.studies import experiment as ex
from jaxq.studies import optimal as study
from jaxq.studies import runner


def _experiment(tmp_path, systems, **grid):
    data = {"experiment": {"study": "optimal", "systems": systems, "replications": 2},
            "grid": {"n": [4], **grid}}
    return ex.from_dict(data, Path(tmp_path) / "optimal.toml")


def test_optimal_study_summary_matches_jaxq_optimal(tmp_path):
    exp = _experiment(tmp_path, ["pss_P"])
    assert [(pt["system"], pt["n"], pt["reps"], pt["chunk"]) for pt in exp.points] == [("pss_P", 4, 1, 1)]
    rec = runner.run(exp, tmp_path / "out", progress=False)
    (row,) = rec["tables"]["summary"]
    ref = jaxq.optimal("pss_P", 4)
    assert row["J_star"] == ref.J_star
    assert row["exact_cost"] == ref.exact_cost and row["V0"] == ref.V0
    assert row["J_star"] <= row["exact_cost"]
    assert row["J_star_over_V0"] == pytest.approx(ref.J_star / ref.V0, rel=1e-15)
    assert (row["case"], row["policy"], row["phases_observed"]) == ("single", "P", False)
    assert (row["queue_cap_1"], row["queue_cap_2"]) == ref.queue_cap and row["states"] == ref.states
    assert 0.0 <= row["idles_with_waiting"] <= 1.0 and 0.0 <= row["idles_with_waiting_weighted"] <= 1.0
    assert "J_sim" not in row  # simulate_reps = 0: no Monte Carlo
    for f in ("summary.csv", "J_over_V0.png", "run.json", "records.csv"):
        assert (tmp_path / "out" / f).is_file(), f
    with open(tmp_path / "out" / "summary.csv") as fh:
        (csv_row,) = list(csv.DictReader(fh))
    assert math.isclose(float(csv_row["J_star"]), ref.J_star, rel_tol=1e-12)


def test_idles_with_waiting_counts_idle_servers_with_work_left():
    """A table that never starts a job idles at every (state, idle server) pair with a job waiting; one that
    starts class 1 whenever it can idles only where class 2 alone waits (or both servers are idle and one job
    waits, after the other server has taken it)."""
    shape = (9, 9, 3, 3, 2)
    never = np.full(shape, -1, dtype=np.int8)
    assert study.idles_with_waiting(never, 4.0) > 0.5
    greedy = np.full(shape, -1, dtype=np.int8)
    x1 = np.arange(9).reshape(-1, 1, 1, 1)
    x2 = np.arange(9).reshape(1, -1, 1, 1)
    # the classes the servers serve -> waiting jobs; an idle server starts a waiting class (1 first), the
    # first server first: a work-conserving table
    for c1 in range(3):
        for c2 in range(3):
            q = [x1[..., 0, 0] - (c1 == 1) - (c2 == 1), x2[..., 0, 0] - (c1 == 2) - (c2 == 2)]
            for k, c in enumerate((c1, c2)):
                if c:
                    continue
                d = np.where(q[0] > 0, 0, np.where(q[1] > 0, 1, -1))
                greedy[:, :, c1, c2, k] = d
                q = [q[0] - (d == 0), q[1] - (d == 1)]
    assert study.idles_with_waiting(greedy, 4.0) == 0.0


def test_optimal_study_refuses_a_network_naming_the_key(tmp_path):
    with pytest.raises(InputError) as e:
        _experiment(tmp_path, ["network_N"])
    assert e.value.key == "experiment.systems"
    assert "network_N" in str(e.value) and "pss2x2" in str(e.value)


def test_optimal_study_refuses_a_law_without_phases_naming_the_key(tmp_path):
    with pytest.raises(InputError) as e:
        _experiment(tmp_path, ["pss_PP_gamma"])
    assert e.value.key == "experiment.systems"
    assert "pss_PP_gamma" in str(e.value) and "gamma:4" in str(e.value)


def test_optimal_study_n_for_names_systems_of_the_experiment(tmp_path):
    exp = _experiment(tmp_path, ["pss_P", "pss_T2"], n=[16], n_for={"pss_P": [4, 9]})
    assert [(pt["system"], pt["n"]) for pt in exp.points] == [("pss_P", 4), ("pss_P", 9), ("pss_T2", 16)]
    with pytest.raises(InputError) as e:
        _experiment(tmp_path, ["pss_P"], n_for={"pss_T2": [16]})
    assert e.value.key == "grid.n_for" and "pss_T2" in str(e.value)
    with pytest.raises(InputError) as e:  # the n-th rates of pss_T2 at n = 4: an arrival rate 0
        _experiment(tmp_path, ["pss_T2"])
    assert e.value.key == "grid.n" and "pss_T2, n = 4" in str(e.value)
