"""Helpers shared by every result record: intervals, their columns, undefined numbers.

Every record (dispatch, placement, live) states a 95% interval as a pair ``(low, high)``,
or None when it is withheld (not steady, not certified): :func:`interval` builds one from a
centre and a half-width (never below 0: times, lengths and costs are not negative),
:func:`interval_columns` flattens one into a row's ``ci95_low``/``ci95_high`` (NaN when
withheld), :func:`half_of` gives its half-width back and :func:`in_interval` says whether a
value (a theory's, say) lies in one.

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

__all__ = ["finite_or_none", "half_of", "in_interval", "interval", "interval_columns"]

Interval = tuple[float, float]


def interval(centre: float, half: float) -> Interval:
    """Return the 95% interval ``centre +- half``, its low end at least 0."""
    return (max(centre - half, 0.0), centre + half)


def interval_columns(ci: Interval | None, name: str = "") -> dict[str, float]:
    """Return ``{name}ci95_low`` and ``{name}ci95_high`` of ``ci`` (NaN when withheld)."""
    low, high = ci if ci is not None else (math.nan, math.nan)
    return {f"{name}ci95_low": low, f"{name}ci95_high": high}


def in_interval(value: float | None, low: float, high: float) -> bool | None:
    """Whether ``value`` lies in ``[low, high]``; None when it or the interval is missing."""
    if value is None or not all(map(math.isfinite, (value, low, high))):
        return None
    return bool(low <= value <= high)


def half_of(ci: Interval | None) -> float | None:
    """Return the half-width of ``ci`` (None when withheld)."""
    return (ci[1] - ci[0]) / 2 if ci is not None else None


def finite_or_none(x: Any, undefined: dict[str, str] | None = None, path: str = "") -> Any:
    """Return ``x`` with every non-finite float replaced by None, recursively.

    Dicts (keys made strings), lists and tuples (made lists) are walked; numpy scalars
    become Python numbers.  ``undefined``, when given, collects the path of each field
    emptied (``a.b[2]``) and why ("not a number" or "infinite").
    """
    if isinstance(x, dict):
        return {
            str(k): finite_or_none(v, undefined, f"{path}.{k}".lstrip(".")) for k, v in x.items()
        }
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
