"""Ctrl-C (SIGINT) ends a command with one line, ``jaxq: interrupted`` (for ``jaxq run``: how to resume), exit
status 130 and no traceback; the resumed run then finishes from the chunks already written."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXP = """
[experiment]
study = "convergence"
systems = ["pss_PP"]
replications = 40000
chunk = 2
seeds = [3]
[grid]
n = [9]
horizon = 2.0
"""


def _env(**extra):
    return dict(os.environ, PYTHONPATH=str(ROOT), JAXQ_CACHE_DIR="off", **extra)


def _interrupt(proc: subprocess.Popen, ready, limit: float = 400.0) -> tuple[int, str]:
    """Send SIGINT once ``ready()`` holds (the command is computing); its exit status and stderr."""
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() - t0 < limit, "the command never started computing"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=limit)
    return proc.returncode, err


def test_interrupted_run_is_one_line_exit_130_and_says_how_to_resume(tmp_path):
    exp, out = tmp_path / "e.toml", tmp_path / "out"
    exp.write_text(EXP)
    proc = subprocess.Popen([sys.executable, "-m", "jaxq", "run", str(exp), "--out", str(out)], cwd=tmp_path,
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rc, err = _interrupt(proc, lambda: len(list((out / "chunks").glob("p*/c*.npz"))) >= 2)
    assert rc == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in re.split(r"[\r\n]", err) if ln.strip()]
    assert lines[-1] == f"jaxq: interrupted; resume with jaxq run {exp} --out {out} --resume", err
    assert len([ln for ln in lines if not ln.startswith("jaxq: note:")]) == 1, err
    assert list((out / "chunks").glob("p*/c*.npz"))  # the finished chunks are kept for the resume


@pytest.mark.slow
def test_interrupted_simulate_is_one_line_exit_130(tmp_path):
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "jaxq", "simulate", "pss_PP", "--n", "400", "--reps", "1000000"],
                            cwd=tmp_path, env=_env(JAXQ_PROGRESS="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: list[bytes] = []

    def pump():
        while data := os.read(proc.stderr.fileno(), 4096):
            seen.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    t0 = time.monotonic()
    while not any(b"/s" in c or b"%" in c for c in seen):  # the progress bar (forced on): the simulation runs
        assert proc.poll() is None, b"".join(seen).decode()[-3000:]
        assert time.monotonic() - t0 < 400, "the command never started computing"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=400)
    reader.join(timeout=30)
    err = b"".join(seen).decode()
    assert rc == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in re.split(r"[\r\n]", err) if ln.strip()]
    assert lines[-1] == "jaxq: interrupted", err


@pytest.mark.parametrize("delay", [0.3, 0.7, 1.2])  # from 0 to ~0.1 s Python itself starts: its own handler
def test_ctrl_c_in_the_first_second_is_one_line_exit_130(delay):
    """While Python starts, JAX is imported and the parser is built, a Ctrl-C ends the command the same way: once it
    printed an import traceback, or a finalizer swallowed it ("Exception ignored") and the command ran to the end."""
    proc = subprocess.Popen([sys.executable, "-m", "jaxq", "simulate", "pss_P", "--n", "100", "--reps", "64"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err == "jaxq: interrupted\n" and out == "", (proc.returncode, err, out)


def test_importing_the_command_line_imports_no_jax():
    """``import jaxq.cli`` is light (the command records Ctrl-C before anything heavy starts)."""
    code = "import sys, jaxq.cli; print('jax' in sys.modules, 'jaxq.api' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["False", "False"], r.stdout + r.stderr


def test_ctrl_c_during_the_import_is_recorded_and_acted_on_after_it(monkeypatch, capsys):
    """A Ctrl-C while the command line is imported is only recorded: raised inside a C extension's initialisation
    (numpy's, jaxlib's) it made the import fail ("ImportError: Encountered an error while initializing the
    extension", a traceback, exit 1) or crashed the interpreter (SIGSEGV). The import runs to its end, then the
    command ends in one line with 130. Here the import receives a real SIGINT."""
    import importlib
    import os

    import jaxq.cli

    real = importlib.import_module
    finished = []

    def import_module(name, *a, **k):
        if name == "jaxq.cli.app":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs in here: it must not raise into the import
            finished.append(True)
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", import_module)
    assert jaxq.cli.main(["--help"]) == 130
    assert finished and capsys.readouterr().err == "jaxq: interrupted\n"
    monkeypatch.setattr(importlib, "import_module", lambda name, *a, **k: (_ for _ in ()).throw(ImportError("x")))
    with pytest.raises(ImportError):  # an import that fails without a Ctrl-C is not an interrupt
        jaxq.cli.main(["--help"])


_FAKE_MAIN = """
import sys
import jaxq.cli as c
def main(argv=None):
    try:
        exec('raise KeyboardInterrupt')
    except KeyboardInterrupt:
        print('jaxq: interrupted', file=sys.stderr)
        return 130
c.main = main
"""


@pytest.mark.parametrize("entry", ["jaxq.cli.command()", "runpy.run_module('jaxq', run_name='__main__')",
                                   "sys.exit(c.main())"])
def test_a_ctrl_c_seen_inside_exec_still_exits_130(entry, tmp_path):
    """Under ``python -m``, Python turns a KeyboardInterrupt that passed through ``exec`` of a string (the methods
    ``dataclasses`` and ``namedtuple`` write run there) into the process killed by SIGINT at exit (status -2), even
    when the command caught it, printed its line and returned 130. The executable (``jaxq.cli.command``, which
    ``python -m jaxq`` runs) ends with 130 all the same; a plain ``sys.exit(main())`` does not (the last case)."""
    pkg = tmp_path / "entry"
    pkg.mkdir()
    (pkg / "__main__.py").write_text(_FAKE_MAIN + "import runpy\nimport jaxq.cli\n" + entry + "\n")
    env = dict(_env(), PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    proc = subprocess.run([sys.executable, "-m", "entry"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    want = -signal.SIGINT if entry.startswith("sys.exit") else 130
    assert (proc.returncode, proc.stderr) == (want, "jaxq: interrupted\n"), (proc.returncode, proc.stderr)
