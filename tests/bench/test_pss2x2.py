"""jaxq.bench.pss2x2: both engines of the 2x2 system and the numba baseline agree, for every family of the
per-family rows; the section runs with and without the baseline.

Every run uses 256 replications in one chunk, so the whole file compiles each jaxq engine once per family.
"""

import math

import pytest

import jaxq.bench
from jaxq.bench import pss2x2 as B
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2
from jaxq.sim.models.pss2x2 import MARKOV

N, REPS, HORIZON = 16, 256, 25.0  # exp(-gamma T) = 4e-6: the truncation is negligible beside the errors
SIZES = {"pss2x2_event_reps": (REPS,), "pss2x2_ctmc_reps": (REPS,), "pss2x2_numba_reps": (REPS,),
         "pss2x2_family_reps": (REPS,), "pss2x2_mixed_reps": (REPS,), "event_chunk": REPS, "lockstep_chunk": REPS, "target_events": 2e5,
         "family_target_events": 2e5, "lockstep_target_events": 2e5}


def _baseline(system, horizon):
    row = B.baseline_columns(system, N, REPS, horizon)
    assert "note" not in row and row["baseline_events_per_s"] > 0, row
    return row


def test_event_engine_and_numba_agree(agree, numba_or_skip):
    s = load(path("pss_P"))
    row = B.jaxq_row(s, N, REPS, "event", REPS, horizon=HORIZON)
    assert row["events_per_s"] > 0
    agree(row, _baseline(s, HORIZON), ["J_hat"], ["baseline_J_hat"])


def test_uniformised_engine_and_numba_agree(agree, numba_or_skip):
    s = load(path("pss_P"))
    big = MARKOV.bound(pss2x2.setup(s, N, policy="P").params)
    steps = math.ceil(HORIZON * big)  # numba runs the mean time span of the steps
    row = B.jaxq_row(s, N, REPS, "uniformized", REPS, steps=steps)
    assert row["truncation_bound"] < 1e-3 * row["J_hat"]
    agree(row, _baseline(s, steps / big), ["J_hat"], ["baseline_J_hat"])


FAST_FAMILIES = ("erlang:0.5", "gamma:0.5")  # the others with the slow checks


@pytest.mark.parametrize("family", list(FAST_FAMILIES) + [pytest.param(f, marks=pytest.mark.slow) for f in B.FAMILIES
                                                          if f not in ("exponential",) + FAST_FAMILIES]
                         + [pytest.param(f, marks=pytest.mark.slow) for f in B.GENERAL_GAMMA])
def test_every_family_agrees_with_numba(family, agree, numba_or_skip):
    """The family rows' system (one family in all six streams): jaxq's event engine and the numba loop, which
    samples with numpy's generators, estimate the same truncated cost (plain estimates, as the bench runs them)."""
    s = B.family_system(family)
    row = B.jaxq_row(s, N, REPS, "event", REPS, horizon=HORIZON)
    assert row["cv"] is False and row["ns_per_event"] == pytest.approx(1e9 / row["events_per_s"])
    agree(row, _baseline(s, HORIZON), ["J_hat"], ["baseline_J_hat"])


def test_controlled_row_reports_the_variance_reduction(agree, numba_or_skip):
    s = B.family_system("exponential")
    row = B.jaxq_row(s, N, REPS, "event", REPS, cv=True, horizon=HORIZON)
    assert row["variance_reduction"] > 1 and row["J_plain_stderr"] > row["J_hat_stderr"]
    agree(row, _baseline(s, HORIZON), ["J_hat"], ["baseline_J_hat"])
    agree(row, _baseline(s, HORIZON), ["J_plain"], ["baseline_J_hat"])


@pytest.mark.slow  # compiles the event engine for the general sampler (about 10 s more)
def test_event_engine_and_numba_agree_with_erlang_and_hyperexponential_services(agree, numba_or_skip):
    s = load(path("pss_spec"))
    row = B.jaxq_row(s, N, REPS, "event", REPS, horizon=HORIZON)
    agree(row, _baseline(s, HORIZON), ["J_hat"], ["baseline_J_hat"])


@pytest.mark.slow  # in the fast set: a section's rows (tests/studies/test_sde_convergence_script.py) and the command
# with a fake section (tests/cli/test_notes_and_outputs.py)
def test_section_runs_in_the_cli_with_and_without_its_baseline(tiny_bench, agree):
    def exponential_only(mp):  # every part, exponential systems only (the other families: the tests above)
        mp.setattr(B, "SYSTEMS", {"exponential": "pss_P"})
        mp.setattr(B, "FAMILIES", ("exponential",))
        mp.setattr(B, "GENERAL_GAMMA", ())
        mp.setattr(B, "MIXED", ("pss_PP",))  # a mixed spec (exponential, Erlang, hyperexponential) beside numba
        mp.setattr(B, "FAMILY_N", N)

    rows = tiny_bench("pss2x2", setup=exponential_only, **SIZES)
    assert [(r["part"], r["engine"], r["n"], r["cv"]) for r in rows] == (
        [("families", B.ENGINE_LABELS["event"], N, False), ("mixed", B.ENGINE_LABELS["event"], N, False),
         ("effective", B.ENGINE_LABELS["event"], N, True)]
        + [("engines", B.ENGINE_LABELS[e], n, False) for n in (100, 10_000) for e in ("event", "uniformized")])
    have_numba = jaxq.bench.baseline("pss2x2") is not None
    for r in rows:
        assert r["reps"] == REPS and r["events_per_s"] > 0 and r["J_hat_stderr"] > 0
        if have_numba:
            assert r["ratio"] == pytest.approx(r["events_per_s"] / r["baseline_events_per_s"], rel=1e-12)
        if have_numba and r["engine"] == B.ENGINE_LABELS["event"]:  # the same horizon: the same estimand
            agree(r, r, ["J_hat"], ["baseline_J_hat"])
            assert r["z"] == pytest.approx((r["J_hat"] - r["baseline_J_hat"])
                                           / math.hypot(r["J_hat_stderr"], r["baseline_J_hat_stderr"]))
    fam, mix, eff = rows[0], rows[1], rows[2]
    assert fam["vs_exponential"] == 1.0 and fam["dist"] == "exponential" and fam["method"] == "exponential"
    assert mix["dist"] == "pss_PP" and mix["method"] == "exponential+erlang+hyperexponential"
    assert mix["vs_exponential"] > 0 and (not have_numba or mix["baseline_vs_exponential"] > 0)
    assert fam["baseline_vs_exponential"] == (1.0 if have_numba else None)
    assert eff["effective_events_per_s"] == pytest.approx(eff["events_per_s"] * eff["variance_reduction"])
    if have_numba:
        assert eff["effective_ratio"] == pytest.approx(eff["effective_events_per_s"] / eff["baseline_events_per_s"])
    for r in tiny_bench("pss2x2", missing=True, setup=exponential_only, **SIZES):
        assert r["reps"] == REPS and r["events_per_s"] > 0 and r["baseline_events_per_s"] is None and r["ratio"] is None
        assert r["baseline_J_hat"] is None and r["note"]
        assert r["part"] not in ("families", "mixed") or r["baseline_vs_exponential"] is None


def test_interleaved_measurement_runs_every_job_once_a_round(all_rounds):
    """measure_interleaved: first calls (run(0) or warm), then rounds of seeds 1..R over all jobs in turn;
    per job the median rate, the first call's overhead and the estimates of seed 1, as measure gives alone."""
    from jaxq.bench import timing

    calls = []

    def job(name, work, seconds):
        def run(seed):
            calls.append((name, seed))
            return work, seconds[seed], {"name": name, "seed": seed}
        return run

    a = job("a", 10.0, {0: 0.0, 1: 1.0, 2: 4.0, 3: 2.0})
    b = job("b", 6.0, {1: 3.0, 2: 1.0, 3: 2.0})
    out = timing.measure_interleaved([(a, None), (b, lambda: calls.append(("b", "warm")))], repeats=3)
    assert calls == [("a", 0), ("b", "warm"), ("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]
    assert out[0][0] == 5.0 and out[1][0] == 3.0  # medians of 10/{1,4,2} and 6/{3,1,2}
    assert out[0][2] == {"name": "a", "seed": 1} and out[1][2] == {"name": "b", "seed": 1}
    assert out[0][1] == 0.0 and out[1][1] < 1.0  # b: the wall time of its warm call, not of its rounds
    calls.clear()
    assert timing.measure(a, 3) == out[0] and calls == [("a", 0), ("a", 1), ("a", 2), ("a", 3)]
    best = timing.measure_interleaved([(a, None), (b, lambda: None)], repeats=3, best=True)
    assert best[0][0] == 10.0 and best[1][0] == 6.0  # the fastest rounds: 10/1 and 6/1
    assert best[0][1] == 0.0 and best[1][1] < 1.0 and best[0][2] == {"name": "a", "seed": 1}


def test_parts_are_selected_by_the_environment(monkeypatch):
    monkeypatch.setenv("JAXQ_BENCH_PSS2X2_PARTS", "effective, families")
    assert B.parts() == ("effective", "families")
    monkeypatch.setenv("JAXQ_BENCH_PSS2X2_PARTS", "")
    assert B.parts() == B.PARTS
    monkeypatch.setenv("JAXQ_BENCH_PSS2X2_PARTS", "nope")
    with pytest.raises(InputError, match="nope"):
        B.parts()


def test_unknown_part_is_one_line_and_exit_2_before_any_run(monkeypatch, capsys):
    from jaxq.cli import main

    monkeypatch.setenv("JAXQ_BENCH_PSS2X2_PARTS", "families,nope")
    assert main(["bench", "--only", "pss2x2"]) == 2
    err = capsys.readouterr().err
    assert err == ("jaxq: error: JAXQ_BENCH_PSS2X2_PARTS: unknown part(s) ['nope']; choose from families, mixed, "
                   "effective, engines\n")
    for only in ("", ","):  # no section named: refused, not "all" or "none"
        assert main(["bench", "--only", only]) == 2
        assert capsys.readouterr().err.startswith("jaxq: error: --only: no section named")
