"""The optimum J*_n of the n-th 2x2 system by policy iteration, each policy evaluated by a sparse direct solve.

What a performance engineer would write with a compiled solver at hand: Howard's policy iteration in which every
policy evaluation is scipy's sparse LU (``scipy.sparse.linalg.splu``: SuperLU, compiled C, COLAMD column
ordering, diagonal pivots: the matrix is a strictly diagonally dominant M-matrix, so LU without row exchanges is
stable, and keeping the diagonal saves a third of the factorisation at 150,000 states), a factorisation and two
triangular solves, exact to rounding, instead of jaxq's iterative Jacobi-preconditioned BiCGSTAB in numpy
(:func:`jaxq.mdp.pss2x2.solve`).

Everything but the evaluation is **jaxq's own on purpose**, so that the ratio of the two runs compares the two ways
of evaluating a policy and nothing else: :func:`jaxq.mdp.pss2x2.optimal_cost` runs with its ``evaluate`` set to
:func:`evaluate` (the same chain, policy matrices, improvement step, queue caps and warm starts; the tolerance a
step asks for is met to rounding, so the loose and the tight evaluations of jaxq's scheme are both exact here).

The LU factors fill in (a 2-D grid of queue lengths under nested orderings): memory grows faster than the
states (about 7e6 nonzeros of L + U at 150,000 states), which is why the bench runs this baseline only up to
:data:`MAX_STATES` states.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import scipy.sparse.linalg as spla

from jaxq.mdp import pss2x2 as dp

MAX_STATES = 400_000  # the bench skips the baseline above this (LU fill: memory and time)


def evaluate(a, b: np.ndarray) -> tuple[np.ndarray, int]:
    """``a v = b`` by SuperLU: ``(v, nnz(L) + nnz(U))``."""
    lu = spla.splu(a.tocsc(), permc_spec="COLAMD", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    return lu.solve(b), int(lu.L.nnz + lu.U.nnz)


def optimal_cost(system, n: float, queue_cap: int | None = None, rtol: float = dp.TRUNCATION_RTOL) -> dict:
    """J*_n from empty by :func:`jaxq.mdp.pss2x2.optimal_cost` (same caps, same policy iteration) with every policy
    evaluation by :func:`evaluate`.

    Returns ``J_star``, ``truncation_change``, ``cap``, ``states`` (of the last chain), ``iterations`` (all caps),
    ``factorizations``, ``lu_nnz`` (largest fill of L + U), ``wall_s``.
    """
    t0 = time.perf_counter()
    seen = {"factorizations": 0, "lu_nnz": 0}
    lock = threading.Lock()  # jaxq runs the two doubling tests of a round on two threads

    def by_lu(a, b, v0, gamma, rtol):  # exact to rounding whatever the tolerance asked
        v, nnz = evaluate(a, b)
        with lock:
            seen["factorizations"] += 1
            seen["lu_nnz"] = max(seen["lu_nnz"], nnz)
        return v, 0

    opt = dp.optimal_cost(system, n, queue_cap, rtol=rtol, max_states=2**62, max_bytes=math.inf, evaluate=by_lu)
    return {"J_star": opt.J_star, "truncation_change": opt.truncation_change, "cap": opt.cap, "states": opt.states,
            "iterations": opt.iterations, **seen, "wall_s": time.perf_counter() - t0}
