"""The specification of a dispatch simulation, checked when it is built.

:class:`SimulationSpec` holds every argument of :func:`~cloudsched.dispatch.simulate` but
the random stream and the progress callback.  Building one checks and resolves them (ranges,
laws, run length, memory estimates) without running anything and raises a one-line
:class:`~cloudsched.errors.ParameterError` on the first bad one; ``simulate`` builds one,
and sweeps build one for every point of a grid before the first run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from numpy.typing import ArrayLike

from cloudsched.dispatch.delays import Delays, parse_delays
from cloudsched.dispatch.engines.choice import Choice, choose, why_not_counts
from cloudsched.dispatch.engines.replication import MICRO_BATCHES
from cloudsched.dispatch.initial import has_meanfield_start
from cloudsched.dispatch.options import OptionError, resolve_options
from cloudsched.dispatch.plugin import Policy
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.workload.distributions import Distribution
from cloudsched.dispatch.workload.resolved import Trace, Workload, resolve_workload
from cloudsched.dispatch.workload.slowdown import Slowdown, parse_slowdown
from cloudsched.errors import ParameterError, check_choice, check_int, check_real
from cloudsched.policy_table import TABLE
from cloudsched.resources import INT_LIMIT, check_memory

__all__ = [
    "DEFAULT_BATCHES",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_PRECISION",
    "DEFAULT_R",
    "MAX_REPLICATIONS",
    "SimulationSpec",
    "overload_note",
]

#: Memory per simulated server (state, I-queue arena, probe permutation), measured: ~180 B.
BYTES_PER_SERVER = 200
#: Memory per task of an overloaded run's backlog, per unit of load: the drain after the last
#: measured arrival still simulates arrivals, about load x backlog of them, until the backlog
#: is served (measured: 2.7 GB for 10^6 tasks at load 10 with N = 100, 0.37 GB at load 2;
#: issue 18's drain without arrivals will remove the factor).
BYTES_PER_BACKLOG_TASK = 320
#: Most replications of one call (each is a full run, run in lockstep).
MAX_REPLICATIONS = 10_000
#: Default number of batches for batch means.
DEFAULT_BATCHES = 20
#: Default relative precision (95% half-width / mean) of an open-ended run.
DEFAULT_PRECISION = 0.01
#: Default cap on the arrivals of one replication of an open-ended run.
DEFAULT_MAX_TASKS = 5_000_000_000

#: Servers per dispatcher when a policy needs dispatchers and neither r nor M is given.
DEFAULT_R = 10.0


def _resolve_dispatchers(servers: int, dispatchers: int | None, r: float | None) -> int:
    """M from ``dispatchers`` or ``r``; neither: r = min(DEFAULT_R, N) (as ``predict``)."""
    if dispatchers is not None and r is not None:
        raise ParameterError(
            "dispatchers", dispatchers, "given alone (use dispatchers or r, not both)"
        )
    if dispatchers is None and r is None:
        r = min(DEFAULT_R, float(servers))
    if r is not None:
        r = check_real("r", r, low=1.0, high=float(servers))
        return max(1, min(servers, round(servers / r)))  # CHOICE: M = round(N / r)
    return check_int("dispatchers", dispatchers, low=1, high=servers)


def _check_warmup(warmup: float | str) -> float | None:
    if isinstance(warmup, str) and warmup == "auto":
        return None
    return check_real("warmup", warmup, low=0.0, high=0.9)


@dataclass(frozen=True)
class SimulationSpec:
    """A dispatch simulation to run (the arguments of :func:`simulate`), checked when built.

    The fields are the arguments of :func:`~cloudsched.dispatch.simulate` (see there), as
    given; building the spec checks them and fills the resolved fields: ``model`` (the
    :class:`~cloudsched.dispatch.plugin.Policy`), ``m`` (dispatchers), ``start``
    (``meanfield`` or ``empty``), ``fixed_warmup`` (the warm-up fraction, None: detected),
    ``work`` (the resolved arrival/service model), ``delays`` (the parsed
    :class:`~cloudsched.dispatch.delays.Delays`) and ``choice`` (the engine that runs it,
    its clock and why: :func:`~cloudsched.dispatch.engines.choice.choose`).  ``d``,
    ``threshold``, ``tasks``, ``horizon``, ``replications``, ``batches``, ``precision`` and
    ``max_tasks`` hold their checked values.
    """

    policy: str | Policy
    servers: int
    load: float | None
    dispatchers: int | None = None
    r: float | None = None
    d: int = 2
    threshold: int = 1
    with_replacement: bool = False
    tasks: int | None = None
    horizon: float | None = None
    warmup: float | str = "auto"
    replications: int = 1
    batches: int = DEFAULT_BATCHES
    precision: float = DEFAULT_PRECISION
    max_tasks: int = DEFAULT_MAX_TASKS
    initial: str = "auto"
    service: Distribution | str | None = None
    arrivals: Distribution | str | None = None
    speeds: ArrayLike | None = field(default=None, repr=False)
    trace: Trace | None = field(default=None, repr=False)
    service_scale: float = 1.0
    engine: str = "auto"
    keep_response_times: bool = False
    time_limit: float | None = None
    unchecked: bool = False
    delay: Delays | str | list[str] | None = None
    view: str = "shared"
    options: Mapping[str, object] | Sequence[str] | None = None
    slowdown: Slowdown | str | None = None
    refresh: float = 0.0
    model: Policy = field(init=False, repr=False)
    m: int = field(init=False)
    start: str = field(init=False)
    fixed_warmup: float | None = field(init=False)
    work: Workload = field(init=False, repr=False)
    delays: Delays = field(init=False)
    choice: Choice = field(init=False)
    opt: tuple[float, ...] = field(init=False, repr=False)
    slots: int = field(init=False)

    def __post_init__(self) -> None:
        pol = get_policy(self.policy)
        servers = check_int("servers", self.servers, low=1, high=INT_LIMIT)
        work = resolve_workload(
            servers,
            self.load,
            self.service,
            self.arrivals,
            self.speeds,
            self.trace,
            self.service_scale,
        )
        work = _with_slowdown(work, self.slowdown)
        _check_refresh(pol, self.refresh)
        m = 1
        if pol.dispatchers == "required" or self.dispatchers is not None or self.r is not None:
            m = _resolve_dispatchers(servers, self.dispatchers, self.r)
        early = {"model": pol, "work": work, "m": m, "delays": parse_delays(self.delay)}
        for name, value in early.items():
            object.__setattr__(self, name, value)
        opt, slots = _resolve_options(pol, servers, self.options)
        object.__setattr__(self, "opt", opt)
        object.__setattr__(self, "slots", slots)
        choice = choose(self)  # the one place an engine is chosen
        counts = choice.engine in ("counts", "classes")
        per_server = 0 if choice.engine != "servers" else servers * BYTES_PER_SERVER
        _check_server_state(self, servers, per_server)
        high = m if pol.d == "dispatchers" else servers if pol.d == "servers" else None
        tasks, horizon = _run_length(self.tasks, self.horizon, work, servers)
        replications = check_int("replications", self.replications, low=1, high=MAX_REPLICATIONS)
        check_memory(
            "replications",
            replications,
            replications * per_server,
            "the replications' server state",
        )
        if work.load >= 1.0:
            _check_overload_memory(work.load, servers, tasks, horizon, replications)
        check_choice("initial", self.initial, ("auto", "meanfield", "empty"))
        model_start = has_meanfield_start(pol.meanfield, work.load) and work.trace is None
        if self.initial == "meanfield" and not model_start:
            raise ParameterError(
                "initial",
                self.initial,
                "'auto' or 'empty' (no mean-field model for this policy, load or a trace replay)",
            )
        if self.initial == "meanfield" and counts and work.speeds is not None:
            raise ParameterError(
                "initial",
                self.initial,
                "'auto' or 'empty' with speeds on the counts engine (the farm starts empty)",
            )
        # the mean-field start is of equal servers under Markov laws
        auto_start = (
            self.initial == "auto"
            and model_start
            and choice.clock == "markov"
            and work.speeds is None
        )
        resolved: dict[str, Any] = {
            "servers": servers,
            "tasks": tasks,
            "horizon": horizon,
            "replications": replications,
            "d": check_int("d", self.d, low=1, high=high),
            "threshold": check_int("threshold", self.threshold, low=0, high=INT_LIMIT),
            "fixed_warmup": _check_warmup(self.warmup),
            "batches": check_int("batches", self.batches, low=2, high=MICRO_BATCHES // 4),
            "precision": check_real(
                "precision", self.precision, low=0.0, high=1.0, low_open=True, high_open=True
            ),
            "max_tasks": check_int("max_tasks", self.max_tasks, low=1000, high=INT_LIMIT),
            "time_limit": None
            if self.time_limit is None
            else check_real("time_limit", self.time_limit, low=0.0, high=1e9, low_open=True),
            "start": "meanfield" if self.initial == "meanfield" or auto_start else "empty",
            "choice": choice,
        }
        for name, value in resolved.items():
            object.__setattr__(self, name, value)

    @property
    def open_ended(self) -> bool:
        """Whether the run decides its own length (no ``tasks``, no ``horizon``)."""
        return self.tasks is None and self.horizon is None


def _check_refresh(pol: Policy, refresh: float) -> None:
    """Refuse a refresh period for a policy that reads no published lengths."""
    refresh = check_real("refresh", refresh, low=0.0, high=1e12)
    row = TABLE.get(pol.name)
    if refresh > 0 and (row is None or row.pick not in ("least", "least of d")):
        readers = [p for p, r in TABLE.items() if r.pick in ("least", "least of d")]
        raise ParameterError(
            "refresh", refresh, f"0 unless the policy reads queue lengths ({', '.join(readers)})"
        )


def _with_slowdown(work: Workload, given: Slowdown | str | None) -> Workload:
    """Add the slowdown to the workload (refused beside a trace replay: its times are its own)."""
    slow = parse_slowdown(given)
    if slow is None:
        return work
    if work.trace is not None:
        raise ParameterError("slowdown", str(slow), "given without a trace replay")
    return dataclasses.replace(work, slowdown=slow)


def _resolve_options(
    pol: Policy, servers: int, options: Mapping[str, object] | Sequence[str] | None
) -> tuple[tuple[float, ...], int]:
    """Resolve the policy's options, and the servers each dispatcher balances over."""
    if isinstance(options, str):
        options = [options]
    values = resolve_options(pol.name, options)
    row = TABLE.get(pol.name)
    if row is None or not row.options:
        return (), 0
    names = [o.name for o in row.options]
    subset = int(values[names.index("subset")])
    if subset > servers:
        raise OptionError(pol.name, "subset", subset, f"in [0, {servers}] (0: all servers)")
    joining = int(values[names.index("join-count")])
    if joining >= servers:
        raise OptionError(
            pol.name,
            "join-count",
            joining,
            f"in [0, {servers - 1}] (some servers are there from the start)",
        )
    return tuple(float(v) for v in values), subset or servers


def _check_server_state(spec: SimulationSpec, servers: int, need: int) -> None:
    """Refuse a per-server state beyond the memory limit (naming the counts engine if it can)."""
    try:
        check_memory("servers", servers, need, "the server state")
    except ParameterError as exc:
        if why_not_counts(spec) is not None:
            raise
        raise ParameterError(
            "servers",
            servers,
            f"{exc.allowed}; or --engine counts, which "
            "keeps no per-server state (give --tasks or --horizon: at this N "
            "an open-ended run needs very many events)",
        ) from None


def _run_length(
    tasks: int | None, horizon: float | None, work: Workload, servers: int
) -> tuple[int | None, float | None]:
    """Check ``tasks`` and ``horizon``; a trace or an overload fixes a length in tasks."""
    if tasks is not None and horizon is not None:
        raise ParameterError("tasks", tasks, "given alone (use tasks or horizon, not both)")
    if tasks is not None:
        high = work.trace.arrivals.size - 1 if work.trace is not None else INT_LIMIT
        return check_int("tasks", tasks, low=1, high=high), None
    if horizon is not None:
        return None, check_real("horizon", horizon, low=0.0, low_open=True)
    if work.trace is not None:
        return work.trace.arrivals.size - 1, None  # the last arrival closes the window
    if work.load >= 1.0:
        return max(10**6, 100 * servers), None
    return None, None


def _check_overload_memory(
    load: float, servers: int, tasks: int | None, horizon: float | None, replications: int
) -> None:
    """Refuse an overloaded run whose queues cannot fit in memory (see BYTES_PER_BACKLOG_TASK)."""
    arrivals = tasks if tasks is not None else load * servers * (horizon or 0.0)
    backlog = arrivals * (1.0 - 1.0 / load)  # tasks still waiting when arrivals stop counting
    need = BYTES_PER_BACKLOG_TASK * load * backlog * replications
    check_memory(
        "load",
        load,
        need,
        f"the queues of an overloaded run ({arrivals:.3g} arrivals "
        f"at load {load:g} leave about {backlog:.3g} tasks waiting)",
    )


def overload_note(load: float, tasks: int | None, horizon: float | None) -> str:
    """Return the warning of a run at load >= 1 (no steady state; what bounds the run)."""
    bound = f"{tasks} tasks" if tasks is not None else f"horizon {horizon:g}"
    return f"load {load:g} >= 1: no steady state exists; results describe a run bounded by {bound}"
