"""Which engine runs a simulation, and why: the one place that chooses.

An engine (:class:`Engine`) says what it can run (policies, laws, speeds, delays, views,
per-task records) and starts one replication of a checked
:class:`~cloudsched.dispatch.spec.SimulationSpec`.  :func:`choose` picks one for a spec,
with its clock and the reason in words; the result carries all three (``engine``,
``clock``, ``engine_reason``).  What ``engine="auto"`` does:

1. message delays or ``view="own"``: the delay engine (nothing else models them);
2. from :data:`AUTO_COUNTS_SERVERS` servers on, where the occupancy counts apply (a policy
   the table gives them, Poisson arrivals, exp(1) service, no per-task records): ``counts``
   at equal speeds, ``classes`` with at most :data:`MAX_SPEED_CLASSES` distinct speeds
   (they start empty, so not with ``initial="meanfield"``): their cost does not grow with N;
3. otherwise ``servers``, with the Markov clock where arrivals are Poisson and service
   exp(1) at equal speeds, else the event list.

Below :data:`AUTO_COUNTS_SERVERS` the per-server engine runs even where counts apply: its
results are those the tests and the documentation's tables were measured with, and the
per-server state still fits in the CPU caches (above it counts is 6-12 times faster,
``benchmarks/bench_counts.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from cloudsched.dispatch.delays import check_delay_policy
from cloudsched.dispatch.engines.replication import Replication, RunSpec
from cloudsched.dispatch.workload.distributions import Distribution, Exponential
from cloudsched.dispatch.workload.resolved import markov_laws
from cloudsched.errors import ParameterError, check_choice
from cloudsched.policy_table import with_capability

if TYPE_CHECKING:
    from cloudsched.dispatch.delays import Delays
    from cloudsched.dispatch.plugin import Policy
    from cloudsched.dispatch.workload.resolved import Workload

__all__ = [
    "ASKED",
    "AUTO_COUNTS_SERVERS",
    "MAX_SPEED_CLASSES",
    "Choice",
    "Engine",
    "EngineInfo",
    "Request",
    "choose",
    "speed_classes",
    "why_not_counts",
]

#: What ``engine=`` takes: ``auto``, an engine's name, or a clock of the per-server engine
#: (``exponential``: the Markov clock; ``general``: the event list).
ASKED = ("auto", "servers", "exponential", "general", "counts", "classes", "delay")
#: From this many servers ``engine="auto"`` runs the count engines where they apply.
AUTO_COUNTS_SERVERS = 100_000
#: Most distinct speeds the classes engine takes (its cost per event grows with them).
MAX_SPEED_CLASSES = 16


class Request(Protocol):
    """What :func:`choose` reads of a simulation.

    A :class:`~cloudsched.dispatch.spec.SimulationSpec` once its workload is resolved.
    """

    @property
    def engine(self) -> str:
        """The engine asked for (:data:`ASKED`)."""
        ...

    @property
    def model(self) -> Policy:
        """The policy."""
        ...

    @property
    def servers(self) -> int:
        """N."""
        ...

    @property
    def m(self) -> int:
        """The dispatchers M."""
        ...

    @property
    def work(self) -> Workload:
        """The resolved arrivals, services, speeds and trace."""
        ...

    @property
    def delays(self) -> Delays:
        """The message delays."""
        ...

    @property
    def view(self) -> str:
        """What dispatchers read (``shared`` or ``own``)."""
        ...

    @property
    def keep_response_times(self) -> bool:
        """Whether every response time is kept."""
        ...

    @property
    def initial(self) -> str:
        """The start asked for (``auto``, ``meanfield`` or ``empty``)."""
        ...


class Engine(Protocol):
    """What an engine can run, and how it starts one replication.

    ``laws``: ``any`` or ``markov`` (Poisson arrivals, exp(1) service); ``speeds``:
    ``any``, ``classes`` (at most :data:`MAX_SPEED_CLASSES` distinct) or ``equal``;
    ``delays``: it models late messages; ``views``: what dispatchers may read; ``records``:
    it keeps every response time.  Every engine runs the shared status loop
    (:class:`~cloudsched.dispatch.engines.replication.Replication`) and measurement window
    (:mod:`cloudsched.dispatch.engines.window`).
    """

    @property
    def name(self) -> str:
        """Its name (``servers``, ``counts``, ``classes``, ``delay``)."""
        ...

    @property
    def summary(self) -> str:
        """What it keeps and what that buys, in one line."""
        ...

    @property
    def laws(self) -> str:
        """The arrival and service laws it runs: ``any`` or ``markov``."""
        ...

    @property
    def speeds(self) -> str:
        """The server speeds it runs: ``any``, ``classes`` or ``equal``."""
        ...

    @property
    def delays(self) -> bool:
        """Whether it models late messages."""
        ...

    @property
    def views(self) -> tuple[str, ...]:
        """What its dispatchers may read: ``shared``, ``own``."""
        ...

    @property
    def records(self) -> bool:
        """Whether it keeps every response time."""
        ...

    @property
    def policies(self) -> tuple[str, ...]:
        """The built-in policies it runs (the policy table's ``engines`` column)."""
        ...

    def replication(
        self, spec: Any, run: RunSpec, rng: np.random.Generator, clock: str
    ) -> Replication:
        """Start one replication of a checked ``SimulationSpec`` (its start drawn from ``rng``)."""
        ...


@dataclass(frozen=True)
class EngineInfo:
    """An engine (see :class:`Engine`); ``start`` builds one replication."""

    name: str
    summary: str
    laws: str
    speeds: str
    delays: bool
    views: tuple[str, ...]
    records: bool
    start: Callable[..., Replication]

    @property
    def policies(self) -> tuple[str, ...]:
        """The built-in policies it runs (the policy table's ``engines`` column)."""
        return with_capability(self.name)

    def replication(
        self, spec: Any, run: RunSpec, rng: np.random.Generator, clock: str
    ) -> Replication:
        """Start one replication of a checked ``SimulationSpec`` (its start drawn from ``rng``)."""
        return self.start(spec, run, rng, clock)


@dataclass(frozen=True)
class Choice:
    """The engine that runs a spec (its name), its clock (``markov`` or ``event-list``) and why."""

    engine: str
    clock: str
    reason: str


def speed_classes(speeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct speeds (increasing) and how many servers run at each."""
    return np.unique(np.asarray(speeds, dtype=np.float64), return_counts=True)


def why_not_counts(spec: Request) -> tuple[str, str, str] | None:
    """Say why neither count engine runs ``spec``, or None where one of them can.

    Returns the ``engine`` values allowed instead, the refusal's reason and the reason in a
    few words (for ``engine="auto"``'s account of its choice).
    """
    pol, work = spec.model, spec.work
    if not (pol.builtin and pol.name in with_capability("counts")):
        runs = ", ".join(with_capability("counts"))
        return (
            "'auto', 'servers' or 'general'",
            f"for {pol.name} (counts runs {runs})",
            f"counts does not run {pol.name}",
        )
    if work.trace is not None:
        return "'general', 'servers' or 'auto'", "when a trace is replayed", "a trace"
    if not markov_laws(work.service, work.interarrival):
        return (
            "'general', 'servers' or 'auto'",
            "unless arrivals are Poisson and service exp(1)",
            "laws other than Poisson and exp(1)",
        )
    if work.speeds is not None:
        classes = speed_classes(work.speeds)[0].size
        if pol.name not in with_capability("classes") or classes > MAX_SPEED_CLASSES:
            return (
                "'auto', 'servers' or 'general'",
                "with speeds unless the policy is "
                f"{', '.join(with_capability('classes'))} and there are at most "
                f"{MAX_SPEED_CLASSES} distinct speeds ({classes} given)",
                f"{pol.name} with {classes} speeds",
            )
    if spec.keep_response_times:
        return (
            "'auto', 'servers' or 'exponential'",
            "with keep_response_times (counts keeps no per-task records)",
            "per-task records kept",
        )
    return None


def _counts(spec: Request, why: str) -> Choice:
    """Choose a count engine for ``spec``: ``classes`` where speeds are given, else ``counts``."""
    if spec.work.speeds is None:
        return Choice("counts", "markov", why)
    k = speed_classes(spec.work.speeds)[0].size
    return Choice("classes", "markov", f"{why}; {k} speed class{'es' * (k > 1)}")


def _servers(spec: Request, asked: str, why: str) -> Choice:
    """Choose the per-server engine, with the Markov clock where the laws allow it."""
    work = spec.work
    laws = work.trace is None and markov_laws(work.service, work.interarrival)
    if asked == "general":
        return Choice("servers", "event-list", f"{why}; event list")
    if not laws or work.speeds is not None:
        what = (
            "a replayed trace"
            if work.trace is not None
            else "speeds"
            if laws
            else _laws(work.interarrival, work.service)
        )
        return Choice("servers", "event-list", f"{why}; event list ({what})")
    return Choice("servers", "markov", f"{why}; Markov clock")


def _laws(arrivals: Distribution, service: Distribution) -> str:
    """Name non-Markov laws: ``LogNormal service (mean 1, cv 2)``, say."""
    shown = []
    if not isinstance(arrivals, Exponential):
        shown.append(f"{type(arrivals).__name__} arrivals (cv {arrivals.cv:.3g})")
    if not (isinstance(service, Exponential) and service.mean == 1.0):
        shown.append(
            f"{type(service).__name__} service (mean {service.mean:g}, cv {service.cv:.3g})"
        )
    return " and ".join(shown)


def choose(spec: Request) -> Choice:
    """Choose the engine that runs ``spec`` (the module notes say how), or refuse in one line.

    Reads the spec's ``engine`` (asked), ``model``, ``servers``, ``work``, ``m``,
    ``delays``, ``view``, ``keep_response_times`` and ``initial``.
    """
    asked = check_choice("engine", spec.engine, ASKED)
    work, keep = spec.work, spec.keep_response_times
    fast = work.trace is None and work.speeds is None and work.slowdown is None
    fast = fast and markov_laws(work.service, work.interarrival)
    refresh = float(getattr(spec, "refresh", 0.0))
    if check_delay_policy(spec.model.name, spec.model.builtin, spec.delays, spec.view, spec.m):
        if refresh > 0:
            raise ParameterError("refresh", refresh, "0 with delays or own views (no board there)")
        if asked not in ("auto", "delay"):
            raise ParameterError("engine", asked, "'auto' or 'delay' with message delays")
        if not fast:
            raise ParameterError(
                "delay",
                "given",
                "used with Poisson arrivals, exp service and equal speeds (no trace, no speeds)",
            )
        if keep:
            raise ParameterError(
                "keep_response_times", keep, "False with delays (the delay engine keeps no records)"
            )
        what = "message delays" if spec.delays.any else "view='own'"
        return Choice("delay", "markov", f"{asked}: {what} (the delay engine alone)")
    if asked == "delay":
        raise ParameterError("engine", asked, "'delay' only with a delay or view='own'")
    if refresh > 0 and asked not in ("auto", "servers", "general", "exponential"):
        raise ParameterError("engine", asked, "'auto' or 'servers' with a refresh period")
    if work.slowdown is not None:
        if asked not in ("auto", "servers", "general"):
            raise ParameterError(
                "engine", asked, "'auto', 'servers' or 'general' with a slowdown (the event list)"
            )
        return Choice("servers", "event-list", f"{asked}: a slowdown (the event list alone)")
    if work.trace is not None and asked in ("exponential", "counts", "classes"):
        raise ParameterError(
            "engine", asked, "'general', 'servers' or 'auto' when a trace is replayed"
        )
    if asked == "exponential" and not fast:
        raise ParameterError(
            "engine",
            asked,
            "'general', 'servers', 'auto' or 'counts' unless arrivals "
            "are Poisson and service exp(1) at equal speeds",
        )
    why_not = why_not_counts(spec)
    if asked in ("counts", "classes"):
        if why_not is not None:
            raise ParameterError("engine", asked, f"{why_not[0]} {why_not[1]}")
        if asked == "classes" and work.speeds is None:  # equal speeds: one class, counts
            return _counts(spec, "asked for classes; equal speeds are one class: counts")
        return _counts(spec, "asked for")
    if asked == "auto":
        n = spec.servers
        if refresh > 0:
            return _servers(spec, asked, "auto: a refresh period (the per-server engine's board)")
        if n < AUTO_COUNTS_SERVERS:
            return _servers(spec, asked, f"auto: N = {n:,} < {AUTO_COUNTS_SERVERS:,}")
        if why_not is None and (work.speeds is None or spec.initial != "meanfield"):
            return _counts(spec, f"auto: N = {n:,} >= {AUTO_COUNTS_SERVERS:,}, on counts")
        shown = "a mean-field start with speeds" if why_not is None else why_not[2]
        return _servers(spec, asked, f"auto: not on counts ({shown})")
    return _servers(spec, asked, "asked for")
