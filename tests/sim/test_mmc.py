"""M/M/c (the birth-death statement) on both drivers against Erlang C; invariance to chunking."""

import math

import numpy as np
import pytest

from jaxq.sim.network import erlang_c, simulate_mmc


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
    r = simulate_mmc(8.0, 1.0, 10, reps=200, warmup=20.0, horizon=400.0, seed=1, engine=engine)
    e = erlang_c(8.0, 1.0, 10)
    assert r.engine == engine
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait"):
        assert abs(r[k] - e[k]) <= 4 * r[k + "_stderr"], (k, r[k], e[k], r[k + "_stderr"])
    assert r.events > 0 and r.events_per_s > 0


def test_chunking_does_not_change_results():
    a = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4)
    b = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4, chunk=3)
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
