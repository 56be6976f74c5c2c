"""JSON-ready values: the one conversion every writer of JSON uses (the command line, run records, bench)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def to_jsonable(x: Any) -> Any:
    """Plain Python types for ``json``: arrays become (nested) lists, numpy scalars Python numbers.

    No NaN or infinity is ever printed as a result.

    Args:
        x: A value: dicts (their keys become strings), lists and tuples are converted element by element.

    Returns:
        The value in plain Python types.

    Raises:
        ValueError: A non-finite float is refused.
    """
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if hasattr(x, "__array__") and not isinstance(x, (str, bytes)):
        a = np.asarray(x)
        return to_jsonable(a.tolist()) if a.ndim else to_jsonable(a.item())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        if not math.isfinite(v):
            raise ValueError(f"refusing to print a non-finite number ({v})")
        return v
    return x
