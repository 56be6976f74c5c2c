"""jaxq.bench.optimal: policy iteration with jaxq's BiCGSTAB evaluation beside the same iteration with scipy's LU."""

import pytest

import jaxq.bench
from jaxq.bench import optimal, report
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.mdp import pss2x2 as dp
from jaxq.model import load


@pytest.fixture(scope="module")
def rows(tiny_bench):
    return tiny_bench("optimal")


def test_tiny_run_pairs_jaxq_with_the_lu_baseline_and_they_agree(rows):
    assert [(r["engine"], r["impl"], r["n"]) for r in rows] == [
        ("optimal_pi", optimal.JAXQ_IMPL, 16), ("optimal_pi", optimal.BASE_IMPL, 16)]
    j, b = rows
    assert j["system"] == b["system"] == "pss_P"
    q1, q2 = j["cap"]
    assert j["cap"] == b["cap"] and j["states"] == b["states"] == 9 * (q1 + 1) * (q2 + 1)  # the same final chain
    assert b["J_star"] == pytest.approx(j["J_star"], rel=optimal.AGREE_RTOL)
    assert b["J_star_agrees"] is True and b["J_star_rel_diff"] <= optimal.AGREE_RTOL
    assert 0 < j["truncation_change"] <= dp.TRUNCATION_RTOL and 0 < b["truncation_change"] <= dp.TRUNCATION_RTOL
    assert j["matvecs"] > 0 and j["iterations"] > 0 and b["factorizations"] == b["iterations"] > 0
    assert b["lu_nnz"] > b["states"]  # the factors fill in
    for r in rows:
        assert r["updates_per_s"] > 0 and r["wall_s"] > 0 and r["note"]
    work = j["updates"]
    assert 0 < work < 2 * j["states"] * j["matvecs"]  # each solve's own chain: at most twice the one kept
    assert j["updates_per_s"] == pytest.approx(work / j["wall_s"], rel=1e-12)
    assert b["updates_per_s"] == pytest.approx(work / b["wall_s"], rel=1e-12)  # the same work: a ratio of walls
    assert b["jaxq_ratio"] == pytest.approx(b["wall_s"] / j["wall_s"], rel=1e-9)


def test_report_pairs_the_baseline_with_its_jaxq_row(rows):
    (line,) = report.headline({"machine": {}, "sections": {"optimal": {"rows": rows}}})
    assert line["model"].startswith("optimum J*_n of the 2x2 system (pss_P), n = 16, policy iteration")
    assert f"{rows[0]['states']:,} states" in line["model"] and line["model"].endswith(optimal.JAXQ_IMPL)
    assert line["jaxq"] == rows[0]["updates_per_s"] and line["unit"] == "updates/s"
    assert line["baseline"].startswith(optimal.BASE_IMPL) and line["ratio"] == rows[1]["jaxq_ratio"]


def test_baseline_is_skipped_above_its_size(tiny_bench):
    base = jaxq.bench.baseline("optimal")
    rows = tiny_bench("optimal", setup=lambda mp: mp.setattr(base, "MAX_STATES", 1000))
    j, b = rows
    assert j["updates_per_s"] > 0
    assert b["updates_per_s"] is None and b["jaxq_ratio"] is None and b["states"] == j["states"]
    assert b["note"].startswith(f"skipped: doubling tests of up to {2 * j['states']:,} states > 1,000")


def test_section_runs_without_its_baseline(tiny_bench):
    j, b = tiny_bench("optimal", missing=True)
    assert j["updates_per_s"] > 0 and b["updates_per_s"] is None and b["jaxq_ratio"] is None and b["note"]


def test_a_refused_truncation_is_a_row_with_its_reason(tiny_bench):
    def refuse(*args, **kwargs):
        raise InputError("n", "too many states")

    j, b = tiny_bench("optimal", setup=lambda mp: mp.setattr(optimal.dp, "optimal_cost", refuse))
    for r in (j, b):
        assert r["updates_per_s"] is None and r["note"] == "n: too many states"


def test_baseline_matches_jaxq_at_a_fixed_cap():
    system = load(path("pss_P"))
    base = jaxq.bench.baseline("optimal")
    j = dp.optimal_cost(system, 16.0, 8)
    b = base.optimal_cost(system, 16.0, 8)
    assert (b["cap"], b["states"]) == (j.cap, j.states) == ((8, 8), 9 * 9**2)
    assert b["J_star"] == pytest.approx(j.J_star, rel=1e-8)
    assert b["truncation_change"] == pytest.approx(j.truncation_change, rel=1e-4)
