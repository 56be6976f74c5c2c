"""A resume that changes only ``chunk`` reuses the finished replications (replication r is replication r whatever
the chunking): its chunks are rebuilt from the earlier files, nothing is recomputed, the tables are the same bytes."""

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from jaxq.studies import experiment as ex
from jaxq.studies import runner, storage

TINY = """
[experiment]
study = "convergence"
systems = ["pss_P", "pss_PP"]
replications = 5
chunk = 2
seeds = [3]
[grid]
n = [9, 16]
horizon = 2.0
times = [1.0]
"""
TABLES = ("records.csv", "summary.csv", "fits.csv")


def tiny(**overrides):
    data = tomllib.loads(TINY)
    data["experiment"].update(overrides)
    return ex.from_dict(data, Path("/tmp/tiny.toml"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    runner.run(tiny(), out, progress=False)
    return out


def _same_tables(a: Path, b: Path) -> None:
    for t in TABLES:
        assert (a / t).read_bytes() == (b / t).read_bytes(), t


@pytest.mark.parametrize("chunk", [3, 1, 5])
def test_a_new_chunk_reuses_every_replication(reference, tmp_path, capsys, chunk):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(reference, out)
    capsys.readouterr()
    rec = runner.run(tiny(chunk=chunk), out, resume=True, progress=False)
    err = capsys.readouterr().err
    assert rec["chunks_computed_this_session"] == 0 and rec["chunks_reused"] == len(runner.tasks(tiny(chunk=chunk)))
    assert err.count("\n") == 1 and "only the chunking changed" in err and "chunk 2 before" in err, err
    _same_tables(out, reference)
    assert not (out / "chunks" / runner.RECHUNK).exists() and not list((out / "chunks").glob("kept/*.npz"))
    # every chunk file is this run's, and read_run (which checks the digests) reads them all
    import jaxq

    points, records = jaxq.read_run(out)
    assert [r["rep"].tolist() for r in records] == [list(range(5))] * 4
    # and back to the first chunking: again nothing recomputed
    rec = runner.run(tiny(), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0
    _same_tables(out, reference)


def test_a_killed_run_resumed_with_another_chunk_computes_only_what_is_missing(reference, tmp_path, monkeypatch,
                                                                                capsys):
    out = tmp_path / "killed"
    monkeypatch.setenv(runner.FAIL_AFTER_ENV, "4")  # chunks of 2: point 0 whole (3 chunks), point 1 replications 0, 1
    with pytest.raises(runner.SimulatedKill):
        runner.run(tiny(), out, progress=False)
    monkeypatch.delenv(runner.FAIL_AFTER_ENV)
    capsys.readouterr()
    rec = runner.run(tiny(chunk=4), out, resume=True, progress=False)
    err = capsys.readouterr().err
    # chunks of 4: point 0's two chunks and point 1's first (replications 0..3: only 0, 1 were done) ...
    assert "only the chunking changed for 2 chunk files" in err, err
    assert rec["chunks_computed_this_session"] == len(runner.tasks(tiny(chunk=4))) - 2
    _same_tables(out, reference)
    assert not (out / "chunks" / runner.RECHUNK).exists()  # the sources used up, the unused one recomputed over


def test_a_rechunk_killed_half_way_finds_its_staged_files(reference, tmp_path, monkeypatch):
    """Sources staged in chunks/.rechunk (a kill after staging) are found by the next resume."""
    import shutil

    out = tmp_path / "staged"
    shutil.copytree(reference, out)
    stage = out / "chunks" / runner.RECHUNK
    stage.mkdir()
    for f in sorted((out / "chunks").glob("p0000/c*.npz")):  # as if killed after staging point 0's files
        f.rename(stage / f"{storage.chunk_meta(f)['digest']}.npz")
    rec = runner.run(tiny(chunk=3), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0 and not stage.exists()
    _same_tables(out, reference)


def test_chunk_files_of_an_earlier_version_are_rebuilt_through_the_old_manifest(reference, tmp_path, capsys):
    """Files written before chunk files named their replications: the earlier run's manifest names them."""
    import shutil

    out = tmp_path / "legacy"
    shutil.copytree(reference, out)
    for f in (out / "chunks").rglob("*.npz"):
        cols, meta = storage.read_replications(f)
        storage.save_chunk(f, cols, {k: v for k, v in meta.items() if k not in ("replications", "chunk_size")})
    rec = runner.run(tiny(chunk=3), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0 and "only the chunking changed" in capsys.readouterr().err
    _same_tables(out, reference)


def test_replications_of_another_point_or_seed_are_not_taken(reference, tmp_path, capsys):
    """Another seed names other replications: the resume with another chunk and another seed recomputes all."""
    import shutil

    out = tmp_path / "seed"
    shutil.copytree(reference, out)
    rec = runner.run(tiny(chunk=3, seeds=[4]), out, resume=True, progress=False)
    assert rec["chunks_reused"] == 0 and "only the chunking changed" not in capsys.readouterr().err


def test_chunk_files_name_their_replications(reference):
    exp = tiny()
    rd = exp.replication_digests()
    assert rd == tiny(chunk=3).replication_digests() and rd != tiny(seeds=[4]).replication_digests()
    assert len(set(rd)) == 4
    for i, c, lo, count in runner.tasks(exp):
        meta = json.loads(np.load(storage.chunk_path(reference, i, c))["__meta__"].tobytes())
        assert meta["replications"] == rd[i] and meta["chunk_size"] == 2
