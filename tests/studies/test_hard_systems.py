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
