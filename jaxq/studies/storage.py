"""Files of a run: atomic writes, chunk files, tidy tables (CSV, Parquet when pyarrow is installed).

Every file is written to a temporary file in the same directory, flushed, ``fsync``-ed and renamed
over its final name (``os.replace`` is atomic on POSIX), so a killed run never leaves a half-written
chunk or table: a chunk file either exists complete or not at all.

Every chunk file carries, in its metadata, the digest of what it holds (everything that determines its grid
point's numbers, with the seed, and the replication range: :func:`chunk_digest`). :func:`read_chunk`
checks it and the file's shape, and says what is wrong with a file it will not trust (missing,
unreadable, truncated, foreign); it never raises on a damaged file.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from jaxq.serialize import to_jsonable

CHUNKS = "chunks"


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same directory, fsync, rename); on any failure
    (``path`` a directory, a full disk, an interrupt) the temp file is removed and the error raised.

    Args:
        path: The file.
        data: Its bytes.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def write_json(path: str | Path, obj) -> None:
    """Atomically write one JSON object (sorted keys, indented).

    Args:
        path: The file.
        obj (typing.Any): The object (:func:`jaxq.serialize.to_jsonable`).
    """
    atomic_write(path, (json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n").encode())


def chunk_path(out: Path, point: int, chunk: int) -> Path:
    """File of chunk ``chunk`` of grid point ``point``.

    Args:
        out: The run's folder.
        point: The grid point.
        chunk: The chunk of the point.

    Returns:
        The path ``out/chunks/pPPPP/cCCCCCC.npz``.
    """
    return out / CHUNKS / f"p{point:04d}" / f"c{chunk:06d}.npz"


def save_chunk(path: Path, columns: dict[str, np.ndarray], meta: dict) -> None:
    """Atomically save one chunk's per-replication columns and its metadata (wall time, events).

    Args:
        path: The chunk file.
        columns: The per-replication columns.
        meta: The metadata.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **columns)
    atomic_write(path, buf.getvalue())


def chunk_digest(point_digest: str, chunk: int, start: int, count: int) -> str:
    """sha256 naming a chunk: its point (:meth:`jaxq.studies.experiment.Experiment.point_digests`: everything
    that determines the point's numbers, with its seed), its replication range, and the version of the
    simulators' numbers (:data:`jaxq.sim.STREAM_VERSION`).

    Args:
        point_digest: The digest of the grid point.
        chunk: The chunk of the point.
        start: Its first replication.
        count: Its replications.

    Returns:
        The hex digest.
    """
    from jaxq.sim import STREAM_VERSION

    data = {"point": point_digest, "chunk": chunk, "start": start, "count": count, "stream": STREAM_VERSION}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def read_chunk(path: Path, count: int, digest: str | None = None,
               start: int | None = None) -> tuple[tuple[dict[str, np.ndarray], dict] | None, str]:
    """A saved chunk and a word on its state: ``((columns, meta), "ok")`` or ``(None, why)``.

    ``why`` is ``"missing"``, ``"corrupt"`` (not a readable chunk file: truncated, empty, garbage),
    ``"incomplete"`` (not ``count`` replications, or not replications ``start .. start+count-1``) or
    ``"foreign"`` (its digest is not ``digest``: another run's chunk). Never raises on a damaged file.

    Args:
        path: The chunk file.
        count: The replications it should hold.
        digest: The digest it should carry (None: not checked).
        start: Its first replication (None: not checked).

    Returns:
        ``((columns, meta), "ok")`` or ``(None, why)``.
    """
    if not path.is_file():
        return None, "missing"
    got = _load(path, columns=True)
    if got is None:
        return None, "corrupt"
    cols, meta = got
    if digest is not None and meta.get("digest") != digest:
        return None, "foreign"
    rep = cols.get("rep")
    if rep is None or rep.ndim != 1 or rep.shape[0] != count:
        return None, "incomplete"
    if any(c.ndim < 1 or c.shape[0] != count or c.dtype.kind not in "biuf" for c in cols.values()):
        return None, "incomplete"
    if start is not None and not np.array_equal(rep, np.arange(start, start + count)):
        return None, "incomplete"
    return (cols, meta), "ok"


def _load(path: Path, columns: bool) -> tuple[dict[str, np.ndarray], dict] | None:
    """``(columns, meta)`` of a chunk file (no columns unless asked), or None if it is not a readable chunk."""
    try:
        data = path.read_bytes()  # np.load of a damaged file can leak its handle: read the bytes first
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            cols = {k: np.asarray(z[k]) for k in z.files if k != "__meta__"} if columns else {}
            meta = json.loads(bytes(z["__meta__"]).decode())
    except Exception:  # noqa: BLE001  (BadZipFile, EOFError, ValueError, KeyError, OSError, ...: never trusted)
        return None
    return (cols, meta) if isinstance(meta, dict) else None


def read_replications(path: Path) -> tuple[dict[str, np.ndarray], dict] | None:
    """A chunk file's columns and metadata whatever its size, or None unless it is readable and consistent (a
    1-D ``rep`` column of consecutive replications, every column numeric with one row per replication).

    Args:
        path: The chunk file.

    Returns:
        ``(columns, meta)``, or None.
    """
    got = _load(path, columns=True)
    if got is None:
        return None
    cols, meta = got
    rep = cols.get("rep")
    if rep is None or rep.ndim != 1 or rep.shape[0] == 0 or rep.dtype.kind not in "iu":
        return None
    if any(c.ndim < 1 or c.shape[0] != rep.shape[0] or c.dtype.kind not in "biuf" for c in cols.values()):
        return None
    if not np.array_equal(rep, np.arange(rep[0], rep[0] + rep.shape[0])):
        return None
    return cols, meta


def chunk_meta(path: Path) -> dict:
    """A chunk file's metadata (its ``digest``, ...), or ``{}`` for a file that is not a readable chunk.

    Args:
        path: The chunk file.

    Returns:
        The metadata.
    """
    got = _load(path, columns=False)
    return {} if got is None else got[1]


def load_chunk(path: Path, count: int, digest: str | None = None, start: int | None = None):
    """A saved chunk (columns, meta), or None if it is missing, damaged, foreign or incomplete (:func:`read_chunk`).

    Args:
        path: The chunk file.
        count: The replications it should hold.
        digest: The digest it should carry (None: not checked).
        start: Its first replication (None: not checked).

    Returns:
        (tuple[dict[str, numpy.ndarray], dict] | None): ``(columns, meta)``, or None.
    """
    return read_chunk(path, count, digest, start)[0]


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return repr(v) if math.isfinite(v) else ""
    if isinstance(v, (np.integer,)):
        return str(int(v))
    if isinstance(v, (list, tuple)):
        return json.dumps(v)
    return str(v)


def columns_of(rows: Iterable[dict]) -> list[str]:
    """Union of the keys of ``rows`` in first-seen order.

    Args:
        rows: The rows.

    Returns:
        The keys.
    """
    cols: dict[str, None] = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    return list(cols)


def write_table(out: Path, name: str, rows: list[dict]) -> list[str]:
    """Write ``rows`` as ``name.csv`` (floats written exactly, with ``repr``) and ``name.parquet``.

    Parquet is written only when pyarrow is installed. Returns the paths written.

    Args:
        out: The folder.
        name: The table's name.
        rows: The rows (their keys the columns, in first-seen order).

    Returns:
        The paths written.
    """
    cols = columns_of(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    paths = [out / f"{name}.csv"]
    atomic_write(paths[0], buf.getvalue().encode())
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return [str(p) for p in paths]
    data = {c: [_parquet_cell(r.get(c)) for r in rows] for c in cols}
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(data), sink)
    paths.append(out / f"{name}.parquet")
    atomic_write(paths[1], sink.getvalue().to_pybytes())
    return [str(p) for p in paths]


def _parquet_cell(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return json.dumps(v)
    return v


def inconsistent_chunks(cols: list[dict]) -> dict[int, str]:
    """The chunks of one grid point that disagree with the others: a chunk without a column the others have, or with
    NaN in a column where other replications of the point are numbers (a column that is NaN in every replication,
    such as ``switch_at`` of a policy that does not switch, is the point's, not a damage).

    Args:
        cols: The columns of each chunk, in chunk order.

    Returns:
        The chunks that disagree, by index, with why.
    """
    bad: dict[int, str] = {}
    names = [k for k in dict.fromkeys(k for ch in cols for k in ch)]
    for c, ch in enumerate(cols):
        lacks = [k for k in names if k not in ch]
        if lacks:
            bad[c] = f"without the column{'s' if len(lacks) > 1 else ''} {', '.join(lacks)} that the other chunks have"
    if bad:
        return bad
    for k in names:
        if cols[0][k].dtype.kind != "f":
            continue
        nan = [bool(np.isnan(ch[k]).any()) for ch in cols]
        if any(nan) and not all(bool(np.isnan(ch[k]).all()) for ch in cols):
            for c, has in enumerate(nan):
                if has:
                    bad.setdefault(c, f"holding NaN in {k} where the point's other replications are numbers")
    return bad


def concatenate_chunks(chunks: list[dict]) -> dict:
    """A grid point's records: each column concatenated over its chunks, in chunk order. Only the columns every
    chunk has: a run resumed across versions may hold chunks written before a column was added (diagnostics),
    whose numbers are otherwise the same; the tables then leave those cells empty.

    Args:
        chunks: The columns of each chunk, in chunk order.

    Returns:
        The records.
    """
    common = set.intersection(*(set(ch) for ch in chunks))
    return {k: np.concatenate([ch[k] for ch in chunks]) for k in chunks[0] if k in common}
