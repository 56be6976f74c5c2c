"""The optimum J*_n of the n-th 2x2 system by policy iteration, beside the same iteration with a direct sparse solver.

The bundled example ``pss_P`` (exponential primitives) at n = 16 (``--quick``, ``JAXQ_BENCH_TINY=1``) and also
n = 100 and 1000 (a full CPU run; :func:`jaxq.bench.sizes.grid`, key ``optimal_n``).
Two implementations of the same solve, measured in the same run:
  * jaxq: :func:`jaxq.mdp.pss2x2.optimal_cost` (what :func:`jaxq.optimal` runs with ``exact_policy=False``):
    Howard's policy iteration with each policy evaluated by a Jacobi-preconditioned BiCGSTAB written in numpy,
    each class's queue cap doubled from ``max(6, 2 sqrt(n))`` until doubling it moves J*_n by at most 5e-7.
  * the baseline ``benchmarks/baselines/optimal.py``: the same chains, improvement step and caps (reused from
    :mod:`jaxq.mdp.pss2x2`), each evaluation by scipy's sparse LU (``splu``, SuperLU, compiled C). It runs only
    where the largest chain solved (a doubling test: at most twice the chain kept) has at most ``MAX_STATES``
    (400,000) states: the LU factors fill in; above that its row carries a note instead of figures.

``bench(quick)`` yields, per n, a jaxq row and a baseline row with keys engine, impl, system, n, cap, states (of
the final chain), iterations (policy improvements over all caps), wall_s (the whole solve, all caps), J_star,
truncation_change, updates_per_s and note. The rate ``updates_per_s`` is ``updates / wall_s`` of the jaxq row:
``updates`` is each solve's sparse matrix-vector products (two per BiCGSTAB step) times its chain's states, summed
over every solve (:attr:`jaxq.mdp.pss2x2.Optimum.updates`). A direct solver does no such products: the
baseline's ``updates_per_s`` is the jaxq row's work over the baseline's wall time, so that ``jaxq_ratio`` =
baseline wall / jaxq wall,
the speed-up on the same problem. The baseline row adds ``factorizations``, ``lu_nnz`` (the largest fill of
L + U), ``J_star_rel_diff`` (``|J*_baseline - J*_jaxq| / J*_jaxq``) and ``J_star_agrees`` (at most
:data:`AGREE_RTOL`). At n = 16 the figures are medians of 3 interleaved rounds after a first call; from n = 100 on,
one run of each (they take seconds to minutes).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import jaxq.bench
from jaxq.bench import timing
from jaxq.bench.sizes import grid
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.mdp import pss2x2 as dp
from jaxq.model import load

SYSTEM = "pss_P"
AGREE_RTOL = 1e-7  # J_star of jaxq and of the baseline, relative
ONE_ROUND_FROM = 100  # n from which each implementation runs once (no first call, no repeats)
ENGINE = "optimal_pi"
JAXQ_IMPL = "jaxq (BiCGSTAB, numpy)"
BASE_IMPL = "scipy splu (SuperLU, C)"
JAXQ_NOTE = "updates: sparse products x states"  # the module docstring says it in full
BASE_NOTE = "rate: jaxq's updates / own wall"


def _jaxq_once(system, n: float) -> dict:
    t = time.perf_counter()
    o = dp.optimal_cost(system, n)
    wall = time.perf_counter() - t
    return {"cap": list(o.cap), "states": o.states, "iterations": o.iterations, "matvecs": o.matvecs,
            "updates": o.updates, "wall_s": wall, "J_star": o.J_star, "truncation_change": o.truncation_change}


def _base_once(base, system, n: float) -> dict:
    t = time.perf_counter()
    r = base.optimal_cost(system, n)
    wall = time.perf_counter() - t
    return {"cap": list(r["cap"]), "states": r["states"], "iterations": r["iterations"],
            "factorizations": r["factorizations"], "lu_nnz": r["lu_nnz"], "wall_s": wall, "J_star": r["J_star"],
            "truncation_change": r["truncation_change"]}


def _measure(system, n: float, base) -> tuple[dict, dict | None, str | None]:
    """``(jaxq figures, baseline figures or None, why no baseline)``; each with ``wall_s`` its median wall time."""
    first = _jaxq_once(system, n)  # a first call (from ONE_ROUND_FROM on, the measurement): its size decides
    if base is None:
        skip = jaxq.bench.baseline_note("optimal")
    elif 2 * first["states"] > base.MAX_STATES:  # the doubling tests solve chains up to twice the one kept
        skip = (f"skipped: doubling tests of up to {2 * first['states']:,} states > {base.MAX_STATES:,} (the LU "
                f"factors' fill: memory and time)")
    else:
        skip = None
    if n >= ONE_ROUND_FROM:
        return first, (None if skip else _base_once(base, system, n)), skip
    work = first["updates"]

    def job(once):
        def run(seed):
            r = once()
            return work, r["wall_s"], r

        return run

    jobs = [(job(lambda: _jaxq_once(system, n)), lambda: None)]  # already warm: the first call above
    if not skip:
        jobs.append((job(lambda: _base_once(base, system, n)), None))
    out = []
    for rate, _, est in timing.measure_interleaved(jobs):  # rate: the median of work / wall over the rounds
        out.append({**est, "wall_s": work / rate})
    return out[0], (out[1] if not skip else None), skip


def rows(system, n: int) -> list[dict]:
    """The jaxq row and the baseline row at index ``n``.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The index n.

    Returns:
        The two rows (each with a note instead of figures where the solve is beyond jaxq's limits).
    """
    base = jaxq.bench.baseline("optimal")
    head = {"engine": ENGINE, "system": SYSTEM, "n": n}
    try:
        j, b, skip = _measure(system, float(n), base)
    except InputError as e:  # a truncation beyond jaxq's limits (max_states): the rows say so, the run goes on
        return [{**head, "impl": impl, "updates_per_s": None, "note": str(e)} for impl in (JAXQ_IMPL, BASE_IMPL)]
    work = j["updates"]
    jrow = {**head, "impl": JAXQ_IMPL, **j, "updates_per_s": work / j["wall_s"], "note": JAXQ_NOTE}
    brow = {**head, "impl": BASE_IMPL}
    if b is None:
        return [jrow, {**brow, "states": j["states"], "updates_per_s": None, "jaxq_ratio": None, "note": skip}]
    diff = abs(b["J_star"] - j["J_star"]) / abs(j["J_star"])
    rate = work / b["wall_s"]
    brow.update(b, updates_per_s=rate, jaxq_ratio=timing.ratio(jrow["updates_per_s"], rate), J_star_rel_diff=diff,
                J_star_agrees=bool(diff <= AGREE_RTOL), note=BASE_NOTE)
    return [jrow, brow]


def bench(quick: bool) -> Iterator[dict]:
    """J*_n by policy iteration, jaxq (iterative evaluation in numpy) and scipy's SuperLU (direct), side by side.

    A generator: each n's pair of rows is yielded as soon as both are measured (``jaxq bench --out`` saves them
    at once).

    Args:
        quick: n = 16 only (``JAXQ_BENCH_TINY=1`` and an accelerator run too: both solvers run on the host CPU);
            full: n = 16, 100 and 1000 (about 2 minutes on a 2-core CPU, most of it the two solves at n = 1000).

    Yields:
        rows (see the module docstring).
    """
    system = load(path(SYSTEM))
    for n in grid(quick)["optimal_n"]:
        j, b = rows(system, n)
        yield j
        yield b


if __name__ == "__main__":
    for row in bench(quick=True):
        print(row)
