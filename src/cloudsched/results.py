"""Helpers shared by every result record: undefined numbers become None.

A result that cannot define a number (no interval, an infinite relaxation time, an empty
type) holds NaN or infinity while it is computed; its JSON form and its dict hold None
instead, so that standard JSON (``null``, never ``NaN`` or ``Infinity``) and plain Python
types (no numpy scalars) leave the package.  :func:`finite_or_none` does that for nested
records, and can say which fields it emptied.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["finite_or_none"]


def finite_or_none(x: Any, undefined: dict[str, str] | None = None, path: str = "") -> Any:
    """Return ``x`` with every non-finite float replaced by None, recursively.

    Dicts (keys made strings), lists and tuples (made lists) are walked; numpy scalars
    become Python numbers.  ``undefined``, when given, collects the path of each field
    emptied (``a.b[2]``) and why ("not a number" or "infinite").
    """
    if isinstance(x, dict):
        return {str(k): finite_or_none(v, undefined, f"{path}.{k}".lstrip("."))
                for k, v in x.items()}  # fmt: skip
    if isinstance(x, list | tuple):
        return [finite_or_none(v, undefined, f"{path}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, float | np.floating):
        if math.isfinite(x):
            return float(x)
        if undefined is not None:
            undefined[path] = "not a number" if math.isnan(x) else "infinite"
        return None
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    return x
