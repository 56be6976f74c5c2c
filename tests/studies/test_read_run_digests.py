"""jaxq.read_run checks every chunk against the run's manifest, as a resume does: foreign, damaged or missing
chunks are refused (naming the folder and the grid point) unless complete_only=True, which says what it left out."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import jaxq
from jaxq.studies import runner, storage

EXP = """
[experiment]
study = "convergence"
systems = ["{system}"]
replications = 6
chunk = 2
seeds = [{seed}]
[grid]
n = [9, 16]
horizon = 2.0
"""


def _experiment(seed: int, system: str = "pss_PP") -> str:
    return EXP.format(seed=seed, system=system)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished runs of the same grid with seeds 3 and 7 (two points of three chunks each)."""
    d = tmp_path_factory.mktemp("runs")
    outs = {}
    for seed in (3, 7):
        outs[seed] = d / f"s{seed}"
        jaxq.run_experiment(_experiment(seed), outs[seed], progress=False)
    return outs


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_clean_run_reads_whole(runs):
    points, records = jaxq.read_run(runs[3])
    assert [p["n"] for p in points] == [9, 16] and [r["rep"].tolist() for r in records] == [list(range(6))] * 2
    got = jaxq.read_run(runs[3], complete_only=True)
    assert got.left_out == [] and got.warnings == ()


def test_a_chunk_of_another_run_is_refused(runs, tmp_path):
    out = _copy(runs[3], tmp_path / "mixed")
    shutil.copy(storage.chunk_path(runs[7], 1, 1), storage.chunk_path(out, 1, 1))  # same place, seed 7's numbers
    with pytest.raises(jaxq.InputError) as e:
        jaxq.read_run(out)
    msg = str(e.value)
    assert e.value.key == "out" and str(out) in msg and "grid point 1" in msg and "chunk 1 foreign" in msg
    assert "n 16" in msg and "complete_only=True" in msg
    points, records = got = jaxq.read_run(out, complete_only=True)
    assert [p["n"] for p in points] == [9] and len(records) == 1
    assert got.left_out == [{"point": 1, "grid_point": json.loads((out / "manifest.json").read_text())["points"][1],
                             "chunks": {1: "foreign"}}]
    assert len(got.warnings) == 1 and "grid point 1" in got.warnings[0] and "foreign" in got.warnings[0]
    ref_points, ref_records = jaxq.read_run(runs[3])
    assert np.array_equal(records[0]["J"], ref_records[0]["J"])


@pytest.mark.parametrize("damage", ["missing", "corrupt", "incomplete"])
def test_missing_or_damaged_chunks_are_refused(runs, tmp_path, damage):
    out = _copy(runs[3], tmp_path / damage)
    victim = storage.chunk_path(out, 0, 2)
    if damage == "missing":
        victim.unlink()
    elif damage == "corrupt":
        victim.write_bytes(victim.read_bytes()[:100])
    else:  # a readable chunk file of the right run and place, but the wrong replications
        cols, meta = storage.read_replications(victim)
        storage.save_chunk(victim, {k: c[:1] for k, c in cols.items()}, meta)
    with pytest.raises(jaxq.InputError, match=rf"grid point 0 .*chunk 2 {'missing' if damage == 'missing' else 'damaged'}"):
        jaxq.read_run(out)
    got = jaxq.read_run(out, complete_only=True)
    assert [e["point"] for e in got.left_out] == [0] and got.left_out[0]["chunks"] == {2: damage}


def test_a_killed_resume_of_an_edited_system_mixes_nothing(tmp_path, monkeypatch):
    """The issue's case: a run, its system edited, the resume killed half-way: the point holds chunks of both
    systems; read_run refuses it (the old system's chunks are foreign to the manifest now)."""
    from jaxq.examples import path

    system = tmp_path / "mine.toml"
    shutil.copy(path("pss_PP"), system)
    text = EXP.format(seed=3, system=str(system))
    out = tmp_path / "run"
    jaxq.run_experiment(text, out, progress=False)
    assert "gamma = 0.5\n" in system.read_text()
    system.write_text(system.read_text().replace("gamma = 0.5\n", "gamma = 0.6\n"))
    monkeypatch.setenv(runner.FAIL_AFTER_ENV, "2")
    with pytest.raises(runner.SimulatedKill):
        jaxq.run_experiment(text, out, resume=True, progress=False)
    with pytest.raises(jaxq.InputError, match=r"grid point 0 .*chunk 2 foreign"):
        jaxq.read_run(out)
    got = jaxq.read_run(out, complete_only=True)
    assert got[0] == [] and [e["chunks"] for e in got.left_out] == [{2: "foreign"}, {0: "foreign", 1: "foreign",
                                                                                     2: "foreign"}]
    monkeypatch.delenv(runner.FAIL_AFTER_ENV)
    jaxq.run_experiment(text, out, resume=True, progress=False)
    assert jaxq.read_run(out, complete_only=True).left_out == []


def test_a_manifest_of_an_earlier_version_is_checked_by_its_rebuilt_experiment(runs, tmp_path):
    out = _copy(runs[3], tmp_path / "old")
    man = json.loads((out / "manifest.json").read_text())
    del man["point_digests"]
    (out / "manifest.json").write_text(json.dumps(man))
    assert len(jaxq.read_run(out)[1]) == 2
    shutil.copy(storage.chunk_path(runs[7], 0, 0), storage.chunk_path(out, 0, 0))
    with pytest.raises(jaxq.InputError, match=r"grid point 0 .*chunk 0 foreign"):
        jaxq.read_run(out)


def test_bad_arguments(tmp_path):
    with pytest.raises(jaxq.InputError, match="complete_only"):
        jaxq.read_run(tmp_path, complete_only="yes")
    with pytest.raises(jaxq.InputError, match="no jaxq run"):
        jaxq.read_run(tmp_path)


@pytest.mark.parametrize("damage", ["drop", "nan"])
def test_a_chunk_without_a_column_or_with_nan_is_refused_by_name(runs, tmp_path, damage):
    """A chunk that lacks a column the point's other chunks have, or holds NaN where the others hold numbers, is
    refused naming the chunk and the column (once, a missing control column was dropped from every chunk's
    records without a word)."""
    out = _copy(runs[3], tmp_path / damage)
    path = storage.chunk_path(out, 1, 2)
    with np.load(path) as z:
        cols = {k: np.asarray(z[k]) for k in z.files}
    column = next(k for k in cols if k not in ("rep", "__meta__") and cols[k].dtype.kind == "f")
    if damage == "drop":
        del cols[column]
    else:
        cols[column] = cols[column].copy()
        cols[column][0] = np.nan
    with open(path, "wb") as f:
        np.savez(f, **cols)
    with pytest.raises(jaxq.InputError) as e:
        jaxq.read_run(out)
    assert "grid point 1" in str(e.value) and "chunk 2" in str(e.value) and column in str(e.value)
    got = jaxq.read_run(out, complete_only=True)
    assert [p["n"] for p in got[0]] == [9] and got.left_out[0]["point"] == 1


def test_a_run_recorded_in_another_checkout_before_a_grid_key_existed_reads(tmp_path):
    """An earlier version's manifest (no chunk digests) names its bundled systems by the path of the checkout that
    ran it and lacks the grid keys added since (``theta_rule``, at the value such runs had): the experiment is
    rebuilt from the bundled example of the same name and the recorded value, and the chunks check."""
    out = tmp_path / "old"
    jaxq.run_experiment(_experiment(3).replace("horizon = 2.0", 'horizon = 2.0\ntheta_rule = "paper"'), out,
                        progress=False)
    man = json.loads((out / "manifest.json").read_text())
    del man["point_digests"]
    del man["experiment"]["grid"]["theta_rule"]
    man["experiment"]["systems"] = {k: "/another/checkout/jaxq/examples/" + Path(v).name
                                    for k, v in man["experiment"]["systems"].items()}
    (out / "manifest.json").write_text(json.dumps(man))
    points, records = jaxq.read_run(out)
    assert [p["n"] for p in points] == [9, 16] and [r["rep"].tolist() for r in records] == [list(range(6))] * 2


def test_a_resume_recomputes_a_chunk_with_nan_where_its_point_holds_numbers(runs, tmp_path, capsys):
    """A chunk whose J is NaN while the point's other chunks hold numbers is damaged: the resume recomputes it (it
    once crashed in the figure after writing tables with empty cells), and the tables are the clean run's."""
    out = _copy(runs[3], tmp_path / "nan")
    path = storage.chunk_path(out, 0, 1)
    with np.load(path) as z:
        cols = {k: np.asarray(z[k]) for k in z.files}
    cols["J"] = np.full_like(cols["J"], np.nan)
    with open(path, "wb") as f:
        np.savez(f, **cols)
    rec = jaxq.run_experiment(_experiment(3), out, resume=True, progress=False)
    assert "inconsistent 1" in capsys.readouterr().err
    assert rec["chunks_computed_this_session"] == 1 and rec["warnings"] == []
    assert (out / "summary.csv").read_bytes() == (runs[3] / "summary.csv").read_bytes()


def test_nan_in_some_replications_of_a_point_is_a_note():
    from types import SimpleNamespace

    from jaxq.studies.runner import nan_notes

    exp = SimpleNamespace(points=[{"system": "pss_PP", "n": 9}, {"system": "pss_PP", "n": 16}])
    records = [{"J": np.array([1.0, np.nan, 2.0]), "switch_at": np.full(3, np.nan)}, {"J": np.array([1.0, 2.0, 3.0])}]
    assert nan_notes(exp, records) == ["grid point 0 (system pss_PP, n 9): 1 of 3 replications hold NaN in J; its "
                                       "estimates from that column are left empty"]
