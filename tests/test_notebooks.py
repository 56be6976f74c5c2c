"""The notebooks (jupytext percent format, valid Python) execute at their CI size."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.py"))


def test_there_are_notebooks():
    assert {p.stem for p in NOTEBOOKS} >= {"convergence", "weak_convergence"}


# CI executes the convergence notebook; the weak-convergence one runs with -m slow (its study has runner tests)
@pytest.mark.parametrize("nb", [pytest.param(nb, marks=pytest.mark.slow) if nb.stem in ("weak_convergence", "convergence") else nb
                                for nb in NOTEBOOKS], ids=lambda p: p.stem)
def test_notebook_executes_at_small_size(nb, tmp_path):
    env = dict(os.environ, JAXQ_NOTEBOOK_SMALL="1", JAXQ_NOTEBOOK_OUT=str(tmp_path), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(nb)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert any(tmp_path.rglob("run.json"))


def test_the_site_runs_the_notebooks_when_it_is_built():
    """The notebook pages show outputs and plots from the code the site documents: mkdocs-jupyter executes them at
    build time (an error fails the build), and CI builds the site at the notebooks' CI size."""
    root = Path(__file__).parent.parent
    text = (root / "mkdocs.yml").read_text()
    block = text[text.index("- mkdocs-jupyter:"):].split("\n  - ", 1)[0]
    assert "execute: true" in block and "allow_errors: false" in block
    assert "JAXQ_NOTEBOOK_SMALL=1" in next(ln for ln in (root / ".ci" / "run").read_text().splitlines() if "mkdocs build" in ln)
