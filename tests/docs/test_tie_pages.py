"""Every page that uses a bundled example whose high-priority class is a tie says so.

When ``h_1 alpha_1 = h_2 alpha_2`` (2.12) does not decide the high-priority class: the example's case is the
convention on a tie (class 1), and the other choice gives another policy. Which examples are ties is jaxq's own
analysis (:func:`jaxq.diffusion.workload.hpc_tie`, the test behind the note ``jaxq analyze`` prints), not a list
kept here; a page of README.md or docs/ that names such an example must have a sentence that names it, says
"tie" and names the policy the other choice gives. Fast: the analysis is closed-form, no simulation.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import jaxq
from jaxq.diffusion.network_analysis import NetworkAnalysis
from jaxq.diffusion.workload import hpc_tie, policy_name

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]


def _ties() -> dict[str, tuple[str, str]]:
    """Bundled examples whose HPC is a tie: name -> (the policy taken, the policy the other class gives)."""
    out = {}
    for name in jaxq.example_names():
        a = jaxq.analyze(jaxq.load(name))
        if isinstance(a, NetworkAnalysis) or not hpc_tie(a.system.h, a.modes.alpha):
            continue
        other = policy_name(a.case, 1 - a.p, a.modes.i1, a.active, a.lower, a.higher)
        assert any("tie" in w for w in a.warnings), (name, a.warnings)  # the note a reader of the analysis sees
        out[name] = (a.policy, other)
    return out


TIES = _ties()


def sentences(text: str) -> list[str]:
    """The page's sentences: paragraphs (blank lines, table rows and fenced lines apart) cut after ``.``, ``!``
    or ``?`` followed by white space; each with its white space collapsed."""
    units, para = [], []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("|", "```", "#")):
            units.append(" ".join(para))
            para = []
            if s:
                units.append(s)
        else:
            para.append(s)
    units.append(" ".join(para))
    return [t for u in units for t in re.split(r"(?<=[.!?])\s+", u) if t]


def _mentions(sentence: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", sentence) is not None


def test_the_bundled_ties_are_known():
    """The analysis finds the tie this test exists for (pss_T2T2: h alpha = (1, 1); class 2 gives PP)."""
    assert TIES.get("pss_T2T2") == ("T2T2", "PP"), TIES


@pytest.mark.parametrize("page", PAGES)
def test_a_page_using_a_tied_example_says_it_is_a_tie(page):
    text = (ROOT / page).read_text()
    found = sentences(text)
    for name, (taken, other) in TIES.items():
        if not any(_mentions(s, name) for s in found):
            continue
        said = [s for s in found if _mentions(s, name) and re.search(r"\btie\b", s)]
        assert said, f"{page} uses {name}, an exact tie in the high-priority class, and never says so"
        assert any(re.search(rf"\b{other}\b", s) for s in said), (
            f"{page}: the sentence on {name}'s tie does not name {other}, the policy the other class gives: {said}")
