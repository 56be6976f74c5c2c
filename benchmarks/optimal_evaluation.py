"""One policy evaluation of the optimum's solver at large n: SuperLU against BiCGSTAB on the same matrix.

The n-th ``pss_P`` (exponential primitives), its never-served truncation at the given caps (``Q1,Q2``), the
policy that is greedy on :func:`jaxq.mdp.pss2x2.work_conserving_start` (where policy iteration starts); for its
matrix the script prints the states, the factorisation time, fill (nonzeros of L + U) and solve time of scipy's
``splu`` (SuperLU, COLAMD, diagonal pivots, as the bench's baseline), the peak memory after it, and
:func:`jaxq.mdp.pss2x2.solve` (Jacobi-preconditioned BiCGSTAB)
from zero to the same error bound: its products and time. Policy iteration warm-starts BiCGSTAB from the last
values, so its evaluations take fewer products than this cold one (docs/performance.md gives the measured
averages); the factorisation costs the same at every improvement.

    python benchmarks/optimal_evaluation.py --n 1000 --caps 256,64 512,64
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import scipy.sparse.linalg as spla

from jaxq.examples import path
from jaxq.mdp import pss2x2 as dp
from jaxq.model import load


def measure(n: float, cap: tuple[int, int]) -> dict:
    """The row of one pair of caps (see the module docstring)."""
    ch = dp.chain(load(path("pss_P")), n, cap, None, "never_served")
    acts = dp.actions(ch.lay)
    a = dp.policy_matrix(ch, acts, dp.transitions(ch), dp.greedy(ch, acts, dp.work_conserving_start(ch)))
    b = ch.cost()
    t = time.perf_counter()
    lu = spla.splu(a.tocsc(), permc_spec="COLAMD", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    factor = time.perf_counter() - t
    t = time.perf_counter()
    v_lu, products_lu = dp.solve(a, b, np.zeros_like(b), ch.gamma, dp.SOLVE_RTOL, preconditioner=lu.solve)
    solve_lu = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GiB (ru_maxrss is in KiB on Linux)
    t = time.perf_counter()
    v_it, products = dp.solve(a, b, np.zeros_like(b), ch.gamma, dp.SOLVE_RTOL)
    bicgstab = time.perf_counter() - t
    return {"n": n, "cap": list(cap), "states": a.shape[0], "nnz": a.nnz, "splu_factor_s": factor,
            "splu_fill": int(lu.L.nnz + lu.U.nnz), "splu_solve_s": solve_lu, "splu_products": products_lu,
            "peak_GiB": peak, "bicgstab_products": products, "bicgstab_s": bicgstab,
            "max_rel_diff": float(np.abs(v_lu - v_it).max() / np.abs(v_it).max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=float, default=1000.0)
    ap.add_argument("--caps", nargs="+", default=["256,64", "512,64"], help="caps Q1,Q2 of each chain")
    args = ap.parse_args()
    for cap in args.caps:
        q1, q2 = (int(q) for q in cap.split(","))
        print(json.dumps(measure(args.n, (q1, q2))), flush=True)


if __name__ == "__main__":
    main()
