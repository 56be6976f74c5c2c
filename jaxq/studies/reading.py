"""Reading a finished run: its grid points and per-replication records, every chunk checked against the digests
of the run's manifest (as a resume checks them), so that records of another run, of an edited experiment or of
a damaged file are never returned as this run's (:func:`jaxq.read_run`)."""

from __future__ import annotations

from pathlib import Path

from jaxq.errors import InputError
from jaxq.studies import storage
from jaxq.studies.runner import MANIFEST, read_manifest


class RunRecords(tuple):
    """``(points, records)`` of a run (:func:`read_records`), with ``left_out`` (the grid points not returned:
    ``{"point", "grid_point", "chunks"}``, each chunk with its state) and ``warnings`` (sentences saying so).

    Attributes:
        left_out: The grid points not returned: ``{"point", "grid_point", "chunks"}``, each chunk with its state.
        warnings: Sentences saying so.
    """

    left_out: list[dict]
    warnings: tuple[str, ...]

    def __new__(cls, points, records, left_out=(), warnings=()):
        self = super().__new__(cls, (points, records))
        self.left_out, self.warnings = list(left_out), tuple(warnings)
        return self


def read_records(out: Path, complete_only: bool = False) -> RunRecords:
    """The grid points and per-replication records of the run in ``out``, every chunk checked against the
    digests of the run's manifest (as a resume checks them: :func:`jaxq.studies.storage.read_chunk`).

    A grid point with a chunk that is missing, damaged (corrupt, incomplete) or foreign (another run's, or
    left by an earlier run of an edited experiment) is an InputError naming the folder and the point, unless
    ``complete_only``: then only the points whose chunks all check are returned and ``left_out`` and
    ``warnings`` say which were left out and why.

    Args:
        out: The run's folder.
        complete_only: Return only the points whose chunks all check (the others in ``left_out``).

    Returns:
        ``(points, records)`` with ``left_out`` and ``warnings``.

    Raises:
        InputError: Naming ``out``: no readable manifest, no grid points, or (without ``complete_only``) a grid
            point with a chunk that does not check.
    """
    man = read_manifest(out)
    if man is None:
        raise InputError("out", f"{out} holds no jaxq run (no readable manifest.json)")
    points = man.get("points")
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise InputError("out", f"{out / MANIFEST} lists no grid points")
    pds = _manifest_point_digests(out, man)
    kept_points, records, left_out = [], [], []
    for i, pt in enumerate(points):
        try:
            reps, size = int(pt["reps"]), int(pt["chunk"])
        except (KeyError, TypeError, ValueError):
            raise InputError("out", f"grid point {i} of {out / MANIFEST} has no replication count or chunk") from None
        cols, bad = [], {}
        for c, lo in enumerate(range(0, reps, size)):
            count = min(size, reps - lo)
            got, state = storage.read_chunk(storage.chunk_path(out, i, c), count,
                                            storage.chunk_digest(pds[i], c, lo, count), lo)
            if got is None:
                bad[c] = state
            else:
                cols.append(got[0])
        if not bad:
            bad = storage.inconsistent_chunks(cols)
        if bad:
            left_out.append({"point": i, "grid_point": pt, "chunks": bad})
            continue
        kept_points.append(pt)
        records.append(storage.concatenate_chunks(cols))
    if left_out and not complete_only:
        first = left_out[0]
        raise InputError("out", f"{out}: grid point {first['point']} ({_point_label(first['grid_point'])}) has "
                                f"{_chunk_states(first['chunks'])}" + (f", and {len(left_out) - 1} more grid points "
                                f"too" if len(left_out) > 1 else "") + "; finish the run with jaxq run --resume, "
                                "or pass complete_only=True for the grid points whose chunks all check")
    notes = tuple(f"grid point {e['point']} ({_point_label(e['grid_point'])}) left out of the records of {out}: "
                  f"{_chunk_states(e['chunks'])}" for e in left_out)
    return RunRecords(kept_points, records, left_out, notes)


def _point_label(pt: dict) -> str:
    return ", ".join(f"{k} {pt[k]}" for k in ("system", "policy", "engine", "n", "dt", "seed") if pt.get(k) is not None)


def _chunk_states(bad: dict[int, str]) -> str:
    """``chunk 3 foreign (another run's), chunks 4, 5 missing``: the chunks that do not check, by state."""
    why = {"foreign": "foreign (another run's, or an earlier run's of an edited experiment)", "missing": "missing",
           "corrupt": "damaged (not readable)", "incomplete": "damaged (not the replications they should hold)"}
    by: dict[str, list[int]] = {}
    for c, state in bad.items():
        by.setdefault(state, []).append(c)
    return ", ".join(f"chunk{'s' if len(cs) > 1 else ''} {', '.join(map(str, cs[:8]))}{' ...' if len(cs) > 8 else ''} "
                     f"{why.get(st, st)}" for st, cs in sorted(by.items()))


def _manifest_point_digests(out: Path, man: dict) -> list[str]:
    """The digest of every grid point of the manifest ``man``: written there by this version; for a run of an
    earlier version, from its experiment rebuilt (its system files as they are now)."""
    pds = man.get("point_digests")
    if isinstance(pds, list) and len(pds) == len(man["points"]) and all(isinstance(d, str) for d in pds):
        return pds
    from jaxq.studies import get
    from jaxq.studies.experiment import DIGEST_OMITS, from_dict

    e = man["experiment"]
    try:
        fields = get(e["study"]).Grid.model_fields  # keys added since the run, at the value it had
        grid = {**{k: v for k, v in DIGEST_OMITS.items() if k in fields and k not in e["grid"]}, **e["grid"]}
        data = {"experiment": {"study": e["study"], "name": e["name"], "description": e.get("description", ""),
                               "systems": [_system_file(f) for f in e["systems"].values()],
                               "replications": e["replications"], "chunk": e["chunk"], "seeds": e["seeds"],
                               "records": e.get("records", True), "cv": e.get("cv", True)}, "grid": grid}
        exp = from_dict(data, Path(e["file"]))
    except (KeyError, TypeError, AttributeError, InputError) as err:
        raise InputError("out", f"{out} is a run of an earlier jaxq whose manifest does not name its chunks, and its "
                                f"experiment cannot be rebuilt to check them ({err}); run it again with jaxq run "
                                "--resume") from None
    got = exp.point_digests([dict(p) for p in man["points"]])
    if any(d is None for d in got):
        raise InputError("out", f"{out}: the manifest's grid points name systems its experiment does not have")
    return got


def _system_file(recorded: str) -> str:
    """A system file a manifest recorded, as it is found now: the recorded path, or, where that is gone (a run
    recorded in another checkout), the bundled example of the same file name. The chunk digests still decide
    whether the file is the one the run used."""
    from jaxq.examples import path as example_path

    p = Path(recorded)
    if p.is_file() or "/jaxq/examples/" not in p.as_posix():
        return recorded
    bundled = Path(example_path(p.stem))
    return str(bundled) if bundled.is_file() else recorded
