"""`jaxq run` refuses bad experiments before touching the output folder, naming the file's own keys.

Every grid point of every study is checked up front by the study's own checks (the fast/slow solver's
tractability, the SDE driver's step, the network Euler scheme's stability), grid lists hold each value
once, a horizon in which nothing happens is refused, ``--out ""`` and ``--distributed`` off a cluster
are one line and exit 2. All of it happens before any simulation: the tests take seconds.
"""

import os
import subprocess
import sys
import tomllib
import types
import warnings
from pathlib import Path

import pytest

from jaxq.cli import main
from jaxq.errors import InputError
from jaxq.studies import experiment as ex

FS = """
[experiment]
study = "fastslow"
replications = 2
chunk = 1
[grid]
slow_servers = [2]
"""
CONV = """
[experiment]
study = "convergence"
systems = ["pss_PP"]
replications = 4
chunk = 2
seeds = [3]
[grid]
n = [9]
"""
WEAK = """
[experiment]
study = "weak"
systems = ["pss_PP"]
replications = 4
chunk = 2
[grid]
n = [9]
sde_paths = 8
"""
NET = """
[experiment]
study = "network"
systems = ["network_N"]
replications = 4
chunk = 4
[grid]
n = [4]
warmup = 1.0
horizon = 5.0
"""
SDE = """
[experiment]
study = "sde"
systems = ["pss_PP"]
replications = 4
[grid]
horizon = 2.0
"""


def _key_id(value):
    """Readable test ids: the key, and the study with the experiment's last line (not the whole text)."""
    if not isinstance(value, str) or value.startswith(("grid.", "experiment.")):
        return value
    study = value.split('study = "')[1].split('"')[0]
    return f"{study}: {value.strip().splitlines()[-1]}"


def _refused(tmp_path: Path, capsys, text: str, key: str, *options: str) -> str:
    """Run the experiment: exit 2, exactly one stderr line naming ``key``, and no output folder at all."""
    f = tmp_path / "e.toml"
    f.write_text(text)
    out = tmp_path / "out"
    rc = main(["run", str(f), "--out", str(out), "--no-progress", *options])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"jaxq: error: {key}: "), err
    assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    return lines[0]


def _validate(text: str, tmp_path: Path):
    return ex.from_dict(tomllib.loads(text), tmp_path / "e.toml")


# ------------------------------------------------------------------------- every point checked up front
@pytest.mark.parametrize("grid, key, words", [
    ('loads = [0.5, 0.9999]\nratios = [0.3]', "grid.loads", "too close to 1"),
    ("loads = [0.9999]\nratios = [0.3]", "grid.loads", "too close to 1"),
    ("loads = [0.5]\nratios = [1.0]", "grid.ratios", "slower than the fast one"),
    ("loads = [0.5]\nratios = [1e-12]", "grid.ratios", "largest truncation"),
    ('loads = [0.5]\nratios = [0.3]\ncriteria = ["discounted"]\nalpha = 1e-12', "grid.alpha", "too small"),
    ("loads = [0.5]\nheterogeneous = [[1e-12, 0.5]]", "grid.heterogeneous", "largest truncation"),
])
def test_fastslow_checks_every_case_before_writing(tmp_path, capsys, grid, key, words):
    line = _refused(tmp_path, capsys, FS + grid + "\n", key)
    assert words in line
    for internal in ("lam:", "mu2:", "discount:"):  # the solver's argument names are not the file's keys
        assert f"error: {internal}" not in line


def test_fastslow_discounted_hint_names_the_grid_key(tmp_path, capsys):
    line = _refused(tmp_path, capsys, FS + 'loads = [0.5]\nratios = [0.3]\ncriteria = ["discounted"]\n'
                                           'alpha = 1e-12\n', "grid.alpha")
    assert "--average" not in line and 'criteria = ["average"]' in line


def test_fastslow_keeps_rates_to_15_digits(tmp_path):
    """A ratio just below 1 is a valid case: the point must not round it up to mu1 (6 digits did)."""
    exp = _validate(FS + "loads = [0.5]\nratios = [0.9999999]\n", tmp_path)
    assert [float(v) for v in exp.points[0]["mu2"].split()] == [0.9999999, 0.9999999]


def test_weak_sde_reference_step_is_checked_up_front(tmp_path, capsys):
    line = _refused(tmp_path, capsys, WEAK + "times = [0.5]\nsde_dt = 1.0\n", "grid.sde_dt")
    assert "horizon" in line


@pytest.mark.parametrize("extra, key", [
    ('control = "bogus"', "grid.control"),
    ("dt = 1.0", "grid.dt"),  # the explicit Euler scheme is unstable at this step
    ("uc = [1.0]", "grid.uc"),  # network_N has two classes
])
def test_network_diffusion_settings_are_checked_up_front(tmp_path, capsys, extra, key):
    _refused(tmp_path, capsys, NET + f"diffusion = true\n{extra}\n", key)


@pytest.mark.parametrize("text, key", [
    (CONV + "horizon = 1e-300\n", "grid.horizon"),
    (CONV.replace("convergence", "collapse") + "horizon = 1e-300\n", "grid.horizon"),
    (CONV.replace("convergence", "policies") + "horizon = 0.001\n", "grid.horizon"),
    (WEAK + "times = [1e-4]\n", "grid.times"),  # the weak study's horizon is its last time
], ids=_key_id)
def test_horizon_in_which_nothing_happens_is_refused(tmp_path, capsys, text, key):
    line = _refused(tmp_path, capsys, text, key)
    assert "too short" in line and "n = 9" in line


def test_a_short_but_meaningful_horizon_still_runs_validation(tmp_path):
    exp = _validate(CONV + "horizon = 0.5\n", tmp_path)  # about 4 arrivals per replication at n = 9
    assert len(exp.points) == 1


@pytest.mark.parametrize("text, key", [
    (CONV + 'policies = ["PP:x-1"]\n', "grid.policies"),
    (CONV + "horizon = 2.0\ntimes = [5.0]\n", "grid.times"),
    (CONV + 'horizon = 2.0\nreplications_at = {"9" = 10000000000}\n', "grid.replications_at"),  # not sde_paths
    (CONV + 'theta_exponents = [0.34, 0.4]\ntheta_rule = "excursion"\n', "grid.theta_exponents"),  # one Theta_n
    (WEAK.replace("sde_paths = 8", "sde_paths = 10000000000") + "times = [0.5]\n", "grid.sde_paths"),
], ids=_key_id)
def test_2x2_errors_name_the_files_keys(tmp_path, text, key):
    with pytest.raises(InputError) as e:
        _validate(text, tmp_path)
    assert e.value.key == key


# -------------------------------------------------------------------------------------- duplicates
@pytest.mark.parametrize("text, key", [
    (CONV.replace("n = [9]", "n = [9, 9]"), "grid.n"),
    (CONV.replace("n = [9]", "n = [1000, 1e3]"), "grid.n"),
    (CONV.replace("seeds = [3]", "seeds = [3, 3]"), "experiment.seeds"),
    (CONV + 'policies = ["auto", "auto"]\n', "grid.policies"),
    (CONV + "theta_exponents = [0.4, 0.4]\n", "grid.theta_exponents"),
    (CONV + "times = [0.5, 0.5]\n", "grid.times"),
    (CONV + "times = [1.0000001, 1.0000002]\n", "grid.times"),  # the same column name W_hat@1
    (CONV.replace("n = [9]", "n = [9, 16]") + 'replications_at = {"9" = 8, "9.0" = 6}\n',
     "grid.replications_at"),
    (WEAK + "times = [0.5, 0.5]\n", "grid.times"),
    (NET.replace("n = [4]", "n = [4, 4]"), "grid.n"),
    (NET + 'policies = ["priority", "priority"]\n', "grid.policies"),
    (SDE + "dt = [0.1, 0.1]\n", "grid.dt"),
    (FS + "loads = [0.5, 0.5]\nratios = [0.3]\n", "grid.loads"),
    (FS + "loads = [0.5]\nratios = [0.3, 0.3]\n", "grid.ratios"),
    (FS + 'loads = [0.5]\nratios = [0.3]\ncriteria = ["average", "average"]\n', "grid.criteria"),
    (FS + "loads = [0.5]\nheterogeneous = [[0.2, 0.5], [0.2, 0.5]]\n", "grid.heterogeneous"),
    (FS + "loads = [0.5]\nratios = [0.3]\nheterogeneous = [[0.3, 0.3]]\n", "grid.heterogeneous"),
], ids=_key_id)
def test_duplicates_in_grid_lists_are_refused(tmp_path, text, key):
    with pytest.raises(InputError) as e:
        _validate(text, tmp_path)
    assert e.value.key == key
    assert "twice" in e.value.reason or "same" in e.value.reason or "agree" in e.value.reason


def test_duplicate_is_one_line_through_the_command(tmp_path, capsys):
    line = _refused(tmp_path, capsys, CONV.replace("n = [9]", "n = [9, 9]") + "horizon = 2.0\n", "grid.n")
    assert "listed twice" in line


# ----------------------------------------------------------------------------------------- options
def test_empty_out_is_refused_by_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.toml").write_text(CONV + "horizon = 2.0\n")
    rc = main(["run", "e.toml", "--out", "", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("jaxq: error: --out: ") and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.toml"]


def test_empty_out_is_refused_by_demo(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(["demo", "--small", "--out", "", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("jaxq: error: --out: ") and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_runner_refuses_an_empty_out(tmp_path):
    from jaxq.studies.runner import run

    with pytest.raises(InputError) as e:
        run(_validate(CONV + "horizon = 2.0\n", tmp_path), "")
    assert e.value.key == "out"


def test_distributed_off_a_cluster_is_one_line(tmp_path):
    """A fresh process (jax.distributed must come before any JAX computation) with no cluster variables."""
    f = tmp_path / "e.toml"
    f.write_text(CONV + "horizon = 2.0\n")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "PMI_", "JAX_COORDINATOR", "TPU_", "KUBERNETES_"))}
    env["JAXQ_CACHE_DIR"] = "off"
    r = subprocess.run([sys.executable, "-m", "jaxq", "run", str(f), "--out", str(out), "--distributed",
                        "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("jaxq: error: --distributed: "), r.stderr
    assert "cluster" in lines[0]
    assert not out.exists()


# ------------------------------------------------------------------------------------ figure noise
def test_policy_label_of_a_huge_switching_level_stays_short():
    from jaxq.studies.pss import _policy_label

    label = _policy_label({"policy": "PP:1e300", "policy_used": "PP", "switch_at": 1e300})
    assert len(label) < 30 and "1e+300" in label


def test_collapse_figure_of_all_zero_suprema_does_not_warn(tmp_path):
    from jaxq.studies.pss import figure_collapse

    rows = [{"system": "pss_PP", "policy": "auto", "policy_used": "PP", "seed": 0, "n": n, "sup_X_hat_p": 0.0,
             "sup_X_hat_p_stderr": 0.0, "theta_over_sqrt_n": None} for n in (9, 16)]
    exp = types.SimpleNamespace(grid=types.SimpleNamespace(horizon=0.2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = figure_collapse(exp, [], [], {"summary": rows}, tmp_path)
    assert all(Path(p).is_file() for p in paths)


def test_atomic_write_leaves_no_temp_file_on_failure(tmp_path):
    """Writing over a directory fails; the temp file beside it must not stay behind (every command's writes)."""
    import os

    import pytest

    from jaxq.studies.storage import atomic_write

    target = tmp_path / "out.json"
    target.mkdir()
    with pytest.raises(OSError):
        atomic_write(target, b"{}")
    assert sorted(os.listdir(tmp_path)) == ["out.json"]
