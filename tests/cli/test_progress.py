"""Progress of long jobs on any stderr: the estimate at a rate measured on this machine (not a constant) before
the bulk of the work, then a line at least once a minute off the terminal; --quiet silences it; short jobs and
refusals print nothing of it. (tests/conftest.py turns the reports off for every other test: JAXQ_LONG_JOB_S.)"""

import io
import re

import pytest

import jaxq.progress as progress
from jaxq.cli import main
from jaxq.cli.progress import Bar
from jaxq.progress import Monitor


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture(autouse=True)
def reports_on(monkeypatch):
    monkeypatch.delenv("JAXQ_LONG_JOB_S", raising=False)
    monkeypatch.delenv("JAXQ_QUIET", raising=False)
    monkeypatch.setattr(progress, "QUIET", False)


def _monitor(total=1e9):
    clock, out = Clock(), io.StringIO()
    m = Monitor("simulate", stream=out, clock=clock, thread=False)
    m.start(total, "events")
    return m, clock, out


def test_a_long_job_gives_its_measured_estimate_then_a_line_a_minute():
    m, clock, out = _monitor()
    clock.t = 8.0  # compiling: nothing measured, not yet 30 s
    assert m.tick() is None
    m.update(1e6)  # the first piece (compilation included: not the rate)
    clock.t = 10.0
    m.update(2e6)
    note = m.tick()  # 2e6 events in 2 s since the first piece: 1e6 events/s measured
    assert note.startswith("jaxq: note: simulate: about 1.0e9 events, about 17 minutes at 1.0e6 events/s measured")
    lines = [note]
    for t in range(11, 400):
        clock.t = float(t)
        m.update(1e6)
        if (line := m.tick()) is not None:
            lines.append((t, line))
    times = [t for t, _ in lines[1:]]
    assert times and times[0] <= 10 + 60 and all(b - a <= 60 for a, b in zip(times, times[1:]))
    assert re.match(r"jaxq: progress: simulate: \d+% \(.* of 1\.0e9 events\), 1\.0e6 events/s, about .* left",
                    lines[1][1])
    assert out.getvalue().count("\n") == len(lines)


def test_the_first_estimate_waits_for_a_rate_without_compilation():
    """The first piece's rate includes compiling (8 s here for 1e6 events): an estimate from it was 3-10x too long,
    so none is written until a second piece gives the rate since the first (here 1e7 events/s, not 1.25e5)."""
    m, clock, out = _monitor(total=1e10)
    clock.t = 8.0
    m.update(1e6)  # the first piece, compilation included
    clock.t = 8.5
    assert m.tick() is None  # no rate measured without compilation yet
    clock.t = 9.0
    m.update(1e7)
    note = m.tick()
    assert note is not None and "at 1.0e7 events/s measured" in note and "about 17 minutes" in note


def test_a_short_job_says_nothing():
    m, clock, out = _monitor(total=1e7)
    m.update(1e6)
    clock.t = 2.0
    m.update(2e6)
    for t in range(2, 12):
        clock.t = float(t)
        m.update(1e6)
        assert m.tick() is None
    assert out.getvalue() == ""


def test_a_job_with_nothing_finished_after_30_s_says_so():
    m, clock, _ = _monitor()
    clock.t = 31.0
    assert "nothing finished after 31 seconds" in m.tick()
    clock.t = 92.0
    assert m.tick().startswith("jaxq: progress: simulate: 0%")


def test_quiet_silences_it(monkeypatch):
    monkeypatch.setattr(progress, "QUIET", True)
    m, clock, out = _monitor()
    m.update(1e6)
    clock.t = 100.0
    m.update(1e6)
    assert m.tick() is None and out.getvalue() == ""


def test_a_rerun_adds_its_work_to_the_job():
    m, clock, _ = _monitor(total=100.0)
    m.update(100.0)
    m.start(50.0, "events")  # a rerun with a longer truncation
    assert m.total == 150.0


def test_the_constant_rate_note_is_a_lower_bound():
    bar = Bar("x", min_total=1e8)
    from jaxq.cli.progress import long_work_note

    assert "at least" in long_work_note(8e13, "events") and "faster than any machine" in long_work_note(8e13, "events")
    bar.close()


@pytest.mark.parametrize("quiet", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_real_simulation_off_the_terminal(capsys, monkeypatch, quiet):
    """jaxq simulate with stderr captured (not a terminal), the thresholds lowered to this test's size."""
    monkeypatch.setenv("JAXQ_LONG_JOB_S", "0.2")
    monkeypatch.setattr(progress, "EVERY_S", 0.5)
    monkeypatch.setattr(progress, "POLL_S", 0.05)
    monkeypatch.delenv("JAXQ_PROGRESS", raising=False)
    argv = ["simulate", "pss_PP", "--n", "400", "--reps", "1000", "--engine", "event", "--horizon", "20", "--json"]
    assert main(argv + (["--quiet"] if quiet else [])) == 0
    err = capsys.readouterr().err
    if quiet:
        assert "jaxq: note: simulate" not in err and "jaxq: progress" not in err
        return
    m = re.search(r"jaxq: note: simulate: about (\S+) events, about .* at (\S+) events/s measured on this machine", err)
    assert m, err
    assert float(m.group(2)) != 1e8  # measured, not the constant


def test_a_real_run_reports_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXQ_LONG_JOB_S", "0.2")
    monkeypatch.setattr(progress, "EVERY_S", 0.3)
    monkeypatch.setattr(progress, "POLL_S", 0.05)
    exp = tmp_path / "e.toml"
    exp.write_text('[experiment]\nstudy = "convergence"\nsystems = ["pss_PP"]\nreplications = 40\nchunk = 2\n'
                   '[grid]\nn = [9]\nhorizon = 2.0\n')
    assert main(["run", str(exp), "--out", str(tmp_path / "o"), "--no-progress", "--json"]) == 0
    err = capsys.readouterr().err
    assert "jaxq: note: run e: about 40 replications" in err and "measured on this machine" in err, err



def _slow(monkeypatch, seconds=1.2):
    """Reports after 0.2 s and a line every 0.4 s, so that a job of about a second shows them."""
    monkeypatch.setenv("JAXQ_LONG_JOB_S", "0.2")
    monkeypatch.setattr(progress, "EVERY_S", 0.4)
    monkeypatch.setattr(progress, "POLL_S", 0.05)
    import time

    return lambda: time.sleep(seconds)


def test_bench_says_it_is_at_work_and_reports_every_minute(monkeypatch, capsys):
    import sys
    import types

    from jaxq import bench

    wait = _slow(monkeypatch)

    def gen(quick):
        wait()
        yield {"engine": "a", "events_per_s": 1.0}

    monkeypatch.setitem(sys.modules, "jaxq.bench.fake", types.SimpleNamespace(bench=gen))
    monkeypatch.setattr(bench, "available", lambda on_request=False: ["fake"])
    assert main(["bench", "--only", "fake", "--json"]) == 0
    err = capsys.readouterr().err
    assert "jaxq: note: bench: about 1 sections; nothing finished after" in err
    assert "jaxq: progress: bench: 0% (0 of 1 sections)" in err
    assert main(["bench", "--only", "fake", "--json", "--quiet"]) == 0
    assert "jaxq: note" not in capsys.readouterr().err


def test_fastslow_value_iteration_reports_when_long(monkeypatch, capsys):
    import jaxq.mdp.fastslow as mdp

    wait, solve = _slow(monkeypatch), mdp.solve

    def slow_solve(*a, **k):
        wait()
        return solve(*a, **k)

    monkeypatch.setattr(mdp, "solve", slow_solve)
    assert main(["fastslow", "--lam", "1.2", "--mu1", "1", "--mu2", "0.3", "--average", "--json"]) == 0
    err = capsys.readouterr().err
    assert "jaxq: note: fastslow: value iteration: still at work after" in err
    assert "jaxq: progress: fastslow: value iteration:" in err


def test_run_reports_a_long_check_of_its_experiment_file(monkeypatch, capsys, tmp_path):
    import jaxq.studies.experiment as experiment

    wait = _slow(monkeypatch)

    def slow_load(*a, **k):  # a grid of thousands of points takes minutes to check
        wait()
        raise experiment.InputError("grid.n", "refused after the check")

    monkeypatch.setattr(experiment, "load_experiment", slow_load)
    assert main(["run", str(tmp_path / "x.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "jaxq: note: run: checking the experiment file: still at work after" in err
    assert err.rstrip().splitlines()[-1].startswith("jaxq: error: grid.n")


def test_a_count_of_unknown_total_reports_what_is_done():
    m, clock, out = _monitor(total=None)
    m.unit = "points"
    for t in (1.0, 3.0, 10.0, 31.0):
        clock.t = t
        m.update(5)
        m.tick()
    assert "still at work after 31 seconds" in out.getvalue()
    clock.t = 95.0
    m.update(5)
    assert m.tick().startswith("jaxq: progress: simulate: 25 points done")


def test_run_counts_the_points_it_checks(monkeypatch, capsys, tmp_path):
    """The check of a large grid shows the points checked so far as it goes: a bar on a terminal, the count in
    the minute lines on any stderr (here: not a terminal, --json; the lines are the only stderr besides the
    refusal, nothing of a bar)."""
    import time

    import jaxq.studies.experiment as experiment

    _slow(monkeypatch)
    calls = []

    def counting_load(path, seeds=None, progress=None):
        for _ in range(12):
            time.sleep(0.1)
            progress(5)
            calls.append(5)
        raise experiment.InputError("grid.n", "refused after the check")

    monkeypatch.setattr(experiment, "load_experiment", counting_load)
    assert main(["run", str(tmp_path / "x.toml"), "--out", str(tmp_path / "out"), "--json"]) == 2
    err = capsys.readouterr().err
    counts = [int(c) for c in re.findall(r"run: checking the experiment file: (\d+) points done", err)]
    assert len(calls) == 12 and counts and counts == sorted(counts) and 0 < counts[-1] <= 60
    lines = err.rstrip().splitlines()
    assert all(line.startswith("jaxq: ") for line in lines)  # no bar off the terminal
    assert lines[-1].startswith("jaxq: error: grid.n")
