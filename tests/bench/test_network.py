"""jaxq.bench.network: both network engines and the numba baseline agree; the section runs with and without it.

Every check reads the rows of two tiny ``jaxq bench --only network`` runs (64 replications: each jaxq
program is compiled once in this file).
"""

import numpy as np
import pytest

from jaxq.bench import network as NB
from jaxq.diffusion.network_analysis import analyze
from jaxq.examples import path
from jaxq.model import load

# the section's tiny runs compile programs of their own: with the slow checks (the bench command's plumbing is
# in the fast set through tests/bench/test_pss2x2.py)
pytestmark = pytest.mark.slow

KEYS = ("mean_in_system", "mean_idle", "p_wait")


@pytest.fixture(scope="module")
def rows(tiny_bench):
    return tiny_bench("network")


def test_tiny_run_has_both_engines_for_both_policies_and_numba_for_priority(rows):
    assert [(r["engine"], r["impl"]) for r in rows] == [
        ("network_ctmc[priority]", NB.IMPL["event"]), ("network_ctmc[priority]", NB.IMPL["uniformized"]),
        ("network_ctmc[priority]", NB.NUMBA_IMPL),
        ("network_ctmc[swc]", NB.IMPL["event"]), ("network_ctmc[swc]", NB.IMPL["uniformized"])]  # no numba swc
    for r in rows:
        if r["impl"].startswith("jaxq"):
            assert r["events_per_s"] > 0 and len(r["mean_in_system"]) == 2 and len(r["mean_idle"]) == 2
            assert np.all(np.isfinite(r["mean_in_system"])) and r["p_wait_stderr"] > 0


def test_numba_agrees_with_both_engines(rows, agree, numba_or_skip):
    event, lockstep, numba = rows[:3]
    assert numba["events_per_s"] > 0
    agree(event, numba, KEYS)
    agree(lockstep, numba, KEYS)
    assert numba["jaxq_ratio"] == pytest.approx(lockstep["events_per_s"] / numba["events_per_s"], rel=1e-12)


def test_numba_kernel_uses_jaxq_start_state_and_counts_every_event(numba_or_skip):
    """A horizon of one event: the state is z0 and the first event crosses it, so each replication counts 1."""
    k = NB.kernel_inputs(analyze(load(path("network_N"))), 16)
    out = numba_or_skip("network").accumulate(**k, warmup=0.0, horizon=1e-9, reps=8, seed=3)
    assert np.all(out["events"] == 1)
    x0 = k["z0"].sum(axis=1)  # q = 0 at the start
    np.testing.assert_allclose(out["acc_x"] / 1e-9, np.broadcast_to(x0, (8, 2)), rtol=1e-9)


def test_section_runs_without_its_baseline(tiny_bench, rows):
    without = tiny_bench("network", missing=True)
    assert [(r["engine"], r["impl"]) for r in without] == [(r["engine"], r["impl"]) for r in rows]
    numba = [r for r in without if r["impl"] == NB.NUMBA_IMPL]
    assert len(numba) == 1 and numba[0]["events_per_s"] is None and numba[0]["jaxq_ratio"] is None and numba[0]["note"]
    assert all(r["events_per_s"] > 0 for r in without if r["impl"].startswith("jaxq"))
