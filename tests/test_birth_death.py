"""The uniformised M/M/c engine against Erlang C; invariance to chunking."""

import math

import numpy as np
import pytest

from jaxq.sim.birth_death import erlang_c, simulate_mmc


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


def test_simulation_matches_erlang_c():
    r = simulate_mmc(8.0, 1.0, 10, reps=200, warmup=20.0, horizon=400.0, seed=1)
    e = erlang_c(8.0, 1.0, 10)
    for k in ("mean_in_system", "mean_queue", "mean_idle", "p_wait"):
        assert abs(r[k] - e[k]) <= 4 * r[k + "_stderr"], (k, r[k], e[k], r[k + "_stderr"])
    assert r["events"] > 0 and r["events_per_s"] > 0


def test_chunking_does_not_change_results():
    a = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4)
    b = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4, chunk=3)
    for k in a:
        if k not in ("wall_s", "events_per_s"):
            assert a[k] == b[k]


def test_bad_input():
    from jaxq.errors import InputError

    with pytest.raises(InputError):
        simulate_mmc(1.0, 1.0, 1, reps=1)
    with pytest.raises(InputError):
        erlang_c(10.0, 1.0, 5)
    assert math.isfinite(erlang_c(990.0, 1.0, 1000)["p_wait"])


def test_lockstep_engines_identical_on_one_and_four_devices():
    """Both uniformised engines (M/M/c and the 2x2 CTMC) give the same numbers on 1 and 4 devices."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import jax, numpy as np
        import jaxq
        from jaxq.examples import path
        from jaxq.model import load
        from jaxq.sim.birth_death import simulate_mmc
        from jaxq.sim import pss2x2_ctmc as U
        d = jax.local_devices()
        assert len(d) == 4
        a = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4, devices=d[:1])
        b = simulate_mmc(8.0, 1.0, 10, reps=10, warmup=1.0, horizon=20.0, seed=4, devices=d, chunk=6)
        assert all(a[k] == b[k] for k in a if k not in ("wall_s", "events_per_s"))
        s = load(path("pss_T2"))
        x = U.simulate_cost(s, 16, 10, seed=3, devices=d[:1])
        y = U.simulate_cost(s, 16, 10, seed=3, devices=d, chunk=4)
        np.testing.assert_array_equal(x["J"], y["J"])
        print("identical")
        """
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout
