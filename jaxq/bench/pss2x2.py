"""Events per second of the 2x2 system in jaxq (both engines) beside a sequential numba event loop.

Three implementations of the same model, measured in the same run:
  * :func:`jaxq.sim.pss2x2.simulate` with ``engine="event"``: the event driver (general renewal
    primitives), the cost truncated at a horizon;
  * the same with ``engine="uniformized"``: the uniformised driver (exponential primitives only; all
    cores), truncated after a number of steps;
  * the baseline ``benchmarks/baselines/pss2x2.py`` (numba): one replication at a time, a plain event loop
    over the four clocks, ``prange`` over replications on all cores, the P rule of the active mode, the
    same renewal primitives.
All integrate the same discounted cost, so their estimates must agree (``J_hat`` beside
``baseline_J_hat``, with standard errors). Rates are medians of 3 repeats; compile time is separate.
``bench(quick)`` yields rows with keys engine, n, reps, dist, horizon or steps, events_per_s, compile_s,
J_hat, baseline_events_per_s, baseline_J_hat, ratio (jaxq / numba); without the baseline its columns
are None and ``note`` says why. Run ``python -m jaxq.bench.pss2x2 [--quick]``.
"""

from __future__ import annotations

import math
import sys
from typing import Iterator

import jaxq.bench
from jaxq.bench.sizes import grid
from jaxq.bench.timing import measure, ratio
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2
from jaxq.sim.models.pss2x2 import MARKOV

SYSTEMS = {"exponential": "pss_P", "general": "pss_spec"}  # pss_spec: Erlang and hyperexponential services
ENGINES = {"event": "jaxq.sim.pss2x2[event]", "uniformized": "jaxq.sim.pss2x2[uniformized]"}
EVENTS_PER_STEP = 0.74  # real events per uniformised step of pss_P (the rest are self-loops)


def jaxq_row(system, n: float, reps: int, engine: str, chunk: int, **run) -> dict:
    """One engine of :func:`jaxq.sim.pss2x2.simulate` (policy P): median events/s after a compiling run.

    ``run``: ``horizon=T`` (event engine) or ``steps=K`` (uniformised engine).
    """

    def once(seed):
        r = pss2x2.simulate(system, n, reps, policy="P", engine=engine, chunk=min(reps, chunk), seed=seed, **run)
        est = {"J_hat": r.value, "J_hat_stderr": r.stderr}
        if engine == "uniformized":
            est["truncation_bound"] = r["truncation_bound"]
        return r.events, r.wall_s - r.compile_s, est

    rate, compile_s, est = measure(once)
    return {"events_per_s": rate, "compile_s": compile_s, **est}


def baseline_columns(system, n: float, reps: int, horizon: float) -> dict:
    """The numba baseline over the same horizon: median events/s and its estimate (None without it)."""
    base = jaxq.bench.baseline("pss2x2")
    if base is None:
        return {"baseline_events_per_s": None, "baseline_J_hat": None, "note": jaxq.bench.baseline_note("pss2x2")}

    def once(seed):
        r = base.run(system, n, reps, horizon, seed=seed)
        return r["events"], r["wall_s"], {"baseline_J_hat": r["J_hat"], "baseline_J_hat_stderr": r["J_hat_stderr"]}

    rate, _, est = measure(once, warm=lambda: base.run(system, n, 2, 1e-3))  # compiles once per process
    return {"baseline_events_per_s": rate, **est}


def bench(quick: bool = False) -> Iterator[dict]:
    """jaxq (both engines) and numba events/s for n in {1e2, 1e4} and a growing number of replications.

    A generator: each row is yielded as soon as it is measured (``jaxq bench --out`` saves it at once).

    Each configuration runs about ``target`` events (the horizon, or the uniformised engine's number of
    steps, is shortened to fit); the uniformised engine, which needs exponential primitives, is
    measured on the exponential system with more replications where the backend is an accelerator.
    """
    g = grid(quick)
    cap = g["rep_events"] or math.inf
    for dist, name in SYSTEMS.items():
        system = load(path(name))
        for n in (100, 10_000):
            lam_n, _ = system.rates(n)
            rate = 2.0 * float(lam_n.sum())  # events per unit time, about
            for reps in g["pss2x2_event_reps"]:
                horizon = min(25.0, g["target_events"] / (reps * rate), cap / rate)
                row = {"engine": ENGINES["event"], "n": n, "reps": reps, "dist": dist, "horizon": horizon}
                row.update(jaxq_row(system, n, reps, "event", g["event_chunk"], horizon=horizon))
                if reps in g["pss2x2_numba_reps"]:
                    row.update(baseline_columns(system, n, reps, horizon))
                    row["ratio"] = ratio(row["events_per_s"], row["baseline_events_per_s"])
                yield row
            if dist != "exponential":
                continue
            big = MARKOV.bound(pss2x2.setup(system, n, policy="P").params)
            for reps in g["pss2x2_ctmc_reps"]:  # the numba rows beside it run the same mean time span
                reps = max(reps, 2)  # a standard error needs two replications
                steps = min(max(g["lockstep_target_events"] / (reps * EVENTS_PER_STEP), 64), 25.0 * big)
                steps = int(min(steps, cap / EVENTS_PER_STEP))
                row = {"engine": ENGINES["uniformized"], "n": n, "reps": reps, "dist": dist, "steps": steps}
                row.update(jaxq_row(system, n, reps, "uniformized", g["lockstep_chunk"], steps=steps))
                if reps in g["pss2x2_numba_reps"]:
                    row.update(baseline_columns(system, n, reps, steps / big))  # the mean time span of the steps
                    row["ratio"] = ratio(row["events_per_s"], row["baseline_events_per_s"])
                yield row


def main(argv=None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    print(f"{'engine':30s} {'dist':12s} {'n':>6s} {'reps':>7s} {'jaxq ev/s':>11s} {'numba ev/s':>11s} {'ratio':>6s} "
          f"{'compile':>8s}")
    for r in bench(quick):
        b, q = r.get("baseline_events_per_s"), r.get("ratio")
        print(
            f"{r['engine']:30s} {r['dist']:12s} {r['n']:6d} {r['reps']:7d} {r['events_per_s']:11.3g} "
            f"{'-' if b is None else format(b, '.3g'):>11} {'-' if q is None else format(q, '.2f'):>6} "
            f"{r['compile_s']:8.2f}"
        )


if __name__ == "__main__":
    main()
