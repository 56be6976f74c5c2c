"""A JAX platform the install cannot start (``JAX_PLATFORMS=gpu`` on a CPU-only machine) is bad input: importing the
command line and the models does no JAX work, and a command that needs JAX says so in one line with exit code 2."""

import os
import subprocess
import sys

import pytest


def _run(code_or_argv, env_extra):
    env = {**os.environ, **env_extra}
    env.pop("JAXQ_DEBUG", None)
    argv = [sys.executable, "-c", code_or_argv] if isinstance(code_or_argv, str) else \
        [sys.executable, "-m", "jaxq", *code_or_argv]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)


def test_importing_the_command_line_and_the_models_builds_no_array():
    out = _run("import jaxq.cli, jaxq.api, jaxq.sim.models.pss2x2, jaxq.mdp.optimum; print('ok')",
               {"JAX_PLATFORMS": "gpu"})
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("argv", [["analyze", "pss_P"], ["optimal", "pss_P", "--n", "4"]])
def test_an_unavailable_platform_is_one_line_and_exit_code_2(argv):
    out = _run(argv, {"JAX_PLATFORMS": "gpu"})
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1 and lines[0].startswith("jaxq: error: JAX_PLATFORMS: "), out.stderr
    assert out.stdout == ""
