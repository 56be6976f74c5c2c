"""jaxq.bench.fastslow: value iteration and the CTMC simulator of jaxq match their numba baselines."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxq.mdp.layout import identical
from jaxq.mdp.value_iteration import VIParams, solver
from jaxq.sim import fastslow

REPS = 32  # the tiny grid's, so that every run of this file reuses the compiled programs of the tiny run


@pytest.fixture(scope="module")
def rows(tiny_bench):
    return tiny_bench("fastslow")


@pytest.mark.parametrize("q", [[1, 2], [3, 5]])
def test_numba_ctmc_agrees_with_jaxq(q, agree, numba_or_skip):
    j = fastslow.simulate(1.2, 1.0, 0.3, q, alpha=0.1, window=fastslow.StepWindow(steps=2000, warmup=200), reps=8 * REPS,
                          seed=4, batching=fastslow.Batching(chunk=REPS))
    steps, warmup = j["steps"], j["warmup"]  # whole pages of uniformised steps: the numba loop runs the same
    n = numba_or_skip("fastslow").ctmc(1.2, 1.0, 0.3, q, alpha=0.1, steps=steps, warmup=warmup, reps=8 * REPS, seed=4)
    agree(j.to_dict(), n, ["value_empty", "average_cost"])


@pytest.mark.parametrize("max_iter", [200, 4000])  # stopped by the cap / by the McQueen bounds meeting
def test_numba_value_iteration_matches_jaxq(max_iter, numba_or_skip):
    N, f = 63, jnp.float64
    r = solver(identical(2), N, False)(VIParams(f(1.2), f(1.0), jnp.array([0.3]), f(0.05), f(0.0), jnp.int64(max_iter)))
    n = numba_or_skip("fastslow").vi(1.2, 1.0, 0.3, 2, 0.05, N, max_iter=max_iter)
    assert n["value"].shape == (N + 1, 3)
    # the same deterministic iteration in a different summation order: equal up to rounding
    np.testing.assert_allclose(n["value"], np.asarray(r.value), rtol=1e-10)
    assert float(r.lo) - 1e-9 <= n["value"][0, 0] <= float(r.hi) + 1e-9  # inside jaxq's McQueen bounds
    if max_iter == 200:  # no early stop: the same number of sweeps
        assert n["iterations"] == int(r.iterations) == 231 and not n["converged"]
        assert n["lo"] == pytest.approx(float(r.lo), rel=1e-10) and n["hi"] == pytest.approx(float(r.hi), rel=1e-10)


def test_tiny_run_pairs_each_jaxq_row_with_numba(rows, agree, numba_or_skip):
    assert [(r["engine"], r["impl"]) for r in rows] == [
        ("fastslow_vi", "jaxq (jit)"), ("fastslow_vi", "numba (1 core)"),
        ("fastslow_ctmc", "jaxq (uniformised, lockstep)"), ("fastslow_ctmc", "numba (all cores)")]
    vi, nvi, ctmc, nctmc = rows
    assert nvi["value_00"] == pytest.approx(vi["value_00"], rel=1e-10)
    same = ("steps", "warmup", "reps")
    assert [nctmc[k] for k in same] == [ctmc[k] for k in same] == [2048, 204, REPS]  # whole pages; exact warm-up
    agree(ctmc, nctmc, ["value_empty", "average_cost"])
    for jx, nb in ((vi, nvi), (ctmc, nctmc)):
        assert nb["jaxq_ratio"] == pytest.approx(jx["updates_per_s"] / nb["updates_per_s"], rel=1e-12)


@pytest.mark.slow  # the plumbing without a baseline: tests/bench/test_pss2x2.py in the fast set
def test_section_runs_without_its_baseline(tiny_bench):
    rows = tiny_bench("fastslow", missing=True)
    assert [r["engine"] for r in rows] == ["fastslow_vi"] * 2 + ["fastslow_ctmc"] * 2
    for jx, nb in (rows[0:2], rows[2:4]):
        assert jx["updates_per_s"] > 0 and nb["updates_per_s"] is None and nb["jaxq_ratio"] is None and nb["note"]
    assert np.isfinite(rows[2]["value_empty"]) and rows[2]["average_cost_stderr"] > 0
