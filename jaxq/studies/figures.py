"""Matplotlib helpers for the study figures (Agg canvas, no pyplot state, small PNGs at dpi 100)."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100


def grid_figure(panels: int, width: float = 3.6, height: float = 2.9, max_cols: int = 3):
    """A figure with ``panels`` axes in rows of at most ``max_cols``; returns ``(fig, axes list)``.

    Args:
        panels: The axes.
        width: The width of a panel in inches.
        height: The height of a panel in inches.
        max_cols: The most panels in a row.

    Returns:
        (tuple): ``(fig, axes list)``.
    """
    cols = min(max_cols, max(1, panels))
    rows = math.ceil(max(1, panels) / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, k + 1) for k in range(panels)]
    return fig, axes


def single_figure(width: float = 5.5, height: float = 4.0):
    """A figure with one axes; returns ``(fig, ax)``.

    Args:
        width: The width in inches.
        height: The height in inches.

    Returns:
        (tuple): ``(fig, ax)``.
    """
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def save(fig, out: Path, name: str) -> str:
    """Save ``fig`` as ``out/name`` (PNG, dpi 100) and return the path.

    Args:
        fig (matplotlib.figure.Figure): The figure.
        out: The folder.
        name: The file name.

    Returns:
        The path written.
    """
    path = Path(out) / name
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=DPI)
    tmp.replace(path)
    return str(path)
