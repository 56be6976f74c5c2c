"""Integrity of `jaxq run`: folder lock, per-chunk digests, damaged or foreign chunks, validation first."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.studies import runner, storage
from jaxq.studies import experiment as ex

EXP = """
[experiment]
study = "convergence"
systems = ["pss_PP"]
replications = 6
chunk = 2
seeds = [3]
[grid]
n = [9]
horizon = 2.0
"""
TABLES = ("records.csv", "summary.csv", "fits.csv")


def _run(args, capsys):
    rc = main(["run", *args, "--no-progress", "--json"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    f = d / "e.toml"
    f.write_text(EXP)
    return d, f


@pytest.fixture(scope="module")
def reference(files):
    """Seed 3 and seed 7 runs, uninterrupted (the references every damaged run must reproduce)."""
    d, f = files
    outs = {}
    for seed in (3, 7):
        out = d / f"ref{seed}"
        assert main(["run", str(f), "--out", str(out), "--seed", str(seed), "--no-progress"]) == 0
        outs[seed] = out
    return outs


def _same_tables(a: Path, b: Path) -> None:
    for t in TABLES:
        assert (a / t).read_bytes() == (b / t).read_bytes(), t


def _chunks(out: Path) -> list[Path]:
    return sorted((out / "chunks").rglob("*.npz"))


def test_chunks_carry_the_digest_of_their_run(reference, files):
    _, f = files
    exp = ex.load_experiment(f, [3])
    digests = runner.chunk_digests(exp)
    for (i, c), dg in digests.items():
        got, state = storage.read_chunk(storage.chunk_path(reference[3], i, c), 2, dg, 2 * c)
        assert state == "ok" and got[1]["digest"] == dg
    # the seed-7 run's chunks are foreign to the seed-3 run
    _, state = storage.read_chunk(storage.chunk_path(reference[7], 0, 0), 2, digests[0, 0], 0)
    assert state == "foreign"
    assert len(set(digests.values())) == len(digests)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "foreign"])
def test_damaged_chunk_is_recomputed_with_identical_tables(reference, files, tmp_path, capsys, damage):
    _, f = files
    out = tmp_path / "out"
    shutil.copytree(reference[3], out)
    victim = _chunks(out)[1]
    data = victim.read_bytes()
    if damage == "truncated":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "garbage":
        victim.write_bytes(np.random.default_rng(0).bytes(len(data)))
    else:  # another run's chunk at the same place
        shutil.copy(storage.chunk_path(reference[7], 0, 1), victim)
    for t in TABLES:
        (out / t).unlink()
    rc, stdout, err = _run([str(f), "--out", str(out), "--resume", "--seed", "3"], capsys)
    assert rc == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jaxq: note: recomputing 1 chunk files")
    word = {"truncated": "corrupt", "empty": "corrupt", "garbage": "corrupt", "foreign": "foreign"}[damage]
    assert word in lines[0]
    r = json.loads(stdout)
    assert (r["chunks_computed"], r["chunks_reused"]) == (1, 2)
    _same_tables(out, reference[3])


def test_missing_manifest_does_not_reuse_another_runs_chunks(reference, files, tmp_path, capsys):
    _, f = files
    out = tmp_path / "out"
    shutil.copytree(reference[7], out)
    (out / runner.MANIFEST).unlink()
    rc, stdout, err = _run([str(f), "--out", str(out), "--resume", "--seed", "3"], capsys)
    assert rc == 0, err
    assert "recomputing 3 chunk files" in err and "foreign 3" in err
    assert json.loads(stdout)["chunks_reused"] == 0
    _same_tables(out, reference[3])
    # and the seed-7 tables are not what this folder now holds
    assert (out / "summary.csv").read_bytes() != (reference[7] / "summary.csv").read_bytes()


def test_resume_of_an_intact_run_reuses_everything(reference, files, tmp_path, capsys):
    _, f = files
    out = tmp_path / "out"
    shutil.copytree(reference[3], out)
    rc, stdout, err = _run([str(f), "--out", str(out), "--resume", "--seed", "3"], capsys)
    assert rc == 0 and err == ""
    assert json.loads(stdout)["chunks_computed"] == 0
    _same_tables(out, reference[3])


def test_second_process_is_refused_while_the_folder_is_locked(files, tmp_path, capsys):
    """A second `jaxq run` into a folder that another process holds gets one line and exit 2; once the
    holder dies (SIGKILL: no clean-up), the lock is gone with it."""
    _, f = files
    out = tmp_path / "busy"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from jaxq.studies.runner import output_lock\n"
         "with output_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(120)\n",
         str(out)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = sorted(p.name for p in out.iterdir())
        rc, stdout, err = _run([str(f), "--out", str(out)], capsys)
        assert rc == 2 and stdout == ""
        assert err.count("\n") == 1 and err.startswith("jaxq: error: --out: ") and "in use by another jaxq run" in err
        assert f"process {holder.pid}" in err
        assert sorted(p.name for p in out.iterdir()) == before  # nothing written
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with runner.output_lock(out):  # released by the holder's death
        pass


def test_lock_is_exclusive_within_one_process_too(tmp_path):
    out = tmp_path / "o"
    with runner.output_lock(out):
        with pytest.raises(InputError, match="in use by another jaxq run"):
            with runner.output_lock(out):
                pass
    with runner.output_lock(out):  # released
        pass


BAD = {
    "chunk_1e10": (EXP.replace("chunk = 2", "chunk = 10000000000"), "experiment.chunk"),
    "replications_1e10": (EXP.replace("replications = 6", "replications = 10000000000"), "experiment.replications"),
    "replications_string": (EXP.replace("replications = 6", 'replications = "4"'), "experiment.replications"),
    "many_chunks": (EXP.replace("replications = 6", "replications = 2000000000").replace("chunk = 2", "chunk = 1"),
                    "experiment.chunk"),
    "extra_table": (EXP + "[extra]\nx = 1\n", "extra"),
    "n_string": (EXP.replace("n = [9]", 'n = ["9"]'), "grid.n.0"),
    "pss_horizon_1e300": (EXP.replace("horizon = 2.0", "horizon = 1e300"), "grid.horizon"),
    "sde_dt_1e-300": ('[experiment]\nstudy = "sde"\nsystems = ["pss_PP"]\nreplications = 4\n'
                      "[grid]\ndt = [1e-300]\nhorizon = 2.0\n", "grid.dt"),
    "sde_horizon_1e300": ('[experiment]\nstudy = "sde"\nsystems = ["pss_PP"]\nreplications = 4\n'
                          "[grid]\ndt = [0.1]\nhorizon = 1e300\n", "grid.horizon"),
    "h_1e300": (EXP.replace('systems = ["pss_PP"]', 'systems = ["big_h.toml"]'), "big_h.toml: cost.h.0"),
    "seed_bool": (EXP.replace("seeds = [3]", "seeds = [true]"), "experiment.seeds.0"),
}


def _tree(d: Path):
    return sorted((str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns) for p in d.rglob("*"))


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_experiment_writes_nothing(tmp_path, capsys, case):
    text, key = BAD[case]
    from jaxq.examples import path

    (tmp_path / "big_h.toml").write_text(path("pss_PP").read_text().replace("h = [1.0, 1.0]", "h = [1e300, 1.0]"))
    f = tmp_path / "bad.toml"
    f.write_text(text)
    fresh = tmp_path / "fresh"
    rc, stdout, err = _run([str(f), "--out", str(fresh)], capsys)
    assert rc == 2 and stdout == ""
    assert err.count("\n") == 1 and err.startswith(f"jaxq: error: {key}"), err
    assert not fresh.exists()
    # an existing folder (an earlier run's) is left exactly as it was, with and without --resume
    old = tmp_path / "old"
    (old / "chunks").mkdir(parents=True)
    (old / "summary.csv").write_text("x\n1\n")
    (old / "manifest.json").write_text('{"fingerprint": "abc"}')
    before = _tree(old)
    rc, _, err = _run([str(f), "--out", str(old), "--resume"], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert _tree(old) == before


def test_resume_into_another_experiments_folder_writes_nothing(reference, files, tmp_path, capsys):
    d, f = files
    out = tmp_path / "other"
    shutil.copytree(reference[3], out)
    before = _tree(out)
    time.sleep(0.01)
    g = d / "e6.toml"
    g.write_text(EXP.replace("horizon = 2.0", "horizon = 3.0"))  # another grid setting: another experiment
    rc, _, err = _run([str(g), "--out", str(out), "--resume"], capsys)
    assert rc == 2 and err.startswith("jaxq: error: --resume: ") and err.count("\n") == 1
    assert _tree(out) == before
