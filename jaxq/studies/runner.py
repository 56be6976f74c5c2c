"""The experiment runner: chunks on disk, resume, devices, processes, tables, figures, run record.

A run is a list of tasks (grid point i, chunk c); chunk c of a point covers replications
``[c * chunk, min((c + 1) * chunk, reps))`` and replication r always uses the key
``fold_in(PRNGKey(seed), r)``, so a chunk's numbers do not depend on which process or device computed
it, nor on when. Each finished chunk is written at once, atomically (:mod:`jaxq.studies.storage`);
``resume=True`` keeps the chunk files of an earlier run and computes only the missing ones, so a killed
and resumed run ends with the same bytes as an uninterrupted one. The resumed experiment may also *grow*:
more n, systems, seeds or replications (the study's enumeration keys, e.g. ``n`` and ``replications_at``),
never another study or other ``[grid]`` settings; the points both runs share keep their chunks (moved to
their new indices), and replication r of a point is the same number whatever the point's replication count.

Integrity. ``run`` holds an exclusive lock (``fcntl.flock`` on ``DIR/.jaxq-run.lock``) for its whole
duration: a second ``jaxq run`` into the same folder is refused at once (one line, exit 2). Every chunk
file carries the digest of what it holds (:func:`jaxq.studies.storage.chunk_digest`: everything that
determines its grid point's numbers, with the seed and the system file, and its replication range); on
resume a chunk is reused only when it is readable, complete and its digest matches, otherwise it is
recomputed and a one-line note on stderr counts such files. So a deleted ``manifest.json`` or another
run's chunk files never leak into this run's tables. ``resume=True`` refuses a folder that holds files but no
jaxq run (:func:`check_resumable`): it never overwrites files that are not a run's. ``jaxq run`` without
``--resume`` refuses any non-empty folder before it starts (:func:`check_output_folder`).

Precision targets (``target_rel_se``, :mod:`jaxq.studies.targets`). Before its chunks are cut, every targeted
grid point is planned: its pilot (on a seed of its own) is read from ``DIR/pilots`` or run and written there at
once, and the point's replication count becomes the plan R. The run is then exactly a fixed run of R
replications (the same chunk files: their digests leave the target out), so a resumed run keeps every finished
chunk and pilot and ends with the bytes of an uninterrupted run. The tables get ``rel_se_target``, ``rel_se``
(reached), ``stopped_by``, ``max_reps``, ``pilot_reps`` and ``pilot_rel_se`` per targeted point.

With several processes (``jax.distributed``), process p computes the tasks t with ``t % P == p`` and
writes them to the shared output directory; after a barrier process 0 reads all chunks, aggregates and
draws. Within a process each chunk's replications are cut into one slice per local device (on a CPU, for a
chunk of at least ``SPREAD_WORK``), every slice running the same single-device program (:mod:`jaxq.mc.replications`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from jaxq.errors import InputError
from jaxq.precision import float64
from jaxq.studies import storage, targets
from jaxq.studies.experiment import Experiment, base_fingerprint

MANIFEST = "manifest.json"
LOCK = ".jaxq-run.lock"
FAIL_AFTER_ENV = "JAXQ_RUN_FAIL_AFTER"  # test hook: raise after this many chunks were written


class SimulatedKill(RuntimeError):
    """Raised by the ``JAXQ_RUN_FAIL_AFTER`` test hook to imitate a run killed between chunks.

    Attributes:
        args (tuple): The message, as :class:`RuntimeError` keeps it.
    """


def tasks(exp: Experiment) -> list[tuple[int, int, int, int]]:
    """All ``(point, chunk, start, count)`` of the experiment, point-major.

    Args:
        exp: The experiment.

    Returns:
        The tasks.
    """
    out = []
    for i, pt in enumerate(exp.points):
        reps, size = pt["reps"], pt["chunk"]
        for c, lo in enumerate(range(0, reps, size)):
            out.append((i, c, lo, min(size, reps - lo)))
    return out


def versions() -> dict:
    """Versions of the software that produced the numbers."""
    import jax
    import jaxlib

    import jaxq

    return {
        "jaxq": jaxq.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def read_manifest(out: Path) -> dict | None:
    """The manifest of the jaxq run in ``out`` (a JSON object with its fingerprint and experiment), or None:
    no ``manifest.json``, or one that is not a jaxq run's (unreadable, another shape).

    Args:
        out: The run's folder.

    Returns:
        The manifest, or None.
    """
    try:
        man = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(man, dict) and isinstance(man.get("experiment"), dict) and isinstance(man.get("fingerprint"), str)
    return man if ok else None


def is_empty_folder(out: Path, key: str = "--out") -> bool:
    """Whether ``out`` is missing or an empty folder (a folder that cannot be listed is refused, naming ``key``).

    Args:
        out: The folder.
        key: The key a refusal names.

    Returns:
        Whether it is missing or empty.

    Raises:
        InputError: Naming ``key`` when the folder cannot be listed.
    """
    if not out.is_dir():
        return not os.path.lexists(out)
    try:
        with os.scandir(out) as entries:
            return next(entries, None) is None
    except OSError as e:
        raise InputError(key, f"{out} cannot be read ({e.strerror or e})") from None


def check_output_folder(out: Path, *, resume: bool, default: bool = False) -> None:
    """Refuse, before any work, an output folder ``jaxq run`` must not write into (one line naming ``--out``):
    a path that cannot be a folder (:func:`jaxq.model.validate.check_output_file` with ``folder=True``: a file,
    a file in the way, nowhere to create it); without ``resume``, a folder that is not empty (an earlier run
    or anything else: its files would be overwritten or mixed with this run's); with ``resume``, one that
    holds files but no jaxq run (:func:`check_resumable`). ``default``: ``out`` is the default folder.

    Args:
        out: The output folder.
        resume: The run resumes an earlier run there.
        default: ``out`` is the default folder.

    Raises:
        InputError: Naming ``--out`` (``--resume`` for a folder that holds no jaxq run).
    """
    from jaxq.model.validate import check_output_file

    check_output_file(out, "--out", folder=True)
    check_not_in_use(out)
    if resume:
        check_resumable(out)
    elif not is_empty_folder(out):
        where = f"{out} (the default folder, results/<experiment name>)" if default else str(out)
        raise InputError("--out", f"{where} is not empty; pass --resume to continue the run there, or choose "
                                  "another folder")


def check_resumable(out: Path) -> None:
    """Refuse to resume into a folder that holds files but no jaxq run: none of a run's marks (a jaxq
    ``manifest.json``, ``chunks/``, the lock file), or a ``manifest.json`` that is not a jaxq run's. Its files
    are someone else's; a resumed run would overwrite them.

    Args:
        out: The output folder.

    Raises:
        InputError: Naming ``--resume``.
    """
    if is_empty_folder(out, "--resume"):
        return
    if os.path.lexists(out / MANIFEST):
        if read_manifest(out) is None:
            raise InputError("--resume", f"{out / MANIFEST} is not the manifest of a jaxq run; --resume continues "
                                         "only a jaxq run: choose another --out")
        return
    if not ((out / storage.CHUNKS).is_dir() or (out / LOCK).is_file()):
        raise InputError("--resume", f"{out} holds files but no jaxq run (no manifest.json, no chunks/); --resume "
                                     "continues only a jaxq run: choose another --out")


def _check_manifest(exp: Experiment, out: Path, resume: bool) -> None:
    """On resume, refuse a folder whose manifest belongs to another experiment (reads only).

    Another experiment: another study, ``cv``, or ``[grid]`` keys other than the study's enumeration keys
    (its base fingerprint). Systems, seeds, replications and the enumeration keys (``n``, ...) may change:
    the chunks of the points both runs share are kept (:func:`_adopt_chunks`). A folder that holds no jaxq run
    is refused too (:func:`check_resumable`)."""
    if not resume:
        return
    check_resumable(out)
    old = read_manifest(out)
    if old is None:
        return  # a run without its manifest (deleted): the chunk digests decide what is reused
    try:
        e = old["experiment"]
        same = (e["study"] == exp.study.name and isinstance(e["grid"], dict)
                and base_fingerprint(e["study"], e["grid"], e.get("cv", True), exp.study.enumeration_keys)
                == exp.base_fingerprint())
    except (KeyError, TypeError):
        same = False
    if not same:
        keys = ", ".join(exp.study.enumeration_keys) or "none"
        raise InputError("--resume", f"{out} holds a run of a different experiment (another study, cv or [grid] "
                                     f"settings; a resumed run may change only systems, seeds, replications and "
                                     f"grid keys that list points: {keys})")


@contextlib.contextmanager
def output_lock(out: Path):
    """Hold an exclusive lock on the output folder (created if needed); refuse if another run holds it.

    ``fcntl.flock`` on ``out/.jaxq-run.lock``; released when the block ends or the process dies. The
    file keeps the holder's process id, which the refusal names.

    Args:
        out: The output folder.

    Raises:
        InputError: Naming ``--out`` when another run holds the lock.
    """
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd, out)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def check_not_in_use(out: Path) -> None:
    """Refuse (as :func:`output_lock` would) a folder whose lock another run holds now; writes nothing.

    Args:
        out: The output folder.

    Raises:
        InputError: Naming ``--out`` when another run holds the lock.
    """
    try:
        fd = os.open(out / LOCK, os.O_RDONLY)
    except OSError:
        return  # no lock file: no run holds the folder
    try:
        _lock(fd, out)
    finally:
        os.close(fd)  # releases the lock taken for the test


def _lock(fd: int, out: Path) -> None:
    """Take the exclusive lock of ``fd`` at once, or refuse naming the process that holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        try:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        except OSError:
            holder = "?"
        raise InputError("--out", f"{out} is in use by another jaxq run (process {holder}); wait for it to "
                                  "finish or choose another --out") from None


def _prepare(exp: Experiment, out: Path, resume: bool, is_main: bool) -> None:
    """Create the output directory and manifest; keep (resume) or clear earlier chunk files."""
    targets.require_planned(exp)
    fp = exp.fingerprint()
    _check_manifest(exp, out, resume)
    if not is_main:
        return
    out.mkdir(parents=True, exist_ok=True)
    chunks = out / storage.CHUNKS
    if not resume and chunks.is_dir():
        shutil.rmtree(chunks)
    chunks.mkdir(exist_ok=True)
    storage.atomic_write(chunks / ".gitignore", b"*\n")  # chunk files are a cache, never committed
    if resume:
        old = read_manifest(out)
        _adopt_chunks(exp, out)
        rechunk(exp, out, old)
    storage.write_json(out / MANIFEST, {"fingerprint": fp, "experiment": exp.to_dict(), "points": list(exp.points),
                                        "point_digests": exp.point_digests()})


def chunk_digests(exp: Experiment) -> dict[tuple[int, int], str]:
    """The digest every chunk file of this run must carry, by (point, chunk).

    Args:
        exp: The experiment.

    Returns:
        The digests.
    """
    points = exp.point_digests()
    return {(i, c): storage.chunk_digest(points[i], c, lo, count) for i, c, lo, count in tasks(exp)}


def _adopt_chunks(exp: Experiment, out: Path) -> int:
    """Put every chunk file of ``out`` whose digest belongs to a task of ``exp`` at that task's place.

    After the grid of a resumed run changed (a new n, more replications at some n, another system), the
    points it shares with the earlier run sit at other indices: their chunks move instead of being
    recomputed. A valid chunk that no task wants but whose place a task needs is copied to ``chunks/kept/``
    (named by its digest) before it is recomputed over, so that going back to the earlier grid recomputes
    nothing.
    Files are staged through ``chunks/.adopt`` (named by digest) so that no chunk overwrites one still to be
    moved; a resume after a kill during the moves finds the staged files there.
    Returns the number of files moved."""
    chunks = out / storage.CHUNKS
    digests = chunk_digests(exp)
    wanted: dict[str, list[Path]] = {}
    for (i, c), d in digests.items():
        wanted.setdefault(d, []).append(storage.chunk_path(out, i, c))
    places = {storage.chunk_path(out, i, c) for i, c in digests}
    moves = []
    staged_before = sorted(chunks.glob(".adopt/*.npz"))  # left by an adoption that was killed half-way
    for f in sorted(chunks.glob("p*/c*.npz")) + sorted(chunks.glob("kept/*.npz")) + staged_before:
        d = storage.chunk_meta(f).get("digest")
        if not isinstance(d, str):
            continue  # damaged: recomputed over where a task needs its place
        targets = wanted.get(d, [])
        if targets and f not in targets:
            moves.append((f, d, targets))
        elif not targets and f in places and not (keep := chunks / "kept" / f"{d[:32]}.npz").exists():
            keep.parent.mkdir(exist_ok=True)  # a copy: the file itself is recomputed over (and noted) as before
            storage.atomic_write(keep, f.read_bytes())
    if not moves:
        return 0
    stage = chunks / ".adopt"
    stage.mkdir(exist_ok=True)
    staged = {}
    for f, d, targets in moves:  # named by digest: a rerun after a kill finds them (and a name is never reused)
        tmp = stage / f"{d}.npz"
        os.replace(f, tmp)
        staged[tmp] = targets
    for tmp, targets in staged.items():
        for t in targets[1:]:  # the same point twice in one grid: each place gets a copy
            t.parent.mkdir(parents=True, exist_ok=True)
            storage.atomic_write(t, tmp.read_bytes())
        targets[0].parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, targets[0])
    with contextlib.suppress(OSError):  # files of other runs left in the stage: keep the folder
        stage.rmdir()
    return len(moves)


RECHUNK = ".rechunk"  # chunks/.rechunk: files being cut into chunks of another size (a kill leaves them there)


def rechunk(exp: Experiment, out: Path, old: dict | None = None) -> int:
    """Rebuild the chunks a resumed run needs from finished replications saved in chunks of another size.

    Replication r of a point is the same number whatever the chunking (its key is ``fold_in(PRNGKey(seed),
    r)``), and every chunk file names its replications (``replications`` in its metadata:
    :meth:`Experiment.replication_digests`; for files of an earlier version, the earlier run's manifest
    ``old`` says it). A task whose chunk file is missing or not its own is assembled from such files when they
    hold all its replications; a one-line note says how many chunks were rebuilt and that only the chunking
    changed. Source files at places about to be written are staged in ``chunks/.rechunk`` first (a kill
    leaves them there for the next resume); files wholly used are removed at the end. Returns the number of
    chunks rebuilt.

    Args:
        exp: The experiment.
        out: The run's folder.
        old: The earlier run's manifest (None: none).

    Returns:
        The chunks rebuilt.
    """
    chunks = out / storage.CHUNKS
    digests = chunk_digests(exp)
    rdig = exp.replication_digests()
    need: dict[int, list[tuple[int, int, int]]] = {}
    for i, c, lo, count in tasks(exp):
        if rdig[i] is not None and storage.read_chunk(storage.chunk_path(out, i, c), count, digests[i, c], lo)[1] != "ok":
            need.setdefault(i, []).append((c, lo, count))
    if not need:
        return 0
    legacy = _legacy_replications(exp, old)
    wanted = {rdig[i] for i in need}
    writes = {storage.chunk_path(out, i, c) for i, todo in need.items() for c, _, _ in todo}
    stage = chunks / RECHUNK
    # kept copies first: a place's file that adoption also kept is then read from the copy, not staged
    files = sorted(chunks.glob("kept/*.npz")) + sorted(stage.glob("*.npz")) + sorted(chunks.glob("p*/c*.npz"))
    sources: dict[str, dict[str, Path]] = {}  # replication digest -> {chunk digest: file}
    for f in files:
        meta = storage.chunk_meta(f)
        d = meta.get("digest")
        rd = meta.get("replications") or legacy.get(d)
        if rd in wanted and isinstance(d, str) and d not in sources.setdefault(rd, {}):
            sources[rd][d] = f
    plans, sizes = [], set()  # (point, chunk, [(source, first row, end row)]) of every chunk to rebuild
    for i, todo in need.items():
        held = []  # (first replication, end, columns, meta, file) of every readable source of this point
        for f in sources.get(rdig[i], {}).values():
            got = storage.read_replications(f)
            if got is not None:
                cols, meta = got
                first = int(cols["rep"][0])
                held.append((first, first + cols["rep"].shape[0], cols, meta, f))
        for c, lo, count in todo:
            parts, r = [], lo  # contiguous slices of the sources covering [lo, lo + count)
            while r < lo + count:
                src = next((h for h in held if h[0] <= r < h[1]), None)
                if src is None:
                    break
                end = min(src[1], lo + count)
                parts.append((src, r - src[0], end - src[0]))
                r = end
            keys = list(parts[0][0][2]) if parts else []
            if r == lo + count and all(list(src[2]) == keys for src, _, _ in parts):  # else computed afresh
                plans.append((i, c, parts))
                sizes |= {src[3].get("chunk_size") for src, _, _ in parts}
    if not plans:
        return 0
    staged = {}  # a source at a place this resume writes to is moved to chunks/.rechunk first (kill-safe)
    for _, _, parts in plans:
        for src, _, _ in parts:
            f = src[4]
            if f in writes and f not in staged:
                stage.mkdir(exist_ok=True)
                staged[f] = stage / f"{src[3]['digest']}.npz"
                os.replace(f, staged[f])
    used: dict[Path, int] = {}
    for i, c, parts in plans:  # the columns are in memory: the order of the writes does not matter
        new = storage.concatenate_chunks([{k: v[a:b] for k, v in src[2].items()} for src, a, b in parts])
        wall = sum(src[3].get("wall_s", 0.0) * (b - a) / (src[1] - src[0]) for src, a, b in parts)
        ev = int(np.sum(new["events"])) if "events" in new else 0
        storage.save_chunk(storage.chunk_path(out, i, c), new,
                           {"wall_s": wall, "events": ev, "process": 0, "digest": digests[i, c],
                            "replications": rdig[i], "chunk_size": exp.points[i]["chunk"], "rebuilt": True})
        for src, a, b in parts:
            f = staged.get(src[4], src[4])
            used[f] = used.get(f, 0) + (b - a)
    rebuilt = len(plans)
    for f, n_used in used.items():  # a staged or kept file all of whose replications now sit in this run's chunks
        got = storage.read_replications(f)
        if got is not None and f.parent.name in (RECHUNK, "kept") and n_used >= got[0]["rep"].shape[0]:
            f.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        stage.rmdir()
    if rebuilt:
        was = ", ".join(str(x) for x in sorted(s for s in sizes if isinstance(s, int))) or "another size"
        now = ", ".join(str(x) for x in sorted({exp.points[i]["chunk"] for i in need}))
        sys.stderr.write(f"jaxq: note: only the chunking changed for {rebuilt} chunk files (chunk {was} before, "
                         f"{now} now): rebuilt them from the finished replications in {chunks}, nothing "
                         "recomputed\n")
    return rebuilt


def _legacy_replications(exp: Experiment, old: dict | None) -> dict[str, str]:
    """Chunk digest -> replication digest of the earlier run's chunks (from its manifest ``old``), for chunk files
    written before they named their replications."""
    try:
        points = [dict(p) for p in old["points"]]
        out = {}
        pds, rds = exp.point_digests(points), exp.replication_digests(points)
        for pt, pd, rd in zip(points, pds, rds):
            if pd is None:
                continue
            reps, size = int(pt["reps"]), int(pt["chunk"])
            for c, lo in enumerate(range(0, reps, size)):
                out[storage.chunk_digest(pd, c, lo, min(size, reps - lo))] = rd
        return out
    except (TypeError, KeyError, ValueError, AttributeError):  # no manifest, or not one of ours
        return {}


def _progress_bar(total: int, name: str, enabled: bool | None):
    """The run's :class:`jaxq.progress.Monitor` in replications: a tqdm bar on stderr (replications done, chunks
    done and events per second; ``enabled`` None: only on a terminal) and, terminal or not, the estimate of a run
    expected to take more than 30 s at the rate measured after its first chunk, then a line at least once a
    minute (off the terminal); ``jaxq --quiet`` silences both."""
    from jaxq.progress import monitor

    show = sys.stderr.isatty() if enabled is None else enabled
    return monitor(f"run {name}", total, "replications", bar=show, dynamic_ncols=True)


def compute(exp: Experiment, out: Path, *, devices=None, process=(0, 1), progress: bool | None = None) -> dict:
    """Compute this process's missing chunks; returns counts of computed and reused chunks.

    Args:
        exp: The experiment.
        out: The run's folder.
        devices (typing.Any): The devices each chunk is cut over (None: all local devices).
        process (tuple[int, int]): ``(p, P)``: this process computes the tasks t with ``t % P == p``.
        progress: Show the tqdm bar (None: only on a terminal).

    Returns:
        ``{"computed", "reused", "events", "wall_s"}``.

    Raises:
        SimulatedKill: After ``JAXQ_RUN_FAIL_AFTER`` chunks (the test hook).
    """
    p, P = process
    targets.require_planned(exp)
    mine = [t for k, t in enumerate(tasks(exp)) if k % P == p]
    digests = chunk_digests(exp)
    todo, reused, bad = [], 0, {}
    kept: dict[int, list] = {}  # point -> [(task, columns)] of its chunks that read back
    for i, c, lo, count in mine:
        got, state = storage.read_chunk(storage.chunk_path(out, i, c), count, digests[i, c], lo)
        if state == "ok":
            kept.setdefault(i, []).append(((i, c, lo, count), got[0]))
        else:
            todo.append((i, c, lo, count))
            if state != "missing":
                bad[state] = bad.get(state, 0) + 1
    for i, chunks in kept.items():  # a chunk that disagrees with its point's others (NaN where they hold numbers)
        flagged = storage.inconsistent_chunks([cols for _, cols in chunks])
        for k, (task, _) in enumerate(chunks):
            if k in flagged:
                todo.append(task)
                bad["inconsistent"] = bad.get("inconsistent", 0) + 1
            else:
                reused += 1
    todo.sort()
    if bad:
        what = ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))
        sys.stderr.write(f"jaxq: note: recomputing {sum(bad.values())} chunk files in {out / storage.CHUNKS} that "
                         f"are damaged or belong to another run ({what})\n")
    rdig = exp.replication_digests()
    fail_after = int(os.environ.get(FAIL_AFTER_ENV, "-1"))
    bar = _progress_bar(sum(t[3] for t in todo), exp.name, progress)
    events = 0
    t_start = time.perf_counter()
    try:
        for k, (i, c, lo, count) in enumerate(todo):
            if k == fail_after:
                raise SimulatedKill(f"{FAIL_AFTER_ENV}={fail_after}: stopping after {k} chunks")
            pt = exp.points[i]
            t0 = time.perf_counter()
            cols = exp.study.run_chunk(exp, pt, lo, count, devices)
            wall = time.perf_counter() - t0
            cols = {k2: np.asarray(v) for k2, v in cols.items()}
            cols["rep"] = np.arange(lo, lo + count, dtype=np.int64)
            ev = int(np.sum(cols["events"])) if "events" in cols else 0
            storage.save_chunk(storage.chunk_path(out, i, c), cols,
                               {"wall_s": wall, "events": ev, "process": p, "digest": digests[i, c],
                                "replications": rdig[i], "chunk_size": pt["chunk"]})
            events += ev
            bar.update(count)
            el = time.perf_counter() - t_start
            if bar.bar is not None:
                bar.bar.set_postfix(chunks=f"{k + 1}/{len(todo)}", ev_per_s=f"{events / el:.3g}" if el > 0 else "-")
    finally:
        bar.close()
    return {"computed": len(todo), "reused": reused, "events": events, "wall_s": time.perf_counter() - t_start}


def gather(exp: Experiment, out: Path) -> tuple[list[dict], dict]:
    """All records, point by point (columns concatenated over chunks), and totals from chunk metadata.

    Args:
        exp: The experiment.
        out: The run's folder.

    Returns:
        ``(records, {"compute_s", "events"})``.

    Raises:
        InputError: Naming ``--out`` for a chunk that does not check.
    """
    per_point: list[list] = [[] for _ in exp.points]
    compute_s, events = 0.0, 0
    digests = chunk_digests(exp)
    for i, c, lo, count in tasks(exp):
        got, state = storage.read_chunk(storage.chunk_path(out, i, c), count, digests[i, c], lo)
        if got is None:
            raise InputError("--out", f"chunk {c} of grid point {i} in {out} is {state} (run again with --resume)")
        cols, meta = got
        per_point[i].append(cols)
        compute_s += meta["wall_s"]
        events += meta["events"]
    records = [storage.concatenate_chunks(chs) for chs in per_point]
    return records, {"compute_s": compute_s, "events": events}


def tidy_records(exp: Experiment, records: list[dict]) -> list[dict]:
    """One row per (grid point, replication): the point's keys, ``rep`` and its record columns.

    Args:
        exp: The experiment.
        records: The records of each grid point.

    Returns:
        The rows.
    """
    rows = []
    for i, (pt, rec) in enumerate(zip(exp.points, records)):
        keys = [k for k in rec if k != "rep"]
        base = {"point": i, **{k: v for k, v in pt.items() if k not in ("reps", "chunk", *targets.TARGET_KEYS)}}
        for j in range(rec["rep"].shape[0]):
            rows.append({**base, "rep": int(rec["rep"][j]), **{k: _cell_value(rec[k][j]) for k in keys}})
    return rows


def _cell_value(v):
    """A record's value for one replication: a number, or a list for an array-valued record (a histogram)."""
    return v.item() if np.ndim(v) == 0 else np.asarray(v).tolist()


def finish(exp: Experiment, out: Path, session: dict, devices_used, process=(0, 1)) -> dict:
    """Aggregate all chunks into tables and figures and write ``run.json`` (process 0 only).

    Args:
        exp: The experiment.
        out: The run's folder.
        session: The counts of :func:`compute`, with the run's ``wall_s``.
        devices_used (typing.Any): The devices recorded (None: all local devices).
        process (tuple[int, int]): ``(p, P)``: this process and the number of processes.

    Returns:
        The run record.
    """
    import jax

    records, totals = gather(exp, out)
    files = []
    if exp.records:
        files += storage.write_table(out, "records", tidy_records(exp, records))
    else:  # a stale table of an earlier run must not pass for this one's
        for ext in ("csv", "parquet"):
            (out / f"records.{ext}").unlink(missing_ok=True)
    planned, target_notes = targets.summaries(exp, records)
    tables = {name: [{k: _finite_or_none(v) for k, v in _with_target(row, planned).items()} for row in rows]
              for name, rows in exp.study.aggregate(exp, list(exp.points), records).items()}
    for name, rows in tables.items():
        files += storage.write_table(out, name, rows)
    notes = nan_notes(exp, records) + target_notes
    try:
        files += exp.study.figure(exp, list(exp.points), records, tables, out)
    except Exception as e:  # noqa: BLE001  (the tables are written: a figure that cannot be drawn is a note)
        notes.append(f"the figures were not drawn ({type(e).__name__}: {e}); the tables are complete")
    for note in notes:
        sys.stderr.write(f"jaxq: note: {note}\n")
    record = {
        "experiment": exp.to_dict(),
        "fingerprint": exp.fingerprint(),
        "versions": versions(),
        "devices": [str(d) for d in (devices_used or jax.local_devices())],
        "backend": jax.default_backend(),
        "processes": process[1],
        "seeds": list(exp.seeds),
        "points": len(exp.points),
        "chunks": len(tasks(exp)),
        "chunks_computed_this_session": session["computed"],
        "chunks_reused": session["reused"],
        "replications": int(sum(pt["reps"] for pt in exp.points)),
        "events": totals["events"],
        "compute_s": totals["compute_s"],
        "wall_s": session["wall_s"],
        "tables": tables,
        "warnings": notes,
    }
    if planned:  # the plan of every targeted grid point
        record["targets"] = [{"point": i, "reps": exp.points[i]["reps"],
                              **{k: _finite_or_none(v) for k, v in c.items()}} for i, c in planned.items()]
    files.append(str(out / "run.json"))
    record["files"] = files
    storage.write_json(out / "run.json", record)
    return record


def _with_target(row: dict, planned: dict[int, dict]) -> dict:
    """A table row with its grid point's precision target columns (:func:`jaxq.studies.targets.summaries`)."""
    i = row.get("point")
    return {**row, **planned[i]} if isinstance(i, (int, np.integer)) and i in planned else row


def nan_notes(exp: Experiment, records: list[dict]) -> list[str]:
    """A sentence for every grid point whose records hold NaN in a column where its other replications hold
    numbers: the tables leave its estimates empty, and this says why (a column NaN in every replication, such as
    ``switch_at`` of a policy that does not switch, is the point's own and not reported).

    Args:
        exp: The experiment.
        records: The records of each grid point.

    Returns:
        The sentences.
    """
    out = []
    for i, (pt, rec) in enumerate(zip(exp.points, records)):
        for k, v in rec.items():
            v = np.asarray(v)
            if v.dtype.kind != "f":
                continue
            nan = np.isnan(v).reshape(v.shape[0], -1).any(axis=1)
            if nan.any() and not nan.all():
                label = ", ".join(f"{key} {pt[key]}" for key in ("system", "policy", "n", "seed") if key in pt)
                out.append(f"grid point {i} ({label}): {int(nan.sum())} of {nan.size} replications hold NaN in {k}; "
                           "its estimates from that column are left empty")
    return out


def _finite_or_none(v):
    """Tables hold no NaN or infinity (JSON refuses them): an undefined statistic is None (empty cell)."""
    if isinstance(v, (float, np.floating)) and not np.isfinite(v):
        return None
    return v


@float64
def run(exp: Experiment, out: str | Path, *, resume: bool = False, devices=None, distributed: bool = False,
        progress: bool | None = None) -> dict | None:
    """Run an experiment into ``out``; returns the run record (None on processes other than 0).

    Args:
        exp: a validated experiment (:func:`jaxq.studies.experiment.load_experiment`).
        out: output directory (created now, after validation).
        resume: keep the chunk files of an earlier run of the same experiment and compute the rest.
        devices (typing.Any): devices to shard each chunk over (default: all local devices).
        distributed: this is one of several ``jax.distributed`` processes sharing ``out``.
        progress: show the tqdm bar (default: only on a terminal).

    Returns:
        The run record (:func:`finish`), or None on processes other than 0.

    Raises:
        InputError: Naming ``out`` when it is empty.
    """
    import jax

    if isinstance(out, str) and not out.strip():  # Path("") is the current folder: never a silent default
        raise InputError("out", "is empty; name an output folder")
    out = Path(out)
    t0 = time.perf_counter()
    p, P = (jax.process_index(), jax.process_count()) if distributed else (0, 1)
    _check_manifest(exp, out, resume)  # refuse before touching the folder
    if P > 1:  # every process has checked the folder (jaxq run --out) before process 0 writes to it
        _barrier("jaxq-run-checked")
    lock = output_lock(out) if p == 0 else contextlib.nullcontext()
    with lock:
        if targets.unplanned(exp):  # the pilots of targeted points, before their chunks are cut
            if p == 0:
                targets.clear(out, resume)
            if P > 1:
                _barrier("jaxq-run-pilots-cleared")
            exp = targets.plan(exp, out, devices=devices, process=(p, P), barrier=_barrier if P > 1 else None,
                               progress=progress)
        _prepare(exp, out, resume, is_main=p == 0)
        if P > 1:
            _barrier("jaxq-run-prepared")
        session = compute(exp, out, devices=devices, process=(p, P), progress=progress)
        if P > 1:
            _barrier("jaxq-run-computed")
        if p != 0:
            return None
        session["wall_s"] = time.perf_counter() - t0
        return finish(exp, out, session, devices, (p, P))


def _barrier(name: str) -> None:
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices(name)
