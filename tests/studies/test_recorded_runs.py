"""Committed runs recorded before ``[grid] theta_rule`` existed still read and resume: their files pin the rule
they were computed with (``paper``), which the digests leave out (``DIGEST_OMITS``); any other rule is a new run."""

import json
from pathlib import Path

import pytest

from jaxq.studies import experiment as ex

ROOT = Path(__file__).resolve().parents[2]
PINNED = ["collapse", "convergence_1e5", "convergence_1e6", "threshold_default_1e6", "threshold_exponent",
          "threshold_exponent_cpu", "beyond_exponential_cpu"]


@pytest.mark.parametrize("name", PINNED)
def test_a_pinned_file_has_its_committed_runs_fingerprint(name):
    exp = ex.load_experiment(ROOT / "experiments" / f"{name}.toml")
    assert exp.grid.theta_rule == "paper"
    man = json.loads((ROOT / "experiments" / "results" / name / "manifest.json").read_text())
    assert exp.fingerprint() == man["fingerprint"]


def test_another_rule_is_another_run():
    exp = ex.load_experiment(ROOT / "experiments" / "threshold_exponent_cpu.toml")
    root = exp.grid.model_copy(update={"theta_rule": "root"})
    assert ex.digested_grid(root.model_dump(mode="json"))["theta_rule"] == "root"
    assert "theta_rule" not in ex.digested_grid(exp.grid.model_dump(mode="json"))
    g = exp.grid.model_dump(mode="json")
    other = {**g, "theta_rule": "root"}
    assert ex.base_fingerprint("convergence", g, True) != ex.base_fingerprint("convergence", other, True)


@pytest.mark.parametrize("name", ["optimal", "optimal_random"])
def test_the_committed_optimum_runs_are_the_bracket_runs(name):
    """The optimum studies were recorded before ``[grid] bracket`` existed, with the bracket: their files say
    ``bracket = true``, which the digests leave out, and a run without it (the doubling) is another run."""
    exp = ex.load_experiment(ROOT / "experiments" / f"{name}.toml")
    assert exp.grid.bracket is True
    man = json.loads((ROOT / "experiments" / "results" / name / "manifest.json").read_text())
    assert exp.fingerprint() == man["fingerprint"] and exp.point_digests() == man["point_digests"]
    doubling = exp.grid.model_copy(update={"bracket": False}).model_dump(mode="json")
    keys = exp.study.enumeration_keys
    assert ex.base_fingerprint("optimal", exp.grid.model_dump(mode="json"), exp.cv, keys) == exp.base_fingerprint()
    assert ex.base_fingerprint("optimal", doubling, exp.cv, keys) != exp.base_fingerprint()
