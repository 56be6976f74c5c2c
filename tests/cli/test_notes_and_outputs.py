"""Robustness of the command line: notes on long jobs, JAXQ_PROGRESS / JAXQ_DEBUG, output paths checked
before any work (and no temp file left behind), clear one-line refusals. Every test runs in about a second:
the simulators and the benchmark are stopped (monkeypatched) where they would start working."""

from __future__ import annotations

import os
import time

import pytest

import jaxq.mc.replications as replications
from jaxq.cli import main
from jaxq.cli.progress import LONG_WORK, Bar, long_work_note


class _Stop(Exception):
    pass


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


# ------------------------------------------------------------------------------------------ long jobs
def test_long_work_note_threshold():
    assert long_work_note(LONG_WORK / 2, "events") is None
    note = long_work_note(8e13, "events")
    assert note.startswith("jaxq: note: about 8.0e13 events (estimated)") and "days" in note


def test_bar_notes_a_long_job_once_off_the_terminal(capsys, monkeypatch):
    monkeypatch.delenv("JAXQ_PROGRESS", raising=False)
    bar = Bar("x", min_total=1e8)
    bar.start(1e6, "events")
    assert capsys.readouterr().err == ""  # an ordinary job: silent
    bar.start(8e13, "events")
    bar.start(8e13, "events")
    bar.close()
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("jaxq: note: about 8.0e13 events")


@pytest.mark.parametrize("argv", [
    ["simulate", "pss_P", "--n", "10000", "--reps", "100000000"],
    ["simulate", "pss_P", "--n", "10000", "--reps", "100000000", "--engine", "event"],
    ["network", "simulate", "network_N", "--n", "10000", "--reps", "10000000"],
])
def test_long_simulation_says_so_before_it_starts(argv, capsys, monkeypatch):
    seen = []

    def stop(*a, **k):  # where the work would start: the note must already be out
        seen.append(capsys.readouterr().err)
        raise _Stop

    monkeypatch.setattr(replications, "run", stop)
    monkeypatch.delenv("JAXQ_DEBUG", raising=False)
    assert main(argv) == 1  # _Stop is an "internal error" here
    assert len(seen) == 1 and len(_lines(seen[0])) == 1 and seen[0].startswith("jaxq: note: about ")


def test_ordinary_simulation_has_no_note(capsys, monkeypatch):
    monkeypatch.setattr(replications, "run", lambda *a, **k: (_ for _ in ()).throw(_Stop()))
    monkeypatch.delenv("JAXQ_DEBUG", raising=False)
    assert main(["simulate", "pss_P", "--n", "100", "--reps", "1000"]) == 1
    assert "note" not in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ environment
def test_jaxq_progress_1_forces_the_bar(capsys, monkeypatch):
    monkeypatch.setenv("JAXQ_PROGRESS", "1")
    bar = Bar("forced")
    bar.start(1000, "events")
    time.sleep(0.6)  # bars appear after half a second
    bar(500)
    bar.close()
    assert "forced" in capsys.readouterr().err


def test_jaxq_progress_0_hides_the_bar(monkeypatch):
    monkeypatch.setenv("JAXQ_PROGRESS", "0")
    bar = Bar("hidden")
    bar.start(1000, "events")
    try:
        assert bar._bar is None
    finally:  # its reporting thread would otherwise write into later tests' stderr (minute lines)
        bar.close()


@pytest.mark.parametrize("value", ["0", "", "off"])
def test_jaxq_debug_0_means_no_traceback(value, capsys, monkeypatch):
    import jaxq.cli.analyze as analyze

    def boom(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(analyze, "run", boom)
    monkeypatch.setenv("JAXQ_DEBUG", value)
    assert main(["analyze", "pss_PP"]) == 1
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("jaxq: internal error: RuntimeError: a bug")


def test_jaxq_debug_1_raises(monkeypatch):
    import jaxq.cli.analyze as analyze

    monkeypatch.setattr(analyze, "run", lambda args: (_ for _ in ()).throw(RuntimeError("a bug")))
    monkeypatch.setenv("JAXQ_DEBUG", "1")
    with pytest.raises(RuntimeError):
        main(["analyze", "pss_PP"])


# ------------------------------------------------------------------------------------------ output files
@pytest.fixture
def fake_bench(monkeypatch):
    import jaxq.bench

    calls = []

    def run(sections, quick, on_row, progress):
        calls.append(sections)
        result = {"machine": {}, "sections": {}}
        if on_row is not None:
            on_row(result)
        return result

    monkeypatch.setattr(jaxq.bench, "run", run)
    return calls


def _refused(capsys, key: str, *words: str) -> str:
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1, err
    assert err[0].startswith(f"jaxq: error: {key}"), err
    for w in words:
        assert w in err[0], err
    return err[0]


@pytest.mark.parametrize("kind", ["dir", "trailing", "missing_folder", "empty"])
def test_bench_out_checked_before_running(kind, tmp_path, capsys, fake_bench):
    out = {"dir": str(tmp_path), "trailing": f"{tmp_path}/x.json/", "missing_folder": f"{tmp_path}/no/x.json",
           "empty": ""}[kind]
    assert main(["bench", "--quick", "--only", "pss2x2", "--out", out]) == 2
    _refused(capsys, "--out", *([out] if out else ["empty"]))
    assert fake_bench == []  # nothing measured
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_bench_out_in_proc(capsys, fake_bench):
    assert main(["bench", "--quick", "--only", "pss2x2", "--out", "/proc/x.json"]) == 2
    _refused(capsys, "--out", "/proc/x.json")
    assert fake_bench == []


def test_bench_out_written(tmp_path, capsys, fake_bench):
    out = tmp_path / "b.json"
    assert main(["bench", "--quick", "--only", "pss2x2", "--out", str(out), "--json"]) == 0
    assert out.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def test_write_atomic_leaves_no_temp_file(tmp_path):
    from jaxq.cli.output import write_atomic

    target = tmp_path / "d"
    target.mkdir()
    with pytest.raises(OSError) as e:
        write_atomic(target, b"x" * 1000)
    assert e.value.filename == str(target)
    assert [p.name for p in tmp_path.iterdir()] == ["d"] and list(target.iterdir()) == []


@pytest.mark.parametrize("kind", ["trailing", "dir", "proc", "empty"])
def test_tune_figure_checked_before_work(kind, tmp_path, capsys, monkeypatch):
    import jaxq.cli.tune as tune

    if kind == "proc" and not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    (tmp_path / "d.png").mkdir()
    fig = {"trailing": f"{tmp_path}/x.png/", "dir": f"{tmp_path}/d.png", "proc": "/proc/x.png", "empty": ""}[kind]
    monkeypatch.setattr(tune, "dual_analysis", lambda path: (_ for _ in ()).throw(_Stop()))
    assert main(["tune", "pss_PP", "--figure", fig]) == 2
    line = _refused(capsys, "--figure")
    assert ".png/.png" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png"]


# ------------------------------------------------------------------------------------------ messages
def test_analyze_a_directory(tmp_path, capsys):
    assert main(["analyze", str(tmp_path)]) == 2
    _refused(capsys, str(tmp_path), "is a directory")


@pytest.mark.parametrize("argv", [["simulate", "pss_P", "--reps", "2", "--n"],
                                  ["network", "simulate", "network_N", "--n"],
                                  ["tune", "pss_PP", "--target", "prelimit", "--n"]])
def test_huge_integer_is_too_large_not_inf(argv, capsys):
    assert main([*argv, "1" * 400]) == 2
    line = _refused(capsys, "argument --n", "too large")
    assert "inf" not in line and len(line) < 300
