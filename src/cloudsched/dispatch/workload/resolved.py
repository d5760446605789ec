"""What arrives and how long it takes: the resolved workload of a simulation.

Also the task sources of the event list: renewal arrivals, or a replayed trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.dispatch.workload.distributions import Distribution, Exponential, parse_spec
from cloudsched.dispatch.workload.slowdown import Slowdown
from cloudsched.errors import ParameterError, check_real

__all__ = [
    "MAX_LOAD",
    "RenewalSource",
    "Trace",
    "TraceSource",
    "Workload",
    "markov_laws",
    "resolve_workload",
]

#: Largest load accepted: an overloaded run keeps every waiting task in memory, and the
#: drain after the last measured arrival still simulates arrivals (memory grows with the
#: load: about 2.8 GB at load 10 with the default million tasks).
MAX_LOAD = 10.0

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


def markov_laws(service: Distribution, interarrival: Distribution) -> bool:
    """Whether arrivals are Poisson and service exp(1) (the chain's laws; speeds aside)."""
    return (
        isinstance(service, Exponential)
        and service.mean == 1.0
        and isinstance(interarrival, Exponential)
    )


@dataclass(frozen=True)
class Workload:
    """Resolved arrivals and services, and the task sources of the event list.

    ``rate_per_server`` is the arrival rate per server, ``load`` the offered load per unit
    of capacity.
    """

    rate_per_server: float  # arrivals per server per unit time
    load: float  # offered load per unit of capacity
    interarrival: Distribution
    service: Distribution
    trace: Trace | None
    speeds: np.ndarray | None
    slowdown: Slowdown | None = None

    def source(self, rng: np.random.Generator, n: int) -> RenewalSource | TraceSource:
        """Task source of one replication on the event list."""
        if self.trace is not None:
            return TraceSource(self.trace)
        arr_rng, svc_rng = rng.spawn(2)
        return RenewalSource(
            self.interarrival, self.service, self.rate_per_server * n, arr_rng, svc_rng
        )

    def variability(self) -> tuple[float, float]:
        """``(c_a^2 + c_s^2) / 2`` and the mean service time (the time unit of the run)."""
        if self.trace is not None:
            gaps = np.diff(self.trace.arrivals)
            ca2 = float(gaps.var() / gaps.mean() ** 2) if gaps.mean() > 0 else 1.0
            svc = self.trace.services
            return (ca2 + float(svc.var() / svc.mean() ** 2)) / 2, float(svc.mean())
        ca2, cs2 = self.interarrival.cv**2, self.service.cv**2
        return (ca2 + cs2) / 2, self.service.mean


def resolve_workload(
    servers: int,
    load: float | None,
    service: Distribution | str | None,
    arrivals: Distribution | str | None,
    speeds: ArrayLike | None,
    trace: Trace | None,
    service_scale: float,
) -> Workload:
    """Validate the workload arguments of ``simulate`` (the engine is chosen elsewhere)."""
    for name, law in (("service", service), ("arrivals", arrivals)):
        if law is not None and not isinstance(law, str | Distribution):
            raise ParameterError(
                name,
                law,
                "a law: a SPEC such as 'exp', 'det', "
                "'lognormal:cv=2' or 'empirical:FILE' (one, not a list)",
            )
    svc = parse_spec(service, "service") if isinstance(service, str) else service or Exponential()
    gap = (
        parse_spec(arrivals, "arrivals") if isinstance(arrivals, str) else arrivals or Exponential()
    )
    speed = None
    if speeds is not None:
        speed = np.asarray(speeds, dtype=np.float64)
        if speed.shape != (servers,) or not np.all(np.isfinite(speed)) or np.any(speed <= 0):
            raise ParameterError("speeds", f"{speed.size} values", f"{servers} positive numbers")
    capacity = float(speed.sum()) if speed is not None else float(servers)
    service_scale = check_real("service_scale", service_scale, low=0.0, low_open=True)
    if trace is not None:
        if service is not None or arrivals is not None:
            raise ParameterError("trace", trace.source, "given without service or arrivals laws")
        if load is not None:
            load = check_real("load", load, low=0.0, high=MAX_LOAD, low_open=True)
        replay = trace.replay(capacity, load, service_scale)
        if not replay.span > 0:
            raise ParameterError("trace", trace.source, "arrivals that span a positive time")
        offered = float(replay.services.sum() / (max(replay.span, 1e-300) * capacity))
        rate = (replay.arrivals.size - 1) / max(replay.span, 1e-300) / servers
        return Workload(rate, offered, gap, svc, replay, speed)
    if load is None:
        raise ParameterError("load", None, "a number > 0 (it may be left out only with a trace)")
    load = check_real("load", load, low=0.0, high=MAX_LOAD, low_open=True)
    rate = load * capacity / svc.mean / servers
    return Workload(rate, load, gap, svc, None, speed)
