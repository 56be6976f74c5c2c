"""The uniformised exponential 2x2 engine against the exact sparse solve (4 standard errors)."""

import numpy as np
import pytest

from jaxq.diffusion.workload import analyze
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2_ctmc as U
from jaxq.sim.exact_ctmc import discounted_cost
from jaxq.sim.pss2x2 import DEFAULT_THETA_EXPONENT, resolve_policy, theta_level

N = 16
THETA = theta_level(N, DEFAULT_THETA_EXPONENT)
SAMPLING = {0: "never", 1: "k1", 2: "every"}
RULES = ("P", "T1", "T2")


def exact(system, policy, switch_at=None):
    a = analyze(system)
    name, rules, lo, hi, z = resolve_policy(a, policy, switch_at)
    return discounted_cost(system, N, lo, RULES[rules.lower], theta=THETA, cap=50, higher=hi,
                           rule_higher=RULES[rules.higher], sampling=SAMPLING[rules.sampling], switch_at=z)["J"]


@pytest.mark.parametrize("name, policy, switch_at", [
    ("pss_P", "auto", None),
    ("pss_T2", "auto", None),
    ("pss_P", "T1T2", 0.4),  # a switching policy sampled at every event
    ("pss_T2", "PP", 0.3),  # sampled at completions of the single-activity server
])
def test_agrees_with_exact_solve(name, policy, switch_at):
    s = load(path(name))
    r = U.simulate_cost(s, N, 1500, policy=policy, switch_at=switch_at, seed=11)
    v = exact(s, policy, switch_at)
    assert abs(r["J_hat"] - v) <= 4 * r["stderr"] + r["truncation_bound"], (r["J_hat"], v, r["stderr"])
    assert r["stderr"] < 0.05 * v
    assert r["truncation_bound"] < 1e-3 * v


def test_chunks_give_identical_results():
    s = load(path("pss_T2"))
    a = U.simulate_cost(s, N, 20, seed=3)
    b = U.simulate_cost(s, N, 20, seed=3, chunk=7)
    np.testing.assert_array_equal(a["J"], b["J"])


def test_refuses_general_primitives():
    with pytest.raises(InputError, match="exponential"):
        U.simulate_cost(load(path("pss_PP")), N, 10)
