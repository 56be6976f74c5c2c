"""jaxq.bench.mmc: M/M/c and the two-class priority queue in jaxq, numba and Ciw; the section with and without them.

Every check reads the rows of two tiny ``jaxq bench --only mmc`` runs (each jaxq program compiled once).
"""

import pytest

from jaxq.bench import mmc as M
from jaxq.bench import network as NB

# the section's tiny runs compile programs of their own: with the slow checks (the bench command's plumbing is
# in the fast set through tests/bench/test_pss2x2.py)
pytestmark = pytest.mark.slow

KEYS = ("mean_in_system", "mean_idle", "p_wait")
SIZES = {"mmc_reps": 256, "mmc_horizon": 2.0, "ciw_horizon": 0.25}  # tinier than the tiny run: shapes of this file


@pytest.fixture(scope="module")
def rows(tiny_bench):
    return tiny_bench("mmc", **SIZES)


def _pick(rows, engine, impl):
    (row,) = [r for r in rows if r["engine"] == engine and r["impl"] == impl]
    return row


def test_tiny_run_has_every_implementation(rows):
    assert [(r["engine"], r["impl"]) for r in rows] == [
        ("mmc", M.MMC_IMPL), ("mmc", NB.IMPL["event"]), ("mmc", M.NUMBA_IMPL), ("mmc", "ciw"),
        ("priority2", NB.IMPL["event"]), ("priority2", NB.IMPL["uniformized"]), ("priority2", M.NUMBA_IMPL),
        ("priority2", "ciw")]
    assert {r["servers"] for r in rows if r["engine"] == "priority2"} == {M.servers(100)} == {105}
    assert all(r["events_per_s"] > 0 for r in rows if r["impl"].startswith("jaxq"))


def test_mmc_numba_agrees_with_jaxq_over_the_span_jaxq_simulated(rows, agree, numba_or_skip):
    jx, numba = _pick(rows, "mmc", M.MMC_IMPL), _pick(rows, "mmc", M.NUMBA_IMPL)
    agree(jx, numba, ["mean_in_system"])
    for row in rows[1:4]:
        assert row["events_per_s"] > 0
        assert row["jaxq_ratio"] == pytest.approx(jx["events_per_s"] / row["events_per_s"], rel=1e-12)


def test_priority2_numba_agrees_with_both_engines_and_ratios_are_against_the_uniformised_one(rows, agree,
                                                                                             numba_or_skip):
    event, lockstep, numba, ciw = (_pick(rows, "priority2", impl) for impl in
                                   (NB.IMPL["event"], NB.IMPL["uniformized"], M.NUMBA_IMPL, "ciw"))
    agree(event, numba, KEYS)
    agree(lockstep, numba, KEYS)
    assert len(numba["mean_in_system"]) == 2 and len(numba["mean_idle"]) == 1
    for row in (numba, ciw):
        assert row["jaxq_ratio"] == pytest.approx(lockstep["events_per_s"] / row["events_per_s"], rel=1e-12)


def test_section_runs_without_its_baselines(tiny_bench, rows):
    without = tiny_bench("mmc", missing=True, **SIZES)
    assert [(r["engine"], r["impl"]) for r in without] == [(r["engine"], r["impl"]) for r in rows]
    for r in without:
        if r["impl"].startswith("jaxq"):
            assert r["events_per_s"] > 0
        else:
            assert r["events_per_s"] is None and r["jaxq_ratio"] is None and r["note"]
