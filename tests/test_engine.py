"""The generic event driver: an M/M/1 queue against its closed form; batching and sharding invariance."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from jaxq.sim.engine import replication_keys, simulate

MM1_SRC = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    import jaxq
    from jaxq.sim.engine import Engine

    def init(key, p):
        return dict(key=key, t=jnp.float64(0), x=jnp.int64(0), area=jnp.float64(0), events=jnp.int64(0))

    def step(s, p):
        lam, mu, horizon = p
        key, k1, k2 = jax.random.split(s["key"], 3)
        rate = lam + jnp.where(s["x"] > 0, mu, 0.0)
        t_next = s["t"] + jax.random.exponential(k1) / rate
        inside = t_next < horizon
        arrival = jax.random.uniform(k2) * rate < lam
        x = jnp.where(inside, s["x"] + jnp.where(arrival, 1, -1), s["x"])
        area = s["area"] + s["x"] * (jnp.minimum(t_next, horizon) - s["t"])
        return dict(key=key, t=t_next, x=x, area=area, events=s["events"] + inside)

    def done(s, p):
        return s["t"] >= p[2]

    MM1 = Engine(init, step, done)
    """
)
exec(MM1_SRC)  # defines MM1 (module level, so the Engine is hashable and compiled once)
PARAMS = (jnp.float64(0.5), jnp.float64(1.0), jnp.float64(400.0))


def test_mm1_time_average_against_closed_form():
    out = simulate(MM1, PARAMS, 200, seed=3, chunk=100, block=128)  # noqa: F821
    est = out["area"] / 400.0
    mean, se = est.mean(), est.std(ddof=1) / np.sqrt(len(est))
    # exact transient mean from empty over [0, 400]: rho/(1-rho) minus a start-up deficit of O(1/400)
    assert abs(mean - 1.0) <= 4 * se + 0.02
    assert np.all(out["t"] >= 400.0)


def test_results_do_not_depend_on_chunk_or_block():
    a = simulate(MM1, PARAMS, 13, seed=7, chunk=13, block=64)  # noqa: F821
    b = simulate(MM1, PARAMS, 13, seed=7, chunk=5, block=128)  # noqa: F821
    c = simulate(MM1, PARAMS, 6, seed=7, chunk=6, block=64, start=7)  # noqa: F821
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        np.testing.assert_array_equal(a[k][7:], c[k])


def test_replication_keys_are_fold_in():
    k = replication_keys(5, 10, 3)
    np.testing.assert_array_equal(k[1], jax.random.fold_in(jax.random.PRNGKey(5), 11))


def test_one_two_four_devices_give_identical_results(tmp_path):
    script = MM1_SRC + textwrap.dedent(
        """
        import sys, numpy as np
        from jaxq.sim.engine import simulate
        assert len(jax.local_devices()) == 4
        p = (jnp.float64(0.5), jnp.float64(1.0), jnp.float64(50.0))
        outs = [simulate(MM1, p, 10, seed=1, chunk=c, devices=jax.local_devices()[:d])
                for d, c in ((1, 10), (2, 4), (4, 7))]
        for o in outs[1:]:
            for k in o:
                np.testing.assert_array_equal(outs[0][k], o[k])
        print("identical")
        """
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout
