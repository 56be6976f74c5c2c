"""Printing results: one JSON object (``--json``) or a readable table."""

from __future__ import annotations

import json
import math
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np  # noqa: F401

from jaxq.serialize import to_jsonable  # noqa: F401  (re-exported for the commands)


def dumps(result: dict) -> str:
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
    """A two-column table of the top-level keys."""
    res = to_jsonable(result)
    width = max((len(k) for k in res), default=0)
    return "\n".join(f"{k:<{width}}  {_fmt(v)}" for k, v in res.items())


def format_table(rows: list[dict], cols: list[str] | None = None, digits: int = 5) -> str:
    """A plain fixed-width table of ``rows`` (all keys, or ``cols``), one row per line."""
    if not rows:
        return "(empty)"
    cols = cols or list(dict.fromkeys(k for r in rows for k in r))
    cells = [[_fmt(r.get(c), digits) for c in cols] for r in rows]
    w = [max(len(c), *(len(row[j]) for row in cells)) for j, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w[j]) for j, c in enumerate(cols))]
    lines += ["  ".join(x.rjust(w[j]) for j, x in enumerate(row)) for row in cells]
    return "\n".join(lines)


def emit(result: dict, as_json: bool, render: Callable[[dict], str] | None = None) -> None:
    text = dumps(result) if as_json else (render or table)(result)
    print(text, flush=True)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`jaxq.studies.storage.atomic_write`: a temp file beside it,
    fsync, rename; the temp file removed on failure), an error naming ``path``, not the temp file."""
    from jaxq.studies.storage import atomic_write

    try:
        atomic_write(path, data)
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        raise OSError(e.errno, e.strerror or str(e), str(path)) from None


def env_switch(name: str) -> bool | None:
    """An on/off environment variable: True for ``1``, ``on``, ``yes``, ``true``; False for ``0``, ``off``, ``no``,
    ``false``; None when unset, empty or anything else (the caller's default)."""
    value = os.environ.get(name, "").strip().lower()
    return True if value in ("1", "on", "yes", "true") else False if value in ("0", "off", "no", "false") else None


def progress_enabled(enabled: bool = True) -> bool:
    """Whether a progress bar is drawn: on a terminal (stderr), unless ``JAXQ_PROGRESS`` says otherwise.

    ``JAXQ_PROGRESS=1`` forces bars on (logs), ``0`` off. Off the terminal a bar would only add lines
    to a log or to the stderr of a refused command.
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
def progress(total: int, desc: str, enabled: bool = True):
    """A tqdm bar on stderr for long runs; yields its ``update`` (or None when disabled).

    Drawn only on a terminal (:func:`progress_enabled`) and only after half a second, so a command
    that refuses its input or finishes at once prints no bar.
    """
    if not progress_enabled(enabled):
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, delay=0.5)
    try:
        yield bar.update
    finally:
        bar.close()
