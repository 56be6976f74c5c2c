"""Matplotlib helpers for the study figures (Agg canvas, no pyplot state, small PNGs at dpi 100)."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100


def grid_figure(panels: int, width: float = 3.6, height: float = 2.9, max_cols: int = 3):
    """A figure with ``panels`` axes in rows of at most ``max_cols``; returns ``(fig, axes list)``."""
    cols = min(max_cols, max(1, panels))
    rows = math.ceil(max(1, panels) / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, k + 1) for k in range(panels)]
    return fig, axes


def single_figure(width: float = 5.5, height: float = 4.0):
    """A figure with one axes; returns ``(fig, ax)``."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def save(fig, out: Path, name: str) -> str:
    """Save ``fig`` as ``out/name`` (PNG, dpi 100) and return the path."""
    path = Path(out) / name
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=DPI)
    tmp.replace(path)
    return str(path)
