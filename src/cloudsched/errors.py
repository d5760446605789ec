"""Validation errors and the checks that raise them.

Every public function validates its inputs at the boundary and raises
:class:`ParameterError` (a :class:`ValueError`) whose message is one line naming the
parameter, the offending value and the allowed range.  The CLI prints that line and
exits with status 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy takes 0.1 s to import: functions import it when they run
    import numpy as np

__all__ = [
    "SEED_LIMIT",
    "ExternalError",
    "InputError",
    "ParameterError",
    "check_choice",
    "check_int",
    "check_loads",
    "check_real",
    "check_seed",
    "did_you_mean",
]


class ParameterError(ValueError):
    """A parameter is outside its allowed range; the message is a single line.

    ``name``, ``value`` and ``allowed`` say which parameter, what it was given and what it
    accepts; subclasses may replace the message (a file and line, say).  How a front end
    spells the parameter is its own business (:mod:`cloudsched.cli`).
    """

    def __init__(self, name: str, value: Any, allowed: str) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        #: "; did you mean 'jsq'?" for a name close to one of the choices, else ""
        self.hint = did_you_mean(value, allowed)
        super().__init__(f"{name} must be {allowed} (got {value!r}){self.hint}")


def did_you_mean(value: Any, allowed: str) -> str:
    """Suggest the choice closest to ``value`` when ``allowed`` is ``one of a, b, ...``."""
    if not isinstance(value, str) or not allowed.startswith("one of "):
        return ""
    words = [w.strip().removeprefix("or ").strip() for w in re.split("[,/]", allowed[7:])]
    options = [w for w in words if w and " " not in w and w != value]
    import difflib  # only an error pays for it

    close = difflib.get_close_matches(value, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class ExternalError(RuntimeError):
    """Something outside cloudsched failed (a Dask scheduler or worker); one line, exit 1."""


class InputError(ParameterError):
    """An input file is missing or malformed; the message names the file (and line)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__("input", where, problem)
        self.args = (f"{where}: {problem}",)

    def __str__(self) -> str:
        return str(self.args[0])


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the given interval, or raise.

    Parameters
    ----------
    name : str
        Parameter name used in the error message.
    value : Any
        The value to check.
    low, high : float or None
        Interval bounds (None for unbounded).
    low_open, high_open : bool
        Whether the corresponding bound is excluded.

    Returns
    -------
    float
        The validated value.
    """
    allowed = _interval(low, high, low_open, high_open)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, f"a number in {allowed}") from None
    if not math.isfinite(x):
        raise ParameterError(name, value, f"a finite number in {allowed}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ParameterError(name, value, f"in {allowed}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ParameterError(name, value, f"in {allowed}")
    return x


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int inside ``[low, high]``, or raise :class:`ParameterError`."""
    import numpy as np

    allowed = _interval(low, high, False, False)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(name, value, f"an integer in {allowed}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise ParameterError(name, value, f"an integer in {allowed}")
    return v


#: Seeds are non-negative integers below this (numpy's SeedSequence takes any size; a bound
#: keeps them printable and storable).
SEED_LIMIT = 2**128


def check_seed(name: str, value: Any) -> Any:
    """Return ``value`` unchanged if it is None, a Generator, or an int in [0, 2**128)."""
    import numpy as np

    if value is None or isinstance(value, np.random.Generator):
        return value
    return check_int(name, value, low=0, high=SEED_LIMIT - 1)


def check_loads(name: str, loads: Any, *, high: float = 1.0, high_open: bool = True) -> np.ndarray:
    """Validate a scalar or sequence of loads in ``(0, high)`` and return a 1-d float array."""
    import numpy as np

    arr = np.atleast_1d(np.asarray(loads, dtype=object))
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(name, loads, "a non-empty 1-d sequence of numbers")
    out = np.array(
        [check_real(name, x, low=0.0, high=high, low_open=True, high_open=high_open) for x in arr],
        dtype=np.float64,
    )
    return out


def check_choice(name: str, value: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise."""
    options = list(choices)
    if value not in options:
        raise ParameterError(name, value, "one of " + ", ".join(options))
    return value


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    left = "(" if (low is None or low_open) else "["
    right = ")" if (high is None or high_open) else "]"
    lo = "-inf" if low is None else _number(low)
    hi = "inf" if high is None else _number(high)
    return f"{left}{lo}, {hi}{right}"


def _number(x: float) -> str:
    """``2^62`` and ``2^128 - 1`` for the integer limits, ``%g`` otherwise."""
    if isinstance(x, int) and x > 2**53:
        k = (x + 1).bit_length() - 1
        if x == 2**k:
            return f"2^{k}"
        if x + 1 == 2**k:
            return f"2^{k} - 1"
    return f"{x:g}"
