"""The random-systems page's table of where the controls are weakest is what ``experiments/weak_controls.py`` prints
from the committed run today (the docs blocks' test runs ``jaxq`` commands and python blocks, not experiment
scripts)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_prints_what_the_script_prints():
    out = subprocess.run([sys.executable, str(ROOT / "experiments" / "weak_controls.py")], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    page = (ROOT / "docs" / "results" / "random_systems.md").read_text()
    block = page.split("### Where the controls are weakest", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == out.splitlines()[:len(block.splitlines())]
    assert len(block.splitlines()) >= 11  # the summary, the header, nine features and the weakest tenth
