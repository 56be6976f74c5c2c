"""CTMC simulation of threshold policies against the exact truncated-chain values (4 stderr)."""

import numpy as np
import pytest

from jaxq.mdp import exact
from jaxq.mdp.layout import identical
from jaxq.mdp.structure import threshold_policy
from jaxq.sim.fastslow_ctmc import simulate_costs

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
    r = simulate_costs(LAM, MU1, MU2, q, alpha=ALPHA, steps=20_000, warmup=2_000, reps=48, seed=3)
    assert abs(r["value_empty"] - V) <= 4 * r["value_empty_stderr"]
    assert abs(r["average_cost"] - g) <= 4 * r["average_cost_stderr"]


def test_simulation_independent_of_chunking():
    a = simulate_costs(LAM, MU1, MU2, [1, 2], steps=500, warmup=100, reps=6, seed=1)
    b = simulate_costs(LAM, MU1, MU2, [1, 2], steps=500, warmup=100, reps=6, seed=1, chunk=4)
    assert a == b
