"""Bundled example systems (TOML). ``path(name)`` gives the file of an example."""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).parent


def names() -> list[str]:
    """Names of the bundled examples (without ``.toml``)."""
    return sorted(p.stem for p in DIR.glob("*.toml"))


def path(name: str) -> Path:
    """Path of a bundled example, e.g. ``path("pss_PP")``.

    Args:
        name: The example's name (without ``.toml``).

    Returns:
        The file (it may not exist: :func:`names` lists those that do).
    """
    return DIR / f"{name}.toml"
