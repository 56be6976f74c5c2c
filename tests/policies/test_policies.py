"""The policies as pure functions against independent plain-Python statements of their definitions."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxq.mdp.layout import heterogeneous, identical
from jaxq.policies import fastslow as fs
from jaxq.policies import pss2x2 as pol
from jaxq.sim import exact_ctmc

RULES = (pol.RULE_P, pol.RULE_T1, pol.RULE_T2)  # the policy table's codes, which both statements take


def test_pss2x2_dispatch_matches_the_exact_solvers_statement():
    """Definitions 2.7-2.8 in JAX (vmapped) against exact_ctmc._decide, every small state, role and rule."""
    cases = list(itertools.product(range(4), range(4), (-1, 0, 1), (-1, 0, 1), (0, 1), (0, 1), (0, 1), RULES, (1, 2)))
    x = np.array([[a, b] for a, b, *_ in cases], np.int32)
    srv = np.array([[c, d] for _, _, c, d, *_ in cases], np.int32)
    i1, i2, k1 = (np.array([c[k] for c in cases], np.int32) for k in (4, 5, 6))
    rule = np.array([c[7] for c in cases], np.int32)
    theta = np.array([c[8] for c in cases], np.int32)

    @jax.jit
    @jax.vmap
    def decide(x, s, i1, i2, k1, rule, theta):
        prio = pol.priority_class(rule, x, i1, i2, theta)
        return pol.dispatch(x, s, k1, i2, prio)[0]

    got = np.asarray(decide(x, srv, i1, i2, k1, rule, theta))
    for j, c in enumerate(cases):
        # the assignment only counts where it is feasible (jobs in service never exceed jobs in the system)
        if any(x[j][cls] < int(srv[j][0] == cls) + int(srv[j][1] == cls) for cls in (0, 1)):
            continue
        ref = exact_ctmc._decide(tuple(x[j]), tuple(srv[j]), int(i1[j]), int(i2[j]), int(k1[j]), int(rule[j]),
                                 int(theta[j]))
        assert tuple(got[j]) == ref, c


def theorem_1(x, y, q_lo, q_hi):
    """Theorem 1 of the fast/slow-servers paper for two identical slow servers: slow jobs after the decision."""
    q = max(x - 1, 0)  # queued jobs (the fast server is busy whenever x > 0)
    if y == 0:
        return 0 if q < q_lo else (1 if q < q_hi else min(2, q))
    if y == 1:
        return 2 if q >= q_hi - 1 and q > 0 else 1
    return 2


@pytest.mark.parametrize("q_lo,q_hi", [(0, 0), (1, 3), (2, 2), (3, 7)])
def test_fastslow_threshold_rule_is_theorem_1(q_lo, q_hi):
    n_thr = fs.population_thresholds([q_lo, q_hi])
    for x in range(12):
        for y in range(3):
            assert int(fs.slow_jobs(x, y, n_thr)) == theorem_1(x, y, q_lo, q_hi), (x, y)
            assert int(fs.slow_jobs(jnp.int32(x), jnp.int32(y), jnp.asarray(n_thr))) == theorem_1(x, y, q_lo, q_hi)


def test_threshold_table_identical_and_heterogeneous():
    n_thr = [2, 5]
    table = fs.threshold_policy(identical(2), 10, n_thr)
    for x in range(11):
        for y in range(3):
            assert table[x, y] == fs.slow_jobs(x, y, np.array(n_thr))
    # heterogeneous servers: the fastest idle server is filled first, each under its own threshold
    lay = heterogeneous([0.2, 0.6])  # server 1 is the faster (rank 0)
    table = fs.threshold_policy(lay, 10, n_thr)
    assert table[2, 0] == 0b10  # x + 0 >= n_1 = 2: the faster server (bit 1) takes a job
    assert table[6, 0] == 0b11  # x >= n_2 = 5 too: both
