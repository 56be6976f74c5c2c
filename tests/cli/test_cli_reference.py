"""docs/reference/cli.md shows each command's own ``--help``, as the parser prints it at 110 columns.

After changing an option: ``python tests/cli/test_cli_reference.py --write`` rewrites the blocks. Every option of
every command is checked on any Python; the text itself on the Python the blocks were written with (argparse's
layout changes between versions).
"""

import argparse
import os
import platform
import re
import sys
from pathlib import Path
from unittest import mock

from jaxq.cli import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
BLOCK = re.compile(r"(## `(jaxq[^`]*)`\n\n```\n)(.*?)(\n```)", re.S)
WRITTEN_WITH = (3, 11)  # the Python whose argparse wrote the blocks
OPTION = re.compile(r"(?<![\w-])--?[a-zA-Z][\w-]*")


def _parsers(parser: argparse.ArgumentParser, prog: str = "jaxq") -> dict[str, argparse.ArgumentParser]:
    """Every parser by its command line (``jaxq``, ``jaxq run``, ``jaxq network simulate``, ...)."""
    out = {prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_parsers(sub, f"{prog} {name}"))
    return out


def helps() -> dict[str, str]:
    with mock.patch.dict(os.environ, {"COLUMNS": "110"}):
        return {k: p.format_help().rstrip() for k, p in _parsers(build_parser()).items()}


def rendered(text: str, helps: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + helps.get(m.group(2), m.group(3)) + m.group(4), text)


def test_the_reference_shows_every_command_help():
    text = DOC.read_text()
    shown = {m.group(2) for m in BLOCK.finditer(text)}
    h = helps()
    assert set(h) == shown, f"commands without a block: {set(h) - shown}; blocks without a command: {shown - set(h)}"
    blocks = {m.group(2): m.group(3) for m in BLOCK.finditer(text)}
    for command, parser in _parsers(build_parser()).items():
        missing = {o for a in parser._actions for o in a.option_strings} - set(OPTION.findall(blocks[command]))
        assert not missing, f"{command}: options not in docs/reference/cli.md: {sorted(missing)}"
    if tuple(int(v) for v in platform.python_version_tuple()[:2]) == WRITTEN_WITH:
        stale = "docs/reference/cli.md is stale: python tests/cli/test_cli_reference.py --write"
        assert rendered(text, h) == text, stale


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DOC.write_text(rendered(DOC.read_text(), helps()))
