"""Events per second of the 2x2 system in jaxq (both engines) beside a sequential numba event loop.

Three implementations of the same model, measured in the same run:
  * :func:`jaxq.sim.pss2x2.simulate` with ``engine="event"``: the event driver (general renewal
    primitives), the cost truncated at a horizon;
  * the same with ``engine="uniformized"``: the uniformised driver (exponential primitives only; all
    cores), truncated after a number of steps;
  * the baseline ``benchmarks/baselines/pss2x2.py`` (numba): one replication at a time, a plain event loop
    over the four clocks, ``prange`` over replications on all cores, the P rule of the active mode, the
    same renewal primitives (numpy's samplers).
All integrate the same discounted cost, so their estimates must agree (``J_hat`` beside
``baseline_J_hat``, with standard errors). Rates are medians of 3 repeats; compile time is separate. The
``families`` and ``mixed`` parts run ``COST_ROUNDS`` interleaved rounds (every system's jaxq and numba runs once a
round: :func:`jaxq.bench.timing.measure_interleaved`) and take each row's fastest round (an intrinsic cost: other
load only slows a run), at ``jaxq simulate``'s default horizon where the size allows, so that their cost ratios
compare runs of the same spells of a
shared machine.

Four parts, in this order (``JAXQ_BENCH_PSS2X2_PARTS``, default all, selects some: ``benchmarks/run_gpu.sh``
runs them in separate processes):

* ``families``: the event engine on one single-mode system at n = 100 (``pss_P`` with the same family in
  all six streams: :data:`FAMILIES`, then the general gamma shapes (the step envelope, with rejection),
  :data:`GENERAL_GAMMA`), plain estimates (``cv=False``, as numba), each beside numba; ``ns_per_event``
  and ``vs_exponential`` (this row's cost per event over the exponential row's, same rounds), and
  ``baseline_vs_exponential``, the same ratio for the numba loop (numpy's samplers);
* ``mixed``: the dual-mode example systems with their own mixed primitives (:data:`MIXED`), each beside numba
  and beside the same system with exponential primitives in all streams (``vs_exponential`` and
  ``baseline_vs_exponential``: the cost per event of the primitives, for jaxq and for numba), policy P;
* ``effective``: the exponential system with the control variates on (``cv=True``): its events/s, the
  ``variance_reduction`` and ``effective_events_per_s`` = events/s x variance reduction (the events/s a
  plain run would need for the same standard error), beside the plain numba rate;
* ``engines``: both engines on ``pss_P`` (exponential) and the event engine on ``pss_spec`` (Erlang and
  hyperexponential services) at n = 100 and 10^4 over a range of replications, plain.

``bench(quick)`` yields rows with keys part, engine, n, reps, dist, horizon or steps, cv, events_per_s,
compile_s, J_hat, J_hat_stderr, baseline_events_per_s, baseline_J_hat, baseline_J_hat_stderr, ratio (jaxq /
numba), and for the event engine's rows z (:func:`agreement`: the estimates' difference in combined standard
errors; ``jaxq bench`` prints a warning under the table when some |z| > 4); without the baseline its columns
are None and ``note`` says why. Run ``python -m jaxq.bench.pss2x2 [--quick]``.
"""

from __future__ import annotations

import math
import os
import sys
import tomllib
from pathlib import Path
from typing import Iterator

import jaxq.bench
from jaxq.bench.sizes import grid
from jaxq.bench.timing import measure, measure_interleaved, ratio
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.model.pss2x2 import from_dict
from jaxq.sim import pss2x2
from jaxq.sim.models.pss2x2 import MARKOV

SYSTEMS = {"exponential": "pss_P", "general": "pss_spec"}  # pss_spec: Erlang and hyperexponential services
ENGINE_LABELS = {"event": "jaxq.sim.pss2x2[event]", "uniformized": "jaxq.sim.pss2x2[uniformized]"}  # the table's engine column
EVENTS_PER_STEP = 0.74  # real events per uniformised step of pss_P (the rest are self-loops)
FAMILIES = ("exponential", "erlang:0.5", "hyperexponential:3", "lognormal:2", "gamma:2", "gamma:0.5")
# gamma:2 (shape 1/2) and gamma:0.5 (shape 2) take the exact shortcuts of jaxq.sim.sampling (Z^2/2, Erlang-2);
# these shapes take the step envelope (jaxq.sim.sampling.step_envelope) with the void protocol: 1.43 (y = X/a, log y
# in the test), 1/3 (y = X^(1/3), no log y) and 0.4 (y = X^(1/3), log y):
GENERAL_GAMMA = ("gamma:0.7", "gamma:3", "gamma:2.5")
PARTS = ("families", "mixed", "effective", "engines")
COST_ROUNDS = 5  # interleaved rounds of the families and mixed parts; each row's fastest round is its rate
# The dual-mode example systems with their own (mixed) primitives: the systems the event engine exists for.
MIXED = ("pss_T2T2", "pss_T2T1", "pss_PP_gamma", "pss_PP_lognormal")
FAMILY_N = 100


def family_system(family: str, name: str = "pss_P"):
    """The example system ``name`` (default ``pss_P``: single mode, P policy) with ``family`` in all six streams.

    Args:
        family: The distribution family of every interarrival and service time.
        name: The example system.

    Returns:
        (jaxq.model.pss2x2.PSS2x2): The system.
    """
    data = tomllib.loads(Path(path(name)).read_text())
    data["system"]["interarrival"] = [family] * 2
    data["system"]["service"] = [[family] * 2 for _ in range(2)]
    return from_dict(data)


def jaxq_job(system, n: float, reps: int, engine: str, chunk: int, cv: bool = False, **run):
    """The ``(run, warm)`` job of one engine of :func:`jaxq.sim.pss2x2.simulate` (policy P) for
    :func:`jaxq.bench.timing.measure_interleaved`; :func:`jaxq_columns` turns its measurement into columns.

    ``run``: ``horizon=T`` (event engine) or ``steps=K`` (uniformised engine). ``cv``: the control variates
    (plain by default, as the baseline); with them the row also has the plain estimate and the variance
    reduction.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The scale n.
        reps: The replications.
        engine: ``event`` or ``uniformized``.
        chunk: The most replications per compiled call.
        cv: The control variates.
        **run (float | int): ``horizon=T`` (event engine) or ``steps=K`` (uniformised engine).

    Returns:
        (tuple): ``(run, None)``.
    """
    nth = system.at(n)  # the n-th system, once for every timed run

    def once(seed):
        r = pss2x2.simulate(nth, n, reps, policy="P", seed=seed, truncation=pss2x2.Truncation(engine=engine, **run),
                            outputs=pss2x2.Outputs(cv=cv), batching=pss2x2.Batching(chunk=min(reps, chunk)))
        est = {"J_hat": r.value, "J_hat_stderr": r.stderr}
        if cv:
            est.update(J_plain=r.main.plain, J_plain_stderr=r.main.plain_stderr,
                       variance_reduction=r.main.variance_reduction)
        if engine == "uniformized":
            est["truncation_bound"] = r["truncation_bound"]
        return r.events, r.wall_s - r.compile_s, est

    return once, None


def jaxq_columns(measured, cv: bool = False) -> dict:
    """The columns of a measured :func:`jaxq_job`: median events/s, ns per event, compile time, estimates.

    Args:
        measured (tuple): ``(rate, compile_s, estimates)`` of :func:`jaxq.bench.timing.measure_interleaved`.
        cv: The job had the control variates.

    Returns:
        The columns.
    """
    rate, compile_s, est = measured
    return {"cv": cv, "events_per_s": rate, "ns_per_event": 1e9 / rate if rate else None, "compile_s": compile_s,
            **est}


def jaxq_row(system, n: float, reps: int, engine: str, chunk: int, cv: bool = False, **run) -> dict:
    """One engine of :func:`jaxq.sim.pss2x2.simulate` (policy P) measured alone: median events/s after a
    compiling run (:func:`jaxq_job`, :func:`jaxq_columns`).

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The scale n.
        reps: The replications.
        engine: ``event`` or ``uniformized``.
        chunk: The most replications per compiled call.
        cv: The control variates.
        **run (float | int): ``horizon=T`` (event engine) or ``steps=K`` (uniformised engine).

    Returns:
        The columns.
    """
    once, _ = jaxq_job(system, n, reps, engine, chunk, cv, **run)
    return jaxq_columns(measure(once), cv)


def baseline_job(system, n: float, reps: int, horizon: float):
    """The ``(run, warm)`` job of the numba baseline over the same horizon (None without numba).

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The scale n.
        reps: The replications.
        horizon: The horizon T.

    Returns:
        (tuple | None): The job, or None.
    """
    base = jaxq.bench.baseline("pss2x2")
    if base is None:
        return None

    def once(seed):
        r = base.run(system, n, reps, horizon, seed=seed)
        return r["events"], r["wall_s"], {"baseline_J_hat": r["J_hat"], "baseline_J_hat_stderr": r["J_hat_stderr"]}

    return once, (lambda: base.run(system, n, 2, 1e-3))  # compiles once per process


def baseline_from(measured) -> dict:
    """The columns of a measured :func:`baseline_job` (None: the baseline is missing, and ``note`` says why).

    Args:
        measured (tuple | None): ``(rate, compile_s, estimates)`` of the baseline's job, or None.

    Returns:
        The columns.
    """
    if measured is None:
        return {"baseline_events_per_s": None, "baseline_J_hat": None, "note": jaxq.bench.baseline_note("pss2x2")}
    rate, _, est = measured
    return {"baseline_events_per_s": rate, **est}


def agreement(row: dict) -> float | None:
    """``z = (J_hat - baseline_J_hat) / combined standard error`` of a row whose two runs estimate the same
    truncated cost (None without the baseline or a standard error); ``jaxq bench`` flags ``|z| > 4``.

    Args:
        row: The row.

    Returns:
        z, or None.
    """
    a, b = row.get("J_hat"), row.get("baseline_J_hat")
    sa, sb = row.get("J_hat_stderr"), row.get("baseline_J_hat_stderr")
    if a is None or b is None or sa is None or sb is None or not (sa > 0 or sb > 0):
        return None
    return float((a - b) / math.hypot(sa, sb))


def baseline_columns(system, n: float, reps: int, horizon: float) -> dict:
    """The numba baseline over the same horizon, measured alone: median events/s and its estimate.

    Args:
        system (jaxq.model.pss2x2.PSS2x2): The system.
        n: The scale n.
        reps: The replications.
        horizon: The horizon T.

    Returns:
        The columns (:func:`baseline_from`).
    """
    job = baseline_job(system, n, reps, horizon)
    return baseline_from(None if job is None else measure(job[0], warm=job[1]))


def _horizon(g: dict, system, n: float, reps: int, target: str = "target_events") -> float:
    """About ``g[target]`` events in all (at most 25 time units, and the per-replication cap)."""
    rate = 2.0 * float(system.at(n).lam_n.sum())  # events per unit time, about
    return min(25.0, g[target] / (reps * rate), (g["rep_events"] or math.inf) / rate)


def _user_horizon(g: dict, st, system, reps: int) -> float:
    """The horizon ``jaxq simulate`` takes by default at n = FAMILY_N (``st``: the system's setup there; sized by its
    V0: 24.5-27 for the families), shortened only where the events target of the size would be exceeded
    (accelerator sizes, ``--quick``): a batch runs until its slowest replication is done, and that lockstep tail is
    relatively larger for short replications, so the per-family rows are measured at the length a user's run has."""
    return min(st.horizon, _horizon(g, system, FAMILY_N, reps, "family_target_events"))


def parts() -> tuple[str, ...]:
    """The parts this run measures (``JAXQ_BENCH_PSS2X2_PARTS``: comma-separated, default all)."""
    env = os.environ.get("JAXQ_BENCH_PSS2X2_PARTS", "")
    chosen = tuple(p.strip() for p in env.split(",") if p.strip()) or PARTS
    unknown = [p for p in chosen if p not in PARTS]
    if unknown:
        raise InputError("JAXQ_BENCH_PSS2X2_PARTS", f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    return chosen


def _measure_rows(g: dict, cases: list) -> list[list[tuple]]:
    """jaxq's event engine and numba on every system of every case, all in the same interleaved rounds
    (:func:`measure_interleaved`): the cost ratios of a part are then not those of two spells of a shared machine.

    ``cases``: ``(row, systems)`` with the row's ``reps`` and ``horizon``. Returns per case, per system, the
    pair ``(jaxq measurement, numba measurement or None)``; the case's row gets the first system's columns
    (:func:`jaxq_columns`, and the baseline's where ``reps`` is a numba size), ``ratio`` and ``z``.
    """
    jobs, index = [], []
    for row, systems in cases:
        wants = row["reps"] in g["pss2x2_numba_reps"]
        pairs = []
        for system in systems:
            run = jaxq_job(system, FAMILY_N, row["reps"], "event", g["event_chunk"], horizon=row["horizon"])
            base = baseline_job(system, FAMILY_N, row["reps"], row["horizon"]) if wants else None
            pairs.append((len(jobs), None if base is None else len(jobs) + 1))
            jobs += [run] + ([base] if base else [])
        index.append(pairs)
    measured = measure_interleaved(jobs, COST_ROUNDS, best=True)
    out = []
    for (row, _), pairs in zip(cases, index):
        got = [(measured[j], None if b is None else measured[b]) for j, b in pairs]
        row.update(jaxq_columns(got[0][0]))
        if row["reps"] in g["pss2x2_numba_reps"]:
            row.update(baseline_from(got[0][1]))
        row["ratio"] = ratio(row["events_per_s"], row.get("baseline_events_per_s"))
        row["z"] = agreement(row)
        out.append(got)
    return out


def _families(g: dict) -> Iterator[dict]:
    """One row per family, all measured in the same rounds; ``vs_exponential`` against the exponential row."""
    cases = []
    for family in FAMILIES + GENERAL_GAMMA:
        system = family_system(family)
        st = pss2x2.setup(system, FAMILY_N, policy="P")
        for reps in g["pss2x2_family_reps"]:
            cases.append(({"part": "families", "engine": ENGINE_LABELS["event"], "n": FAMILY_N, "reps": reps,
                           "dist": family, "method": st.spec.methods[0],
                           "horizon": _user_horizon(g, st, system, reps)}, (system,)))
    _measure_rows(g, cases)
    rows = [row for row, _ in cases]
    exp = {r["reps"]: r for r in rows if r["dist"] == "exponential"}
    for row in rows:
        e = exp.get(row["reps"], {})
        row["vs_exponential"] = row["ns_per_event"] / e["ns_per_event"] if e.get("ns_per_event") else None
        b, eb = row.get("baseline_events_per_s"), e.get("baseline_events_per_s")
        row["baseline_vs_exponential"] = eb / b if b and eb else None  # the compiled loop's own cost ratio
        yield row


def _mixed(g: dict) -> Iterator[dict]:
    """The :data:`MIXED` systems beside numba, and beside the same systems with exponential primitives (jaxq and
    numba: ``vs_exponential``, ``baseline_vs_exponential``), all in the same interleaved rounds. Policy P (the
    P rule of the active mode, as the baseline implements it) at n = FAMILY_N."""
    cases = []
    for name in MIXED:
        system = load(path(name))
        st = pss2x2.setup(system, FAMILY_N, policy="P")
        for reps in g["pss2x2_mixed_reps"]:
            cases.append(({"part": "mixed", "engine": ENGINE_LABELS["event"], "n": FAMILY_N, "reps": reps, "dist": name,
                           "method": "+".join(st.spec.methods), "horizon": _user_horizon(g, st, system, reps)},
                          (system, family_system("exponential", name))))
    for (row, _), ((own, own_base), (plain, plain_base)) in zip(cases, _measure_rows(g, cases)):
        row["vs_exponential"] = plain[0] / own[0]  # ns per event over its exponential version's
        row["baseline_vs_exponential"] = plain_base[0] / own_base[0] if own_base and plain_base else None
        yield row


def _effective(g: dict) -> Iterator[dict]:
    system = family_system("exponential")
    reps = max(g["pss2x2_family_reps"])
    horizon = _horizon(g, system, FAMILY_N, reps, "family_target_events")
    row = {"part": "effective", "engine": ENGINE_LABELS["event"], "n": FAMILY_N, "reps": reps, "dist": "exponential",
           "horizon": horizon}
    row.update(jaxq_row(system, FAMILY_N, reps, "event", g["event_chunk"], cv=True, horizon=horizon))
    vr = row.get("variance_reduction")
    row["effective_events_per_s"] = row["events_per_s"] * vr if vr else None
    if reps in g["pss2x2_numba_reps"]:
        row.update(baseline_columns(system, FAMILY_N, reps, horizon))
        row["ratio"] = ratio(row["events_per_s"], row["baseline_events_per_s"])
        row["effective_ratio"] = ratio(row["effective_events_per_s"], row["baseline_events_per_s"])
        row["z"] = agreement(row)
    yield row


def _engines(g: dict) -> Iterator[dict]:
    cap = g["rep_events"] or math.inf
    for dist, name in SYSTEMS.items():
        system = load(path(name))
        for n in (100, 10_000):
            for reps in g["pss2x2_event_reps"]:
                horizon = _horizon(g, system, n, reps)
                row = {"part": "engines", "engine": ENGINE_LABELS["event"], "n": n, "reps": reps, "dist": dist,
                       "horizon": horizon}
                row.update(jaxq_row(system, n, reps, "event", g["event_chunk"], horizon=horizon))
                if reps in g["pss2x2_numba_reps"]:
                    row.update(baseline_columns(system, n, reps, horizon))
                    row["ratio"] = ratio(row["events_per_s"], row["baseline_events_per_s"])
                    row["z"] = agreement(row)  # the same horizon: the same estimand
                yield row
            if dist != "exponential":
                continue
            big = MARKOV.bound(pss2x2.setup(system, n, policy="P").params)
            for reps in g["pss2x2_ctmc_reps"]:  # the numba rows beside it run the same mean time span
                reps = max(reps, 2)  # a standard error needs two replications
                steps = min(max(g["lockstep_target_events"] / (reps * EVENTS_PER_STEP), 64), 25.0 * big)
                steps = int(min(steps, cap / EVENTS_PER_STEP))
                row = {"part": "engines", "engine": ENGINE_LABELS["uniformized"], "n": n, "reps": reps, "dist": dist,
                       "steps": steps}
                row.update(jaxq_row(system, n, reps, "uniformized", g["lockstep_chunk"], steps=steps))
                if reps in g["pss2x2_numba_reps"]:
                    row.update(baseline_columns(system, n, reps, steps / big))  # the mean time span of the steps
                    row["ratio"] = ratio(row["events_per_s"], row["baseline_events_per_s"])
                yield row


def bench(quick: bool = False) -> Iterator[dict]:
    """The parts of :func:`parts`, each row yielded as soon as it is measured (``jaxq bench --out`` saves it;
    the ``families`` rows come together, after their interleaved rounds).

    Each configuration runs about ``target`` events (the horizon, or the uniformised engine's number of
    steps, is shortened to fit); the uniformised engine, which needs exponential primitives, is measured
    on the exponential system with more replications where the backend is an accelerator.

    Args:
        quick: The quick sizes (:func:`jaxq.bench.sizes.grid`).

    Yields:
        The rows.
    """
    g = grid(quick)
    chosen = parts()
    if "families" in chosen:
        yield from _families(g)
    if "mixed" in chosen:
        yield from _mixed(g)
    if "effective" in chosen:
        yield from _effective(g)
    if "engines" in chosen:
        yield from _engines(g)


def main(argv=None) -> None:
    """Print the rows of :func:`bench` as a table.

    Args:
        argv (list[str] | None): The arguments (default: ``sys.argv[1:]``); ``--quick`` for the quick sizes.
    """
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    print(f"{'engine':30s} {'dist':20s} {'n':>6s} {'reps':>7s} {'cv':>5s} {'jaxq ev/s':>11s} {'numba ev/s':>11s} "
          f"{'ratio':>6s} {'J_hat':>17s} {'numba J_hat':>17s}")
    for r in bench(quick):
        b, q = r.get("baseline_events_per_s"), r.get("ratio")
        bj = r.get("baseline_J_hat")
        print(
            f"{r['engine']:30s} {r['dist']:20s} {r['n']:6d} {r['reps']:7d} {str(r['cv']):>5s} "
            f"{r['events_per_s']:11.3g} {'-' if b is None else format(b, '.3g'):>11} "
            f"{'-' if q is None else format(q, '.2f'):>6} {r['J_hat']:9.4f}+-{r['J_hat_stderr']:.4f} "
            f"{'-' if bj is None else format(bj, '9.4f') + '+-' + format(r['baseline_J_hat_stderr'], '.4f'):>17}"
        )


if __name__ == "__main__":
    main()
