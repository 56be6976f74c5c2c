"""experiments/hard_systems.py: the fitted rate of the gap J_n / V0 - 1 = C n^-r and the verdict it gives, checked on
gaps drawn from a known law (the fit recovers r within its interval) and on the cases of each verdict."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hard_systems", ROOT / "experiments" / "hard_systems.py")
hs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hs)

NS = [100, 1000, 10_000, 100_000]


@pytest.mark.parametrize("r_true", [0.15, 0.3, 0.5])
def test_the_fit_recovers_a_known_rate_within_its_interval(r_true):
    """Gaps 0.8 n^-r plus normal noise of their standard errors (1%), 200 draws: the 95% interval holds the true
    rate in at least 90% of them (a t interval on 2 degrees of freedom with the covariance scaled by the residuals)."""
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(200):
        gaps = [0.8 * n ** -r_true for n in NS]
        ses = [0.01 * g for g in gaps]
        noisy = [g + s * rng.standard_normal() for g, s in zip(gaps, ses)]
        r, lo, hi, c, m = hs.fit_rate(NS, noisy, ses)
        assert m == 4 and lo < r < hi
        hits += lo <= r_true <= hi
    assert hits >= 180


def _rows(gaps, ses):
    return [{"n": n, "J_over_V0": 1 + g, "J_over_V0_stderr": s} for n, g, s in zip(NS, gaps, ses)]


def test_the_verdicts():
    assert hs.verdict(_rows([0.8, 0.4, 0.2, 0.1], [0.005] * 4))["verdict"].startswith("converging, rate 0.30")
    assert hs.verdict(_rows([0.1, 0.2, 0.4, 0.8], [0.005] * 4))["verdict"].startswith("not converging")
    assert hs.verdict(_rows([0.3, 0.1, 0.02, 0.004], [0.005] * 4))["verdict"].startswith("at V0")
    assert hs.verdict(_rows([0.30, 0.28, 0.33, 0.29], [0.005] * 4))["verdict"] == "undecided"
    r, lo, hi, c, m = hs.fit_rate(NS, [0.5, 0.004, 0.003, 0.002], [0.005] * 4)
    assert m == 1 and math.isnan(r)  # one point above 2 standard errors: no fit


def test_the_results_page_shows_the_committed_verdicts():
    """The verdicts table of docs/results/hard_systems.md is the one the script wrote (verdicts.md), row for row."""
    page = (ROOT / "docs" / "results" / "hard_systems.md").read_text().splitlines()
    written = (ROOT / "experiments" / "results" / "hard_systems" / "verdicts.md").read_text().splitlines()
    start = page.index(written[0])
    assert page[start:start + len(written)] == written
    assert not page[start + len(written)].startswith("|")  # no row the script did not write


def test_min_reps_raises_a_run_to_an_accelerators_size_and_keeps_the_prefix(monkeypatch):
    """--min-reps: the run has at least that many replications, replications 0 .. R-1 of the study's seed (the
    pilot still plans; a fixed floor does not look at the values, so the estimate stays unbiased)."""
    import jaxq
    from jaxq.examples import path
    from jaxq.model import load
    from jaxq.sim import pss2x2

    system = load(path("pss_T2"))  # any system: the floor does not depend on it (an exponential one compiles fast)
    monkeypatch.setattr(hs, "SE_OF_V0", 0.5)  # a loose target: the pilot plans its own 8
    row = hs.run_point(system, "pss_T2", "T2", 16, pilot_reps=8, min_reps=40)
    assert row["reps"] == 40
    fixed = pss2x2.simulate(system, 16, 40, seed=hs.SEED)
    assert row["J_hat"] == fixed.value and row["J_hat_stderr"] == fixed.stderr
    assert row["V0"] == pytest.approx(jaxq.analyze(system).V0, rel=1e-12)


def test_the_accelerator_file_runs_the_systems_the_page_leaves_open():
    """Every hard system has a row at n = 10^6, or experiments/gpu/hard_systems_1e6.sh names exactly those without."""
    import csv

    with open(ROOT / "experiments" / "results" / "hard_systems" / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    open_ = {r["system"] for r in rows} - {r["system"] for r in rows if float(r["n"]) == 1e6}
    path = ROOT / "experiments" / "gpu" / "hard_systems_1e6.sh"
    if not path.exists():
        assert open_ == set()
        return
    script = path.read_text()
    named = set(script.split("--systems", 1)[1].split('"$@"')[0].replace("\\", " ").split())
    assert named == open_
