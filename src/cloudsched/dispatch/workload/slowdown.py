"""Servers that slow down and recover, and speeds given as a mix.

These are the regimes where the production balancers differ.

``--slowdown F:X@T0-T1`` (or ``F:X@T0-T1/P``): a fraction ``F`` of the servers runs at
``X`` times its speed from time ``T0`` to ``T1`` (mean service times; with ``/P`` again
every ``P``, so the farm has a steady state to measure): a noisy neighbour, a
garbage-collection storm, a throttled instance.  CHOICE: a task's service speed is the
one in force when its service starts (a task already in service keeps its pace).  The
load keeps its nominal meaning (per unit of the servers' usual capacity): while the
slowdown lasts the farm carries more than that.

``--speeds F@S,...``: a fraction ``F`` of the servers at speed ``S`` (fractions summing to
1), e.g. ``0.9@1,0.1@0.25``: a tenth of the servers four times slower.

Both spread their servers evenly over the numbering (:func:`spread`), so that a balancer
that scans servers in order (NGINX) meets them as it would meet any others.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from cloudsched.errors import ParameterError

__all__ = ["Slowdown", "parse_slowdown", "speed_mix", "spread"]

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_SLOWDOWN = re.compile(
    rf"^\s*{_NUMBER}\s*:\s*{_NUMBER}\s*@\s*{_NUMBER}\s*-\s*{_NUMBER}\s*(?:/\s*{_NUMBER})?\s*$"
)


def spread(n: int, count: int) -> np.ndarray:
    """Return ``count`` of the servers ``0 .. n-1``, spread evenly (increasing)."""
    if count <= 0:
        return np.zeros(0, np.int64)
    return np.floor((np.arange(count) + 0.5) * n / count).astype(np.int64)


@dataclass(frozen=True)
class Slowdown:
    """A fraction of the servers at ``factor`` times their speed during ``[start, end)``.

    ``period`` > 0: again during ``[start + k period, end + k period)`` for every k.
    """

    fraction: float
    factor: float
    start: float
    end: float
    period: float = 0.0

    def active(self, t: float) -> bool:
        """Whether the slowdown is in force at time ``t``."""
        if t < self.start:
            return False
        if self.period > 0:
            return (t - self.start) % self.period < self.end - self.start
        return t < self.end

    def factors(self, n: int) -> np.ndarray:
        """Each server's speed factor while the slowdown lasts (1 for the others)."""
        out = np.ones(n)
        out[spread(n, math.floor(self.fraction * n + 0.5))] = self.factor
        return out

    def __str__(self) -> str:
        every = f"/{self.period:g}" if self.period > 0 else ""
        return f"{self.fraction:g}:{self.factor:g}@{self.start:g}-{self.end:g}{every}"


def parse_slowdown(text: str | Slowdown | None) -> Slowdown | None:
    """Parse ``F:X@T0-T1`` (see the module notes); None stays None."""
    if text is None or isinstance(text, Slowdown):
        return text
    match = _SLOWDOWN.match(str(text))
    allowed = (
        "F:X@T0-T1[/P]: a fraction F in (0, 1] of the servers at X > 0 times their speed "
        "from time T0 to T1 > T0 (mean service times), again every P > T1 - T0 if given, "
        "e.g. 0.1:0.2@2000-4000 or 0.1:0.2@0-50/500"
    )
    if match is None:
        raise ParameterError("slowdown", text, allowed)
    fraction, factor, start, end = (float(g) for g in match.groups()[:4])
    period = float(match.group(5)) if match.group(5) else 0.0
    if not (0.0 < fraction <= 1.0 and factor > 0.0 and end > start):
        raise ParameterError("slowdown", text, allowed)
    if match.group(5) and not period > end - start:
        raise ParameterError("slowdown", text, allowed)
    return Slowdown(fraction, factor, start, end, period)


def speed_mix(n: int, text: str) -> np.ndarray:
    """Speeds of ``n`` servers from ``F@S,...`` (fractions summing to 1, spread evenly)."""
    allowed = "F@S,...: fractions F > 0 summing to 1 at speeds S > 0, e.g. 0.9@1,0.1@0.25"
    parts = []
    for item in text.split(","):
        frac, sep, speed = item.partition("@")
        try:
            parts.append((float(frac), float(speed)))
        except ValueError:
            raise ParameterError("speeds", text, allowed) from None
        if not sep or not (parts[-1][0] > 0 and parts[-1][1] > 0):
            raise ParameterError("speeds", text, allowed)
    if abs(sum(f for f, _ in parts) - 1.0) > 1e-9:
        raise ParameterError("speeds", text, allowed)
    speeds = np.full(n, parts[0][1])
    free = np.ones(n, bool)
    for share, value in parts[1:]:  # the first speed fills what the others leave
        count = math.floor(share * n + 0.5)
        idle = np.flatnonzero(free)
        chosen = idle[spread(idle.size, min(count, idle.size))]
        speeds[chosen] = value
        free[chosen] = False
    return speeds
