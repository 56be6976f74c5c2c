"""The numba baselines of the network and priority2 benchmark rows: same estimates as jaxq, honest ratios."""

import importlib
import math
import sys

import numpy as np
import pytest

import jaxq  # noqa: F401  (float64)
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import network_ctmc as C

REPS, WARMUP, HORIZON = 64, 2.0, 12.0


def agree(a: dict, b: dict) -> None:
    """Mean number in system per class, idle servers per pool and p_wait of two rows: within 4 combined stderr."""
    for key in ("mean_in_system", "mean_idle", "p_wait"):
        x, y = np.atleast_1d(a[key]), np.atleast_1d(b[key])
        se = np.hypot(np.atleast_1d(a[key + "_stderr"]), np.atleast_1d(b[key + "_stderr"]))
        assert np.all(se > 0) and np.all(np.abs(x - y) <= 4 * se), (key, x, y, se)


def test_numba_agrees_with_jaxq_on_the_N_network():
    pytest.importorskip("numba")
    from jaxq.bench import network as B

    st = C.setup(load(path("network_N")))
    erow, jrow, nrow = B.compare_rows(st, 16, "priority", REPS, WARMUP, HORIZON, repeats=1)
    assert "event-driven" in erow["impl"] and "lockstep" in jrow["impl"] and nrow["impl"].startswith("numba")
    assert len(nrow["mean_in_system"]) == 2 and nrow["events_per_s"] > 0 and nrow["compile_s"] >= 0
    agree(jrow, nrow)
    agree(erow, nrow)
    assert nrow["jaxq_ratio"] == pytest.approx(jrow["events_per_s"] / nrow["events_per_s"], rel=1e-12)


def test_numba_kernel_uses_make_params_start_state_and_counts_every_event():
    """A horizon of one event: the state is z0 and the first event crosses it, so each replication counts 1."""
    pytest.importorskip("numba")
    from jaxq.bench import network as B

    st = C.setup(load(path("network_N")))
    p = C.make_params(st, 16, "priority", 0.0, 1e-9)
    out = B.numba_network(p, 8, seed=3)
    assert np.all(out["events"] == 1)
    x0 = np.asarray(p["z0"]).sum(axis=1)  # q = 0 at the start
    np.testing.assert_allclose(out["acc_x"] / 1e-9, np.broadcast_to(x0, (8, 2)), rtol=1e-9)


def test_priority2_rows_agree_and_ratio_is_against_jaxq_priority2():
    pytest.importorskip("numba")
    pytest.importorskip("ciw")
    from jaxq.bench import mmc

    rows = mmc.priority2_rows(100, REPS, 1.0, 6.0, 0.2, repeats=1)
    assert [r["engine"] for r in rows] == ["priority2"] * 4
    erow, jrow, nrow, crow = rows
    assert "event-driven" in erow["impl"] and "lockstep" in jrow["impl"]
    assert nrow["impl"].startswith("numba") and crow["impl"] == "ciw"
    assert {r["servers"] for r in rows} == {round(100 + 0.5 * math.sqrt(100))} == {105}
    agree(jrow, nrow)
    agree(erow, nrow)
    for row in (nrow, crow):
        assert row["jaxq_ratio"] == pytest.approx(jrow["events_per_s"] / row["events_per_s"], rel=1e-12)


def test_network_section_runs_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    import jaxq.bench.network as B

    B = importlib.reload(B)
    rows = B.bench(quick=True)
    jaxq_rows = [r for r in rows if r["impl"].startswith("jaxq")]
    numba_rows = [r for r in rows if r["impl"].startswith("numba")]
    assert {r["engine"] for r in jaxq_rows} == {"network_ctmc[priority]", "network_ctmc[swc]"}
    assert all(r["events_per_s"] > 0 and np.all(np.isfinite(r["mean_in_system"])) for r in jaxq_rows)
    assert [r["engine"] for r in numba_rows] == ["network_ctmc[priority]"]  # no baseline for swc
    assert all(r["events_per_s"] is None and r["jaxq_ratio"] is None and "numba" in r["note"] for r in numba_rows)
