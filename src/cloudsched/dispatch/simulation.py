"""Simulate task dispatch: the public API (:func:`simulate`) and its result record.

Bookkeeping of each policy (the seed leaves these open; ``CHOICE`` marks our rules):

* ``random``: a uniform server.  ``round-robin``: each dispatcher cycles over all N servers
  on its own, starting at a uniformly drawn server (CHOICE).  ``jsq``: a uniform server
  among the shortest queues (bucket structure, O(1)).
* ``pod``: probe ``d`` distinct servers (``with_replacement=True``: independent draws, the
  classic supermarket model) and join the first least loaded in the random sample order,
  i.e. ties are broken uniformly.  ``d`` probes are counted per task.
* ``jiq``: I-queues with delete requests; a server that becomes idle joins a uniform
  I-queue (one join message).  A dispatcher with a non-empty I-queue takes a uniform entry
  and removes it; otherwise it picks a uniform server, and if that server is idle it sends a
  delete request to the server's I-queue.  So listed <=> idle, and no server is listed twice.
* ``jiq-pod``: as ``jiq`` but an empty I-queue probes ``d`` servers as ``pod`` does.
* ``jiq-original``: no delete requests.  A listed server that receives a task from a random
  dispatch stays listed (a stale entry); a dispatcher that takes a stale entry sends the task
  to a busy server (counted as ``stale``).  CHOICE: a server that becomes idle while still
  listed does not join again (it knows its entry was never consumed), so every server is in
  at most one I-queue.
* ``jiq-threshold`` (z): CHOICE: a server is listed exactly while it holds at most ``z``
  tasks.  It joins a uniform I-queue when its queue drops to ``z``; a dispatcher removes the
  entry it uses and the server joins again if it still holds at most ``z`` tasks; a listed
  server pushed above ``z`` by a random dispatch sends a delete request.  ``z = 0`` is ``jiq``.
* ``jiq-sq`` (d): as ``jiq``, but a server that becomes idle samples ``d`` distinct I-queues
  and joins the shortest (first in sample order on ties); those ``d`` queries are counted as
  probe messages.

Measurement (CHOICE): the first ``warmup`` fraction of the run (of the tasks, or of the
horizon) is discarded; time averages cover the rest of the run; tasks that arrive in the
measured window are followed until they leave (the simulation continues, with arrivals,
until they have all left), so no measured task is censored.  The 95% confidence interval of
the mean response time comes from ``batches`` batch means, batches formed by arrival
(consecutive arrival indices, or equal slices of the measured time window), with Student's
t; or from the replication means when ``replications > 1``.  Batch means of one run are
correlated when the run spans few time units (large N at the default run length); when
their lag-1 autocorrelation is significantly positive the interval is widened by the AR(1)
factor (:func:`cloudsched._stats.batch_means_half_width`) and ``ci_method`` says so.
Percentiles come from every measured response time (kept as float32, 4 bytes per task).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched._stats import batch_means_half_width, t_half_width
from cloudsched.dispatch import _kernel as K
from cloudsched.dispatch.distributions import Distribution, Exponential, parse_spec
from cloudsched.dispatch.engine import RawRun, RunSpec, TaskSource, _ensure_compiled, run_once
from cloudsched.dispatch.policies import check_policy
from cloudsched.dispatch.workload import RenewalSource, Trace, TraceSource
from cloudsched.errors import ParameterError, check_choice, check_int, check_real

__all__ = ["SimulationResult", "simulate"]

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99.9": 99.9}
#: Default warm-up fraction of the run.
DEFAULT_WARMUP = 0.2
#: Default number of batches for batch means.
DEFAULT_BATCHES = 20


@dataclass(frozen=True)
class SimulationResult:
    """Summary of one simulation (one or several replications).

    Rates (``messages``) are per server per unit time; ``tail[i-1]`` is the time-average
    fraction of servers with at least ``i`` tasks and ``occupancy[i]`` the fraction with
    exactly ``i``; ``p0`` is the time-average fraction of empty I-queues (1 without I-queues).
    """

    policy: str
    servers: int
    dispatchers: int
    load: float
    d: int
    threshold: int
    with_replacement: bool
    tasks: int | None
    horizon: float | None
    warmup: float
    replications: int
    seed: int | None
    mean_response_time: float
    ci95: tuple[float, float]
    ci_method: str
    percentiles: dict[str, float]
    tail: list[float]
    occupancy: list[float]
    p0: float
    messages: dict[str, float]
    measured_tasks: int
    measured_time: float
    events: int
    wall_seconds: float
    events_per_second: float
    engine: str
    response_times: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def r(self) -> float:
        """Servers per dispatcher."""
        return self.servers / self.dispatchers

    def to_row(self, tail: int = 6) -> dict[str, Any]:
        """Flatten the result into one row for pandas or CSV.

        Scalars, ``ci95_low``/``ci95_high``, the percentiles, ``msg_*`` rates and the first
        ``tail`` entries ``s_1, s_2, ...`` of the tail (0 beyond the last measured level).
        """
        nested = ("ci95", "percentiles", "tail", "occupancy", "messages")
        row = {k: v for k, v in self.to_dict().items() if k not in nested}
        row["ci95_low"], row["ci95_high"] = self.ci95
        row.update(self.percentiles)
        row.update({f"msg_{k}": v for k, v in self.messages.items()})
        for i in range(tail):
            row[f"s_{i + 1}"] = self.tail[i] if i < len(self.tail) else 0.0
        return row

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (field names as in ``cloudsched simulate --format json``).

        An undefined number (the interval of a run with a single measured batch) is None,
        so the JSON stays standard (``null``, never ``NaN``).
        """
        out = asdict(self)
        out.pop("response_times")
        out["ci95"] = [None if math.isnan(x) else x for x in self.ci95]
        out["r"] = self.r
        return out


def _t_interval(means: np.ndarray) -> tuple[float, float]:
    centre = float(means.mean())
    half = t_half_width(means)
    return (centre - half, centre + half)


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


@dataclass(frozen=True)
class _Workload:
    """Resolved arrivals and services: the fast path, or task sources for the event list."""

    general: bool
    rate_per_server: float  # arrivals per server per unit time
    load: float  # offered load per unit of capacity
    interarrival: Distribution
    service: Distribution
    trace: Trace | None
    speeds: np.ndarray | None

    def source(self, rng: np.random.Generator, n: int) -> TaskSource | None:
        if not self.general:
            return None
        if self.trace is not None:
            return TraceSource(self.trace)
        arr_rng, svc_rng = rng.spawn(2)
        return RenewalSource(
            self.interarrival, self.service, self.rate_per_server * n, arr_rng, svc_rng
        )


def _resolve_workload(
    servers: int,
    load: float | None,
    service: Distribution | str | None,
    arrivals: Distribution | str | None,
    speeds: ArrayLike | None,
    trace: Trace | None,
    service_scale: float,
    engine: str,
) -> _Workload:
    check_choice("engine", engine, ("auto", "exponential", "general"))
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
        if engine == "exponential":
            raise ParameterError("engine", engine, "'general' or 'auto' when a trace is replayed")
        if service is not None or arrivals is not None:
            raise ParameterError("trace", trace.source, "given without service or arrivals laws")
        if load is not None:
            load = check_real("load", load, low=0.0, low_open=True)
        replay = trace.replay(capacity, load, service_scale)
        offered = float(replay.services.sum() / (max(replay.span, 1e-300) * capacity))
        rate = (replay.arrivals.size - 1) / max(replay.span, 1e-300) / servers
        return _Workload(True, rate, offered, gap, svc, replay, speed)
    if load is None:
        raise ParameterError("load", None, "a number > 0 (it may be left out only with a trace)")
    load = check_real("load", load, low=0.0, low_open=True)
    fast = (
        isinstance(svc, Exponential) and svc.mean == 1.0 and isinstance(gap, Exponential)
        and speed is None
    )  # fmt: skip
    if engine == "exponential" and not fast:
        raise ParameterError(
            "engine", engine, "'general' or 'auto' unless arrivals are Poisson and service exp(1)"
        )
    general = engine == "general" or not fast
    rate = load * capacity / svc.mean / servers
    return _Workload(general, rate, load, gap, svc, None, speed)


def simulate(
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
    warmup: float = DEFAULT_WARMUP,
    replications: int = 1,
    batches: int = DEFAULT_BATCHES,
    rng: int | np.random.Generator | None = None,
    service: Distribution | str | None = None,
    arrivals: Distribution | str | None = None,
    speeds: ArrayLike | None = None,
    trace: Trace | None = None,
    service_scale: float = 1.0,
    engine: str = "auto",
    keep_response_times: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Simulate a dispatch policy.

    By default arrivals are Poisson and service times exponential with mean 1, simulated
    by the compiled Markov-chain engine (the fast path).  Other service or inter-arrival
    laws, per-server speeds or a trace switch to the compiled event-list engine, which has
    the same policies, measurements and result record.

    Parameters
    ----------
    policy : str
        One of :data:`cloudsched.dispatch.POLICIES`.
    servers : int
        Number of servers N (>= 1).
    load : float or None
        Offered load per unit of capacity (> 0): the arrival rate is
        ``load * sum(speeds) / E[service]`` (``load * N`` by default).  Loads >= 1 have no
        steady state: a warning is issued and the run is bounded by ``tasks`` or
        ``horizon`` as usual.  With a trace, None replays its own times, and a number
        rescales its inter-arrival times by one common factor (service times untouched).
    dispatchers, r : int or float
        Number of dispatchers M in [1, N], or servers per dispatcher (M = round(N / r)).
        Needed by ``round-robin`` and the JIQ family; defaults to M = 1 for the others.
    d : int
        Probes per decision (``pod``, ``jiq-pod``: 1..N; ``jiq-sq``: I-queues sampled, 1..M).
    threshold : int
        ``z`` of ``jiq-threshold`` (>= 0).
    with_replacement : bool
        ``pod``/``jiq-pod`` probe with replacement instead of ``d`` distinct servers.
    tasks : int, optional
        Run length in arrivals (default ``max(10**6, 100 * N)`` when ``horizon`` is not
        given; with a trace, all its tasks).
    horizon : float, optional
        Run length in time (mean service times; trace replays start at time 0).
    warmup : float
        Fraction of the run discarded before measuring, in [0, 0.9].
    replications : int
        Independent replications, streams ``SeedSequence(seed).spawn(replications)``.
    batches : int
        Batches for the batch-means confidence interval (>= 2).
    rng : int, numpy.random.Generator or None
        Root seed.  An int (or None: fresh entropy, recorded in the result as ``seed``) seeds
        a :class:`numpy.random.SeedSequence`; a Generator is used directly (``seed`` is None).
    service, arrivals : Distribution or str, optional
        Service-time law and inter-arrival shape (see :func:`parse_spec`); default ``exp``.
    speeds : array_like, optional
        Speed of each server (a task of size x takes x / speed).
    trace : Trace, optional
        Replay these tasks instead of drawing them.
    service_scale : float
        Multiplies trace service times (unit conversion).
    engine : str
        ``auto`` (fast path when it applies), ``exponential`` or ``general``.
    keep_response_times : bool
        Keep every measured response time in the result (``response_times``).
    progress : callable, optional
        Called with the fraction done (0..1) between chunks of events.

    Returns
    -------
    SimulationResult
        The summary record.
    """
    check_policy(policy)
    servers = check_int("servers", servers, low=1)
    work = _resolve_workload(servers, load, service, arrivals, speeds, trace, service_scale, engine)
    needs_m = policy == "round-robin" or policy.startswith("jiq")
    if needs_m or dispatchers is not None or r is not None:
        m = _resolve_dispatchers(servers, dispatchers, r)
    else:
        m = 1
    if policy == "jiq-sq":
        d = check_int("d", d, low=1, high=m)
    elif policy in ("pod", "jiq-pod"):
        d = check_int("d", d, low=1, high=servers)
    else:
        d = check_int("d", d, low=1)
    threshold = check_int("threshold", threshold, low=0)
    if tasks is not None and horizon is not None:
        raise ParameterError("tasks", tasks, "given alone (use tasks or horizon, not both)")
    if tasks is not None:
        high = work.trace.arrivals.size - 1 if work.trace is not None else None
        tasks = check_int("tasks", tasks, low=1, high=high)
    elif horizon is not None:
        horizon = check_real("horizon", horizon, low=0.0, low_open=True)
    elif work.trace is not None:
        tasks = work.trace.arrivals.size - 1  # the last arrival closes the window
    else:
        tasks = max(10**6, 100 * servers)
    warmup = check_real("warmup", warmup, low=0.0, high=0.9)
    replications = check_int("replications", replications, low=1)
    batches = check_int("batches", batches, low=2)
    if work.load >= 1.0:
        warnings.warn(
            f"load {work.load:g} >= 1: no steady state exists; results describe a run bounded by "
            + (f"{tasks} tasks" if tasks is not None else f"horizon {horizon:g}"),
            RuntimeWarning,
            stacklevel=2,
        )

    if isinstance(rng, np.random.Generator):
        seed = None
        gens = [rng] if replications == 1 else list(rng.spawn(replications))
    else:
        root = np.random.SeedSequence(rng)
        seed = int(root.entropy)  # type: ignore[arg-type]
        gens = (
            [np.random.default_rng(root)]
            if replications == 1
            else [np.random.default_rng(s) for s in root.spawn(replications)]
        )

    spec = RunSpec(
        K.POLICY_CODES[policy], servers, m, work.rate_per_server, d, threshold, with_replacement,
        batches=batches,
    )  # fmt: skip
    if tasks is not None:
        spec = replace(spec, warm_tasks=int(warmup * tasks), end_tasks=tasks)
    else:
        assert horizon is not None
        spec = replace(spec, t_warm=warmup * horizon, t_end=horizon)
    _ensure_compiled()
    runs: list[RawRun] = []
    for k, gen in enumerate(gens):
        sub = None
        if progress is not None:
            sub = lambda f, k=k: progress((k + f) / len(gens))  # noqa: E731
        runs.append(run_once(spec, gen, sub, work.source(gen, servers), work.speeds))
    return _summarise(
        runs, policy, spec, work.load, tasks, horizon, warmup, seed, keep_response_times,
        work.general,
    )  # fmt: skip


def _summarise(
    runs: list[RawRun],
    policy: str,
    spec: RunSpec,
    load: float,
    tasks: int | None,
    horizon: float | None,
    warmup: float,
    seed: int | None,
    keep: bool,
    general: bool,
) -> SimulationResult:
    n, m = spec.n, spec.m
    if any(run.response_times.size == 0 for run in runs):
        raise ParameterError(
            "horizon", horizon, "long enough for a task to arrive after the warm-up"
        )
    times = np.concatenate([run.response_times for run in runs])
    total = sum(float(run.batch_sum.sum()) for run in runs)
    count = sum(int(run.batch_count.sum()) for run in runs)
    if len(runs) > 1:
        means = np.array([run.batch_sum.sum() / run.batch_count.sum() for run in runs])
        ci, method = _t_interval(means), f"replications ({len(runs)})"
    else:
        filled = runs[0].batch_count > 0
        bm = runs[0].batch_sum[filled] / runs[0].batch_count[filled]
        half, rho = batch_means_half_width(bm)
        centre = float(bm.mean())
        ci, method = (centre - half, centre + half), f"batch means ({bm.size} batches by arrival)"
        if rho > 0:
            method += f", widened for lag-1 correlation (AR(1), rho = {rho:.2f})"
    duration = sum(run.t_end - run.t_warm for run in runs)
    levels = max(run.tail_area.size for run in runs)
    area = np.zeros(levels)
    for run in runs:
        area[: run.tail_area.size] += run.tail_area
    s = area / (n * duration)
    s[0] = 1.0
    nz = np.flatnonzero(s > 0)
    s = s[: nz[-1] + 1]
    occupancy = s - np.append(s[1:], 0.0)
    msgs = np.sum([run.messages for run in runs], axis=0) / (n * duration)
    is_iq = policy.startswith("jiq")
    p0 = sum(run.p0_area for run in runs) / (m * duration) if is_iq else 1.0
    events = sum(run.events for run in runs)
    wall = sum(run.wall_seconds for run in runs)
    pct = np.percentile(times, list(PERCENTILES.values()))
    return SimulationResult(
        policy=policy,
        servers=n,
        dispatchers=m,
        load=load,
        d=spec.d,
        threshold=spec.z,
        with_replacement=spec.replace,
        tasks=tasks,
        horizon=horizon,
        warmup=warmup,
        replications=len(runs),
        seed=seed,
        mean_response_time=total / count,
        ci95=ci,
        ci_method=method,
        percentiles={k: float(v) for k, v in zip(PERCENTILES, pct, strict=True)},
        tail=[float(x) for x in s[1:]],
        occupancy=[float(x) for x in occupancy],
        p0=float(p0),
        messages={
            "join": float(msgs[K.M_JOIN]),
            "delete": float(msgs[K.M_DELETE]),
            "probe": float(msgs[K.M_PROBE]),
            "stale": float(msgs[K.M_STALE]),
        },
        measured_tasks=int(times.size),
        measured_time=float(duration),
        events=events,
        wall_seconds=wall,
        events_per_second=events / wall if wall > 0 else math.inf,
        engine="general" if general else "exponential",
        response_times=times if keep else None,
    )
