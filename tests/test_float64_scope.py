"""``import jaxq`` leaves the user's JAX configuration alone; jaxq computes in float64 whatever it says, and
its numbers are the same with JAX_ENABLE_X64=0 (a subprocess) as with 1 (this process: tests/conftest.py). The
subprocess also has two host devices (``JAXQ_HOST_DEVICES=2``, the tests' process one) and spreads every run whose
work is known over both (``SPREAD_WORK = 0``), so the same numbers also say that the device count changes none
(:mod:`jaxq.xla_flags`)."""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import json, sys
import jax
before = bool(jax.config.jax_enable_x64)
import jaxq
after_import = bool(jax.config.jax_enable_x64)
if len(jax.devices("cpu")) > 1:  # the subprocess (module docstring): every run over both devices
    import jaxq.mc.replications
    jaxq.mc.replications.SPREAD_WORK = 0.0
a = jaxq.analyze("pss_T2T1")
r = jaxq.simulate("pss_PP", 25, 64, seed=2)
more = {}
if FULL:  # the other simulators and the tuner (the slow checks: about 30 s of compilation in the subprocess)
    more = {"sde": jaxq.simulate_sde("pss_P", paths=256, seed=1).to_dict(),
            "net": jaxq.simulate("network_N", 9, 4, horizon=5.0, warmup=1.0, seed=3).to_dict(),
            "tune": float(jaxq.tune("pss_T2T1").z)}
wcp_cost = float(a.wcp_cost(0.0))  # a returned object's JAX method, after the call
from jaxq.sim import pss2x2
direct_dtype = str(pss2x2.simulate(jaxq.load("pss_P"), 25, 4, seed=1, outputs=pss2x2.Outputs(diagnostics=False)).samples["J"].dtype)
after_calls = bool(jax.config.jax_enable_x64)
import jax.numpy as jnp
user_dtype = str(jnp.ones(1).dtype)
# then the jaxq command in the same process (what `python -m jaxq` runs; it owns its process: float64 set globally)
import contextlib, io
from jaxq.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(["simulate", "pss_PP", "--n", "25", "--reps", "64", "--json"])
json.dump({"flags": [before, after_import, after_calls], "user_dtype": user_dtype, "cpu_devices": len(jax.devices("cpu")),
           "result_dtype": str(r.info.get("J", r.value).__class__.__name__),
           "analysis": a.to_dict(), "sim": r.to_dict(), **more, "wcp_cost": wcp_cost, "direct_dtype": direct_dtype, "cli_rc": rc, "cli": json.loads(out.getvalue())}, sys.stdout, default=repr)
"""


def _run(x64: str, full: bool) -> dict:
    env = dict(os.environ, JAX_ENABLE_X64=x64, PYTHONPATH=str(ROOT), JAXQ_HOST_DEVICES="2",  # the session's
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")  # compilation cache (conftest); a second host device
    r = subprocess.run([sys.executable, "-c", f"FULL = {full}\n" + SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _strip_times(d):
    """Results without their wall-clock fields (the only ones that may differ between two runs)."""
    if isinstance(d, dict):
        return {k: _strip_times(v) for k, v in d.items() if not any(w in k for w in ("wall", "per_s", "_s_", "time_s"))
                and not k.endswith("_s")}
    if isinstance(d, list):
        return [_strip_times(v) for v in d]
    return d


def _run_here(full: bool) -> dict:
    """The script in this process, whose JAX configuration has float64 on (tests/conftest.py): the same programs
    as other tests, so mostly compiled already."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(SCRIPT, {"__name__": "float64_scope", "FULL": full})
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def both():
    return _run("0", False), _run_here(False)


def test_import_and_calls_leave_the_users_configuration(both):
    off, on = both
    assert off["flags"] == [False, False, False] and off["user_dtype"] == "float32"
    assert on["flags"] == [True, True, True] and on["user_dtype"] == "float64"
    assert (off["cpu_devices"], on["cpu_devices"]) == (2, 1)  # the numbers below: two devices against one


def test_numbers_are_the_same_either_way(both):
    off, on = both
    for key in ("analysis", "sim"):
        assert _strip_times(off[key]) == _strip_times(on[key]), key


@pytest.mark.slow
def test_every_simulator_and_the_tuner_give_the_same_numbers_either_way():
    """The SDE paths, a network and the tuner too (float32 default and two devices against float64 and one)."""
    off, on = _run("0", True), _run_here(True)
    for key in ("analysis", "sim", "sde", "net", "tune"):
        assert _strip_times(off[key]) == _strip_times(on[key]), key
    assert off["cli"]["J_hat"] > 0 and _strip_times(off["cli"]) == _strip_times(on["cli"])


def test_the_cli_computes_in_float64_whatever_the_environment(both):
    """The command (run in the fixture's processes after the library calls, as ``python -m jaxq`` runs it):
    exit 0 and the same JSON with JAX_ENABLE_X64=0 as with 1."""
    off, on = both
    assert off["cli_rc"] == on["cli_rc"] == 0
    assert off["cli"]["J_hat"] > 0 and _strip_times(off["cli"]) == _strip_times(on["cli"])


def test_objects_and_simulators_below_the_api_compute_in_float64_too(both):
    """What the API returns (an analysis's wcp_cost, run after the call) and a simulator called directly run in
    float64 whatever the caller's setting."""
    off, on = both
    assert off["wcp_cost"] == off["analysis"]["V_wcp0"] == on["wcp_cost"]
    assert off["direct_dtype"] == on["direct_dtype"] == "float64"


def test_loading_an_experiment_from_python_computes_in_float64_without_warnings():
    """``jaxq.api.load_experiment`` checks the systems' limits: in float64 and without a flood of JAX dtype
    warnings, under the caller's float32 default (it ran in float32 and warned once per array)."""
    code = ("import warnings; warnings.simplefilter('error'); from jaxq.api import load_experiment; "
            f"e = load_experiment({str(ROOT / 'experiments' / 'beyond_exponential_cpu.toml')!r}); print(e.name)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, JAX_ENABLE_X64="0", PYTHONPATH=str(ROOT)))
    assert r.returncode == 0 and r.stdout.strip() == "beyond_exponential_cpu", r.stderr[-2000:]
