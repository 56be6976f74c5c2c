"""The optimum J*_n of the n-th 2x2 system by policy iteration, each policy evaluated by a sparse direct solve.

What a performance engineer would write with a compiled solver at hand: Howard's policy iteration in which every
policy evaluation is scipy's sparse LU (``scipy.sparse.linalg.splu``: SuperLU, compiled C, COLAMD column
ordering), a factorisation and two triangular solves, exact to rounding, instead of jaxq's iterative
Jacobi-preconditioned BiCGSTAB in numpy (:func:`jaxq.mdp.pss2x2.solve`).

Everything but the evaluation is **reused from jaxq on purpose**, so that the ratio of the two runs compares the
two ways of evaluating a policy and nothing else: the truncated chain (:func:`jaxq.mdp.pss2x2.chain`,
:func:`~jaxq.mdp.pss2x2.transitions`, :func:`~jaxq.mdp.pss2x2.actions`), the matrix of a policy
(:func:`~jaxq.mdp.pss2x2.policy_matrix`), the improvement step (:func:`~jaxq.mdp.pss2x2.greedy`, ties keep the
current action), the start value (:func:`~jaxq.mdp.pss2x2.start_value`), and the queue caps doubled from
``max(6, 4 sqrt(n))`` until J* changes by at most ``rtol`` relative, each cap started from the last one's values
and decisions (:func:`~jaxq.mdp.pss2x2.extend`, the private ``_feasible``), as
:func:`jaxq.mdp.pss2x2.optimal_cost` does. The loop itself is written again here: with exact evaluations it
stops at the first policy that greedy leaves unchanged (jaxq's evaluates loosely while the policy changes and
confirms the final policy on tight values, so the two may count one improvement apart).

The LU factors fill in (a 2-D grid of queue lengths under nested orderings): memory grows faster than the
states, which is why the bench runs this baseline only up to :data:`MAX_STATES` states.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse.linalg as spla

from jaxq.mdp import pss2x2 as dp
from jaxq.sim.exact_ctmc import system_phase_types

MAX_STATES = 300_000  # the bench skips the baseline above this (LU fill: memory and time)


def evaluate(a, b: np.ndarray) -> tuple[np.ndarray, int]:
    """``a v = b`` by SuperLU: ``(v, nnz(L) + nnz(U))``."""
    lu = spla.splu(a.tocsc(), permc_spec="COLAMD")
    return lu.solve(b), int(lu.L.nnz + lu.U.nnz)


def policy_iteration(ch, v0=None, policy0=None, max_iterations: int = 200) -> dict:
    """Howard's policy iteration on one truncation (as :func:`jaxq.mdp.pss2x2.policy_iteration`, exact evaluations).

    Returns ``value``, ``policy``, ``start`` (J* from empty), ``iterations`` (evaluations = factorisations) and
    ``lu_nnz`` (the largest fill of the factors).
    """
    acts = dp.actions(ch.lay)
    trans = dp.transitions(ch)
    cost = ch.cost()
    if v0 is None:  # work-conserving start, as jaxq's
        v0 = cost / ch.gamma - sum(ch.in_service(i) for i in (0, 1)) * float(ch.h_hat.min()) / ch.gamma
    policy = dp.greedy(ch, acts, v0)[0] if policy0 is None else policy0
    fill = 0
    for it in range(1, max_iterations + 1):
        v, nnz = evaluate(dp.policy_matrix(ch, acts, trans, policy), cost)
        fill = max(fill, nnz)
        new, _ = dp.greedy(ch, acts, v, policy)
        if np.array_equal(new, policy):
            return {"chain": ch, "value": v, "policy": policy, "start": dp.start_value(ch, v), "iterations": it,
                    "lu_nnz": fill}
        policy = new
    raise RuntimeError(f"policy iteration did not settle in {max_iterations} improvements")


def optimal_cost(system, n: float, queue_cap: int | None = None, rtol: float = dp.TRUNCATION_RTOL) -> dict:
    """J*_n from empty with the truncation checked by doubling (the caps of :func:`jaxq.mdp.pss2x2.optimal_cost`).

    Returns ``J_star``, ``truncation_change``, ``cap``, ``states`` (of the last chain), ``iterations`` (all caps),
    ``factorizations`` (= iterations), ``lu_nnz`` (largest fill of L + U), ``wall_s``.
    """
    t0 = time.perf_counter()
    phase_types = system_phase_types(system)
    c = (max(dp.MIN_CAP, math.ceil(dp.FIRST_CAP_PER_ROOT_N * math.sqrt(n))) if queue_cap is None
         else int(queue_cap))
    totals = {"iterations": 0, "lu_nnz": 0}

    def run(cap, last):
        ch = dp.chain(system, n, (cap, cap), phase_types)
        if last is None:
            out = policy_iteration(ch)
        else:
            v0, p0 = dp.extend(last["chain"], ch, last["value"], last["policy"])
            acts = dp.actions(ch.lay)
            p0, _ = dp.greedy(ch, acts, v0, np.where(dp._feasible(ch, acts, p0), p0, -1))
            out = policy_iteration(ch, v0, p0)
        totals["iterations"] += out["iterations"]
        totals["lu_nnz"] = max(totals["lu_nnz"], out["lu_nnz"])
        return out

    sol = run(c, None)
    while True:
        big = run(2 * c, sol)
        change = abs(big["start"] - sol["start"])
        c, sol = 2 * c, big
        if queue_cap is not None or change <= rtol * abs(big["start"]):
            break
    return {"J_star": sol["start"], "truncation_change": change / abs(sol["start"]), "cap": c,
            "states": sol["chain"].lay.size, "iterations": totals["iterations"],
            "factorizations": totals["iterations"], "lu_nnz": totals["lu_nnz"], "wall_s": time.perf_counter() - t0}
