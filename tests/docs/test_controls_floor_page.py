"""The variance-reduction page's table of the second-order controls on the random systems is what
``experiments/controls_floor.py --summary`` prints from the committed CSV today (nothing is simulated)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_prints_what_the_script_prints():
    out = subprocess.run([sys.executable, str(ROOT / "experiments" / "controls_floor.py"), "--summary"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    page = (ROOT / "docs" / "results" / "variance-reduction.md").read_text()
    block = page.split("## The floor: second-order controls", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == out.splitlines()
    assert "160 systems" in block  # the whole run: every random threshold system of the study
