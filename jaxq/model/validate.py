"""The one validation layer of jaxq: files, values, seeds, rates of the n-th system, work estimates.

Every command and the Python API read configuration files with :func:`read_toml` and validate them
with pydantic models in *strict* mode (:func:`validate_model`): no string-to-number or
boolean-to-number coercion, unknown keys and tables refused, every number finite and inside the range
``[MIN_POSITIVE, MAX_MAGNITUDE]`` that the computations need (:data:`Positive`, :data:`Real`,
:data:`NonNegative`). Refusals are :class:`jaxq.errors.InputError` (one line ``KEY: REASON``).

Helpers for code that takes numbers from elsewhere (command-line options, Python callers):

* :func:`check_seed` ``(value, key) -> int``: a seed in ``[0, 2^32)``;
* :func:`check_int` / :func:`check_float`: bounded integers and finite floats;
* :func:`arg_type`: the same checks as an ``argparse`` ``type=``;
* :func:`check_rates` ``(system, n)``: the n-th system's rates are finite, positive and in range;
* :func:`pss_events_per_replication`, :func:`sde_steps_per_path`, :func:`check_work`,
  :func:`check_chunk`: a work estimate before any work (replications x events per replication).
"""

from __future__ import annotations

import argparse
import math
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pydantic
from pydantic import AfterValidator

from jaxq.errors import InputError

# ------------------------------------------------------------------------------------------ limits
MAX_MAGNITUDE = 1e30  # |x| of any real input; b / gamma^2 * h then stays below ~1e120 (squares finite)
MIN_POSITIVE = 1e-30  # smallest positive rate, cost weight or discount rate
MAX_FILE_BYTES = 1 << 20  # a configuration file is a few hundred bytes; refuse anything over 1 MiB
MAX_DEPTH = 8  # nesting of tables and arrays in a configuration file
SEED_LIMIT = 2**32  # seeds lie in [0, 2^32)
MAX_REPLICATIONS = 2**31 - 1  # replications (paths) of one grid point / one command: int32 indices
MAX_EVENTS_PER_REPLICATION = 2**31  # the per-event key counters of the simulators are 32-bit
MAX_STEPS_PER_PATH = 2**40  # time steps of one SDE path (horizon / dt)
MAX_TOTAL_WORK = 2.0**53  # events or steps of a whole run: counts stay exact, runs stay finite
MAX_CHUNKS = 2**20  # chunk files of one experiment
BYTES_PER_REPLICATION = 4096  # generous per-replication working memory of a chunk (state, keys, records)
MAX_RATE = 1e150  # any rate of the n-th system (events per unit time)


def _fmt(v: Any) -> str:
    """A value as the user typed it (TOML spelling for booleans), shortened."""
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, str):
        s = repr(v)
    elif isinstance(v, float):
        s = f"{v:g}"
    else:
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


# ------------------------------------------------------------------------------------------ files
def parse_toml(data: bytes, name: str) -> dict[str, Any]:
    """Parse the bytes of a TOML file; anything but valid UTF-8 TOML is an :class:`InputError`.

    Args:
        data: The file's bytes (a UTF-8 byte order mark is skipped).
        name: The file's name, the key of the errors.

    Returns:
        The parsed document.

    Raises:
        InputError: Naming ``name``: more than ``MAX_FILE_BYTES`` bytes, not UTF-8, not valid TOML, or tables and
            arrays nested deeper than ``MAX_DEPTH``.
    """
    if len(data) > MAX_FILE_BYTES:
        raise InputError(name, f"{len(data)} bytes is too large for a configuration file (limit {MAX_FILE_BYTES})")
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, as some editors write it
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            name, f"not a UTF-8 text file (byte 0x{data[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(name, f"not valid TOML ({' '.join(str(e).split())})") from None
    except RecursionError:
        raise InputError(name, f"arrays or tables nested too deeply (limit {MAX_DEPTH})") from None
    check_depth(doc, name)
    return doc


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML configuration file; a missing, unreadable or malformed file is an :class:`InputError`.

    Args:
        path: The file.

    Returns:
        The parsed document.

    Raises:
        InputError: Naming the path: a directory, no such file, unreadable, or as :func:`parse_toml`.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(str(path), "is a directory, not a file" if p.is_dir() else "no such file")
    try:
        with p.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InputError(str(path), f"cannot be read ({e.strerror or e})") from None
    return parse_toml(data, str(path))


def read_system(path: str | Path, kind: str) -> dict[str, Any]:
    """Read a configuration file whose ``[system]`` table has ``kind = KIND``.

    Args:
        path: The file.
        kind: The expected ``kind`` (KIND), e.g. ``"pss2x2"`` or ``"network"``.

    Returns:
        The parsed document.

    Raises:
        InputError: As :func:`read_toml`, or naming ``system.kind`` when the ``[system]`` table is missing or has
            another kind.
    """
    data = read_toml(path)
    system = data.get("system")
    if not isinstance(system, dict) or system.get("kind") != kind:
        raise InputError("system.kind", f"expected {kind!r}")
    return data


def check_depth(obj: Any, key: str, limit: int = MAX_DEPTH) -> None:
    """Refuse tables and arrays nested deeper than ``limit`` (iteratively: no recursion).

    Args:
        obj: The parsed document (dicts and lists).
        key: The key of the error.
        limit: The deepest nesting allowed.

    Raises:
        InputError: Naming ``key`` when the nesting is deeper than ``limit``.
    """
    stack = [(obj, 0)]
    while stack:
        x, d = stack.pop()
        if d > limit:
            raise InputError(key, f"arrays or tables nested too deeply (limit {limit})")
        if isinstance(x, dict):
            stack.extend((v, d + 1) for v in x.values())
        elif isinstance(x, list):
            stack.extend((v, d + 1) for v in x)


def check_tables(data: dict, allowed: tuple[str, ...], what: str) -> None:
    """Refuse top-level tables or keys other than ``allowed`` (e.g. a stray ``[extra]`` table).

    Args:
        data: The parsed document.
        allowed: The top-level tables and keys allowed.
        what: What the document is, for the message (e.g. ``"a 'network' system file"``).

    Raises:
        InputError: Naming the first top-level table or key not in ``allowed``.
    """
    for k in data:
        if k not in allowed:
            raise InputError(k, f"unknown top-level table or key in {what} (expected {', '.join(allowed)})")


def check_output_file(path: Any, key: str, folder: bool = False) -> Path:
    """An output file a command will write after its work, checked before any work: a non-empty path
    naming a file (not a directory, no trailing slash) in an existing folder where a file can be created
    (a probe file is created there and removed at once). Returns it as a :class:`~pathlib.Path`.

    ``folder=True``: an output folder instead (``jaxq run --out``): a path that is a folder or does not exist
    yet, whose nearest existing ancestor is a folder where a file can be created (the missing folders are
    created later, by the command). Refusals name ``key`` and the reason: exists and is not a folder, a
    file in the way, no file can be created there (``/proc/x``, read-only).

    Args:
        path: The file (or folder) to write.
        key: The key of the errors.
        folder: Check an output folder instead of a file.

    Returns:
        The path.

    Raises:
        InputError: Naming ``key``: an empty path, or one that cannot be written (the reasons above).
    """
    text = str(path) if path is not None else ""
    if not text.strip():
        raise InputError(key, f"empty path; name the {'folder' if folder else 'file'} to write")
    p = Path(text)
    if folder:
        if os.path.lexists(p) and not p.is_dir():
            raise InputError(key, f"{text!r} exists and is not a folder")
        base = next((a for a in (p, *p.parents) if os.path.lexists(a)), Path("."))
        if not base.is_dir():
            raise InputError(key, f"{text!r} cannot be created: {str(base)!r} is not a folder")
        _probe(base, ".jaxq-out", key, text)
        return p
    if text.endswith(("/", os.sep)):
        raise InputError(key, f"{text!r} ends with {text[-1]!r}, so it names a directory; name a file")
    if p.is_dir():
        raise InputError(key, f"{text!r} is a directory; name a file in it")
    folder_of = p.parent
    if not folder_of.is_dir():
        raise InputError(key, f"{text!r}: folder {str(folder_of)!r} does not exist")
    if p.exists() and not p.is_file():
        raise InputError(key, f"{text!r} exists and is not a regular file")
    _probe(folder_of, f".{p.name}", key, text)
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(key, f"{text!r} cannot be written (permission denied)")
    return p


def _probe(folder: Path, stem: str, key: str, text: str) -> None:
    """Refuse ``text`` (naming ``key``) unless a file can be created in ``folder`` (created and removed at once)."""
    probe = folder / f"{stem}.probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise InputError(key, f"{text!r} cannot be written: no file can be created in folder {str(folder)!r} "
                              f"({e.strerror or e})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------ pydantic
def pydantic_error(e: pydantic.ValidationError, prefix: str = "") -> InputError:
    """Turn the first pydantic validation error into one :class:`InputError` line naming the key.

    Args:
        e: The pydantic error.
        prefix: Put before the error's location to make the key (e.g. ``"system."``).

    Returns:
        The error (not raised).
    """
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"] if x not in ("function-after",))
    loc = loc.replace(".[", "[")
    key = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "config"
    typ, got = err["type"], err.get("input")
    if typ == "extra_forbidden":
        msg = "unknown key"
    elif typ == "missing":
        msg = "missing required key"
    elif typ in ("float_type", "float_parsing"):
        msg = f"expected a number, got {_fmt(got)} (strings and booleans are not numbers)"
    elif typ in ("int_type", "int_parsing", "int_from_float"):
        msg = f"expected an integer, got {_fmt(got)}"
    elif typ == "bool_type":
        msg = f"expected true or false, got {_fmt(got)}"
    elif typ in ("string_type",):
        msg = f"expected a string, got {_fmt(got)}"
    elif typ in ("list_type", "tuple_type"):
        msg = f"expected an array, got {_fmt(got)}"
    elif typ in ("model_type", "dict_type", "model_attributes_type"):
        msg = f"expected a table, got {_fmt(got)}"
    elif typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}[typ]
        bound = next(iter(err.get("ctx", {}).values()), "?")
        msg = f"must be {op} {bound}, got {_fmt(got)}"
    elif typ == "value_error":
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
    else:
        msg = err["msg"]
    msg = " ".join(msg.split())
    return InputError(key, msg[0].lower() + msg[1:] if msg else "invalid value")


def validate_model(model: type[pydantic.BaseModel], data: Any, prefix: str = ""):
    """``model.model_validate(data, strict=True)`` with one-line errors (:func:`pydantic_error`).

    Args:
        model: The pydantic model.
        data: The data to validate.
        prefix: Put before the error's location to make the key.

    Returns:
        (pydantic.BaseModel): The validated model instance.

    Raises:
        InputError: As :func:`pydantic_error`, or naming the prefix (default ``config``) for values nested too deeply.
    """
    try:
        return model.model_validate(data, strict=True)
    except pydantic.ValidationError as e:
        raise pydantic_error(e, prefix) from None
    except RecursionError:
        raise InputError(prefix.rstrip(".") or "config", "values nested too deeply") from None


def _finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError(f"must be a finite number, got {v}")
    return float(v)


def _positive(v: float) -> float:
    v = _finite(v)
    if not v > 0:
        raise ValueError(f"must be positive, got {v:g}")
    if not MIN_POSITIVE <= v <= MAX_MAGNITUDE:
        raise ValueError(f"{v:g} is outside the supported range [{MIN_POSITIVE:g}, {MAX_MAGNITUDE:g}]")
    return v


def _nonnegative(v: float) -> float:
    v = _finite(v)
    if v < 0:
        raise ValueError(f"must be >= 0, got {v:g}")
    return _positive(v) if v else 0.0


def _real(v: float) -> float:
    v = _finite(v)
    if abs(v) > MAX_MAGNITUDE:
        raise ValueError(f"{v:g} is outside the supported range [-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}]")
    return v


#: pydantic field types: a finite number in [MIN_POSITIVE, MAX_MAGNITUDE], 0 or such a number,
#: or any finite number of magnitude at most MAX_MAGNITUDE (use them in strict models).
Positive = Annotated[float, AfterValidator(_positive)]
NonNegative = Annotated[float, AfterValidator(_nonnegative)]
Real = Annotated[float, AfterValidator(_real)]


# ------------------------------------------------------------------------------------------ scalars
def check_seed(value: Any, key: str = "--seed") -> int:
    """A random seed: an integer (not a boolean) in ``[0, 2^32)``; returns it as an ``int``.

    Args:
        value: The seed.
        key: The key of the errors.

    Returns:
        The seed.

    Raises:
        InputError: Naming ``key``: not an integer, or outside ``[0, 2^32)``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(key, f"must be an integer in [0, 2^32), got {_fmt(value)}")
    if not 0 <= int(value) < SEED_LIMIT:
        raise InputError(key, f"must lie in [0, 2^32), got {int(value)}")
    return int(value)


def check_seeds(value: Any, key: str = "seeds") -> list[int]:
    """A non-empty list of seeds (each as :func:`check_seed`, named ``key[i]``).

    Args:
        value: The seeds.
        key: The key of the errors.

    Returns:
        The seeds.

    Raises:
        InputError: Naming ``key`` when not a non-empty list or tuple, or ``key[i]`` for a bad seed.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise InputError(key, f"must be a non-empty list of seeds, got {_fmt(value)}")
    return [check_seed(x, f"{key}[{i}]") for i, x in enumerate(value)]


def check_int(value: Any, key: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (not a boolean, not a float) in ``[lo, hi]``.

    Args:
        value: The value.
        key: The key of the errors.
        lo: The smallest value allowed (None: no bound).
        hi: The largest value allowed (None: no bound).

    Returns:
        The integer.

    Raises:
        InputError: Naming ``key``: not an integer, or out of bounds.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(key, f"must be an integer, got {_fmt(value)}")
    v = int(value)
    if lo is not None and v < lo:
        raise InputError(key, f"must be at least {lo}, got {v}")
    if hi is not None and v > hi:
        raise InputError(key, f"must be at most {hi}, got {v}")
    return v


def check_float(value: Any, key: str, *, gt: float | None = None, ge: float | None = None,
                lt: float | None = None, le: float | None = None) -> float:
    """A finite number (not a boolean, not a string) within the given bounds.

    Args:
        value: The value.
        key: The key of the errors.
        gt: The value must be greater (None: no bound).
        ge: The value must be at least this (None: no bound).
        lt: The value must be smaller (None: no bound).
        le: The value must be at most this (None: no bound).

    Returns:
        The number, as a float.

    Raises:
        InputError: Naming ``key``: not a number, beyond float64, not finite, or out of bounds.
    """
    if isinstance(value, (bool, np.bool_, str)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(key, f"must be a number, got {_fmt(value)}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float64
        raise InputError(key, f"too large: {_fmt(value)} is beyond the float64 range (about 1.8e308)") from None
    if not math.isfinite(v):
        raise InputError(key, f"must be a finite number, got {_fmt(value) if math.isnan(v) else 'inf'}")
    if gt is not None and not v > gt:
        raise InputError(key, f"must be > {gt:g}, got {v:g}")
    if ge is not None and not v >= ge:
        raise InputError(key, f"must be >= {ge:g}, got {v:g}")
    if lt is not None and not v < lt:
        raise InputError(key, f"must be < {lt:g}, got {v:g}")
    if le is not None and not v <= le:
        raise InputError(key, f"must be <= {le:g}, got {v:g}")
    return v


def check_bool(value: Any, key: str) -> bool:
    """``True`` or ``False`` (a numpy boolean too); strings (``"off"``), numbers and None are refused.

    Args:
        value: The value.
        key: The key of the error.

    Returns:
        The boolean.

    Raises:
        InputError: Naming ``key`` when not a boolean.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(key, f"must be True or False, got {_fmt(value)}")
    return bool(value)


def check_text(value: Any, key: str) -> str:
    """A string (a policy, engine or scheme name): anything else is refused; the callee checks the value.

    Args:
        value: The value.
        key: The key of the error.

    Returns:
        The string.

    Raises:
        InputError: Naming ``key`` when not a string.
    """
    if not isinstance(value, str):
        raise InputError(key, f"must be a string, got {_fmt(value)}")
    return value


def check_path(value: Any, key: str, what: str = "a file") -> str | os.PathLike:
    """A non-empty file or folder name (a string or path object; ``what`` it should name, for the message):
    ``""`` would silently mean the current folder.

    Args:
        value: The path.
        key: The key of the errors.
        what: What it should name, for the message.

    Returns:
        The path, as given.

    Raises:
        InputError: Naming ``key``: not a string or path object, or empty.
    """
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(key, f"must name {what} (a string or a path), got {_fmt(value)}")
    if not str(os.fspath(value)).strip():
        raise InputError(key, f"empty path; name {what}")
    return value


def check_times(value: Any, key: str, lo: float = 0.0) -> tuple[float, ...]:
    """Times: a number or a sequence of finite numbers >= ``lo`` (not a string); returned as a tuple of floats.

    Args:
        value: The times.
        key: The key of the errors (``key[i]`` for an entry).
        lo: The smallest time allowed.

    Returns:
        The times.

    Raises:
        InputError: Naming ``key`` when not numbers, or ``key[i]`` for a bad entry (as :func:`check_float`).
    """
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise InputError(key, f"must be a list of numbers, got {_fmt(value)}")
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    out = []
    for i, t in enumerate(np.asarray(items, dtype=object).reshape(-1)):
        out.append(check_float(t.item() if isinstance(t, np.generic) else t, f"{key}[{i}]", ge=lo))
    return tuple(out)


def check_path_times(value: Any, key: str, horizon: float) -> np.ndarray:
    """Fixed times at which a simulated path is recorded (snapshots): numbers in ``[0, horizon]``, in any order, as a
    float64 array (S,). A time before 0, past the horizon or NaN is never reached (it read 0): one InputError naming
    ``key`` and the entry.

    Args:
        value: The times (a number, a list or tuple, or a NumPy or JAX array).
        key: The key of the errors.
        horizon: The simulated horizon.

    Returns:
        The times, shape (S,).

    Raises:
        InputError: Naming ``key`` (and the entry): not numbers, a bad number, or a time past the horizon.
    """
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise InputError(key, f"must be a list of numbers, got {_fmt(value)}")
    if isinstance(value, (list, tuple)):
        items = np.asarray(list(value), dtype=object)
    elif hasattr(value, "shape") and hasattr(value, "dtype"):  # a NumPy or JAX array
        items = np.asarray(value).astype(object)
    else:
        items = np.asarray([value], dtype=object)
    out = []
    for i, t in enumerate(items.reshape(-1)):
        try:
            out.append(check_float(t.item() if isinstance(t, np.generic) else t, f"{key}[{i}]", ge=0.0))
        except InputError as e:
            raise InputError(key, f"{e.key} {e.reason}") from None
        if out[-1] > horizon:
            raise InputError(key, f"{key}[{i}] = {out[-1]:g} is past the horizon {horizon:g}: a path is recorded at "
                                  f"times in [0, horizon] only")
    return np.asarray(out, dtype=np.float64)


def check_vector(value: Any, key: str) -> np.ndarray:
    """A non-empty one-dimensional sequence of finite numbers (not strings or booleans), as a float64 array.

    Args:
        value: The sequence.
        key: The key of the errors (``key[i]`` for an entry).

    Returns:
        The numbers.

    Raises:
        InputError: Naming ``key`` when not a non-empty one-dimensional sequence, or ``key[i]`` for a bad entry.
    """
    if isinstance(value, (str, bytes, dict, set)) or np.ndim(value) != 1 or len(value) == 0:
        raise InputError(key, f"must be a non-empty list of numbers, got {_fmt(value)}")
    return np.array([check_float(v.item() if isinstance(v, np.generic) else v, f"{key}[{i}]")
                     for i, v in enumerate(value)], dtype=np.float64)


def check_devices(value: Any, key: str = "devices"):
    """Devices to run on: None (all local devices), a count K (the first K local devices) or a non-empty list of
    local JAX devices (the host's CPU devices included on an accelerator machine). Returns None or a list.

    Args:
        value: None, a count or a list of devices.
        key: The key of the errors.

    Returns:
        (list | None): None or the devices.

    Raises:
        InputError: Naming ``key``: a count outside 1 .. the local devices, not a count or list, an empty list; or
            ``key[i]`` for an entry that is not a local JAX device.
    """
    if value is None:
        return None
    import jax

    local = jax.local_devices()
    try:  # the host's CPU devices too, where the default backend is an accelerator
        host = [d for d in jax.local_devices(backend="cpu") if d not in local]
    except RuntimeError:
        host = []
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if not 1 <= int(value) <= len(local):
            raise InputError(key, f"must be between 1 and {len(local)} (local devices), got {int(value)}")
        return local[: int(value)]
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InputError(key, f"must be a number of devices or a list of JAX devices, got {_fmt(value)}")
    if not value:
        raise InputError(key, "empty list of devices; pass None for all local devices")
    for i, d in enumerate(value):
        if d not in local and d not in host:
            raise InputError(f"{key}[{i}]", f"not a local JAX device: {_fmt(d)} (jax.local_devices() lists them)")
    return list(value)


def check_slower(mu1: float, mu2, key: str = "mu2") -> None:
    """The fast/slow-servers paper's assumption (1): every slow server (``mu2``, a rate or rates) slower than the
    fast one (``mu1``).

    Args:
        mu1: The fast server's rate.
        mu2 (float | numpy.typing.ArrayLike): The slow servers' rate or rates.
        key: The key of the error.

    Raises:
        InputError: Naming ``key`` when a slow server is not slower than the fast one.
    """
    slow = np.atleast_1d(np.asarray(mu2, dtype=float))
    if np.any(slow >= mu1):
        raise InputError(key, f"slow servers must be slower than the fast one (mu2 < mu1 = {mu1:g}), got "
                              f"{float(slow.max()):g}")


def parse_float(text: str, key: str) -> float:
    """A number typed by the user; a finite spelling beyond float64 (``1e400``, 400 digits) is refused
    as too large instead of silently becoming ``inf`` (``inf`` and ``nan`` typed as such are returned).

    Args:
        text: The text typed.
        key: The key of the errors.

    Returns:
        The number.

    Raises:
        InputError: Naming ``key``: not a number, or a finite spelling beyond float64.
    """
    try:
        v = float(text)
    except ValueError:
        raise InputError(key, f"expected a number, got {_fmt(text)}") from None
    if math.isinf(v) and "inf" not in text.lower():
        raise InputError(key, f"too large: {_fmt(text.strip())} is beyond the float64 range (about 1.8e308)")
    return v


def arg_type(kind: str = "float", **bounds):
    """An ``argparse`` ``type=`` with the checks of :func:`check_float` / :func:`check_int` / :func:`check_seed`.

    ``kind`` is ``"float"``, ``"number"`` (any float, ``inf`` and ``nan`` included, for commands that check
    it themselves; only a finite spelling beyond float64 is refused), ``"int"`` or ``"seed"``; ``bounds`` go
    to the check (``gt``, ``ge``, ``lt``, ``le`` for floats, ``lo``, ``hi`` for integers). Errors read
    ``argument --opt: REASON``.

    Args:
        kind: ``"float"``, ``"number"``, ``"int"`` or ``"seed"``.
        **bounds (float | int): The bounds of the check.

    Returns:
        (typing.Callable[[str], typing.Any]): The parser, which raises :class:`argparse.ArgumentTypeError`.
    """

    def parse(text: str):
        try:
            if kind == "number":
                return parse_float(text, "")
            if kind == "float":
                return check_float(parse_float(text, ""), "", **bounds)
            try:
                v = int(text, 10)
            except ValueError:
                raise InputError("", f"expected an integer, got {text!r}") from None
            return check_seed(v, "") if kind == "seed" else check_int(v, "", **bounds)
        except InputError as e:
            raise argparse.ArgumentTypeError(e.reason) from None

    parse.__name__ = kind  # argparse names the type in some messages
    return parse


# ------------------------------------------------------------------------------------------ rates
def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only in place: an array of a frozen value (the n-th system's rates).

    Args:
        a: The array.

    Returns:
        ``a``.
    """
    a.setflags(write=False)
    return a


def check_rates(system, n: float, key: str = "n"):
    """The rates of the n-th system, refused unless finite, positive and at most ``MAX_RATE``.

    ``system`` is a :class:`~jaxq.model.pss2x2.PSS2x2` (returns ``(lam_n, mu_n)``) or a
    :class:`~jaxq.model.network.Network` (returns ``(lam_n, mu_n, N_n)``). Simulators call this before
    building anything from n.

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network): The system.
        n: The scale n.
        key: The key of the errors.

    Returns:
        (tuple): ``(lam_n, mu_n)`` or ``(lam_n, mu_n, N_n)``.

    Raises:
        InputError: Naming ``key`` as :func:`check_float` (n > 0, at most ``MAX_MAGNITUDE``), or when the rates
            overflow; and as the system's ``rates``.
    """
    n = check_float(n, key, gt=0, le=MAX_MAGNITUDE)
    out = system.rates(n)
    for arr in out[:2]:
        a = np.asarray(arr, dtype=float)
        a = a[a != 0]  # absent network activities
        if not np.all(np.isfinite(a)) or (a.size and np.max(np.abs(a)) > MAX_RATE):
            raise InputError(key, f"n = {n:g} gives rates beyond {MAX_RATE:g} (overflow)")
    return out


# ------------------------------------------------------------------------------------------ work
# The 2x2 system's functions below take ``(system, n)``, where ``system`` is a PSS2x2 or already its n-th system
# (:class:`~jaxq.model.pss2x2.ScaledPSS2x2`, whose rates are then read, not computed again).
def pss_events_per_replication(system, n: float, horizon: float) -> float:
    """Expected arrivals plus service completions of one replication of the n-th 2x2 system up to ``horizon``.

    About ``2 sum_i lambda_n_i T``: every arrival is served at most once.

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.pss2x2.ScaledPSS2x2): The 2x2 system, or its n-th system.
        n: The scale n.
        horizon: The horizon T.

    Returns:
        The expected events.
    """
    lam_n = system.at(n).lam_n
    return 2.0 * float(np.sum(lam_n)) * float(horizon)


def pss_no_departure_cost(system, n: float) -> float:
    """``sum_i h_i (lambda_n_i / gamma^2 + (1 + ca2_i) / gamma) / sqrt(n)``: the discounted cost from empty of the
    n-th 2x2 system if no job ever left (renewal arrivals: at most ``1 + ca2_i`` more than Poisson's in
    expectation), an upper bound on J_n, and the state-free part of the event engine's tail bound at time 0
    (:func:`jaxq.sim.models.pss2x2.tail_bound`).

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.pss2x2.ScaledPSS2x2): The 2x2 system, or its n-th system.
        n: The scale n.

    Returns:
        The no-departure cost.
    """
    nth = system.at(n)
    s = nth.system
    g = s.gamma
    return float(np.sum(s.h * (nth.lam_n / g**2 + (1.0 + s.ca2) / g))) / nth.sqrt_n


def pss_cost_scale(system, n: float, v0: float) -> float:
    """The scale the default truncation of the n-th 2x2 system is sized against: ``min(V0, the no-departure
    cost)``. V0 (the diffusion limit) alone fails where it is far above J_n (a service SCV of 1e30 makes V0
    about 1e15 while J_4 is 0.75); the no-departure cost bounds J_n itself.

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.pss2x2.ScaledPSS2x2): The 2x2 system, or its n-th system.
        n: The scale n.
        v0: The lower bound V0.

    Returns:
        The scale.
    """
    return min(float(v0), pss_no_departure_cost(system, n))


def pss_default_horizon(system, n: float, v0: float, rel_tol: float = 1e-4) -> float:
    """The simulators' default horizon (at least 1): where the state-free tail bound is ``rel_tol`` times
    :func:`pss_cost_scale`.

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.pss2x2.ScaledPSS2x2): The 2x2 system, or its n-th system.
        n: The scale n.
        v0: The lower bound V0.
        rel_tol: The tail bound relative to the cost scale.

    Returns:
        The horizon.
    """
    nth = system.at(n)
    b = pss_no_departure_cost(nth, n)
    return max(1.0, math.log(b / (rel_tol * pss_cost_scale(nth, n, v0))) / nth.system.gamma)


def check_pss_horizon(system, n: float, horizon: float, key: str = "horizon", label: str | None = None) -> None:
    """Refuse a ``horizon`` in which a replication of the n-th 2x2 system expects less than one arrival: its
    costs, suprema and workloads would be (almost) all zero, numbers that say nothing about the n-th system.
    ``label`` (a system's label in an experiment) starts the reason when given; ``horizon=None`` (the
    simulator's own horizon, long enough by construction) passes.

    Args:
        system (jaxq.model.pss2x2.PSS2x2 | jaxq.model.pss2x2.ScaledPSS2x2): The 2x2 system, or its n-th system.
        n: The scale n.
        horizon: The horizon (None passes).
        key: The key of the error.
        label: The system's label in an experiment.

    Raises:
        InputError: Naming ``key`` when a replication expects less than one arrival.
    """
    if horizon is None:
        return
    arrivals = float(np.sum(system.at(float(n)).lam_n)) * horizon
    if not arrivals >= 1.0:
        where = f"{label}, n = {n:g}" if label else f"n = {n:g}"
        hint = f"; use at least {horizon / arrivals:.3g}" if arrivals > 0 else ""
        raise InputError(key, f"{where}: horizon {horizon:g} is too short: about {arrivals:.3g} arrivals per "
                              f"replication (costs, suprema and workloads would be almost all zero){hint}")


def sde_steps_per_path(horizon: float, dt: float) -> float:
    """Time steps of one SDE path: ``horizon / dt`` (a float: it may be astronomically large).

    Args:
        horizon: The horizon.
        dt: The time step.

    Returns:
        ``horizon / dt``.
    """
    return float(horizon) / float(dt)


def estimate_work(replications: float, per_replication: float) -> float:
    """Total work (events or steps) of ``replications`` replications.

    Args:
        replications: The replications.
        per_replication: The work of one replication.

    Returns:
        Their product.
    """
    return float(replications) * float(per_replication)


def check_work(key: str, replications: float, per_replication: float, *, unit: str = "events",
               per_replication_limit: float | None = None, total_limit: float = MAX_TOTAL_WORK,
               reps_key: str | None = None) -> float:
    """Refuse (naming ``reps_key``, default ``key``) more than ``MAX_REPLICATIONS`` replications, (naming ``key``)
    more than ``per_replication_limit`` units (events or steps) per replication (default: ``MAX_STEPS_PER_PATH`` for
    steps, ``MAX_EVENTS_PER_REPLICATION`` for events), or a total beyond ``total_limit``.

    Args:
        key: The key of the errors.
        replications: The replications.
        per_replication: The units of one replication.
        unit: ``"events"`` or ``"steps"``.
        per_replication_limit: The most units per replication (None: the default above).
        total_limit: The most units in total.
        reps_key: The key of a refusal of the replications (None: ``key``).

    Returns:
        The total work estimate.

    Raises:
        InputError: Naming ``reps_key`` (or ``key``) for too many replications, or ``key`` for too many units per
            replication or in total.
    """
    if not math.isfinite(float(replications)) or replications > MAX_REPLICATIONS:
        raise InputError(reps_key or key, f"{replications:.6g} replications exceed the limit 2^31 - 1")
    if per_replication_limit is None:
        per_replication_limit = MAX_STEPS_PER_PATH if unit == "steps" else MAX_EVENTS_PER_REPLICATION
    if not math.isfinite(per_replication) or per_replication > per_replication_limit:
        raise InputError(key, f"about {per_replication:.3g} {unit} per replication exceed the limit "
                              f"{per_replication_limit:.3g}")
    total = estimate_work(replications, per_replication)
    if not total <= total_limit:
        raise InputError(key, f"about {total:.3g} {unit} in total exceed the limit {total_limit:.3g}")
    return total


def memory_budget() -> float:
    """Bytes a chunk may use: a quarter of the physical memory (8 GiB when unknown)."""
    try:
        return 0.25 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8.0 * 2**30


def check_chunk(key: str, chunk: int, bytes_per_replication: float = BYTES_PER_REPLICATION) -> None:
    """Refuse a chunk (replications computed at once) whose working memory would not fit.

    Args:
        key: The key of the error.
        chunk: The replications computed at once.
        bytes_per_replication: The working memory of one replication.

    Raises:
        InputError: Naming ``key`` when the chunk needs more than :func:`memory_budget`.
    """
    need = float(chunk) * bytes_per_replication
    budget = memory_budget()
    if need > budget:
        raise InputError(key, f"{chunk} replications at once need about {need / 2**30:.3g} GiB, more than the "
                              f"{budget / 2**30:.3g} GiB available to a chunk; use a smaller chunk")
