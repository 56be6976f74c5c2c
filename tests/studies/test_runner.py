"""The experiment runner: validation, bit-identical resume, devices/processes/chunking invariance, studies."""

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.studies import experiment as ex
from jaxq.studies import runner, stats
from jaxq.sim import pss2x2 as PT

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


def tiny(text=TINY, file="/tmp/tiny.toml", **exp_overrides):
    data = tomllib.loads(text)
    data["experiment"].update(exp_overrides)
    return ex.from_dict(data, Path(file))


def read(out, name):
    return (Path(out) / name).read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    rec = runner.run(tiny(), out, progress=False)
    return out, rec


def test_tables_figures_and_record(reference):
    out, rec = reference
    for f in ("records.csv", "summary.csv", "fits.csv", "J_n.png", "gap_loglog.png", "run.json", "manifest.json"):
        assert (out / f).is_file(), f
    run_json = json.loads(read(out, "run.json"))
    assert run_json["chunks"] == 12 and run_json["replications"] == 20 and run_json["seeds"] == [3]
    assert {"jaxq", "jax", "numpy"} <= set(run_json["versions"]) and run_json["devices"]
    rows = read(out, "records.csv").decode().splitlines()
    assert len(rows) == 1 + 20  # header + one row per (point, replication)
    assert (out / "chunks" / ".gitignore").read_text() == "*\n"


def test_runner_matches_the_simulator_api(reference):
    """Chunk c of a point is replications [c*chunk, ...) of the simulator's own estimate (same keys)."""
    from jaxq.examples import path
    from jaxq.model import load
    from jaxq.sim.pss2x2 import simulate

    out, rec = reference
    direct = simulate(load(path("pss_PP")), 16, 5, seed=3, truncation=PT.Truncation(horizon=2.0),
                      outputs=PT.Outputs(record_times=(1.0,)))
    row = next(r for r in rec["tables"]["summary"] if r["system"] == "pss_PP" and r["n"] == 16)
    assert row["J_hat"] == direct.value and row["J_hat_stderr"] == direct.stderr


def test_killed_run_resumes_bit_identical(reference, tmp_path, monkeypatch):
    out_ref, _ = reference
    out = tmp_path / "killed"
    monkeypatch.setenv(runner.FAIL_AFTER_ENV, "5")
    with pytest.raises(runner.SimulatedKill):
        runner.run(tiny(), out, progress=False)
    assert not (out / "run.json").exists() and not (out / "summary.csv").exists()
    assert len(list((out / "chunks").rglob("*.npz"))) == 5
    assert not list(out.rglob(".*.tmp-*"))  # nothing half-written
    monkeypatch.delenv(runner.FAIL_AFTER_ENV)
    rec = runner.run(tiny(), out, resume=True, progress=False)
    assert (rec["chunks_computed_this_session"], rec["chunks_reused"]) == (7, 5)
    for f in ("records.csv", "summary.csv", "fits.csv"):
        assert read(out, f) == read(out_ref, f), f
    # resuming a finished run computes nothing and changes nothing
    rec = runner.run(tiny(), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0 and read(out, "records.csv") == read(out_ref, "records.csv")


def test_chunk_size_and_process_split_do_not_change_the_numbers(reference, tmp_path):
    out_ref, _ = reference
    exp = tiny(chunk=3)
    out = tmp_path / "split"
    runner._prepare(exp, out, resume=False, is_main=True)
    s = [runner.compute(exp, out, process=(p, 3), progress=False) for p in range(3)]  # round-robin tasks
    assert sum(x["computed"] for x in s) == len(runner.tasks(exp))
    runner.finish(exp, out, {"computed": 0, "reused": 0, "wall_s": 0.0}, None)
    assert read(out, "records.csv") == read(out_ref, "records.csv")
    assert read(out, "summary.csv") == read(out_ref, "summary.csv")


def test_resume_refuses_a_different_experiment(reference, tmp_path):
    out = tmp_path / "other"
    runner._prepare(tiny(), out, resume=False, is_main=True)
    for other in (tiny(TINY.replace("horizon = 2.0", "horizon = 3.0")), tiny(cv=False),
                  tiny(TINY.replace('study = "convergence"', 'study = "collapse"'))):
        with pytest.raises(InputError, match="different experiment"):
            runner.run(other, out, resume=True, progress=False)


GROWN = TINY.replace('systems = ["pss_P", "pss_PP"]', 'systems = ["pss_PP", "pss_T2", "pss_P"]').replace(
    "n = [9, 16]", 'n = [16, 12, 9]\nreplications_at = {"9" = 7}')


@pytest.mark.slow
def test_a_grown_experiment_resumes_with_the_shared_points_chunks(reference, tmp_path):
    """More n, another system (in another order), more replications at one n: the resumed run keeps every
    chunk the two grids share (moved to the new point indices) and equals a fresh run of the grown grid."""
    out_ref, rec_ref = reference
    out = tmp_path / "grown"
    shutil.copytree(out_ref, out)
    grown = tiny(GROWN)
    rec = runner.run(grown, out, resume=True, progress=False)
    # shared: pss_P and pss_PP at n = 16 (3 chunks each) and at n = 9 chunks 0 and 1 (replications 0..3; chunk 2
    # held replication 4 alone and now holds 4 and 5)
    assert rec["chunks_reused"] == 10 and rec["chunks_computed_this_session"] == len(runner.tasks(grown)) - 10
    fresh = tmp_path / "fresh"
    runner.run(grown, fresh, progress=False)
    assert read(out, "records.csv") == read(fresh, "records.csv")
    assert read(out, "summary.csv") == read(fresh, "summary.csv")
    # an adoption killed half-way leaves chunks in chunks/.adopt: the next resume still finds them
    stage = out / "chunks" / ".adopt"
    stage.mkdir()
    moved = sorted((out / "chunks").glob("p*/c*.npz"))[:2]
    for k, f in enumerate(moved):
        os.replace(f, stage / f"left-{k}.npz")
    rec = runner.run(grown, out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0 and read(out, "records.csv") == read(fresh, "records.csv")
    # and back: the original grid resumes from the grown folder without computing anything
    rec = runner.run(tiny(), out, resume=True, progress=False)
    assert rec["chunks_computed_this_session"] == 0 and read(out, "records.csv") == read(out_ref, "records.csv")


def _toml_value(v) -> str:
    if isinstance(v, dict):  # an inline table
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


@pytest.mark.parametrize(
    "patch, key",
    [
        (("experiment", "study", "nope"), "experiment.study"),
        (("experiment", "replications", 1), "experiment.replications"),
        (("experiment", "colour", 1), "experiment.colour"),
        (("experiment", "systems", ["no_such_system"]), "experiment.systems"),
        (("grid", "n", [0.5]), "grid.n.0"),
        (("grid", "policies", ["XY"]), "grid.policies"),
        (("grid", "policies", ["PP:abc"]), "grid.policies"),
        (("grid", "replications_at", {"10": 8}), "grid.replications_at"),  # not a value of n: a typo
        (("grid", "replications_at", {"ten": 8}), "grid.replications_at"),
    ],
)
def test_bad_experiment_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, patch, key):
    data = tomllib.loads(TINY)
    table, k, v = patch
    data[table][k] = v
    lines = []
    for tab, d in data.items():
        lines.append(f"[{tab}]")
        lines += [f"{kk} = {_toml_value(vv)}" for kk, vv in d.items()]
    f = tmp_path / "bad.toml"
    f.write_text("\n".join(lines))
    out = tmp_path / "out"
    assert main(["run", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"jaxq: error: {key}") and "\n" not in err
    assert not out.exists()


def test_cli_run_json(tmp_path, capsys):
    f = tmp_path / "exp.toml"
    f.write_text(TINY.replace("[9, 16]", "[9]").replace('"pss_P", "pss_PP"', '"pss_P", "../sys/my.toml"'))
    (tmp_path.parent / "sys").mkdir(exist_ok=True)
    from jaxq.examples import path

    (tmp_path.parent / "sys" / "my.toml").write_text(path("pss_T2").read_text())  # a path relative to the file
    assert main(["run", str(f), "--out", str(tmp_path / "o"), "--json", "--no-progress"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["chunks"] == 6 and {row["system"] for row in r["tables"]["summary"]} == {"pss_P", "my"}


def test_sde_study_against_exact_wcp_value(tmp_path):
    """Single mode: the skew-exact scheme reflects exactly; V_hat within 4 stderr of V_WCP(0)."""
    exp = tiny(
        '[experiment]\nstudy = "sde"\nsystem = "pss_P"\nreplications = 3000\nchunk = 3000\n'
        "[grid]\ndt = [0.01]\nhorizon = 24.0\n"
    )
    row = runner.run(exp, tmp_path, progress=False)["tables"]["summary"][0]
    assert abs(row["V_hat"] - row["V_exact"]) <= 4 * row["V_hat_stderr"]


def test_stats_helpers():
    n = np.array([10.0, 100.0, 1000.0])
    rate, se, C = stats.loglog_rate(n, 3.0 * n**-0.25)
    assert math.isclose(rate, -0.25, rel_tol=1e-12) and math.isclose(C, 3.0, rel_tol=1e-12) and se < 1e-10
    rng = np.random.default_rng(0)
    a = rng.normal(size=400)
    d, _ = stats.ks_distance(a, a + 10)
    assert d == 1.0 and stats.ks_distance(a, a)[0] == 0.0
    assert math.isclose(stats.ks_noise_level(100, 100), 1.3581 * math.sqrt(0.02), rel_tol=1e-3)


DEVICES_SCRIPT = textwrap.dedent(
    """
    import sys, tomllib, jax, numpy as np
    from pathlib import Path
    from jaxq.studies import experiment as ex, runner
    assert len(jax.local_devices()) == 4
    text = sys.argv[1]
    outs = []
    for d, chunk, sde_chunk in ((1, 40, 40), (4, 33, 25)):  # 4 slices (2 devices: the sim layer's test)
        data = tomllib.loads(text)
        data["experiment"]["chunk"] = chunk
        data["grid"]["sde_chunk"] = sde_chunk
        exp = ex.from_dict(data, Path("/tmp/x.toml"))
        out = Path(sys.argv[2]) / f"d{d}"
        runner.run(exp, out, devices=jax.local_devices()[:d], progress=False)
        outs.append((out / "records.csv").read_bytes())
    assert outs[0] == outs[1], "results depend on devices or chunk size"
    print("identical")
    """
)

WEAK_TINY = """
[experiment]
study = "weak"
system = "pss_PP"
replications = 40
chunk = 40
[grid]
n = [9]
times = [0.5]
sde_paths = 40
sde_chunk = 40
sde_dt = 0.05
"""


@pytest.mark.slow  # the replication layer's own test covers 1/2/4 devices in CI (tests/mc/test_replications.py)
def test_one_and_four_devices_and_any_chunk_give_identical_results(tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAXQ_CACHE_DIR="off")
    r = subprocess.run([sys.executable, "-c", DEVICES_SCRIPT, WEAK_TINY, str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout


def test_seed_option_replaces_the_files_seeds(tmp_path, capsys):
    f = tmp_path / "e.toml"
    f.write_text(TINY.replace('systems = ["pss_P", "pss_PP"]', 'systems = ["pss_P"]').replace("n = [9, 16]", "n = [9]"))
    outs = []
    for k, extra in enumerate((["--seed", "7"], ["--seed", "7"], [])):
        assert main(["run", str(f), "--out", str(tmp_path / f"o{k}"), "--json", "--no-progress"] + extra) == 0
        outs.append(json.loads(capsys.readouterr().out)["tables"]["summary"][0])
    assert outs[0]["seed"] == 7 and outs[2]["seed"] == 3
    assert outs[0]["J_hat"] == outs[1]["J_hat"] != outs[2]["J_hat"]
    assert main(["run", str(f), "--seed", "-1"]) == 2


CONTROLLED = """
[experiment]
study = "convergence"
systems = ["pss_P", "pss_PP"]
replications = 64
chunk = 64
seeds = [11]
[grid]
n = [100]
engine = "auto"                # pss_P on the uniformised driver (the default horizon), pss_PP on the event driver
"""


def test_controlled_estimates_are_fitted_and_do_not_depend_on_chunks(tmp_path):
    """Enough replications for the cross-fit (both drivers; 11 controls on the event driver, fitted on 32
    replications a fold): the summary's controlled J_hat has a variance reduction above 1 and is
    byte-identical for chunks of 64 and 7 (a ragged last chunk)."""
    outs = []
    for chunk in (64, 7):
        out = tmp_path / f"c{chunk}"
        runner.run(tiny(CONTROLLED, chunk=chunk), out, progress=False)
        outs.append(out)
    assert read(outs[0], "summary.csv") == read(outs[1], "summary.csv")
    rows = list(__import__("csv").DictReader(open(outs[0] / "summary.csv")))
    assert {r["engine"] for r in rows} == {"uniformized", "event"}
    for r in rows:
        assert float(r["variance_reduction"]) > 1.0 and float(r["J_hat_stderr"]) < float(r["J_plain_stderr"]), r
        assert abs(float(r["J_hat"]) - float(r["J_plain"])) <= 4 * float(r["J_plain_stderr"])


@pytest.mark.slow
def test_weak_study_compares_t1t2_with_the_shifted_limit(tmp_path):
    """Under T1T2 the workload reflects at Theta_hat / alpha_p: the weak study adds, per n, an SDE reference that
    switches at z* - Theta_hat / alpha_p and the KS distance of W_hat - Theta_hat / alpha_p to it."""
    import math

    from jaxq.diffusion.workload import analyze
    from jaxq.examples import path
    from jaxq.model import load
    from jaxq.sim.pss2x2 import setup

    exp = ex.from_dict(tomllib.loads(WEAK_TINY.replace('system = "pss_PP"', 'systems = ["pss_PP", "pss_T1T2"]')),
                       Path("/tmp/w.toml"))
    an = analyze(load(path("pss_T1T2")))
    shift = setup(load(path("pss_T1T2")), 9).theta / 3 / an.modes.alpha[an.p]  # Theta_hat / alpha_p
    refs = [p for p in exp.points if p["engine"] == "sde" and p["n"] is not None]
    assert len(refs) == 1 and refs[0]["system"] == "pss_T1T2"  # PP has no threshold: no shifted reference
    assert math.isclose(refs[0]["shift"], shift) and math.isclose(refs[0]["switch_at"], an.z_star - shift)
    rec = runner.run(exp, tmp_path / "w", progress=False)
    rows = {r["system"]: r for r in rec["tables"]["summary"]}
    assert "ks_shifted" not in rows["pss_PP"]
    r = rows["pss_T1T2"]
    assert math.isclose(r["shift"], shift) and 0 <= r["ks_shifted"] <= 1
    assert math.isclose(r["mean_W_hat_shifted"], r["mean_W_hat"] - shift)
    off = ex.from_dict(tomllib.loads(WEAK_TINY.replace("sde_dt = 0.05", "sde_dt = 0.05\nshifted = false")),
                       Path("/tmp/w.toml"))
    assert [p for p in off.points if p["engine"] == "sde" and p["n"] is not None] == []


def test_threshold_term_only_where_it_applies(tmp_path):
    """Delta_n and the residual for the theorem's policy at z* with the tail-bound horizon; None for another
    switching level (that policy's limit is not V0) and for a finite horizon (J is then truncated)."""
    from jaxq.diffusion.threshold import threshold_term
    from jaxq.diffusion.workload import analyze
    from jaxq.examples import path
    from jaxq.model import load

    text = """
[experiment]
study = "convergence"
system = "pss_T2T1"
replications = 4
chunk = 4
[grid]
n = [400]
policies = ["auto", "auto:x2"]
theta_rule = "root"
"""
    rec = runner.run(ex.from_dict(tomllib.loads(text), Path("/tmp/t.toml")), tmp_path / "t", progress=False)
    rows = {r["policy"]: r for r in rec["tables"]["summary"]}
    an = analyze(load(path("pss_T2T1")))
    dn = threshold_term(an, "T2T1", rows["auto"]["theta"] / 20.0)
    assert dn is not None and rows["auto"]["threshold_term"] == dn
    assert rows["auto"]["residual"] == rows["auto"]["gap"] - dn
    assert rows["auto:x2"]["threshold_term"] is None and rows["auto:x2"]["residual"] is None
    rec = runner.run(ex.from_dict(tomllib.loads(text + "horizon = 3.0\n"), Path("/tmp/t.toml")), tmp_path / "h",
                     progress=False)
    assert all(r["threshold_term"] is None for r in rec["tables"]["summary"])


def test_threshold_rate_of_a_rule_that_picks_theta():
    """The convergence study's rate of Theta_n / sqrt(n): a - 1/2 for a closed-form rule, the fitted slope of the
    thresholds used for the excursion rule (which picks Theta_n at each n)."""
    from jaxq.studies.stats import threshold_rate

    n = [1e2, 1e3, 1e4, 1e5]
    assert threshold_rate(False, 0.34, n, [3, 7, 16, 35]) == pytest.approx(-0.16)
    assert threshold_rate(True, 0.34, n, [10.0 * x**0.25 for x in n]) == pytest.approx(-0.25, abs=1e-12)
    assert threshold_rate(True, 0.34, n, [None] * 4) is None and threshold_rate(True, 0.34, [1e2], [3]) is None
