"""What a run writes: JSON-ready values, files written atomically, table columns, and progress reports.

The writers of jaxq (the command line, the study runner, ``jaxq bench``) share these; a script that reports a long
job the way ``jaxq`` does uses the same :class:`Monitor`.
"""

from __future__ import annotations

import os

from jaxq.interrupt import catching as catch_interrupts
from jaxq.interrupt import check as check_interrupt
from jaxq.progress import Monitor, duration, monitor, quiet, sci
from jaxq.serialize import to_jsonable

__all__ = ["Monitor", "atomic_write", "catch_interrupts", "check_interrupt", "duration", "monitor", "quiet", "sci", "set_quiet",
           "table_columns", "to_jsonable"]


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsync, rename.

    :func:`jaxq.studies.storage.atomic_write`.

    Args:
        path: The file to write.
        data: Its contents.

    Raises:
        Exception: On any failure (``path`` a folder, a full disk, an interrupt) the temporary file is removed and the
            error raised.
    """
    from jaxq.studies.storage import atomic_write as write

    write(path, data)


def table_columns(rows) -> list[str]:
    """The columns of a table given as rows (dicts).

    Args:
        rows (list[dict]): The rows.

    Returns:
        The union of their keys in first-seen order, the order of the CSV files a study writes.
    """
    from jaxq.studies.storage import columns_of

    return columns_of(rows)


def set_quiet(flag: bool) -> None:
    """Silence or allow the progress reports of long jobs in this process.

    The estimate, the minute lines and the bars of every :class:`Monitor` (``jaxq --quiet``; ``JAXQ_QUIET=1`` silences
    them too, whatever this says). :func:`quiet` tells which holds.

    Args:
        flag: Silence (``True``) or allow (``False``).
    """
    import jaxq.progress

    jaxq.progress.QUIET = bool(flag)
