"""The output of `jaxq run` and `jaxq demo`: the experiment's name is a plain folder name,
an output folder that is not new or empty is refused without --resume (and one that holds no jaxq run with it),
--out problems are one line naming --out, and the printed summary shows every column of the tables."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from jaxq.cli import main
from jaxq.cli.output import format_table
from jaxq.cli.run import render
from jaxq.errors import InputError
from jaxq.studies import runner

CONV = """
[experiment]
study = "convergence"
systems = ["pss_PP"]
replications = 4
chunk = 2
seeds = [5]
[grid]
n = [16]
horizon = 2.0
"""
COLLAPSE = CONV.replace('"convergence"', '"collapse"')
FASTSLOW = """
[experiment]
study = "fastslow"
replications = 2
chunk = 2
[grid]
loads = [0.5]
ratios = [0.3]
slow_servers = [2]
criteria = ["average"]
simulate = true
steps = 2000
warmup = 200
best_threshold = true
"""
NETWORK = """
[experiment]
study = "network"
systems = ["network_N"]
replications = 2
chunk = 2
seeds = [1]
[grid]
n = [16]
policies = ["priority"]
warmup = 1.0
horizon = 5.0
diffusion = true
sde_paths = 2
dt = 0.05
"""


def _run(capsys, *args):
    rc = main(["run", *map(str, args), "--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_line(err: str, prefix: str) -> str:
    assert err.count("\n") == 1 and err.startswith(f"jaxq: error: {prefix}: "), err
    return err


def _tree(d: Path):
    return sorted((str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*"))


@pytest.fixture(scope="module")
def earlier(tmp_path_factory):
    """A finished convergence run (the folder later commands must not silently reuse)."""
    d = tmp_path_factory.mktemp("earlier")
    (d / "conv.toml").write_text(CONV)
    (d / "collapse.toml").write_text(COLLAPSE)
    assert main(["run", str(d / "conv.toml"), "--out", str(d / "out"), "--no-progress", "--json"]) == 0
    return d


# ---------------------------------------------------------------------------------------------- 1. name
@pytest.mark.parametrize("name", ["..", ".", ".hidden", "-x", "a/b", ""])
def test_name_that_is_not_a_plain_folder_name_is_refused(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.toml").write_text(CONV.replace("[experiment]", f'[experiment]\nname = "{name}"'))
    rc, out, err = _run(capsys, "e.toml")
    assert rc == 2 and out == ""
    assert "plain folder name" in _one_line(err, "experiment.name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]  # nothing in the cwd, no results/


def test_default_name_from_a_file_named_dot_toml_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "..toml").write_text(CONV)  # its stem is "."
    rc, _, err = _run(capsys, "..toml")
    assert rc == 2 and "set name" in _one_line(err, "experiment.name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["..toml"]


def test_plain_names_still_run_validation(tmp_path):
    from jaxq.studies.experiment import load_experiment

    for name in ("ok", "ok.1", "_x", "A-b_c.2"):
        (tmp_path / "e.toml").write_text(CONV.replace("[experiment]", f'[experiment]\nname = "{name}"'))
        assert load_experiment(tmp_path / "e.toml").name == name


# ---------------------------------------------------------------------------------------------- 2. reuse
def test_rerun_into_an_earlier_runs_folder_is_refused_without_resume(earlier, capsys):
    out = earlier / "out"
    before = _tree(out)
    rc, stdout, err = _run(capsys, earlier / "collapse.toml", "--out", out)
    assert rc == 2 and stdout == ""
    line = _one_line(err, "--out")
    assert str(out) in line and "not empty" in line and "--resume" in line
    assert _tree(out) == before
    rc, _, err = _run(capsys, earlier / "conv.toml", "--out", out)  # the same experiment too: --resume says so
    assert rc == 2 and "--resume" in _one_line(err, "--out")
    assert _tree(out) == before


def test_rerun_into_the_default_folder_is_refused_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.toml").write_text(CONV)
    (tmp_path / "results" / "e").mkdir(parents=True)
    (tmp_path / "results" / "e" / "notes.txt").write_text("mine\n")
    rc, _, err = _run(capsys, "e.toml")
    line = _one_line(err, "--out")
    assert rc == 2 and "results/e" in line and "default folder" in line and "--resume" in line
    assert sorted(p.name for p in (tmp_path / "results" / "e").iterdir()) == ["notes.txt"]


def test_a_users_folder_is_never_overwritten(tmp_path, capsys):
    """A folder of someone else's files (a manifest.json and summary.csv that are not a run's): refused without
    --resume, and with it (--resume continues only a jaxq run); nothing in it changes."""
    (tmp_path / "e.toml").write_text(CONV)
    cases = {"json": '{"mine": true}\n', "text": "not json\n", "none": None}
    for case, manifest in cases.items():
        mine = tmp_path / f"mine_{case}"
        mine.mkdir()
        (mine / "summary.csv").write_text("a,b\n1,2\n")
        if manifest is not None:
            (mine / "manifest.json").write_text(manifest)
        before = _tree(mine)
        rc, _, err = _run(capsys, tmp_path / "e.toml", "--out", mine)
        assert rc == 2 and "not empty" in _one_line(err, "--out")
        rc, _, err = _run(capsys, tmp_path / "e.toml", "--out", mine, "--resume")
        assert rc == 2 and "continues only a jaxq run" in _one_line(err, "--resume"), case
        assert _tree(mine) == before, case


def test_new_or_empty_folders_and_resume_of_a_run_still_work(earlier, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = _run(capsys, earlier / "conv.toml", "--out", empty, "--json")
    assert rc == 0, err
    rc, out, err = _run(capsys, earlier / "conv.toml", "--out", empty, "--resume", "--json")
    assert rc == 0 and json.loads(out)["chunks_computed"] == 0, err
    with pytest.raises(InputError, match="continues only a jaxq run"):  # the library refuses such a folder too
        runner.check_resumable(Path(__file__).parent)


def test_demo_refuses_a_folder_that_is_not_an_earlier_demo(earlier, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.csv").write_text("a\n1\n")
    for folder in (mine, earlier / "out"):  # a user's files; another run's folder
        before = _tree(folder)
        assert main(["demo", "--small", "--no-progress", "--out", str(folder)]) == 2
        assert "holds no earlier jaxq demo" in _one_line(capsys.readouterr().err, "--out")
        assert _tree(folder) == before


def test_demo_replaces_an_earlier_demo(tmp_path):
    """An earlier demo's folder (its manifest names the experiment "demo" of demo.toml) is replaced: the demo
    writes the same files every time, so nothing of the earlier one is left beside the new one."""
    from jaxq.cli.demo import check_demo_folder

    d = tmp_path / "d"
    d.mkdir()
    exp = {"name": "demo", "study": "convergence", "file": str(d / "demo.toml")}
    (d / "manifest.json").write_text(json.dumps({"fingerprint": "0" * 64, "experiment": exp, "points": []}))
    check_demo_folder(d)
    check_demo_folder(tmp_path / "new")
    (d / "manifest.json").write_text(json.dumps({"fingerprint": "0", "experiment": {**exp, "name": "other"}}))
    with pytest.raises(InputError, match="no earlier jaxq demo"):
        check_demo_folder(d)


# ---------------------------------------------------------------------------------------------- 3. --out
@pytest.mark.parametrize("where, words", [("file", "exists and is not a folder"),
                                          ("/dev/null", "exists and is not a folder"),
                                          ("under_file", "is not a folder"),
                                          ("/proc/x", "no file can be created")])
@pytest.mark.parametrize("command", ["run", "demo"])
def test_out_that_cannot_be_a_folder_is_one_line_naming_out(tmp_path, capsys, where, words, command):
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "e.toml").write_text(CONV)
    out = {"file": tmp_path / "afile", "under_file": tmp_path / "afile" / "sub"}.get(where, where)
    before = _tree(tmp_path)
    argv = ["run", str(tmp_path / "e.toml")] if command == "run" else ["demo", "--small"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err, "--out")
    assert words in line and str(out) in line
    assert _tree(tmp_path) == before


# ---------------------------------------------------------------------------------------------- 4. summary
def _printed_columns(text: str) -> set[str]:
    return {word for line in text.splitlines() for word in line.split()}


def _csv_columns(path: Path) -> list[str]:
    with open(path, newline="") as f:
        return next(csv.reader(f))


@pytest.mark.parametrize("text", [FASTSLOW, pytest.param(NETWORK, marks=pytest.mark.slow)], ids=["fastslow", "network"])
def test_printed_summary_shows_every_column_of_the_tables(tmp_path, capsys, text):
    (tmp_path / "e.toml").write_text(text)
    out = tmp_path / "o"
    rc, stdout, err = _run(capsys, tmp_path / "e.toml", "--out", out)
    assert rc == 0, err
    printed = _printed_columns(stdout)
    for table in ("summary", "fits"):
        if (out / f"{table}.csv").is_file():
            missing = [c for c in _csv_columns(out / f"{table}.csv") if c not in printed]
            assert not missing, (table, missing)
    if "network" in text:  # the diffusion's row: an empty n in the CSV, "diffusion" in the table, never "inf"
        with open(out / "summary.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert [(r["engine"], r["n"]) for r in rows] == [("ctmc", "16"), ("diffusion", "")]
        assert "inf" not in stdout.split()
        assert any(line.split()[:4] == ["network_N", "priority", "diffusion", "diffusion"]
                   for line in stdout.splitlines())


def test_wide_table_is_cut_into_blocks_that_name_their_rows():
    rows = [{"system": "s", "n": n, **{f"col_{k}": k * 1.5 + n for k in range(20)}} for n in (16, 25)]
    text = format_table(rows, width=80, keys=("system", "n"))
    blocks = text.split("\n\n")
    assert len(blocks) > 1
    assert all(len(line) <= 80 for line in text.splitlines())
    assert _printed_columns(text) >= set(rows[0])
    assert blocks[0].splitlines()[0].split()[:2] == ["system", "n"]
    assert all(b.splitlines()[0].split()[0] == "n" for b in blocks[1:])  # the key that differs between rows


def test_render_puts_keys_and_headline_numbers_first():
    rows = [{"point": 0, "criterion": "average", "K": 2, "load": 0.5, "zzz": 1, "gap": 0.0, "cost": 1.25}]
    rec = {"experiment": "e", "study": "fastslow", "replications": 2, "events": 10, "chunks_computed": 1,
           "chunks_reused": 0, "wall_s": 0.1, "out": "o", "files": [], "tables": {"summary": rows}}
    header = render(rec).split("summary:\n")[1].splitlines()[0].split()
    assert header == ["criterion", "K", "load", "gap", "cost", "point", "zzz"]


def test_output_folder_check_leaves_nothing_behind(tmp_path):
    runner.check_output_folder(tmp_path / "a" / "b", resume=False)
    assert os.listdir(tmp_path) == []
