"""The network diffusion's Euler scheme is a driver Scheme (weak order 1) run by the SDE driver's program with the
window's step weights: the same numbers as jaxq.simulate_network_sde, and an Euler chain recomputed step by step."""

from pathlib import Path

import pytest
import jax
import jax.numpy as jnp
import numpy as np

import jaxq
from jaxq.diffusion.network import drift
from jaxq.diffusion.network_analysis import analyze
from jaxq.model import load
from jaxq.mc import rng
from jaxq.sde import driver, network_euler as NE
from jaxq.mc.replications import Batching

EX = Path(jaxq.__file__).parent / "examples"


def _diffusion():
    return analyze(load(EX / "network_N.toml")).diffusion


def _args(dl, dt, steps, warm, snap_steps):
    num_i, num_j = dl.tree.shape
    p = {"ell": jnp.asarray(dl.ell), "K": jnp.asarray(dl.drift_matrix), "sigma": jnp.asarray(dl.sigma),
         "uc": jnp.full(num_i, 1.0 / num_i), "us": jnp.full(num_j, 1.0 / num_j), "feedback": jnp.asarray(False),
         "x0": jnp.zeros(num_i)}
    return driver.PathArgs(p, p["x0"], None, jnp.float64(dt), jnp.int64(steps), jnp.asarray(snap_steps, jnp.int64),
                           n_steps=jnp.float64(steps), warm=jnp.int64(warm))


def test_the_network_euler_scheme_is_a_scheme_of_weak_order_one():
    s = NE.scheme(2)
    assert isinstance(s, driver.Scheme) and s.order == 1.0 == NE.WEAK_ORDER
    assert (s.n_normal, s.n_uniform) == (2, 0) and NE.scheme(2) is s  # one scheme, one program, per I
    assert isinstance(driver.WINDOW, driver.StepWeights) and isinstance(driver.DISCOUNTED, driver.StepWeights)


@pytest.mark.slow  # a second check: -m slow
def test_the_driver_program_runs_it_as_simulate_network_sde_does():
    """driver.program(scheme, 1, ..., WINDOW) gives simulate_diffusion's numbers bit for bit (any steps per call),
    and they are the Euler chain x_{k+1} = x_k + b(x_k, u) dt + sigma sqrt(dt) N_k (N_k: draw k of the path's
    stream) averaged over the window's steps, recomputed here step by step."""
    dl = _diffusion()
    dt, steps, warm, paths, seed = 0.05, 24, 6, 3, 4
    a = _args(dl, dt, steps, warm, [0, 5, 23])
    outs = []
    for per_call in (1, 7, steps):
        prog = driver.program(NE.scheme(2), 1, per_call, NE.observer(True), driver.WINDOW)
        out, _ = driver.run_loop(prog, a, paths, seed, Batching(), float(paths * steps))
        outs.append(out)
    for out in outs[1:]:
        for k in ("avg", "ctl", "path"):
            jax.tree_util.tree_map(np.testing.assert_array_equal, out[k], outs[0][k])
    r = NE.simulate_diffusion(dl, NE.Control(), paths=paths, seed=seed, times=[0.0, 0.25, 1.15],
                              window=NE.EulerGrid(dt, steps * dt, warm * dt))
    np.testing.assert_array_equal(r.samples["mean_x"], outs[0]["avg"]["x"])
    np.testing.assert_array_equal(r.samples["controls"], outs[0]["ctl"])
    np.testing.assert_array_equal(r.samples["sum_path"], outs[0]["path"])
    # the chain by hand: the window's average of X held over each step
    p = a.params
    keys = rng.keys(seed, 0, paths)
    x = np.zeros((paths, 2))
    acc, path = np.zeros((paths, 2)), []
    for k in range(steps):
        if k in (0, 5, 23):
            path.append(x.sum(axis=1))
        if k >= warm:
            acc += dt * x
        normal = np.asarray(jax.vmap(lambda key: rng.normals(key, k, 2))(keys))  # noqa: B023
        b = np.asarray(drift(x, np.asarray(p["uc"]), np.asarray(p["us"]), np.asarray(p["ell"]), np.asarray(p["K"])))
        x = x + b * dt + np.asarray(p["sigma"]) * (normal * np.sqrt(dt))
    np.testing.assert_allclose(outs[0]["avg"]["x"], acc / ((steps - warm) * dt), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(outs[0]["path"], np.stack(path, axis=1), rtol=1e-12, atol=1e-14)
