"""Simulation of fast/slow threshold policies against the exact truncated-chain values (4 stderr), and the
uniformised driver against a plain numpy replay of its random words."""

import numpy as np
import pytest

from jaxq.mdp import exact
from jaxq.mdp.layout import identical
from jaxq.policies.fastslow import threshold_policy
from jaxq.sim.fastslow import Batching, StepWindow, simulate

LAM, MU1, MU2, ALPHA, N = 1.2, 1.0, 0.3, 0.1, 150


@pytest.mark.parametrize("q", [[1, 2], [3, 5]])
def test_simulation_matches_exact(q):
    lay = identical(2)
    pol = threshold_policy(lay, N, np.array(q) + 1)
    V = exact.discounted_value(lay, N, LAM, MU1, [MU2], ALPHA, pol)[0, 0]
    g, _ = exact.average_cost(lay, N, LAM, MU1, [MU2], pol)
    pi = exact.stationary_distribution(lay, N, LAM, MU1, [MU2], pol)
    cost = np.arange(N + 1)[:, None] + np.arange(3)[None, :]
    assert float((pi * cost).sum()) == pytest.approx(g, rel=1e-9)  # two exact routes agree
    r = simulate(LAM, MU1, MU2, q, alpha=ALPHA, reps=48, seed=3, window=StepWindow(steps=20_000, warmup=2_000))
    for key, exact_value in (("value_empty", V), ("average_cost", g)):  # controlled (default) and plain
        est = r.estimates[key]
        assert abs(est.value - exact_value) <= 4 * est.stderr, (key, est.value, exact_value, est.stderr)
        assert abs(est.plain - exact_value) <= 4 * est.plain_stderr
        assert est.variance_reduction > 20, (key, est.variance_reduction)  # measured: about 200 and 560
    for key in ("controls_discounted", "controls_window"):  # every control has mean zero
        c = r.samples[key]
        assert np.all(np.abs(c.mean(axis=0)) <= 4 * c.std(axis=0, ddof=1) / np.sqrt(c.shape[0])), key


@pytest.mark.slow
def test_simulation_independent_of_chunking():
    a = simulate(LAM, MU1, MU2, [1, 2], reps=6, seed=1, window=StepWindow(steps=500, warmup=100))
    b = simulate(LAM, MU1, MU2, [1, 2], reps=6, seed=1, window=StepWindow(steps=500, warmup=100),
                 batching=Batching(chunk=4))
    keys = ("value_empty", "value_empty_stderr", "average_cost", "average_cost_stderr")
    assert [a[k] for k in keys] == [b[k] for k in keys]  # bit for bit (timings differ)


@pytest.mark.parametrize("steps, warmup", [(100, 30), (20, 10), (200, 64), (129, 0)])
def test_uniformised_driver_equals_a_numpy_replay_of_its_words(steps, warmup):
    """The driver's pages, integer segments, warm-up and discount weights, replayed step by step in numpy:
    the window is exactly the steps warmup .. steps - 1 (the window's first and last pages are masked; both in
    one page for (20, 10)), the run whole pages of 64 steps, all of them in the discounted sum."""
    import jax.numpy as jnp

    from jaxq.mc import replications, rng

    from jaxq.sim import uniformized as U

    lam, mu1, mu2, alpha, q = LAM, MU1, MU2, ALPHA, [1, 2]
    r = simulate(lam, mu1, mu2, q, alpha=alpha, reps=3, seed=5, cv=False, window=StepWindow(steps=steps, warmup=warmup))
    run = -(-steps // U.PAGE) * U.PAGE
    assert r.info["steps"] == run and r.info["warmup"] == warmup
    gamma = lam + mu1 + 2 * mu2
    w_arr, w_fast, w_slow = (int(v) for v in U.unit_words([lam, mu1, mu2], gamma))
    thr = np.array(q) + 1
    disc, avg = [], []
    for key in rng.keys(5, 0, 3):
        # page b is draw b of the replication's stream: replayed with the per-event form of jaxq.mc.rng
        words = np.concatenate([np.asarray(rng.words(key, jnp.uint32(b), U.PAGE))
                                for b in range(run // U.PAGE)]).astype(np.int64)
        x = y = 0
        d, tot, w = 0.0, 0, 1.0
        for n in range(run):
            d += w * (x + y)
            w *= gamma / (alpha + gamma)
            tot += (x + y) if warmup <= n < steps else 0
            u = int(words[n])
            if u < w_arr:
                x += 1
            elif u < w_arr + w_fast:
                x = max(x - 1, 0)
            elif u < w_arr + w_fast + y * w_slow:
                y -= 1
            target = int(np.sum(x + y >= thr))
            k = min(y + max(x - 1, 0), max(y, target))
            x, y = x - (k - y), k
        disc.append(d / (alpha + gamma))
        avg.append(tot / (steps - warmup))
    assert r["value_empty"] == pytest.approx(np.mean(disc), rel=1e-12)
    assert r["average_cost"] == pytest.approx(np.mean(avg), rel=1e-12)
