"""jaxq.bench: the baseline loader, running sections, saving rows as they come, combining results."""

import json
import shutil
import sys
import types
from pathlib import Path

import pytest

import jaxq
import jaxq.bench as bench
from jaxq.cli import main


def test_loader_imports_the_baselines_of_the_checkout(monkeypatch):
    monkeypatch.delenv("JAXQ_BASELINES", raising=False)
    pytest.importorskip("numba")
    pytest.importorskip("ciw")
    assert bench.baselines_folder() == Path(jaxq.__file__).resolve().parents[1] / "benchmarks"
    for name in bench.SECTIONS:
        mod = bench.baseline(name)
        assert mod is not None and mod.__name__ == f"benchmarks.baselines.{name}", bench.baseline_note(name)
        assert bench.baseline(name) is mod  # imported once


def test_loader_follows_JAXQ_BASELINES_and_says_why_a_folder_has_none(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXQ_BASELINES", str(tmp_path))
    assert bench.baselines_folder() == tmp_path
    assert bench.baseline("sde") is None
    note = bench.baseline_note("sde")
    assert "not found" in note and str(tmp_path) in note and "JAXQ_BASELINES" in note
    assert bench.machine()["baselines"] is None


def test_loader_takes_a_copy_of_the_baselines_from_another_folder(monkeypatch, tmp_path):
    """A folder named by JAXQ_BASELINES need not be called benchmarks; the checkout's modules come back after."""
    pytest.importorskip("numba")
    shutil.copytree(bench.baselines_folder() / "baselines", tmp_path / "baselines",
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("JAXQ_BASELINES", str(tmp_path))
    mod = bench.baseline("sde")
    assert mod is not None and mod.__file__ == str(tmp_path / "baselines" / "sde.py")
    assert bench.machine()["baselines"] == str(tmp_path / "baselines")
    monkeypatch.delenv("JAXQ_BASELINES")
    assert bench.baseline("sde").__file__ != mod.__file__


def test_loader_says_numba_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ModuleNotFoundError
    monkeypatch.delitem(sys.modules, "benchmarks.baselines.fastslow", raising=False)
    mod, note = bench._load.__wrapped__("fastslow", str(bench.baselines_folder()))  # not the cached answer
    assert mod is None and note.startswith("numba not installed")


def test_every_section_is_available():
    assert bench.available() == list(bench.SECTIONS)


def _fake_section(monkeypatch, rows, fail_after=None):
    """Install ``jaxq.bench.fake`` whose bench() yields ``rows`` (raising after ``fail_after`` of them)."""

    def gen(quick):
        for k, row in enumerate(rows):
            if fail_after is not None and k == fail_after:
                raise KeyboardInterrupt  # as a time limit would stop it
            yield row

    monkeypatch.setitem(sys.modules, "jaxq.bench.fake", types.SimpleNamespace(bench=gen))
    monkeypatch.setattr(bench, "available", lambda on_request=False: ["fake"])


def test_bench_out_file_keeps_the_rows_measured_before_an_interruption(monkeypatch, tmp_path):
    _fake_section(monkeypatch, [{"engine": "a", "rate": 1.0}, {"engine": "b", "rate": float("inf")},
                                {"engine": "c", "rate": 3.0}], fail_after=2)
    out = tmp_path / "partial.json"
    assert main(["bench", "--only", "fake", "--out", str(out), "--json"]) == 130  # Ctrl-C: one line, exit 130
    saved = json.loads(out.read_text())
    rows = saved["sections"]["fake"]["rows"]
    assert [r["engine"] for r in rows] == ["a", "b"] and rows[1]["rate"] is None  # non-finite -> null
    assert list(rows[0]) == ["engine", "rate"]  # the section's column order, not sorted


def test_bench_out_into_a_missing_directory_is_an_input_error(monkeypatch, tmp_path, capsys):
    _fake_section(monkeypatch, [{"engine": "a"}])
    assert main(["bench", "--only", "fake", "--out", str(tmp_path / "no" / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxq: error: --out:") and err.count("\n") == 1


def test_unknown_section_is_an_input_error(capsys):
    assert main(["bench", "--only", "pss2x2,nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_table_names_the_baselines_and_each_section(monkeypatch, capsys):
    _fake_section(monkeypatch, [{"engine": "a", "events_per_s": 2.0e6}])
    assert main(["bench", "--only", "fake"]) == 0
    text = capsys.readouterr().out
    assert "baselines: " in text and "numba " in text and "[fake]" in text and "2e+06" in text


def test_table_warns_when_two_runs_of_one_estimand_disagree(monkeypatch, capsys):
    rows = [{"dist": "ok", "n": 100, "reps": 10, "events_per_s": 1.0, "z": 3.9},
            {"dist": "bad", "n": 100, "reps": 10, "events_per_s": 1.0, "z": -4.2}, {"dist": "none", "z": None}]
    _fake_section(monkeypatch, rows)
    assert main(["bench", "--only", "fake"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: 1 row(s)" in text and "bad n=100 reps=10 z=-4.2" in text and "ok n=" not in text
    _fake_section(monkeypatch, rows[:1])
    assert main(["bench", "--only", "fake"]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_combine_takes_the_first_machine_and_every_section():
    a = {"machine": {"backend": "gpu"}, "quick": True, "sections": {"pss2x2": {"rows": [1]}}}
    b = {"machine": {"backend": "other"}, "sections": {"mmc": {"rows": [2]}, "pss2x2": {"rows": [3]}}}
    c = bench.combine([a, b])
    assert c["machine"]["backend"] == "gpu" and c["quick"] is True
    assert c["sections"] == {"pss2x2": {"rows": [3]}, "mmc": {"rows": [2]}}
    with pytest.raises(ValueError):
        bench.combine([])
