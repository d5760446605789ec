"""The checked form of :func:`~cloudsched.dispatch.simulation.simulate`'s arguments.

:func:`plan_simulation` checks and resolves every argument (ranges, laws, run length, memory
estimates) without running anything and returns a :class:`SimulationPlan`; ``simulate`` runs
a plan, and sweeps check every point of a grid with it before the first run.
"""

from __future__ import annotations

from dataclasses import dataclass

from numpy.typing import ArrayLike

from cloudsched.dispatch.distributions import Distribution
from cloudsched.dispatch.engine import MICRO_BATCHES
from cloudsched.dispatch.initial import has_meanfield_start
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.workload import Trace, Workload, resolve_workload
from cloudsched.errors import ParameterError, check_choice, check_int, check_real
from cloudsched.resources import INT_LIMIT, check_memory

__all__ = ["DEFAULT_BATCHES", "DEFAULT_MAX_TASKS", "DEFAULT_PRECISION", "MAX_REPLICATIONS",
           "SimulationPlan", "overload_note", "plan_simulation"]  # fmt: skip

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


def _resolve_dispatchers(servers: int, dispatchers: int | None, r: float | None) -> int:
    if dispatchers is not None and r is not None:
        raise ParameterError(
            "dispatchers", dispatchers, "given alone (use dispatchers or r, not both)"
        )
    if dispatchers is None and r is None:
        raise ParameterError("dispatchers", None, f"an integer in [1, {servers}] (or give r)")
    if r is not None:
        r = check_real("r", r, low=1.0, high=float(servers))
        return max(1, min(servers, round(servers / r)))  # CHOICE: M = round(N / r)
    return check_int("dispatchers", dispatchers, low=1, high=servers)


def _check_warmup(warmup: float | str) -> float | None:
    if isinstance(warmup, str) and warmup == "auto":
        return None
    return check_real("warmup", warmup, low=0.0, high=0.9)


@dataclass(frozen=True)
class SimulationPlan:
    """The arguments of :func:`simulate`, checked and resolved; nothing has run yet.

    ``m`` is the number of dispatchers, ``start`` the initial state (``meanfield`` or
    ``empty``), ``fixed_warmup`` the warm-up fraction (None: detected) and ``work`` the
    resolved arrival/service model.
    """

    policy: str
    servers: int
    m: int
    d: int
    threshold: int
    with_replacement: bool
    tasks: int | None
    horizon: float | None
    warmup: float | str
    fixed_warmup: float | None
    replications: int
    batches: int
    precision: float
    max_tasks: int
    start: str
    work: Workload
    keep_response_times: bool


def plan_simulation(
    policy: str,
    *,
    servers: int,
    load: float | None,
    dispatchers: int | None = None,
    r: float | None = None,
    d: int = 2,
    threshold: int = 1,
    with_replacement: bool = False,
    tasks: int | None = None,
    horizon: float | None = None,
    warmup: float | str = "auto",
    replications: int = 1,
    batches: int = DEFAULT_BATCHES,
    precision: float = DEFAULT_PRECISION,
    max_tasks: int = DEFAULT_MAX_TASKS,
    initial: str = "auto",
    service: Distribution | str | None = None,
    arrivals: Distribution | str | None = None,
    speeds: ArrayLike | None = None,
    trace: Trace | None = None,
    service_scale: float = 1.0,
    engine: str = "auto",
    keep_response_times: bool = False,
) -> SimulationPlan:
    """Check and resolve the arguments of :func:`simulate` without running anything.

    Takes the same arguments as :func:`simulate` (but ``rng`` and ``progress``) and raises
    :class:`~cloudsched.errors.ParameterError` on the first bad one; sweeps call it on every
    point of a grid before the first run.
    """
    pol = get_policy(policy)
    servers = check_int("servers", servers, low=1, high=INT_LIMIT)
    check_memory("servers", servers, servers * BYTES_PER_SERVER, "the server state")
    work = resolve_workload(servers, load, service, arrivals, speeds, trace, service_scale, engine)
    if pol.dispatchers == "required" or dispatchers is not None or r is not None:
        m = _resolve_dispatchers(servers, dispatchers, r)
    else:
        m = 1
    if pol.d == "dispatchers":
        d = check_int("d", d, low=1, high=m)
    elif pol.d == "servers":
        d = check_int("d", d, low=1, high=servers)
    else:
        d = check_int("d", d, low=1)
    threshold = check_int("threshold", threshold, low=0, high=INT_LIMIT)
    if tasks is not None and horizon is not None:
        raise ParameterError("tasks", tasks, "given alone (use tasks or horizon, not both)")
    if tasks is not None:
        high = work.trace.arrivals.size - 1 if work.trace is not None else None
        tasks = check_int("tasks", tasks, low=1, high=INT_LIMIT if high is None else high)
    elif horizon is not None:
        horizon = check_real("horizon", horizon, low=0.0, low_open=True)
    elif work.trace is not None:
        tasks = work.trace.arrivals.size - 1  # the last arrival closes the window
    elif work.load >= 1.0:
        tasks = max(10**6, 100 * servers)
    fixed_warmup = _check_warmup(warmup)
    replications = check_int("replications", replications, low=1, high=MAX_REPLICATIONS)
    check_memory("replications", replications, replications * servers * BYTES_PER_SERVER,
                 "the replications' server state")  # fmt: skip
    if work.load >= 1.0:
        _check_overload_memory(work.load, servers, tasks, horizon, replications)
    batches = check_int("batches", batches, low=2, high=MICRO_BATCHES // 4)
    precision = check_real("precision", precision, low=0.0, high=1.0, low_open=True, high_open=True)
    max_tasks = check_int("max_tasks", max_tasks, low=1000, high=INT_LIMIT)
    check_choice("initial", initial, ("auto", "meanfield", "empty"))
    model_start = has_meanfield_start(pol.meanfield, work.load) and work.trace is None
    if initial == "meanfield" and not model_start:
        raise ParameterError(
            "initial", initial, "'auto' or 'empty' (no mean-field model for this policy, "
            "load or a trace replay)",
        )  # fmt: skip
    start = "meanfield" if initial == "meanfield" or (
        initial == "auto" and model_start and not work.general) else "empty"  # fmt: skip
    return SimulationPlan(
        policy=policy,
        servers=servers,
        m=m,
        d=d,
        threshold=threshold,
        with_replacement=with_replacement,
        tasks=tasks,
        horizon=horizon,
        warmup=warmup,
        fixed_warmup=fixed_warmup,
        replications=replications,
        batches=batches,
        precision=precision,
        max_tasks=max_tasks,
        start=start,
        work=work,
        keep_response_times=keep_response_times,
    )


def _check_overload_memory(
    load: float, servers: int, tasks: int | None, horizon: float | None, replications: int
) -> None:
    """Refuse an overloaded run whose queues cannot fit in memory (see BYTES_PER_BACKLOG_TASK)."""
    arrivals = tasks if tasks is not None else load * servers * (horizon or 0.0)
    backlog = arrivals * (1.0 - 1.0 / load)  # tasks still waiting when arrivals stop counting
    need = BYTES_PER_BACKLOG_TASK * load * backlog * replications
    check_memory("load", load, need, f"the queues of an overloaded run ({arrivals:.3g} arrivals "
                 f"at load {load:g} leave about {backlog:.3g} tasks waiting)")  # fmt: skip


def overload_note(load: float, tasks: int | None, horizon: float | None) -> str:
    """Return the warning of a run at load >= 1 (no steady state; what bounds the run)."""
    bound = f"{tasks} tasks" if tasks is not None else f"horizon {horizon:g}"
    return f"load {load:g} >= 1: no steady state exists; results describe a run bounded by {bound}"
