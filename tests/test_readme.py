"""The README is a front page: short, no work-item history, every link and figure it shows exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_short():
    assert len(README.splitlines()) <= 250


def test_no_history_or_work_items():
    for pattern in (r"\bissue\s*\d", r"\bsession", r"until 20\d\d-", r"stream version \d+ \(was", r"\bissue\d"):
        assert not re.search(pattern, README, re.IGNORECASE), pattern


def test_setup_commands():
    assert "pip install -e . && jaxq demo" in README
    assert 'pip install -e ".[test]" && python -m pytest -q' in README


def test_links_exist():
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert targets
    missing = [t for t in targets if not t.startswith(("http://", "https://")) and not (ROOT / t).exists()]
    assert not missing, missing
