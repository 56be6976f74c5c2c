"""jaxq.bench.report: the README's table from a bench result."""

import json

import pytest

from jaxq.bench import report


def _result(pss_engine: str) -> dict:
    rows = [  # the ciw row's ratio is against the first jaxq row, the numba row's against the second
        {"engine": "mmc", "impl": "jaxq (lockstep)", "n": 100, "reps": 1000, "events_per_s": 4e8},
        {"engine": "mmc", "impl": "jaxq (event)", "n": 100, "reps": 1000, "events_per_s": 1e7},
        {"engine": "mmc", "impl": "ciw", "n": 100, "reps": 1, "events_per_s": 1e5, "jaxq_ratio": 4e3},
        {"engine": "mmc", "impl": "numba (all cores)", "n": 100, "reps": 1000, "events_per_s": 2e7, "jaxq_ratio": 0.5},
        {"engine": "mmc", "impl": "numba (all cores)", "n": 100, "reps": 10, "events_per_s": None, "jaxq_ratio": None},
    ]
    pss = [{"engine": pss_engine, "dist": "exponential", "n": 100, "reps": r, "events_per_s": e,
            "baseline_events_per_s": 4e7, "ratio": e / 4e7} for r, e in ((100, 3e7), (10_000, 1.2e8))]
    return {"machine": {"device": "cpu", "backend": "cpu", "cpu_count": 2, "jax": "x"},
            "sections": {"pss2x2": {"rows": pss}, "mmc": {"rows": rows}}}


# the uniformised 2x2 engine as this bench names it, and as results written before the engine redesign did
@pytest.mark.parametrize("engine", ["jaxq.sim.pss2x2[uniformized]", "jaxq.sim.pss2x2_ctmc"])
def test_report_pairs_each_baseline_with_the_jaxq_row_it_was_divided_into(engine, tmp_path, capsys):
    result = _result(engine)
    lines = report.headline(result)
    assert len(lines) == 3 and lines[0]["jaxq"] == 1.2e8 and "10^4 reps" in lines[0]["model"]
    ciw = next(h for h in lines if h["baseline"] and h["baseline"].startswith("ciw"))
    numba = next(h for h in lines if h["model"].startswith("M/M/c") and h["baseline"].startswith("numba"))
    assert "lockstep" in ciw["model"] and ciw["jaxq"] == 4e8 and ciw["ratio"] == 4e3
    assert "event" in numba["model"] and numba["jaxq"] == pytest.approx(1e7)
    assert not any("lockstep" in h["model"] and h["baseline"] is None for h in lines)  # paired rows once
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    assert report.main([str(path)]) == 0
    table = capsys.readouterr().out
    assert "| 2x2 system, exponential, n = 100, 10^4 reps, uniformised engine | 1.2e8 ev/s |" in table
    assert report.main([str(tmp_path / "missing.json")]) == 2


def test_report_names_the_event_engine():
    result = _result("jaxq.sim.pss2x2[event]")
    assert "event engine" in report.headline(result)[0]["model"]


def test_report_has_a_row_per_family_and_the_effective_rate():
    rows = [{"part": "families", "engine": "jaxq.sim.pss2x2[event]", "dist": d, "method": m, "n": 100, "reps": 10_000,
             "cv": False, "events_per_s": e, "baseline_events_per_s": 2e7, "ratio": e / 2e7}
            for d, m, e in (("exponential", "exponential", 4e7), ("gamma:2", "gammahalf", 3e7), ("gamma:3", "gamma", 2e7))]
    rows.append({"part": "effective", "engine": "jaxq.sim.pss2x2[event]", "dist": "exponential", "n": 100,
                 "reps": 10_000, "cv": True, "events_per_s": 3e7, "variance_reduction": 10.0,
                 "effective_events_per_s": 3e8, "baseline_events_per_s": 2e7, "ratio": 1.5, "effective_ratio": 15.0})
    result = {"machine": {}, "sections": {"pss2x2": {"rows": rows}}}
    lines = report.headline(result)
    assert [h["jaxq"] for h in lines] == [4e7, 3e7, 2e7, 3e8] and [h["ratio"] for h in lines] == [2.0, 1.5, 1.0, 15.0]
    assert lines[0]["model"] == "2x2 system, exponential in all six streams, n = 100, 10^4 reps, event engine"
    assert "gamma:2 (as Erlang + Z^2/2)" in lines[1]["model"] and "gamma:3 (step envelope)" in lines[2]["model"]
    assert "effective ev/s = 3e7 ev/s x variance reduction 10" in lines[3]["model"]
