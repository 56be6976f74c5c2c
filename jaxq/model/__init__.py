"""Model and parameters: configuration files, systems, renewal primitives."""

from __future__ import annotations

from pathlib import Path

from jaxq.errors import InputError
from jaxq.model.validate import pydantic_error, read_toml  # noqa: F401  (the one validation layer)


def load(path: str | Path):
    """Load a system configuration: a :class:`~jaxq.model.pss2x2.PSS2x2` or a network.

    ``path`` is a TOML file, or the name of a bundled example (``pss_PP``, ``network_N``, ...; see
    :mod:`jaxq.examples`) when no such file exists.

    Args:
        path: A TOML file or the name of a bundled example.

    Returns:
        (jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network): The system.

    Raises:
        InputError: Naming ``system`` for an empty path or a file without a ``[system]`` table, ``system.kind`` for a
            kind other than ``pss2x2`` or ``network``; as :func:`~jaxq.model.validate.read_toml` for an unreadable
            file, and as the kind's ``from_dict``.
    """
    from jaxq.examples import names, path as example_path

    if not str(path).strip():  # Path("") is the current folder: never a silent default
        raise InputError("system", "empty path; name a bundled example (pss_PP, network_N, ...) or a TOML file")
    if isinstance(path, str) and not Path(path).exists() and path in names():
        path = example_path(path)
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
