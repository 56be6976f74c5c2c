"""Printing results: one JSON object (``--json``) or a readable table."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np  # noqa: F401

from jaxq.api import to_jsonable  # noqa: F401  (re-exported for the commands)


def dumps(result: dict) -> str:
    """The result as one JSON object (no NaN or infinity).

    Args:
        result: The result.

    Returns:
        The JSON text.
    """
    return json.dumps(to_jsonable(result), allow_nan=False)


def _fmt(v: Any, digits: int = 6) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x, digits) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x, digits)}" for k, x in v.items()) + "}"
    return "-" if v is None else str(v)


def table(result: dict) -> str:
    """A two-column table of the top-level keys.

    Args:
        result: The result.

    Returns:
        The table.
    """
    res = to_jsonable(result)
    width = max((len(k) for k in res), default=0)
    return "\n".join(f"{k:<{width}}  {_fmt(v)}" for k, v in res.items())


def format_table(rows: list[dict], cols: list[str] | None = None, digits: int = 5, width: int | None = None,
                 keys: tuple[str, ...] = ()) -> str:
    """A plain fixed-width table of ``rows`` (all keys, or ``cols``), one row per line.

    With ``width``, a table wider than that is cut into blocks of columns, one under the other, each no wider
    than ``width`` where the columns allow: the first block starts with the columns of ``keys`` (those in
    ``cols``), every other block with those of them that differ between rows, so that each line still says
    which row it is.

    Args:
        rows: The rows.
        cols: The columns (default: every key of the rows, in order of appearance).
        digits: The significant digits of a float.
        width: The widest a block may be (default: one block).
        keys: The columns that say which row a line is.

    Returns:
        The table; ``(empty)`` without rows.
    """
    if not rows:
        return "(empty)"
    cols = cols or list(dict.fromkeys(k for r in rows for k in r))
    cells = {c: [_fmt(r.get(c), digits) for r in rows] for c in cols}
    w = {c: max(len(c), *(len(x) for x in cells[c])) for c in cols}
    head = [c for c in cols if c in keys]
    varying = [c for c in head if len(set(cells[c])) > 1]
    blocks, fixed = [list(head)], len(head)  # fixed: the key columns that start the last block
    for c in (c for c in cols if c not in keys):
        if width is not None and len(blocks[-1]) > fixed and sum(w[x] + 2 for x in blocks[-1]) + w[c] > width:
            blocks.append(list(varying))
            fixed = len(varying)
        blocks[-1].append(c)

    def block(bc: list[str]) -> str:
        lines = ["  ".join(c.rjust(w[c]) for c in bc)]
        lines += ["  ".join(cells[c][i].rjust(w[c]) for c in bc) for i in range(len(rows))]
        return "\n".join(lines)

    return "\n\n".join(block(b) for b in blocks)


def emit(result: dict, as_json: bool, render: Callable[[dict], str] | None = None) -> None:
    """Print the result on stdout: one JSON object with ``as_json``, otherwise ``render``'s text.

    Args:
        result: The result.
        as_json: Print JSON (:func:`dumps`).
        render: The text view (default :func:`table`).
    """
    text = dumps(result) if as_json else (render or table)(result)
    print(text, flush=True)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`jaxq.api.atomic_write`: a temp file beside it, fsync,
    rename; the temp file removed on failure), an error naming ``path``, not the temp file.

    Args:
        path: The file.
        data: The bytes.

    Raises:
        OSError: Naming ``path`` when the write fails.
    """
    from jaxq.api import atomic_write

    try:
        atomic_write(path, data)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        raise OSError(e.errno, e.strerror or str(e), str(path)) from None


def env_switch(name: str) -> bool | None:
    """An on/off environment variable: True for ``1``, ``on``, ``yes``, ``true``; False for ``0``, ``off``, ``no``,
    ``false``; None when unset, empty or anything else (the caller's default).

    Args:
        name: The variable.

    Returns:
        True, False or None.
    """
    value = os.environ.get(name, "").strip().lower()
    return True if value in ("1", "on", "yes", "true") else False if value in ("0", "off", "no", "false") else None


def progress_enabled(enabled: bool = True) -> bool:
    """Whether a progress bar is drawn: on a terminal (stderr), unless ``JAXQ_PROGRESS`` says otherwise.

    ``JAXQ_PROGRESS=1`` forces bars on (logs), ``0`` off. Off the terminal a bar would only add lines
    to a log or to the stderr of a refused command.

    Args:
        enabled: False: never.

    Returns:
        Whether a bar is drawn.
    """
    if not enabled:
        return False
    env = env_switch("JAXQ_PROGRESS")
    if env is not None:
        return env
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(total: int | None, desc: str, enabled: bool = True, unit: str = "iterations"):
    """The progress of a long loop (``total`` iterations; None: unknown, e.g. one compiled loop or a validation
    pass, which then reports that it is still at work once it has run 30 s, and a line a minute after): yields
    its ``update``.

    A :class:`jaxq.api.Monitor`: a tqdm bar on a terminal (:func:`progress_enabled`; drawn only after half
    a second, so a command that refuses its input or finishes at once prints no bar) and, terminal or not, the
    estimate of a job expected to take more than 30 s at the rate measured on this machine, then a line at least
    once a minute; ``--quiet`` silences it.

    Args:
        total: The iterations (None: unknown).
        desc: The name of the work.
        enabled: False: no bar (the estimate and the minute lines still).
        unit: What an iteration is.

    Yields:
        (typing.Callable): The monitor's ``update(k)``: ``k`` more iterations done.
    """
    from jaxq.api import monitor

    mon = monitor(desc, total, unit, bar=progress_enabled(enabled), leave=False)
    try:
        yield mon.update
    finally:
        mon.close()
