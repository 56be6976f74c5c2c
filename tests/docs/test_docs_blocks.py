"""Every block of README.md and docs/ runs as written and prints what the page says (the slow checks: CI runs them).

A page is read as a reader pastes it:

* ``python`` blocks of one page run in order in one fresh interpreter (a page is self-contained), statement by
  statement: what a statement prints, or the value of a bare expression (as in a REPL), is its output;
* command lines (``jaxq ...``) in fenced or indented blocks run as commands;
* a ``text`` block right after a command or a python block is that block's output;
* ``toml`` and ``json`` blocks parse.

What a page claims is compared with what today's code prints:

* the numbers in a comment after a command or a statement (``# J_n = 1.531 +- 0.005``) each appear in its output
  at the digits shown (rounded or cut: ``1.608...``);
* the numbers of a ``text`` output block are, in order, the numbers of the output, at the digits shown.

Not compared: times (a number followed by ``s``), speeds (``events/s``), and a number after ``~`` or "about".
A block that is long runs reduced through the same code path (:data:`REDUCED`: a smaller size given to the same
call); its claims are then not compared, and the reduction says why. Nothing is skipped without a reason in
:data:`NOT_RUN`.
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from contextlib import redirect_stdout
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                              if p.name not in ("cli.md", "changelog.md"))]  # cli.md: generated from --help

# (page, text in the block) -> (replacement, why): a long block run smaller through the same call
REDUCED: dict[tuple[str, str], tuple[str, str]] = {
    ("*", "jaxq.simulate_sde(system, paths=20_000)"): ("jaxq.simulate_sde(system, paths=2_000)",
                                                       "20 000 SDE paths take a minute; the call is the same"),
    ("*", "experiments/beyond_exponential_cpu.toml"): ("reduced/beyond_exponential_cpu.toml",
                                                       "the whole study takes minutes; its first n with 8 "
                                                       "replications runs the same path"),
}
SMALL_EXPERIMENTS = {"beyond_exponential_cpu.toml": {"n": [100]}}  # grid keys of the reduced copies

# commands not run here, and why
NOT_RUN = {
    "pip install": "installs: .ci/run runs the install on a clean checkout",
    "python -m pytest": "the test command itself: .ci/run runs it",
    "jaxq demo": "tests/cli/test_demo.py runs the demo",
    "srun ": "needs a SLURM cluster",
    "mkdocs ": "the site build: .ci/run builds it",
}

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?:\.\.\.)?", re.I)
UNCOMPARED = re.compile(r"(?:~|about |\bapprox\.? )\s*[-+]?\d[\d,.e+-]*|[-+]?\d[\d,.]*(?:e[-+]?\d+)?\s*(?:s\b|ms\b|min\b|"
                        r"events/s|x faster|seconds|minutes|GiB|MiB|%)", re.I)


class Block(NamedTuple):
    page: str
    line: int
    lang: str  # python, text, toml, json, shell
    text: str


def blocks(page: str) -> list[Block]:
    """Fenced blocks, and indented blocks (four spaces after a blank line) outside fences, in page order."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)", lines[i])
        if m:
            indent, lang, start = len(m.group(1)), m.group(2) or "shell", i
            body = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][indent:])
                i += 1
            out.append(Block(page, start + 1, {"bash": "shell", "console": "shell", "sh": "shell"}.get(lang, lang),
                             "\n".join(body)))
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()) and lines[i].strip() \
                and not re.match(r"^\s*([-*]|\d+\.)\s", lines[i]):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            out.append(Block(page, start + 1, "shell", "\n".join(body).rstrip()))
            continue
        i += 1
    return out


# ------------------------------------------------------------------------------------------ numbers
def _value(token: str) -> float:
    return float(token.replace(",", "").rstrip("."))


def agrees(claimed: str, actual: float) -> bool:
    """``actual`` shown at the digits of ``claimed``: rounded, or cut where the claim ends in ``...``."""
    cut = claimed.endswith("...")
    c = claimed[:-3] if cut else claimed
    want = _value(c)
    mant = re.split(r"e", c, flags=re.I)[0]
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    exp = int(re.split(r"e", c, flags=re.I)[1]) if re.search(r"e", c, re.I) else 0
    unit = 10.0 ** (exp - decimals)
    if not math.isfinite(actual):
        return False
    if cut:
        return abs(actual - want) < unit * (1 + 1e-9) and math.copysign(1, actual - want + 1e-300) == math.copysign(1, want)
    return abs(actual - want) <= 0.5 * unit * (1 + 1e-9)


def numbers(text: str) -> list[str]:
    """The comparable number tokens of a text (UNCOMPARED ones left out)."""
    text = UNCOMPARED.sub(" ", text)
    return [t for t in NUMBER.findall(text)]


def check_claims(claim: str, output: str, where: str) -> list[str]:
    """Every number of ``claim`` agrees with some number of ``output``."""
    have = [_value(t) for t in NUMBER.findall(output) if t.rstrip(".")]
    return [f"{where}: {t} (claimed in {claim.strip()!r}) is not in the output:\n{output[-2000:]}"
            for t in numbers(claim) if not any(agrees(t, x) for x in have)]


def check_output(expected: str, output: str, where: str) -> list[str]:
    """The numbers of an output block, in order, agree with the printed numbers (timings left out of both)."""
    want, have = numbers(expected), numbers(output)
    if len(want) != len(have):
        return [f"{where}: the page shows {len(want)} numbers, the code prints {len(have)}:\n--- page\n{expected}\n"
                f"--- printed\n{output}"]
    bad = [f"{w} (printed {h})" for w, h in zip(want, have) if not agrees(w, _value(h))]
    return [f"{where}: differs at {', '.join(bad)}:\n--- page\n{expected}\n--- printed\n{output}"] if bad else []


# ------------------------------------------------------------------------------------------ running
def _reduce(page: str, text: str) -> tuple[str, list[str]]:
    why = []
    for (p, old), (new, reason) in REDUCED.items():
        if p in ("*", page) and old in text:
            text = text.replace(old, new)
            why.append(reason)
    return text, why


RUNNER = r'''
import ast, io, json, sys, contextlib
src = sys.stdin.read()
tree = ast.parse(src)
ns = {"__name__": "__main__"}
outs = []
for node in tree.body:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "<page>", "eval"), ns)
            if value is not None and not (isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "print"):
                print(repr(value))
        else:
            exec(compile(ast.Module([node], []), "<page>", "exec"), ns)
    outs.append([node.lineno, node.end_lineno, buf.getvalue()])
print("\0" + json.dumps(outs))
'''


def run_python(source: str, cwd: Path) -> list[tuple[int, int, str]]:
    p = subprocess.run([sys.executable, "-c", RUNNER], input=source, capture_output=True, text=True, cwd=cwd,
                       env=_env(), timeout=900)
    assert p.returncode == 0, f"the page's python fails:\n{p.stderr[-3000:]}"
    return [tuple(x) for x in json.loads(p.stdout.rpartition("\0")[2])]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_command(line: str, cwd: Path) -> str:
    argv = line.split()
    p = subprocess.run([sys.executable, "-m", "jaxq", *argv[1:]], capture_output=True, text=True, cwd=cwd, env=_env(),
                       timeout=900)
    ok = p.returncode == 0 or ("bad input" in line and p.returncode == 2)
    assert ok, f"`{line}` exits with {p.returncode}:\n{p.stderr[-3000:]}"
    return p.stdout + p.stderr


def _comment(line: str) -> tuple[str, str]:
    """A line split into code and its trailing comment (a # outside quotes)."""
    q = None
    for k, ch in enumerate(line):
        if q:
            q = None if ch == q else q
        elif ch in "\"'":
            q = ch
        elif ch == "#":
            return line[:k].rstrip(), line[k + 1:]
    return line, ""


def _workdir(tmp_path: Path) -> Path:
    """A fresh folder where the page's relative paths resolve (experiments/, notebooks/, benchmarks/) and the reduced
    experiment files are in reduced/ (their first grid values, 8 replications a point)."""
    for name in ("experiments", "notebooks", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "reduced").mkdir()
    for name, grid in SMALL_EXPERIMENTS.items():
        text = (ROOT / "experiments" / name).read_text()
        text = re.sub(r"(?m)^replications = .*$", "replications = 8", text)
        text = re.sub(r"(?m)^chunk = .*$", "chunk = 8", text)
        for key, value in grid.items():
            text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {json.dumps(value)}", text)
        (tmp_path / "reduced" / name).write_text(text)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_runs_and_prints_what_it_says(page, tmp_path):
    cwd = _workdir(tmp_path)
    bl = blocks(page)
    problems: list[str] = []
    # python: the page's blocks in one interpreter, each statement's output beside its comment
    py = [b for b in bl if b.lang == "python"]
    if py:
        source, owner, reduced_lines = "", [], set()
        for b in py:
            text, why = _reduce(page, b.text)
            first = source.count("\n") + 1
            for k, (orig, new) in enumerate(zip(b.text.splitlines(), text.splitlines())):
                if orig != new:
                    reduced_lines.add(first + k)
            source += text + "\n"
            owner += [b] * (text.count("\n") + 1)
        results = run_python(source, cwd)
        src_lines = source.splitlines()
        outputs_by_block: dict[int, str] = {}
        for lo, hi, out in results:
            b = owner[lo - 1]
            outputs_by_block[b.line] = outputs_by_block.get(b.line, "") + out
            if any(k in reduced_lines for k in range(lo, hi + 1)):
                continue
            claim = " ".join(_comment(src_lines[k - 1])[1] for k in range(lo, hi + 1))
            if numbers(claim):
                problems += check_claims(claim, out, f"{page}:{b.line} (statement {lo})")
        for prev, nxt in zip(bl, bl[1:]):
            if prev.lang == "python" and nxt.lang == "text":
                problems += check_output(nxt.text, outputs_by_block.get(prev.line, ""), f"{page}:{nxt.line}")
    # command lines
    for k, b in enumerate(bl):
        if b.lang != "shell":
            continue
        out_all = ""
        claims_ok = True
        for raw in b.text.splitlines():
            line = raw.strip().removeprefix("$ ")
            code, claim = _comment(line)
            if not code.startswith(("jaxq ", "python -m jaxq")) or any(code.startswith(s) for s in NOT_RUN):
                continue
            if "SYSTEM" in code or "[" in code or "|" in code:  # a synopsis, not a command
                continue
            code, why = _reduce(page, code)
            claims_ok = not why
            out = run_command(code, cwd)
            out_all += out
            if claims_ok and numbers(claim):
                problems += check_claims(claim, out, f"{page}:{b.line} `{code}`")
        nxt = bl[k + 1] if k + 1 < len(bl) else None
        if nxt is not None and nxt.lang == "text" and out_all and claims_ok:
            problems += check_output(nxt.text, out_all, f"{page}:{nxt.line}")
    # configuration and JSON blocks parse
    for b in bl:
        if b.lang == "toml":
            try:
                tomllib.loads(b.text)
            except tomllib.TOMLDecodeError as e:
                problems.append(f"{page}:{b.line}: the TOML does not parse: {e}")
        elif b.lang == "json":
            try:
                json.loads(b.text)
            except json.JSONDecodeError as e:
                problems.append(f"{page}:{b.line}: the JSON does not parse: {e}")
    assert not problems, "\n\n".join(problems)


# ------------------------------------------------------------------------------------------ the checker itself
def test_agreement_at_the_digits_shown():
    assert agrees("1.531", 1.53149) and not agrees("1.531", 1.5316)
    assert agrees("1.608...", 1.60899) and not agrees("1.608...", 1.6091)
    assert agrees("38,025", 38025.0) and agrees("4.8e-08", 4.83e-8) and not agrees("4.8e-08", 4.9e-8)
    assert numbers("J_n = 1.531 +- 0.005 (0.2 s, 3.1e6 events/s, about 2 minutes)") == ["1.531", "0.005"]


def test_a_claim_that_the_code_does_not_print_is_reported():
    assert check_claims("J_n = 1.583 +- 0.005", "J_hat = 1.531 +- 0.005", "x")
    assert not check_claims("J_n = 1.531 +- 0.005", "J_hat = 1.53104 +- 0.00497", "x")
    assert check_output("a 1.0 b 2.0", "a 1.0 b 2.1", "x") and not check_output("a 1.0 (0.3 s)", "a 1.04 (9.1 s)", "x")


def test_blocks_are_found_fenced_and_indented():
    found = blocks("README.md")
    assert any(b.lang == "python" for b in found)
    assert any(b.lang == "shell" and "jaxq simulate pss_T2T1" in b.text for b in found)
