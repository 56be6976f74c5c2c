"""What the command line takes from ``jaxq.api`` is public: every name it imports exists there, has a docstring and
is in the API reference; the steps the command line composes behave as documented."""

from __future__ import annotations

import ast
import inspect
import math
import subprocess
import sys
from pathlib import Path

import pytest

import jaxq
import jaxq.api as api
from jaxq import InputError

ROOT = Path(jaxq.__file__).resolve().parent.parent
REFERENCE = (ROOT / "docs" / "reference" / "api.md").read_text()


def _cli_api_names() -> set[str]:
    """The names the modules of jaxq/cli import from ``jaxq.api`` (lazily or not)."""
    names = set()
    for path in (ROOT / "jaxq" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "jaxq.api":
                names |= {a.name for a in node.names}
    return names


def test_every_name_the_command_line_uses_is_public_and_documented():
    names = _cli_api_names()
    assert {"InputError", "simulate_2x2", "POLICY_CHOICES", "run_study", "set_quiet", "tune"} <= names
    undocumented = []
    for name in sorted(names - {"__version__"}):
        obj = getattr(api, name)  # the lazy names too
        listed = f"- {name}\n" in REFERENCE or f"jaxq.errors.{name}" in REFERENCE
        if callable(obj) and not isinstance(obj, tuple):
            doc = inspect.getdoc(obj)
            if not (doc and doc.split("\n\n")[0].rstrip().endswith(".")):
                undocumented.append(f"{name}: no docstring")
        if not listed:
            undocumented.append(f"{name}: not in docs/reference/api.md")
    assert not undocumented, undocumented
    assert api.__version__ == jaxq.__version__


def test_the_choices_are_the_simulators_and_imported_only_when_asked_for():
    from jaxq.sde import estimators
    from jaxq.sim import pss2x2
    from jaxq.tuning import prelimit

    assert api.POLICY_CHOICES == pss2x2.POLICY_CHOICES and "T2T1" in api.POLICY_CHOICES
    assert api.ENGINES == ("auto", "event", "uniformized") and api.THETA_RULES == pss2x2.THETA_RULES
    assert (api.DEFAULT_THETA_EXPONENT, api.DEFAULT_THETA_RULE) == (pss2x2.DEFAULT_THETA_EXPONENT,
                                                                    pss2x2.DEFAULT_THETA_RULE)
    assert api.SDE_SCHEMES == tuple(estimators.SCHEMES) and api.DEFAULT_SDE_SCHEME in api.SDE_SCHEMES
    assert (api.TUNE_SEARCH_REPS, api.TUNE_GRADIENT_REPS) == (prelimit.SEARCH_REPS, prelimit.GRADIENT_REPS)
    with pytest.raises(AttributeError):
        api.NO_SUCH_CHOICE  # noqa: B018
    code = ("import sys, jaxq.api; heavy = [m for m in ('jaxq.sim.pss2x2', 'jaxq.sde.estimators', "
            "'jaxq.tuning.prelimit', 'jaxq.api.choices') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_set_quiet_silences_the_reports(monkeypatch):
    import jaxq.progress

    monkeypatch.setattr(jaxq.progress, "QUIET", False)
    monkeypatch.delenv("JAXQ_QUIET", raising=False)
    assert not api.quiet()
    api.set_quiet(True)
    assert api.quiet() and jaxq.progress.QUIET is True
    api.set_quiet(False)
    assert not api.quiet()


EXPERIMENT = """[experiment]
study = "convergence"
systems = ["pss_PP"]
replications = 4
chunk = 2
seeds = [3]
[grid]
n = [9]
horizon = 2.0
"""


def test_parse_experiment_is_load_experiment_of_the_text(tmp_path):
    f = tmp_path / "exp.toml"
    f.write_text(EXPERIMENT)
    from_text = api.parse_experiment(EXPERIMENT, f)
    from_file = api.load_experiment(f)
    assert from_text.fingerprint() == from_file.fingerprint() and from_text.seeds == (3,)
    assert api.parse_experiment(EXPERIMENT, f, seeds=[7, 8]).seeds == (7, 8)
    assert api.load_experiment(f, seeds=[7, 8]).fingerprint() == api.parse_experiment(EXPERIMENT, f, [7, 8]).fingerprint()
    with pytest.raises(InputError) as e:
        api.parse_experiment("[experiment\nstudy =", f)
    assert e.value.key == "experiment" and "not valid TOML" in e.value.reason


def test_output_folders(tmp_path):
    assert api.is_empty_folder(tmp_path / "new") and api.is_empty_folder(tmp_path)
    (tmp_path / "x").write_text("1")
    assert not api.is_empty_folder(tmp_path) and api.read_manifest(tmp_path) is None
    with pytest.raises(InputError) as e:
        api.check_output_folder(tmp_path, resume=False)
    assert e.value.key == "--out" and "is not empty" in e.value.reason
    api.check_output_folder(tmp_path / "new", resume=False)
    api.atomic_write(tmp_path / "y", b"data")
    assert (tmp_path / "y").read_bytes() == b"data" and sorted(p.name for p in tmp_path.iterdir()) == ["x", "y"]
    assert api.table_columns([{"a": 1, "b": 2}, {"c": 3, "a": 4}]) == ["a", "b", "c"]


def test_the_sde_tuning_step_is_the_documented_default_and_checks_its_work():
    a = api.analyze("pss_PP")
    bL, sL, bH, sH = a.mode_coefficients()
    drift = min((s / b) ** 2 for b, s in ((bL, sL), (bH, sH)) if b != 0)
    want = min(0.02, 0.01 / a.system.gamma, 0.1 * drift)  # min(0.02, 0.01/gamma, 0.1 sigma^2/b^2)
    got = api.sde_tuning_step(a, paths=100, chains=2, iterations=3)
    assert math.isclose(got, want, rel_tol=1e-12)
    assert api.sde_tuning_step(a, 0.01, paths=100, chains=2, iterations=3) == 0.01
    with pytest.raises(InputError) as e:  # gamma dt = 0.25 > 0.1: does not resolve the discount time scale
        api.sde_tuning_step(a, 0.5, paths=100, chains=2, iterations=3, dt_key="--dt")
    assert e.value.key == "--dt" and "gamma" in e.value.reason
    with pytest.raises(InputError) as e:  # 2^40 paths: more replications than the limit
        api.sde_tuning_step(a, paths=2**40, chains=2, iterations=3, paths_key="--paths")
    assert e.value.key == "dt"  # the per-path check comes first and names the step
    with pytest.raises(InputError) as e:  # the whole run: 3 x 2^20 x 2^14 x 2^12 path-steps
        api.sde_tuning_step(a, paths=2**14, chains=2**20, iterations=2**12, paths_key="--paths")
    assert e.value.key == "--paths"


@pytest.mark.slow
def test_the_direct_functions_are_what_the_api_functions_call():
    """Same seed, same numbers: the checked function of the API and its step called directly."""
    net = api.read_system(api.example_path("network_N"))
    a, b = api.analyze(net), api.analyze_network(net)
    assert api.to_jsonable(a.to_dict()) == api.to_jsonable(b.to_dict())
    with pytest.raises(InputError) as e:  # the analysis names the pool as the command line does
        api.analyze_network(net, 0)
    assert e.value.key == "basis-pool"
    r = api.simulate(net, 4, 2, horizon=5.0, warmup=1.0, seed=3)
    s = api.simulate_network(net, 4, "priority", reps=2, horizon=5.0, warmup=1.0, seed=3)
    assert api.to_jsonable(r["mean_queue"]) == api.to_jsonable(s["mean_queue"])
    pss = api.read_system("pss_PP")
    r = api.simulate(pss, 4, 8, seed=2)
    s = api.simulate_2x2(pss, 4, 8, seed=2)
    assert r.value == s.value and r.stderr == s.stderr
    r = api.simulate_sde(pss, paths=64, dt=0.01, horizon=2.0, seed=1)
    s = api.wcp_value(api.analyze(pss), dt=0.01, horizon=2.0, paths=64, seed=1)
    assert r.value == s.value and r.info["V_exact"] == s.info["V_exact"]
    with pytest.raises(InputError) as e:
        api.check_tunable(api.analyze("pss_P"), "P")
    assert e.value.key == "policy"
