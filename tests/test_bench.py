"""The benchmark plumbing: sizes, the exact integer thresholds, core slices, optional numba."""

import importlib
import sys

import numpy as np
import pytest

import jaxq  # noqa: F401
from jaxq.bench import sizes
from jaxq.errors import InputError
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import lockstep
from jaxq.sim import pss2x2_ctmc as U


def test_tiny_switch_shrinks_every_size(monkeypatch):
    full = sizes.grid(False)
    monkeypatch.setenv("JAXQ_BENCH_TINY", "1")
    small = sizes.grid(False)
    assert small["target_events"] < full["target_events"] and small["mmc_reps"] < full["mmc_reps"]
    assert max(small["pss2x2_ctmc_reps"]) < max(full["pss2x2_ctmc_reps"])
    monkeypatch.setenv("JAXQ_BENCH_TINY", "0")
    assert sizes.grid(False) == full


@pytest.mark.parametrize("level", [0.0, 1e-9, 0.37, 1.0, 2.5, 3.999999999, 4.0])
def test_words_below_is_the_exact_float_threshold(level):
    big = 4.0 + 1e-7  # not a power of two: u * big rounds
    c = U.words_below(level, big)
    assert c == 0 or U._point(c - 1, big) < level
    assert c == U.TWO32 or not U._point(c, big) < level


def test_word_thresholds_split_the_unit_interval():
    lam = np.array([0.3, 0.5])
    mu = np.array([[1.0, 0.7], [0.4, 1.3]])
    t = U.word_thresholds(lam, mu)
    big, m0 = U.uniformization(lam, mu)
    frac = lambda words: words / 2.0**32  # noqa: E731
    assert abs(frac(int(t["cls0_last"]) + 1) - lam[0] / big) < 1e-9
    assert abs(frac(int(t["arr_last"]) + 1) - lam.sum() / big) < 1e-9
    assert abs(frac(int(t["seg_start"][1])) - (lam.sum() + m0) / big) < 1e-9
    np.testing.assert_allclose(frac(t["seg_len"].astype(float)), mu / big, atol=1e-9)


def test_core_slices_split_large_cpu_chunks_into_cache_sized_slices():
    cores = max(1, __import__("os").cpu_count())
    assert lockstep.core_slices(lockstep.MIN_SLICE - 1) == 1
    assert lockstep.core_slices(4 * lockstep.MIN_SLICE) == min(cores, 4)
    big = lockstep.core_slices(10**6)
    assert big >= cores and 10**6 / big <= lockstep.MAX_SLICE


def test_steps_override_and_its_check():
    s = load(path("pss_P"))
    r = U.simulate_cost(s, 16, 4, steps=100, seed=2)
    assert r["steps"] == 128 and r["events"] > 0
    with pytest.raises(InputError, match="steps"):
        U.simulate_cost(s, 16, 4, steps=0)


def test_pss2x2_section_imports_and_runs_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
    import jaxq.bench.pss2x2 as B

    B = importlib.reload(B)
    s = load(path("pss_P"))
    row = B._numba_row(s, 16, 4, 1.0)
    assert row["baseline_events_per_s"] is None and "numba" in row["note"]
    row = B._ctmc_row(s, 16, 4, 64)
    assert row["events_per_s"] > 0 and row["reps"] == 4 and np.isfinite(row["J_hat"])


def _fake_section(monkeypatch, rows, fail_after=None):
    """Install ``jaxq.bench.fake`` whose bench() yields ``rows`` (raising after ``fail_after`` of them)."""
    import types

    from jaxq import bench

    def gen(quick):
        for k, row in enumerate(rows):
            if fail_after is not None and k == fail_after:
                raise KeyboardInterrupt  # as a time limit would stop it
            yield row

    monkeypatch.setitem(sys.modules, "jaxq.bench.fake", types.SimpleNamespace(bench=gen))
    monkeypatch.setattr(bench, "available", lambda: ["fake"])
    return bench


def test_bench_out_file_keeps_the_rows_measured_before_an_interruption(monkeypatch, tmp_path):
    import json

    from jaxq.cli import main

    _fake_section(monkeypatch, [{"engine": "a", "rate": 1.0}, {"engine": "b", "rate": float("inf")},
                                {"engine": "c", "rate": 3.0}], fail_after=2)
    out = tmp_path / "partial.json"
    with pytest.raises(KeyboardInterrupt):
        main(["bench", "--only", "fake", "--out", str(out), "--json"])
    saved = json.loads(out.read_text())
    rows = saved["sections"]["fake"]["rows"]
    assert [r["engine"] for r in rows] == ["a", "b"] and rows[1]["rate"] is None  # non-finite -> null
    assert list(rows[0]) == ["engine", "rate"]  # the section's column order, not sorted


def test_bench_out_into_a_missing_directory_is_an_input_error(monkeypatch, tmp_path, capsys):
    from jaxq.cli import main

    _fake_section(monkeypatch, [{"engine": "a"}])
    assert main(["bench", "--only", "fake", "--out", str(tmp_path / "no" / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxq: error: --out:") and err.count("\n") == 1


def test_combine_takes_the_first_machine_and_every_section():
    from jaxq.bench import combine

    a = {"machine": {"backend": "gpu"}, "quick": True, "sections": {"pss2x2": {"rows": [1]}}}
    b = {"machine": {"backend": "other"}, "sections": {"mmc": {"rows": [2]}, "pss2x2": {"rows": [3]}}}
    c = combine([a, b])
    assert c["machine"]["backend"] == "gpu" and c["quick"] is True
    assert c["sections"] == {"pss2x2": {"rows": [3]}, "mmc": {"rows": [2]}}
    with pytest.raises(ValueError):
        combine([])


def test_accelerator_grid_caps_the_events_of_one_replication(monkeypatch):
    monkeypatch.setattr(sizes.jax, "default_backend", lambda: "gpu")
    for quick in (True, False):
        g = sizes.grid(quick)
        assert g["rep_events"] is not None and g["rep_events"] <= 1e5
        assert max(g["pss2x2_ctmc_reps"]) >= 10**6 and g["mmc_reps"] >= 10**5
    monkeypatch.setattr(sizes.jax, "default_backend", lambda: "cpu")
    assert sizes.grid(False)["rep_events"] is None and max(sizes.grid(False)["pss2x2_ctmc_reps"]) == 10**5


def test_report_pairs_each_baseline_with_the_jaxq_row_it_was_divided_into(tmp_path, capsys):
    import json

    from jaxq.bench import report

    rows = [  # the ciw row's ratio is against the first jaxq row, the numba row's against the second
        {"engine": "mmc", "impl": "jaxq (lockstep)", "n": 100, "reps": 1000, "events_per_s": 4e8},
        {"engine": "mmc", "impl": "jaxq (event)", "n": 100, "reps": 1000, "events_per_s": 1e7},
        {"engine": "mmc", "impl": "ciw", "n": 100, "reps": 1, "events_per_s": 1e5, "jaxq_ratio": 4e3},
        {"engine": "mmc", "impl": "numba (all cores)", "n": 100, "reps": 1000, "events_per_s": 2e7, "jaxq_ratio": 0.5},
        {"engine": "mmc", "impl": "numba (all cores)", "n": 100, "reps": 10, "events_per_s": None, "jaxq_ratio": None},
    ]
    pss = [{"engine": "jaxq.sim.pss2x2_ctmc", "dist": "exponential", "n": 100, "reps": r, "events_per_s": e,
            "baseline_events_per_s": 4e7, "ratio": e / 4e7} for r, e in ((100, 3e7), (10_000, 1.2e8))]
    result = {"machine": {"device": "cpu", "backend": "cpu", "cpu_count": 2, "jax": "x"},
              "sections": {"pss2x2": {"rows": pss}, "mmc": {"rows": rows}}}
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
