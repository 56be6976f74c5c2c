"""M/M/c (the birth-death statement) on both drivers against Erlang C; invariance to chunking."""

import math

import numpy as np
import pytest

from jaxq.sim.network import Batching, Window, erlang_c, simulate_mmc


def stationary_by_linear_solve(lam, mu, c, kmax=3000):
    """Independent check of the Erlang C formulas: balance equations on a truncated chain."""
    p = np.ones(kmax + 1)
    for k in range(1, kmax + 1):
        p[k] = p[k - 1] * lam / (min(k, c) * mu)
    p /= p.sum()
    k = np.arange(kmax + 1)
    return {"p_wait": p[c:].sum(), "mean_queue": (np.maximum(k - c, 0) * p).sum(), "mean_in_system": (k * p).sum()}


@pytest.mark.parametrize("lam, mu, c", [(8.0, 1.0, 10), (95.0, 1.0, 100), (2.0, 0.5, 5)])
def test_erlang_c_formula(lam, mu, c):
    e, s = erlang_c(lam, mu, c), stationary_by_linear_solve(lam, mu, c)
    for k in s:
        assert e[k] == pytest.approx(s[k], rel=1e-9)


@pytest.mark.parametrize("engine", ["uniformized", "event"])
def test_simulation_matches_erlang_c(engine):
    r = simulate_mmc(8.0, 1.0, 10, reps=200, seed=1, engine=engine, window=Window(warmup=20.0, horizon=400.0))
    e = erlang_c(8.0, 1.0, 10)
    assert r.engine == engine
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait"):  # controlled estimates (the default)
        assert abs(r[k] - e[k]) <= 4 * r[k + "_stderr"], (k, r[k], e[k], r[k + "_stderr"])
        est = r.estimates[k]
        assert abs(est.plain - e[k]) <= 4 * est.plain_stderr
        assert est.variance_reduction > 10, (k, est.variance_reduction)  # measured: 37 to 150
    c = r.samples["controls"]  # every control has mean zero
    assert np.all(np.abs(c.mean(axis=0)) <= 4 * c.std(axis=0, ddof=1) / np.sqrt(c.shape[0]))
    assert r.events > 0 and r.events_per_s > 0


def test_difference_controls_are_the_basis_increments():
    """phi[c][e] = g_c(x +- 1) - g_c(x) for the birth-death chain (arrival: up, completion: down; at x = 0 a
    completion has rate 0, so its phi never enters a control and is not checked)."""
    import jax.numpy as jnp

    from jaxq.sim.models import mmc

    p = mmc.Params(jnp.float64(8.0), jnp.float64(1.0), jnp.int32(10))
    for x in (0, 9, 10, 14):
        phi = mmc.MARKOV_CV.controls(jnp.int32(x), p)
        g = [np.asarray(v) for v in mmc._basis(jnp.int32(x), p)]
        up = [np.asarray(v) for v in mmc._basis(jnp.int32(x + 1), p)]
        down = [np.asarray(v) for v in mmc._basis(jnp.int32(x - 1), p)]
        for k in range(4):
            assert float(phi[k][0]) == pytest.approx(up[k] - g[k], abs=1e-12)
            if x:
                assert float(phi[k][1]) == pytest.approx(down[k] - g[k], abs=1e-12)


@pytest.mark.slow
def test_cv_off_gives_the_plain_means():
    on = simulate_mmc(8.0, 1.0, 10, reps=40, seed=2, window=Window(warmup=1.0, horizon=20.0))
    off = simulate_mmc(8.0, 1.0, 10, reps=40, seed=2, cv=False, window=Window(warmup=1.0, horizon=20.0))
    for k in ("mean_in_system", "p_wait"):
        assert off.estimates[k].plain is None and off[k] == pytest.approx(on.estimates[k].plain, rel=1e-12)


@pytest.mark.slow  # chunk invariance of the shared driver: tests/mc/test_replications.py in the fast set
def test_chunking_does_not_change_results():
    a = simulate_mmc(8.0, 1.0, 10, reps=10, seed=4, window=Window(warmup=1.0, horizon=20.0))
    b = simulate_mmc(8.0, 1.0, 10, reps=10, seed=4, window=Window(warmup=1.0, horizon=20.0), batching=Batching(chunk=3))
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait"):
        assert a[k] == b[k] and a[k + "_stderr"] == b[k + "_stderr"]
    assert a.events == b.events


def test_bad_input():
    from jaxq.errors import InputError

    with pytest.raises(InputError):
        simulate_mmc(1.0, 1.0, 1, reps=1)
    with pytest.raises(InputError):
        erlang_c(10.0, 1.0, 5)
    assert math.isfinite(erlang_c(990.0, 1.0, 1000)["p_wait"])
