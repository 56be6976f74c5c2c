"""The numba baselines of the sde and fastslow bench sections compute what jaxq computes."""

import importlib
import math
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import jaxq  # noqa: F401
from jaxq.mdp.layout import identical
from jaxq.mdp.value_iteration import VIParams, solver
from jaxq.sde import coefficients as C
from jaxq.sde import euler
from jaxq.sde.driver import simulate
from jaxq.sim.fastslow_ctmc import simulate_costs
from jaxq.stats import mean_stderr

T2T1 = (0.2857142857142856, 1.6278820596099706, -0.7857142857142856, 2.073644135332772, 0.5471922382896093)


def _within_4se(a, a_se, b, b_se):
    return abs(a - b) <= 4.0 * math.hypot(a_se, b_se)


@pytest.mark.parametrize("z0", [0.0, 0.5])  # start in the lower region and next to the switching level
def test_sde_numba_euler_agrees_with_jaxq(z0):
    pytest.importorskip("numba")
    from jaxq.bench import sde as B

    params = C.wcp(*T2T1)
    dt, horizon, paths = 0.01, 1.28, 4096
    j = simulate(euler.SCHEME, params, z0, 0.5, dt, horizon, paths, seed=3, chunk=256)
    n = B.numba_euler(params, z0, 0.5, dt, horizon, paths, seed=3)
    assert n["steps"] == j["steps"] == 128 and n["cost"].shape == (paths,)
    (a, a_se), (b, b_se) = mean_stderr(n["cost"]), mean_stderr(j["cost"])
    assert a_se > 0 and _within_4se(a, a_se, b, b_se), (a, a_se, b, b_se)


@pytest.mark.parametrize("q", [[1, 2], [3, 5]])
def test_fastslow_numba_ctmc_agrees_with_jaxq(q):
    pytest.importorskip("numba")
    from jaxq.bench import fastslow as B

    kw = {"alpha": 0.1, "steps": 2000, "warmup": 200, "reps": 256}
    j = simulate_costs(1.2, 1.0, 0.3, q, seed=4, chunk=32, **kw)
    n = B.numba_costs(1.2, 1.0, 0.3, q, seed=4, **kw)
    for k in ("value_empty", "average_cost"):
        assert n[k + "_stderr"] > 0
        assert _within_4se(n[k], n[k + "_stderr"], j[k], j[k + "_stderr"]), (k, n, j)


@pytest.mark.parametrize("max_iter", [200, 4000])  # stopped by the cap / by the McQueen bounds meeting
def test_fastslow_numba_value_iteration_matches_jaxq(max_iter):
    pytest.importorskip("numba")
    from jaxq.bench import fastslow as B

    N, f = 63, jnp.float64
    r = solver(identical(2), N, False)(VIParams(f(1.2), f(1.0), jnp.array([0.3]), f(0.05), f(0.0), jnp.int64(max_iter)))
    n = B.numba_vi(1.2, 1.0, 0.3, 2, 0.05, N, max_iter=max_iter)
    assert n["value"].shape == (N + 1, 3)
    # the same deterministic iteration in a different summation order: equal up to rounding
    np.testing.assert_allclose(n["value"], np.asarray(r.value), rtol=1e-10)
    assert float(r.lo) - 1e-9 <= n["value"][0, 0] <= float(r.hi) + 1e-9  # inside jaxq's McQueen bounds
    if max_iter == 200:  # no early stop: the same number of sweeps
        assert n["iterations"] == int(r.iterations) == 231 and not n["converged"]
        assert n["lo"] == pytest.approx(float(r.lo), rel=1e-10) and n["hi"] == pytest.approx(float(r.hi), rel=1e-10)


def test_sde_and_fastslow_sections_run_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    monkeypatch.setenv("JAXQ_BENCH_TINY", "1")
    import jaxq.bench.fastslow as F
    import jaxq.bench.sde as S

    try:
        S, F = importlib.reload(S), importlib.reload(F)
        rows = list(S.bench(True))
        numba_rows = [r for r in rows if r["impl"].startswith("numba")]
        assert len(numba_rows) == 1 and numba_rows[0]["scheme"] == "euler"
        assert numba_rows[0]["path_steps_per_s"] is None and "numba" in numba_rows[0]["note"]
        assert numba_rows[0]["jaxq_ratio"] is None
        for r in rows:
            if r["impl"].startswith("jaxq"):
                assert r["path_steps_per_s"] > 0 and np.isfinite(r["mean_cost"]) and r["mean_cost_stderr"] > 0
        rows = list(F.bench(True))
        assert [r["engine"] for r in rows] == ["fastslow_vi"] * 2 + ["fastslow_ctmc"] * 2
        for jx, nb in (rows[0:2], rows[2:4]):
            assert jx["updates_per_s"] > 0 and nb["updates_per_s"] is None and nb["jaxq_ratio"] is None
            assert "numba" in nb["note"]
        assert np.isfinite(rows[2]["value_empty"]) and rows[2]["average_cost_stderr"] > 0
    finally:  # later tests get modules that import numba again
        monkeypatch.undo()
        importlib.reload(S), importlib.reload(F)
