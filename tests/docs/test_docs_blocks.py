"""Every block of README.md and docs/ runs as written and prints what the page says (the slow checks: CI runs them).

A page is read as a reader pastes it:

* ``python`` blocks of one page run in order in one fresh interpreter (a page is self-contained, or its first block
  starts with ``# continues other-page.md``, whose blocks then run first), statement by statement: what a statement
  prints, or the value of a bare expression (as in a REPL), is its output;
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
import shutil
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
    ("docs/guides/tuned-policy.md", "--target prelimit --n 1000"): ("--target prelimit --n 100 --reps 32",
                                                                   "a search at n = 1000 takes a minute"),
    ("docs/guides/tuned-policy.md", "--method gradient"): ("--method gradient --chains 2 --iterations 2",
                                                          "the gradient tuner takes minutes"),
}
# experiment files a page runs, as the reduced copies the test runs instead (8 replications a point, these grid keys;
# the whole studies take minutes to hours, and a reduced one runs the same path); their claims are not compared
SMALL_EXPERIMENTS = {"beyond_exponential_cpu.toml": {"n": [100]},
                     "random_systems_cpu.toml": {"per_case": 1, "n": [100], "rules": ["paper@0.34"]}}

# files a page asks the reader to save from its blocks: page -> {file name: (language, index among that language's blocks)}
FILES = {"docs/guides/user-models.md": {"queues.py": ("python", 0), "mmcm.toml": ("toml", 0)}}

# commands not run here, and why
NOT_RUN = {
    "pip install": "installs: .ci/run runs the install on a clean checkout",
    "python -m pytest": "the test command itself: .ci/run runs it",
    "jaxq demo": "tests/cli/test_demo.py runs the demo",
    "srun ": "needs a SLURM cluster",
    "mkdocs ": "the site build: .ci/run builds it",
    "jaxq run experiments/random_systems.toml": "GPU-sized (hours); the CPU-sized file beside it runs reduced",
}

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?:\.\.\.)?", re.I)
UNCOMPARED = re.compile(r"\((?:\d+\.\d+[a-z]?(?:, )?)+\)|(?:Theorem|Definition|Lemma|Proposition|Corollary|Section|"
                        r"identity|equation|eq\.)\s*\(?\d+\.\d+\)?|(?:~|about |\bapprox\.? )\s*[-+]?\d[\d,.e+-]*|[-+]?\d[\d,.]*(?:e[-+]?\d+)?\s*(?:s\b|ms\b|min\b|"
                        r"events/s|x faster|seconds|minutes|GiB|MiB|%)", re.I)


class Block(NamedTuple):
    page: str
    line: int
    lang: str  # python, text, toml, json, shell
    text: str
    before: str = ""  # the paragraph before the block (a JSON excerpt's command is named there)


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
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            para = []
            while k >= 0 and lines[k].strip() and not lines[k].lstrip().startswith("```"):
                para.insert(0, lines[k])
                k -= 1
            out.append(Block(page, start + 1, {"bash": "shell", "console": "shell", "sh": "shell"}.get(lang, lang),
                             "\n".join(body), "\n".join(para)))
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


def claimed(comment: str) -> list[str]:
    """The numbers a comment claims as results: those written with a decimal point, an exponent or three digits or
    more (a small integer in a comment names things: events 0, 1, 2; the interval [10, 80])."""
    return [t for t in numbers(comment) if "." in t or "e" in t.lower() or sum(ch.isdigit() for ch in t) >= 3]


def check_claims(claim: str, output: str, where: str) -> list[str]:
    """Every number ``claim`` claims agrees with some number of ``output``."""
    have = [_value(t) for t in NUMBER.findall(output) if t.rstrip(".")]
    return [f"{where}: {t} (claimed in {claim.strip()!r}) is not in the output:\n{output[-2000:]}"
            for t in claimed(claim) if not any(agrees(t, x) for x in have)]


def _shape(line: str) -> str:
    """A line with its numbers (compared or not) replaced, and its spacing collapsed."""
    return " ".join(NUMBER.sub("#", UNCOMPARED.sub("~", line)).split())


def check_output(expected: str, output: str, where: str) -> list[str]:
    """Each line of an output block (an excerpt, in any order; ``...`` lines left out) is a printed line of the same
    words whose numbers agree, in order, at the digits shown (timings left out of both)."""
    printed = [ln for ln in output.splitlines() if ln.strip()]
    problems = []
    for line in expected.splitlines():
        if not line.strip() or line.strip() in ("...", "…"):
            continue
        same = [ln for ln in printed if _shape(ln) == _shape(line)]
        if not same:
            problems.append(f"{where}: the page shows a line the code does not print:\n  {line.strip()}\n--- printed\n"
                            f"{output[-3000:]}")
            continue
        want = numbers(line)
        if not any(all(agrees(w, _value(h)) for w, h in zip(want, numbers(ln))) for ln in same):
            problems.append(f"{where}: the numbers differ:\n--- page\n  {line.strip()}\n--- printed\n  "
                            + "\n  ".join(ln.strip() for ln in same))
    return problems


TIMING_KEYS = {"wall_s", "compile_s", "events_per_s", "path_steps_per_s", "compute_s"}


def _leaves(obj, key=""):
    """``(key, value)`` of every number in a parsed JSON object (lists: their elements, under the list's key)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v, key)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield key, obj


def check_json(excerpt: str, output: str, where: str) -> list[str]:
    """Every number of a JSON excerpt (``"key": 1.4575``, or inside ``"key": [...]``) agrees, at the digits shown,
    with a number of the same key in the command's JSON output (timings left out)."""
    try:
        got = json.loads(output[output.index("{"):])
    except (ValueError, json.JSONDecodeError):
        return [f"{where}: the command printed no JSON object:\n{output[-2000:]}"]
    have: dict[str, list[float]] = {}
    for k, v in _leaves(got):
        have.setdefault(k, []).append(float(v))
    bad = []
    for m in re.finditer(r'"(\w+)":\s*(\[[^\]]*\]|\[\[[^"]*?\]\]|[-+\d.eE]+)', excerpt):
        key, value = m.group(1), m.group(2)
        if key in TIMING_KEYS:
            continue
        for token in NUMBER.findall(value):
            if not any(agrees(token, x) for x in have.get(key, [])):
                bad.append(f"{key} {token} (printed {have.get(key, 'nothing')})")
    return [f"{where}: the page's JSON differs from the output at {'; '.join(bad)}"] if bad else []


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
    env = _env()
    if line.startswith("PYTHONPATH=. "):  # the page's own module, saved in the working folder
        env["PYTHONPATH"] = str(cwd) + os.pathsep + env["PYTHONPATH"]
        line = line.removeprefix("PYTHONPATH=. ")
    argv = line.split()
    p = subprocess.run([sys.executable, "-m", "jaxq", *argv[1:]], capture_output=True, text=True, cwd=cwd, env=env,
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
    """A fresh folder where the page's relative paths resolve: a copy of experiments/ without its results (a page's
    ``--out experiments/results/...`` writes there, never into the repository), the reduced experiment files in
    it (:data:`SMALL_EXPERIMENTS`), and notebooks/ and benchmarks/ as links."""
    shutil.copytree(ROOT / "experiments", tmp_path / "experiments", ignore=shutil.ignore_patterns("results", "__pycache__"))
    for name in ("notebooks", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    for name, grid in SMALL_EXPERIMENTS.items():
        file = tmp_path / "experiments" / name
        text = file.read_text()
        text = re.sub(r"(?m)^replications = .*$", "replications = 8", text)
        text = re.sub(r"(?m)^chunk = .*$", "chunk = 8", text)
        for key, value in grid.items():
            text = re.sub(rf"(?m)^{key} = [^\n]*(\n\s+[^\n=]*)*", f"{key} = {json.dumps(value)}", text)
        tomllib.loads(text)
        file.write_text(text)
    return tmp_path


def _reduced_experiment(text: str) -> bool:
    return any(f"experiments/{name}" in text for name in SMALL_EXPERIMENTS)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_block_of_the_page_runs_and_prints_what_it_says(page, tmp_path):
    cwd = _workdir(tmp_path)
    bl = blocks(page)
    for name, (lang, index) in FILES.get(page, {}).items():
        (cwd / name).write_text([b for b in bl if b.lang == lang][index].text + "\n")
    problems: list[str] = []
    # python: the page's blocks in one interpreter, each statement's output beside its comment
    py = [b for b in bl if b.lang == "python"]
    if py:
        source, owner, reduced_lines = "", [], set()
        m = re.match(r"#\s*continues\s+(\S+\.md)", py[0].text)
        if m:  # the page says which page's blocks come first: those run before it, their claims not compared
            other = str((ROOT / page).parent.joinpath(m.group(1)).resolve().relative_to(ROOT))
            before = "\n".join(_reduce(other, b.text)[0] for b in blocks(other) if b.lang == "python") + "\n"
            source = before
            owner = [None] * before.count("\n")
            reduced_lines = set(range(1, before.count("\n") + 1))
        for b in py:
            text, why = _reduce(page, b.text)
            first = source.count("\n") + 1
            for k, (orig, new) in enumerate(zip(b.text.splitlines(), text.splitlines())):
                if orig != new or _reduced_experiment(orig):
                    reduced_lines.add(first + k)
            source += text + "\n"
            owner += [b] * (text.count("\n") + 1)
        results = run_python(source, cwd)
        src_lines = source.splitlines()
        outputs_by_block: dict[int, str] = {}
        for lo, hi, out in results:
            b = owner[lo - 1]
            if b is None:
                continue
            outputs_by_block[b.line] = outputs_by_block.get(b.line, "") + out
            if any(k in reduced_lines for k in range(lo, hi + 1)):
                continue
            claim = " ".join(_comment(src_lines[k - 1])[1] for k in range(lo, hi + 1))
            if claimed(claim):
                problems += check_claims(claim, out, f"{page}:{b.line} (statement {lo})")
        for prev, nxt in zip(bl, bl[1:]):
            if prev.lang == "python" and nxt.lang == "text":
                problems += check_output(nxt.text, outputs_by_block.get(prev.line, ""), f"{page}:{nxt.line}")
    # command lines
    for k, b in enumerate(bl):
        if b.lang != "shell":
            continue
        out_all = ""
        block_ok = True
        for raw in b.text.splitlines():
            line = raw.strip().removeprefix("$ ")
            code, claim = _comment(line)
            if not code.startswith(("jaxq ", "PYTHONPATH=. jaxq ")) or any(code.startswith(s) for s in NOT_RUN):
                continue
            if "SYSTEM" in code or "[" in code or "|" in code:  # a synopsis, not a command
                continue
            code, why = _reduce(page, code)
            claims_ok = not why and not _reduced_experiment(code)
            block_ok = block_ok and claims_ok
            out = run_command(code, cwd)
            out_all += out
            if claims_ok and claimed(claim):
                problems += check_claims(claim, out, f"{page}:{b.line} `{code}`")
        nxt = bl[k + 1] if k + 1 < len(bl) else None
        if nxt is not None and nxt.lang == "text" and out_all and block_ok:
            problems += check_output(nxt.text, out_all, f"{page}:{nxt.line}")
    # configuration and JSON blocks parse
    for b in bl:
        if b.lang == "toml":
            try:
                tomllib.loads(b.text)
            except tomllib.TOMLDecodeError as e:
                problems.append(f"{page}:{b.line}: the TOML does not parse: {e}")
        elif b.lang == "json" and (m := re.search(r"`(jaxq [^`]*--json[^`]*)`", b.before)):
            problems += check_json(b.text, run_command(m.group(1), cwd), f"{page}:{b.line} `{m.group(1)}`")
        elif b.lang == "json":  # an excerpt: "..." for what is left out, or a fragment "key": value
            text = re.sub(r"\.\.\.(?=[\s,\]}])|(?<=: )\.\.\.|(?<=\[)\.\.\.", "null", b.text.replace('"...', '"'))
            text = text.replace(", null]", "]").replace("[null]", "[]")
            try:
                json.loads("{" + text + "}" if text.lstrip().startswith('"') else text)
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
    assert claimed("events: 0 arrival, 1 service; over [10, 80]; 3671 replications, 1.5") == ["3671", "1.5"]
    assert not check_claims("J_n = 1.531 +- 0.005", "J_hat = 1.53104 +- 0.00497", "x")
    assert check_output("a 1.0 b 2.0", "a 1.0 b 2.1", "x") and not check_output("a 1.0 (0.3 s)", "a 1.04 (9.1 s)", "x")


def test_a_json_excerpt_is_compared_key_by_key():
    out = '{"J_hat": 1.45751, "ci95": [1.44341, 1.4718], "wall_s": 9.9, "d": {"X_hat_p": 0.36171}}'
    assert check_json('{"J_hat": 1.4575, "ci95": [1.4434, 1.4718], "wall_s": 2.75, "X_hat_p": 0.3617}', out, "x") == []
    assert check_json('{"J_hat": 1.4585, "ci95": [1.4434, ...]}', out, "x")


def test_blocks_are_found_fenced_and_indented():
    found = blocks("README.md")
    assert any(b.lang == "python" for b in found)
    assert any(b.lang == "shell" and "jaxq simulate pss_T2T1" in b.text for b in found)


def test_equation_numbers_and_excerpts():
    assert numbers("rho (2.35), Theorem 2.11's J_n = 1.25, identity (3.6)") == ["1.25"]
    assert not check_output("J_hat = 1.469 +- 0.0024 (0.3 s)\n...", "n = 100\nJ_hat = 1.46905 +- 0.00238 (2.7 s)\nx 1", "x")
    assert check_output("J_hat = 1.470 +- 0.0024", "J_hat = 1.46905 +- 0.00238", "x")
    assert check_output("K_hat = 1.469", "J_hat = 1.46905", "x")
