"""Task sources for the general (event-list) engine: renewal arrivals or a replayed trace."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cloudsched.dispatch.distributions import Distribution
from cloudsched.errors import ParameterError

__all__ = ["RenewalSource", "Trace", "TraceSource"]

_CHUNK = 1 << 18


@dataclass
class RenewalSource:
    """Renewal arrivals (i.i.d. inter-arrival times) with i.i.d. service sizes, without end.

    ``interarrival`` is rescaled to mean ``1 / rate`` (``rate``: total arrival rate).
    Inter-arrival times and service sizes come from two separate generators, so changing
    one law does not change the draws of the other.
    """

    interarrival: Distribution
    service: Distribution
    rate: float
    arrival_rng: np.random.Generator
    service_rng: np.random.Generator
    chunk: int = _CHUNK
    _clock: float = field(default=0.0, init=False)

    def next_chunk(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """Return the next ``chunk`` arrival times and service sizes (never the last chunk)."""
        gaps = self.interarrival.scaled(1.0 / self.rate).sample(self.arrival_rng, self.chunk)
        times = self._clock + np.cumsum(gaps)
        self._clock = float(times[-1])
        return times, self.service.sample(self.service_rng, self.chunk), False


@dataclass(frozen=True)
class Trace:
    """Tasks of a log: arrival times (seconds, non-decreasing) and service times (> 0)."""

    arrivals: np.ndarray
    services: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        a = np.asarray(self.arrivals, dtype=np.float64)
        s = np.asarray(self.services, dtype=np.float64)
        if a.ndim != 1 or a.shape != s.shape or a.size < 2:
            raise ParameterError(
                "trace", self.source, "at least two tasks with arrival and service times"
            )
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(s))) or np.any(s <= 0):
            raise ParameterError("trace", self.source, "finite times and positive service times")
        if np.any(np.diff(a) < 0):
            raise ParameterError("trace", self.source, "sorted by arrival time")
        object.__setattr__(self, "arrivals", a)
        object.__setattr__(self, "services", s)

    @property
    def span(self) -> float:
        """Time from the first to the last arrival."""
        return float(self.arrivals[-1] - self.arrivals[0])

    def replay(self, servers: float, load: float | None, service_scale: float = 1.0) -> Trace:
        """Trace ready to replay: time starts at 0, services scaled, optional load rescaling.

        With ``load``, inter-arrival times are multiplied by one common factor so that the
        offered load per unit of capacity, ``sum(service) / (span * servers)``, equals
        ``load``; service times are untouched (``servers`` is the total speed of the farm).
        """
        services = self.services * service_scale
        times = self.arrivals - self.arrivals[0]
        if load is not None:
            if self.span <= 0:
                raise ParameterError(
                    "trace", self.source, "a positive time span to rescale its load"
                )
            factor = services.sum() / (self.span * servers * load)
            times = times * factor
        return Trace(times, services, self.source)


@dataclass
class TraceSource:
    """Replays a :class:`Trace` in chunks; the last chunk is marked."""

    trace: Trace
    chunk: int = _CHUNK
    _pos: int = field(default=0, init=False)

    def next_chunk(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """Return the next slice of the trace and whether it is the last."""
        lo, hi = self._pos, min(self._pos + self.chunk, self.trace.arrivals.size)
        self._pos = hi
        last = hi >= self.trace.arrivals.size
        return self.trace.arrivals[lo:hi], self.trace.services[lo:hi], last
