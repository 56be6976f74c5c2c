"""jaxq.bench.verdict: the time to a precision target beside a plain compiled loop's time to the same one."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import jaxq.bench
from jaxq.bench import verdict
from jaxq.examples import path
from jaxq.model import load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(tiny_bench):
    two = [("pss_T2", load(path("pss_T2"))), ("pss_PP", load(path("pss_PP")))]
    return tiny_bench("verdict", setup=lambda mp: mp.setattr(verdict, "systems", lambda: two), verdict_n=16,
                      verdict_rel_se=0.05, verdict_bundled_n=24)


@pytest.mark.slow  # two systems' pilots and runs, compiled: about 20 s
def test_each_row_meets_its_target_and_prices_the_plain_loop_at_its_variance(rows):
    """The systems at verdict_n, then the bundled ones again at verdict_bundled_n."""
    assert [(r["system"], r["n"]) for r in rows] == [("pss_T2", 16), ("pss_PP", 16), ("pss_T2", 24), ("pss_PP", 24)]
    for r in rows:
        assert r["rel_se_target"] == 0.05 and r["stopped_by"] == "target"
        assert r["rel_se"] <= 0.05 and r["J_hat_stderr"] <= 0.05 * r["J_hat"] and r["reps"] >= r["pilot_stages"][-1]
        assert r["variance_reduction"] > 1  # the controls are on
        assert r["baseline_reps"] == math.ceil(r["plain_var"] / (0.05 * r["J_hat"]) ** 2)
        assert r["baseline_s"] == pytest.approx(r["baseline_s_per_rep"] * r["baseline_reps"], rel=1e-12)
        assert r["ratio"] == pytest.approx(r["baseline_s"] / r["wall_s"], rel=1e-12)
        assert r["J_over_V0"] == pytest.approx(r["J_hat"] / r["V0"], rel=1e-12)


@pytest.mark.slow  # a simulation to check the variance column
def test_the_plain_variance_is_the_uncontrolled_costs_variance():
    """plain_var is the sample variance of the run's discounted costs: the same replications, no controls, give
    that variance over reps as their squared standard error."""
    r = jaxq.simulate("pss_T2", n=16, reps=256, seed=0, cv=False)
    J = np.asarray(r.samples["J"], dtype=np.float64)
    assert r.stderr ** 2 == pytest.approx(J.var(ddof=1) / J.size, rel=1e-9)
    assert verdict.plain_reps(J.var(ddof=1), 0.01, r.value) == math.ceil(J.var(ddof=1) / (0.01 * r.value) ** 2)


def test_the_hard_systems_are_the_hard_systems_studys():
    """The random systems drawn by label are the hard-systems study's (their V0 as committed there) and its
    six worst at n = 10^5."""
    with open(ROOT / "experiments" / "results" / "hard_systems" / "summary.csv") as f:
        rows = [r for r in csv.DictReader(f) if float(r["n"]) == 1e5]
    worst = [r["system"] for r in sorted(rows, key=lambda r: -float(r["J_over_V0"]))[:6]]
    assert list(verdict.HARD) == worst
    v0 = {r["system"]: float(r["V0"]) for r in rows}
    drawn = dict(verdict.systems())
    for label in verdict.HARD:
        assert jaxq.analyze(drawn[label]).V0 == pytest.approx(v0[label], rel=1e-12)


def test_verdict_runs_only_when_named():
    assert "verdict" not in jaxq.bench.available() and "verdict" in jaxq.bench.available(on_request=True)
    from jaxq.api import bench_sections

    assert "verdict" in bench_sections() and "verdict" not in bench_sections(on_request=False)


def test_the_performance_page_shows_each_committed_record_as_rendered():
    """docs/performance.md's time-to-verdict tables are jaxq.bench.verdict.markdown of the committed records, row
    for row (no number typed by hand)."""
    import json

    page = (ROOT / "docs" / "performance.md").read_text()
    records = sorted((ROOT / "benchmarks" / "results").glob("verdict_*.json"))
    assert records
    for rec in records:
        rows = json.loads(rec.read_text())["sections"]["verdict"]["rows"]
        assert verdict.markdown(rows) in page, rec.name
