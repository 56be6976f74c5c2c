"""The optimum J*_n of the n-th 2x2 system by policy iteration, beside the same iteration with a direct sparse solver.

The bundled example ``pss_P`` (exponential primitives) at n = 16 (``--quick``, ``JAXQ_BENCH_TINY=1``) and also
n = 100 (a full CPU run; :func:`jaxq.bench.sizes.grid`, key ``optimal_n``, which says why n = 1000 is not run).
Two implementations of the same solve, measured in the same run:
  * jaxq: :func:`jaxq.mdp.pss2x2.optimal_cost` (what :func:`jaxq.optimal` runs with ``exact_policy=False``):
    Howard's policy iteration with each policy evaluated by a Jacobi-preconditioned BiCGSTAB written in numpy,
    the queue cap doubled from ``max(6, 4 sqrt(n))`` until the lower and upper truncations agree to 1e-6 relative.
  * the baseline ``benchmarks/baselines/optimal.py``: the same chain, improvement step and caps (reused from
    :mod:`jaxq.mdp.pss2x2`), each evaluation by scipy's sparse LU (``splu``, SuperLU, compiled C). It runs only
    where the final chain has at most ``MAX_STATES`` (300,000) states: the LU factors fill in (at n = 100,
    233,289 states, about 1.6e7 nonzeros and 0.8 GB); above that its row carries a note instead of figures.

``bench(quick)`` yields, per n, a jaxq row and a baseline row with keys engine, impl, system, n, cap, states (of
the final chain), iterations (policy improvements over all caps), wall_s (the whole solve, all caps), J_star,
truncation_change, updates_per_s and note. The rate ``updates_per_s`` is ``matvecs x states / wall_s`` of the
jaxq row: matvecs are the sparse matrix-vector products of its policy evaluations (two per BiCGSTAB step, summed
over every cap of the doubling) and states those of the final, largest chain, so it overstates the state updates
done at the smaller caps. A direct solver does no such products: the baseline's ``updates_per_s`` is the jaxq
row's work (matvecs x states) over the baseline's wall time, so that ``jaxq_ratio`` = baseline wall / jaxq wall,
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
    return {"cap": o.cap, "states": o.states, "iterations": o.iterations, "matvecs": o.matvecs, "wall_s": wall,
            "J_star": o.J_star, "truncation_change": o.truncation_change}


def _base_once(base, system, n: float) -> dict:
    t = time.perf_counter()
    r = base.optimal_cost(system, n)
    wall = time.perf_counter() - t
    return {"cap": r["cap"], "states": r["states"], "iterations": r["iterations"],
            "factorizations": r["factorizations"], "lu_nnz": r["lu_nnz"], "wall_s": wall, "J_star": r["J_star"],
            "truncation_change": r["truncation_change"]}


def _measure(system, n: float, base) -> tuple[dict, dict | None, str | None]:
    """``(jaxq figures, baseline figures or None, why no baseline)``; each with ``wall_s`` its median wall time."""
    first = _jaxq_once(system, n)  # a first call (from ONE_ROUND_FROM on, the measurement): its size decides
    if base is None:
        skip = jaxq.bench.baseline_note("optimal")
    elif first["states"] > base.MAX_STATES:
        skip = (f"skipped: {first['states']:,} states > {base.MAX_STATES:,} (the LU factors' fill: memory and "
                f"time)")
    else:
        skip = None
    if n >= ONE_ROUND_FROM:
        return first, (None if skip else _base_once(base, system, n)), skip
    work = first["matvecs"] * first["states"]

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
    work = j["matvecs"] * j["states"]
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
            full: n = 16 and 100 (about 2 minutes on a 2-core CPU, most of it the baseline at n = 100).

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
