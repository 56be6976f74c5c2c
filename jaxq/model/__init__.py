"""Model and parameters: configuration files, systems, renewal primitives."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pydantic

from jaxq.errors import InputError


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; a missing or malformed file is an :class:`InputError`."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(path), "no such file")
    try:
        with p.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise InputError(str(path), f"not valid TOML ({e})") from None


def pydantic_error(e: pydantic.ValidationError, prefix: str = "") -> InputError:
    """Turn the first pydantic validation error into one :class:`InputError` line."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"] if x not in ("function-after",))
    key = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "config"
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "missing":
        msg = "missing required key"
    return InputError(key, msg[0].lower() + msg[1:])


def load(path: str | Path):
    """Load a system configuration: a :class:`~jaxq.model.pss2x2.PSS2x2` or a network."""
    data = read_toml(path)
    system = data.get("system")
    if not isinstance(system, dict):
        raise InputError("system", "missing [system] table")
    kind = system.get("kind")
    if kind == "pss2x2":
        from jaxq.model.pss2x2 import from_dict

        return from_dict(data)
    if kind == "network":
        from jaxq.model.network import from_dict

        return from_dict(data)
    raise InputError("system.kind", f"expected 'pss2x2' or 'network', got {kind!r}")
