"""A tie in h_i alpha_i (2.12): the analysis and every 2x2 simulation say so, that either class may be the HPC
and both choices are asymptotically optimal (the same V0), which class was taken and why, and the policy the
other choice gives. Checked on a system and its class-swapped twin (the same physical system)."""

import math

import pytest

import jaxq
from jaxq.cli import main

SYSTEM = """[system]
kind = "pss2x2"
lambda = {lam}
mu = {mu}
lambda_hat = {lam_hat}
mu_hat = [[1.0, 0.5], [1.0, 0.5]]
interarrival = ["exponential", "exponential"]
service = [["exponential", "exponential"], ["exponential", "exponential"]]

[cost]
h = {h}
gamma = 0.5
"""
# pss_PP's rates with exponential primitives: alpha = (1, 2), so h = (2, 1) is a tie (h_1 alpha_1 = h_2 alpha_2 = 2)
ORIGINAL = dict(lam=[0.7, 0.6], mu=[[0.4, 0.6], [0.8, 1.2]], lam_hat=[-1.0, 0.0], h=[2.0, 1.0])
TWIN = dict(lam=[0.6, 0.7], mu=[[0.8, 1.2], [0.4, 0.6]], lam_hat=[0.0, -1.0], h=[1.0, 2.0])  # classes swapped


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tie")
    out = {}
    for name, kw in (("original", ORIGINAL), ("twin", TWIN), ("no_tie", {**ORIGINAL, "h": [1.0, 1.0]})):
        out[name] = d / f"{name}.toml"
        out[name].write_text(SYSTEM.format(**kw))
    return out


def test_the_tie_is_said_with_both_policies_and_one_v0(files):
    a, b = jaxq.analyze(files["original"]), jaxq.analyze(files["twin"])
    assert a.p == b.p == 0  # the convention: the first class (a different physical class in the twin)
    assert math.isclose(a.V0, b.V0, rel_tol=1e-9)  # the same lower bound either way
    assert a.policy != b.policy  # the tie-break decides the policy
    for mine, other in ((a, b), (b, a)):
        assert len(mine.warnings) == 1
        w = mine.warnings[0]
        assert "h_1 alpha_1 = h_2 alpha_2 = 2" in w and "asymptotically optimal" in w and "class 1 was taken" in w
        assert f"giving policy {mine.policy}" in w and f"with class 2 the policy would be {other.policy}" in w
        assert f"V0 = {mine.V0:.6g}" in w
        assert mine.to_dict()["warnings"] == [w]
    assert jaxq.analyze(files["no_tie"]).warnings == () and jaxq.analyze("pss_PP").to_dict()["warnings"] == []


def test_simulate_carries_the_tie(files):
    r = jaxq.simulate(files["original"], 16, 8, horizon=1.0)
    assert r.warnings and "a tie in the high-priority class" in r.warnings[0]
    assert r.to_dict()["warnings"][0] == jaxq.analyze(files["original"]).warnings[0]
    assert jaxq.simulate(files["no_tie"], 16, 8, horizon=1.0).warnings == ()


def test_the_cli_prints_the_tie_as_a_note(files, capsys):
    assert main(["analyze", str(files["twin"]), "--json"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("jaxq: note: h_1 alpha_1 = h_2 alpha_2") and err.count("\n") == 1


def test_a_tie_up_to_rounding_takes_the_class_its_note_says(tmp_path):
    """h = (2, 1 + 2^-52): equal h_i alpha_i up to rounding is a tie, and the class taken is the first, as the note
    says (the strict comparison took class 2 while the note said "the convention on a tie: the first class")."""
    f = tmp_path / "near.toml"
    f.write_text(SYSTEM.format(**{**ORIGINAL, "h": [2.0, 1.0000000000000002]}))
    a = jaxq.analyze(f)
    assert a.p == 0 and len(a.warnings) == 1 and "class 1 was taken" in a.warnings[0]
    exact = tmp_path / "exact.toml"
    exact.write_text(SYSTEM.format(**ORIGINAL))
    assert a.policy == jaxq.analyze(exact).policy
