"""Precision targets of an experiment (``target_rel_se``, ``grid.target_rel_se_at``): a pilot plans each point's
replications, the run is a fixed run's prefix, resume keeps pilots and chunks, bad values are refused up front."""

import json
import math
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.mc.target import plan as planned_reps
from jaxq.studies import experiment as ex
from jaxq.studies import runner, targets

TARGETED = """
[experiment]
study = "convergence"
systems = ["pss_PP"]
target_rel_se = 0.03
replications = 2000
chunk = 8
seeds = [3]
[grid]
n = [16, 25]
horizon = 1.0
target_rel_se_at = {"25" = 0.05}
"""


def load(text=TARGETED, **exp):
    data = tomllib.loads(text)
    data["experiment"].update(exp)
    return ex.from_dict(data, Path("/tmp/targeted.toml"))


def read(out, name):
    return (Path(out) / name).read_bytes()


def summary(rec):
    return {r["n"]: r for r in rec["tables"]["summary"]}


@pytest.fixture(scope="module")
def targeted(tmp_path_factory):
    out = tmp_path_factory.mktemp("targeted")
    return out, runner.run(load(), out, progress=False)


def test_each_point_is_planned_by_its_pilot_and_meets_its_target(targeted):
    out, rec = targeted
    rows = summary(rec)
    assert rows[16]["rel_se_target"] == 0.03 and rows[25]["rel_se_target"] == 0.05  # the per-n override
    for row in rows.values():
        m, q = row["pilot_reps"], row["pilot_rel_se"]
        assert m == 128 and row["max_reps"] == 2000 and row["stopped_by"] == "target"
        assert row["reps"] == planned_reps(q, m, row["rel_se_target"])  # jaxq.mc.target's plan
        assert row["rel_se"] == pytest.approx(row["J_hat_stderr"] / row["J_hat"], rel=1e-12)
        assert row["rel_se"] <= row["rel_se_target"]
    assert rows[16]["reps"] > 128  # the target needs more than the pilot
    plans = json.loads(read(out, "run.json"))["targets"]
    assert [(p["point"], p["reps"], p["stopped_by"]) for p in plans] == [(0, rows[16]["reps"], "target"),
                                                                       (1, rows[25]["reps"], "target")]
    assert len(list((out / targets.PILOTS).glob("*.json"))) == 2
    man = json.loads(read(out, "manifest.json"))
    assert [p["reps"] for p in man["points"]] == [rows[16]["reps"], rows[25]["reps"]]  # read_run reads the plan


@pytest.mark.slow  # a targeted run's prefix and resume checks (its plan and the refusals run fast)
def test_the_run_is_the_fixed_run_of_its_replications(targeted, tmp_path):
    """Same seed, R replications per point: the same records byte for byte, the same estimates; and a prefix of a
    longer fixed run."""
    out, rec = targeted
    rows = summary(rec)
    r16, r25 = rows[16]["reps"], rows[25]["reps"]
    fixed = TARGETED.replace("target_rel_se = 0.03\n", "").replace("replications = 2000", f"replications = {r16}")
    fixed = fixed.replace('target_rel_se_at = {"25" = 0.05}', f'replications_at = {{"25" = {r25}}}')
    exp = load(fixed)
    fout = tmp_path / "fixed"
    frec = runner.run(exp, fout, progress=False)
    assert read(fout, "records.csv") == read(out, "records.csv")
    for n in (16, 25):
        assert summary(frec)[n]["J_hat"] == rows[n]["J_hat"]
        assert summary(frec)[n]["J_hat_stderr"] == rows[n]["J_hat_stderr"]
    # the same chunk files: a fixed run resumed in the targeted run's folder computes nothing
    shutil.rmtree(fout)
    shutil.copytree(out, fout)
    again = runner.run(exp, fout, resume=True, progress=False)
    assert again["chunks_computed_this_session"] == 0
    # a prefix of a longer fixed run with the same seed
    longer = load(fixed.replace("n = [16, 25]", "n = [16]").split("replications_at")[0], replications=r16 + 8)
    lout = tmp_path / "longer"
    runner.run(longer, lout, progress=False)
    whole = runner.gather(longer, lout)[0][0]
    mine = runner.gather(targets.plan(load(), out), out)[0][0]  # the plan read back from the run's pilots
    assert np.array_equal(whole["J"][:r16], mine["J"]) and np.array_equal(whole["rep"][:r16], mine["rep"])


@pytest.mark.slow  # a targeted run's prefix and resume checks (its plan and the refusals run fast)
def test_a_killed_run_resumes_without_its_pilots_and_with_its_chunks(targeted, tmp_path, monkeypatch):
    out_ref, rec_ref = targeted
    out = tmp_path / "killed"
    monkeypatch.setenv(runner.FAIL_AFTER_ENV, "3")
    with pytest.raises(runner.SimulatedKill):
        runner.run(load(), out, progress=False)
    monkeypatch.delenv(runner.FAIL_AFTER_ENV)
    assert len(list((out / "chunks").rglob("*.npz"))) == 3 and len(list((out / targets.PILOTS).glob("*.json"))) == 2

    def no_pilot(*a, **k):
        raise AssertionError("a resumed run reads its pilots")

    monkeypatch.setattr(targets, "run_pilot", no_pilot)
    rec = runner.run(load(), out, resume=True, progress=False)
    assert rec["chunks_reused"] == 3 and rec["chunks_computed_this_session"] == rec["chunks"] - 3
    for f in ("records.csv", "summary.csv", "fits.csv"):
        assert read(out, f) == read(out_ref, f), f


@pytest.mark.slow  # resume variants (the killed-run resume runs fast)
def test_a_run_killed_between_its_pilots_keeps_the_first(targeted, tmp_path, monkeypatch):
    out_ref, _ = targeted
    out = tmp_path / "pilots"
    pilot, ran, kill = targets.run_pilot, [], [True]

    def counted(exp, pt, *a, **k):
        ran.append(pt["n"])
        if kill[0] and len(ran) == 2:
            raise runner.SimulatedKill("killed between two pilots")
        return pilot(exp, pt, *a, **k)

    monkeypatch.setattr(targets, "run_pilot", counted)
    with pytest.raises(runner.SimulatedKill):
        runner.run(load(), out, progress=False)
    assert len(list((out / targets.PILOTS).glob("*.json"))) == 1 and not (out / "chunks").exists()
    ran.clear()
    kill[0] = False
    runner.run(load(), out, resume=True, progress=False)
    assert ran == [25]  # the pilot of n = 16 was read back
    for f in ("records.csv", "summary.csv", "fits.csv"):
        assert read(out, f) == read(out_ref, f), f


@pytest.mark.slow  # resume variants (the killed-run resume runs fast)
def test_lost_pilots_and_chunks_are_computed_again_to_the_same_bytes(targeted, tmp_path):
    out_ref, _ = targeted
    out = tmp_path / "damaged"
    shutil.copytree(out_ref, out)
    for f in (out / targets.PILOTS).glob("*.json"):
        f.unlink()
    (out / "chunks" / "p0000" / "c000005.npz").unlink()
    rec = runner.run(load(), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 1 and len(list((out / targets.PILOTS).glob("*.json"))) == 2
    for f in ("records.csv", "summary.csv", "fits.csv"):
        assert read(out, f) == read(out_ref, f), f


@pytest.mark.slow  # resume variants (the killed-run resume runs fast)
def test_a_resume_with_another_target_keeps_the_shared_chunks(targeted, tmp_path):
    out_ref, rec_ref = targeted
    out = tmp_path / "looser"
    shutil.copytree(out_ref, out)
    rec = runner.run(load(target_rel_se=0.05), out, resume=True, progress=False)  # n = 16 now needs fewer
    r16 = summary(rec)[16]["reps"]
    assert summary(rec)[16]["pilot_rel_se"] == summary(rec_ref)[16]["pilot_rel_se"]  # the same pilot, kept
    assert r16 < summary(rec_ref)[16]["reps"] and rec["chunks_computed_this_session"] == 0  # all were there
    ref = np.genfromtxt(out_ref / "records.csv", delimiter=",", names=True)
    new = np.genfromtxt(out / "records.csv", delimiter=",", names=True)
    keep = (ref["n"] == 25) | (ref["rep"] < r16)
    assert np.array_equal(new["J"], ref["J"][keep])


@pytest.mark.slow  # a targeted run's prefix and resume checks (its plan and the refusals run fast)
def test_a_point_the_pilot_cannot_plan_runs_its_cap(tmp_path, monkeypatch):
    """A pilot estimate of 0 (or not finite) plans no number of replications: the point runs max_reps, says so."""
    exp = load(TARGETED.replace("n = [16, 25]", "n = [16]").replace('target_rel_se_at = {"25" = 0.05}', ""),
               replications=70)
    monkeypatch.setattr(targets, "run_pilot", lambda *a, **k: math.inf)
    rec = runner.run(exp, tmp_path / "cap", progress=False)
    row = summary(rec)[16]
    assert (row["reps"], row["stopped_by"], row["pilot_reps"], row["pilot_rel_se"]) == (70, "max_reps", 70, None)


TINY_2X2 = ('[experiment]\nstudy = "convergence"\nsystems = ["pss_PP"]\n{exp}\n[grid]\nn = [16, 25]\nhorizon = 1.0\n'
            "{grid}\n")
BAD = {
    "zero": ("target_rel_se = 0", "", "experiment.target_rel_se"),
    "negative": ("target_rel_se = -0.01", "", "experiment.target_rel_se"),
    "nan": ("target_rel_se = nan", "", "experiment.target_rel_se"),
    "one": ("target_rel_se = 1.0", "", "experiment.target_rel_se"),
    "above_one": ("target_rel_se = 1.5", "", "experiment.target_rel_se"),
    "string": ('target_rel_se = "0.01"', "", "experiment.target_rel_se"),
    "bool": ("target_rel_se = true", "", "experiment.target_rel_se"),
    "neither": ("chunk = 8", "", "experiment.replications"),
    "cap_below_2": ("target_rel_se = 0.01\nreplications = 1", "", "experiment.replications"),
    "at_zero": ("replications = 8", 'target_rel_se_at = {"25" = 0}', "grid.target_rel_se_at.25"),
    "at_inf": ("replications = 8", 'target_rel_se_at = {"25" = inf}', "grid.target_rel_se_at.25"),
    "at_not_an_n": ("replications = 8", 'target_rel_se_at = {"36" = 0.1}', "grid.target_rel_se_at"),
    "at_twice": ("replications = 8", 'target_rel_se_at = {"25" = 0.1, "25.0" = 0.2}', "grid.target_rel_se_at"),
}
OTHER_STUDIES = {
    "weak": ('[experiment]\nstudy = "weak"\nsystems = ["pss_PP"]\ntarget_rel_se = 0.01\n[grid]\nn = [16]\n',
             "experiment.target_rel_se", "study 'weak'"),
    "weak_at": ('[experiment]\nstudy = "weak"\nsystems = ["pss_PP"]\nreplications = 8\n[grid]\nn = [16]\n'
                'target_rel_se_at = {"16" = 0.1}\n', "grid.target_rel_se_at", "study 'weak'"),
    "optimal": ('[experiment]\nstudy = "optimal"\nsystems = ["pss_PP"]\ntarget_rel_se = 0.01\n[grid]\nn = [16]\n',
                "experiment.target_rel_se", "study 'optimal'"),
    "fastslow_without_simulation": ('[experiment]\nstudy = "fastslow"\ntarget_rel_se = 0.01\n[grid]\nloads = [0.5]\n'
                                    "ratios = [0.3]\n", "experiment.target_rel_se", "grid.simulate = true"),
}


def _refused(tmp_path, capsys, text, key):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    out = tmp_path / "out"
    assert main(["run", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"jaxq: error: {key}") and "\n" not in err, err
    assert not out.exists()
    return err


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_targets_are_one_line_exit_2_before_anything_is_written(tmp_path, capsys, case):
    exp, grid, key = BAD[case]
    err = _refused(tmp_path, capsys, TINY_2X2.format(exp=exp, grid=grid), key)
    if key.endswith("target_rel_se") or key.startswith("grid.target_rel_se_at."):
        assert "number" in err


@pytest.mark.parametrize("case", sorted(OTHER_STUDIES))
def test_a_study_that_takes_no_target_is_named(tmp_path, capsys, case):
    text, key, words = OTHER_STUDIES[case]
    assert words in _refused(tmp_path, capsys, text, key)


def test_which_studies_take_a_target():
    assert targets.targeted_studies() == ["collapse", "convergence", "fastslow", "markov", "network", "policies",
                                          "random_systems", "sde"]


def test_a_targeted_point_is_checked_for_work_at_its_cap_and_fixed_points_are_unchanged():
    exp = load()
    assert [(p["reps"], p["max_reps"], p["rel_se_target"]) for p in exp.points] == [(2000, 2000, 0.03),
                                                                                   (2000, 2000, 0.05)]
    alone = load(TARGETED.replace("target_rel_se = 0.03\n", ""))  # the override alone targets its n only
    assert "rel_se_target" not in alone.points[0] and alone.points[1]["rel_se_target"] == 0.05
    # without a target nothing of the fixed run changes: no target keys, the same digests and fingerprint keys
    fixed = load(TARGETED.replace("target_rel_se = 0.03\n", "").replace('target_rel_se_at = {"25" = 0.05}', ""))
    assert not any(k in p for p in fixed.points for k in targets.TARGET_KEYS)
    assert "target_rel_se_at" not in ex.digested_grid(fixed.grid.model_dump(mode="json"))
    assert exp.point_digests() == fixed.point_digests()  # replication r of a point is the same number
    with pytest.raises(RuntimeError, match="not planned"):  # chunks are cut only from a plan
        runner.compute(exp, Path("/nonexistent"))


OTHER_TARGETED = {
    "collapse": '[experiment]\nstudy = "collapse"\nsystems = ["pss_PP"]\ntarget_rel_se = 0.05\nreplications = 4000\n'
                'chunk = 64\n[grid]\nn = [16]\nhorizon = 1.0\n',
    "sde": '[experiment]\nstudy = "sde"\nsystems = ["pss_PP"]\ntarget_rel_se = 0.01\nreplications = 5000\nchunk = 128\n'
           "[grid]\ndt = [0.1]\nhorizon = 5.0\n",
    "network": '[experiment]\nstudy = "network"\nsystems = ["network_N"]\ntarget_rel_se = 0.05\nreplications = 2000\n'
               "chunk = 64\n[grid]\nn = [4]\nwarmup = 2.0\nhorizon = 10.0\ndiffusion = true\nsde_paths = 16\n",
    "fastslow": '[experiment]\nstudy = "fastslow"\ntarget_rel_se = 0.005\nreplications = 4000\nchunk = 128\n[grid]\n'
                "loads = [0.5]\nratios = [0.3]\nsimulate = true\nsteps = 2000\nwarmup = 200\n",
    "random_systems": '[experiment]\nstudy = "random_systems"\ntarget_rel_se = 0.05\nreplications = 2000\n'
                      'chunk = 128\n[grid]\nper_case = 1\ncases = ["P"]\nn = [16]\nhorizon = 2.0\n',
    "markov": '[experiment]\nstudy = "markov"\ntarget_rel_se = 0.02\nreplications = 4000\nchunk = 128\n[grid]\n'
              'model = "user_markov_models:mmcm_with_controls"\nparams = {params}\nhorizon = 20.0\ndiscount = 1.0\n'
              "warmup = 2.0\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(OTHER_TARGETED))
def test_every_study_that_takes_a_target_plans_runs_and_resumes(tmp_path, monkeypatch, study):
    """Each study's targeted estimate (its table's) is planned by the pilot; a resume recomputes nothing. Points a
    target does not apply to (the network's diffusion reference) keep their own count."""
    text = OTHER_TARGETED[study]
    if study == "markov":
        shutil.copy(Path(__file__).parents[1] / "sim" / "markov_examples.py", tmp_path / "user_markov_models.py")
        monkeypatch.syspath_prepend(str(tmp_path))
        import user_markov_models as m

        text = text.replace("{params}", "{" + ", ".join(f"{k} = {v!r}" for k, v in m.MMCM_PARAMS.items()) + "}")
    exp = ex.from_dict(tomllib.loads(text), tmp_path / f"{study}.toml")
    out = tmp_path / "out"
    rec = runner.run(exp, out, progress=False)
    plans = {p["point"]: p for p in rec["targets"]}
    for i, pt in enumerate(exp.points):
        if "rel_se_target" not in pt:
            assert i not in plans and pt["engine"] == "diffusion"
            continue
        plan = plans[i]
        assert plan["reps"] == planned_reps(plan["pilot_rel_se"], plan["pilot_reps"], plan["rel_se_target"])
        assert plan["stopped_by"] == "target" and plan["rel_se"] <= plan["rel_se_target"]
        rows = [r for rows in rec["tables"].values() for r in rows if r.get("point") == i]
        assert rows and all(r["rel_se_target"] == plan["rel_se_target"] and r["stopped_by"] == "target" for r in rows)
    again = runner.run(exp, out, resume=True, progress=False)
    assert again["chunks_computed_this_session"] == 0 and again["tables"] == rec["tables"]
