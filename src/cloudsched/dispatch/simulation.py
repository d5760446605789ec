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

Measurement (how it is done and why: ``README.md``, "Numbers you can trust"):

* Start: by default from a state drawn from the mean field where the policy has a model
  and the run is on the Markov-chain fast path (:mod:`cloudsched.dispatch.initial`), else
  empty; ``initial`` chooses.
* Warm-up: detected by MSER on the micro-batch means of the response times
  (:mod:`cloudsched.steadystate`), or a fixed fraction ``warmup`` of the run.
* Length: without ``tasks`` or ``horizon`` the run continues until the stopping rule of
  :mod:`cloudsched.dispatch.measure` holds (certified interval, 95% half-width at most
  ``precision`` times the mean) or ``max_tasks`` arrivals; ``tasks`` / ``horizon`` fix it.
  Tasks that arrive in the window are followed until they leave (none is censored).
* Interval: batch means (``batches`` batches, each at least five relaxation times long,
  widened by the first-order batch-length factor, withheld unless certified), or the means
  of ``replications`` independent replications (streams ``SeedSequence(seed).spawn``),
  each warmed up by the same rule.  No interval when there is no steady state (load >= 1,
  a trend MSER cannot cut, drift, or a trace too short).
* Percentiles: a histogram with 512 bins per octave (within 0.1% of the exact order
  statistics) of the tasks that arrived after the warm-up (to a sixteenth of the run).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.dispatch import state as K
from cloudsched.dispatch.distributions import Distribution
from cloudsched.dispatch.engine import (
    Engine,
    InitialState,
    RawRun,
    RunSpec,
    run_once,
)
from cloudsched.dispatch.initial import meanfield_state
from cloudsched.dispatch.measure import (
    estimate,
    histogram_percentiles,
    replication_interval,
    run_until_precise,
    window,
)
from cloudsched.dispatch.plan import (
    DEFAULT_BATCHES,
    DEFAULT_MAX_TASKS,
    DEFAULT_PRECISION,
    SimulationPlan,
    overload_note,
    plan_simulation,
)
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.relaxation import relaxation_time
from cloudsched.dispatch.workload import Trace, Workload
from cloudsched.errors import ParameterError, check_seed
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS, SeriesEstimate

__all__ = ["SimulationResult", "simulate"]

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99.9": 99.9}
#: A trace replay must span this many relaxation times to be called steady.
TRACE_RELAXATIONS = DEFAULT_BATCHES * MIN_BATCH_RELAXATIONS


@dataclass(frozen=True)
class SimulationResult:
    """Summary of one simulation (one or several replications).

    Rates (``messages``) are per server per unit time; ``tail[i-1]`` is the time-average
    fraction of servers with at least ``i`` tasks and ``occupancy[i]`` the fraction with
    exactly ``i``; ``p0`` is the time-average fraction of empty I-queues (1 without
    I-queues).  All of them cover the measurement window after the warm-up.

    How it was measured: ``initial`` (``meanfield`` or ``empty``), ``warmup`` (``auto``:
    MSER, or the fixed fraction), ``warmup_detected``, ``warmup_time`` (simulated time cut,
    mean over replications), ``measured_time`` (simulated time measured, summed over
    replications), ``relaxation_estimate``, ``precision_target`` (None for a fixed
    length), ``precision_reached`` (95% half-width / mean), ``stop_reason`` (``precision``,
    ``max_tasks``, ``tasks``, ``horizon`` or ``trace``), ``ci_method``.  ``ci95`` is None
    when there is no steady state (``steady_state`` False) or when the run is too short for
    an honest interval; ``warnings`` says why, in words.
    """

    policy: str
    plugin: str | None
    servers: int
    dispatchers: int
    load: float
    d: int
    threshold: int
    with_replacement: bool
    tasks: int | None
    horizon: float | None
    warmup: str
    replications: int
    seed: int | None
    mean_response_time: float
    ci95: tuple[float, float] | None
    ci_method: str
    steady_state: bool
    initial: str
    warmup_detected: bool
    warmup_time: float
    measured_time: float
    relaxation_estimate: float
    precision_target: float | None
    precision_reached: float | None
    stop_reason: str
    warnings: tuple[str, ...]
    percentiles: dict[str, float]
    tail: list[float]
    occupancy: list[float]
    p0: float
    messages: dict[str, float]
    measured_tasks: int
    events: int
    wall_seconds: float
    events_per_second: float
    engine: str
    log_span: float | None = None  # trace replays: the log's span in mean service times
    response_times: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def r(self) -> float:
        """Servers per dispatcher."""
        return self.servers / self.dispatchers

    def to_row(self, tail: int = 6) -> dict[str, Any]:
        """Flatten the result into one row for pandas or CSV.

        Scalars, ``ci95_low``/``ci95_high`` (NaN without an interval), the percentiles,
        ``msg_*`` rates, ``warnings`` joined by ``"; "`` and the first ``tail`` entries
        ``s_1, s_2, ...`` of the tail (0 beyond the last measured level).
        """
        nested = ("ci95", "percentiles", "tail", "occupancy", "messages", "warnings")
        row = {k: v for k, v in self.to_dict().items() if k not in nested}
        row["ci95_low"], row["ci95_high"] = self.ci95 if self.ci95 else (math.nan, math.nan)
        row.update(self.percentiles)
        row.update({f"msg_{k}": v for k, v in self.messages.items()})
        row["warnings"] = "; ".join(self.warnings)
        for i in range(tail):
            row[f"s_{i + 1}"] = self.tail[i] if i < len(self.tail) else 0.0
        return {k: (math.nan if v is None else v) for k, v in row.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (field names as in ``cloudsched simulate --format json``).

        An undefined number (no interval, an infinite relaxation time) is None, so the JSON
        stays standard (``null``, never ``NaN`` or ``Infinity``).
        """
        out = asdict(self)
        out.pop("response_times")
        out["ci95"] = list(self.ci95) if self.ci95 else None
        out["warnings"] = list(self.warnings)
        out["r"] = self.r
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in out.items()}  # fmt: skip


def _generators(
    rng: int | np.random.Generator | None, replications: int
) -> tuple[int | None, list[np.random.Generator]]:
    if isinstance(rng, np.random.Generator):
        return None, [rng] if replications == 1 else list(rng.spawn(replications))
    root = np.random.SeedSequence(check_seed("seed", rng))
    seed = int(root.entropy)  # type: ignore[arg-type]
    if replications == 1:
        return seed, [np.random.default_rng(root)]
    return seed, [np.random.default_rng(s) for s in root.spawn(replications)]


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
    warmup: float | str = "auto",
    replications: int = 1,
    batches: int = DEFAULT_BATCHES,
    precision: float = DEFAULT_PRECISION,
    max_tasks: int = DEFAULT_MAX_TASKS,
    initial: str = "auto",
    rng: int | np.random.Generator | None = None,
    service: Distribution | str | None = None,
    arrivals: Distribution | str | None = None,
    speeds: ArrayLike | None = None,
    trace: Trace | None = None,
    service_scale: float = 1.0,
    engine: str = "auto",
    keep_response_times: bool = False,
    progress: Callable[[float, str], None] | None = None,
) -> SimulationResult:
    """Simulate a dispatch policy until its steady-state mean is known to ``precision``.

    By default arrivals are Poisson and service times exponential with mean 1, simulated
    by the compiled Markov-chain engine (the fast path).  Other service or inter-arrival
    laws, per-server speeds or a trace switch to the compiled event-list engine, which has
    the same policies, measurements and result record.  How runs start, how long they
    last, and how the warm-up and the interval are found: see the module notes.

    Parameters
    ----------
    policy : str
        One of :data:`cloudsched.dispatch.POLICIES`.
    servers : int
        Number of servers N (>= 1).
    load : float or None
        Offered load per unit of capacity (> 0): the arrival rate is
        ``load * sum(speeds) / E[service]`` (``load * N`` by default).  Loads >= 1 have no
        steady state: a warning is issued, the run has a fixed length (``tasks``, by default
        ``max(10**6, 100 * N)``) and no interval.  With a trace, None replays its own times,
        and a number rescales its inter-arrival times by one common factor.
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
        Fix the run length in arrivals (with a trace: the first ``tasks`` of it).
    horizon : float, optional
        Fix the run length in time (mean service times; trace replays start at time 0).
    warmup : "auto" or float
        ``auto``: cut the warm-up where MSER finds it; a fraction in [0, 0.9] of the run
        instead.
    replications : int
        Independent replications, streams ``SeedSequence(seed).spawn(replications)``; the
        interval then comes from their means.
    batches : int
        Batches of the batch-means interval (>= 2).
    precision : float
        Open-ended runs stop when the 95% half-width is at most this fraction of the mean,
        in (0, 1).
    max_tasks : int
        Open-ended runs stop at this many arrivals per replication even if the precision
        is not reached (the result says so).
    initial : str
        ``auto`` (``meanfield`` where the policy has a mean-field model and the fast path
        runs, else ``empty``), ``meanfield`` or ``empty``.
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
        Keep every response time measured after the warm-up (``response_times``).
    progress : callable, optional
        Called as ``progress(fraction, status)`` while the run goes: ``fraction`` in [0, 1]
        is the share done (an estimate for open-ended runs; negative: no new estimate) and
        ``status`` a short text (the precision reached so far).

    Returns
    -------
    SimulationResult
        The summary record.
    """
    plan = plan_simulation(
        policy, servers=servers, load=load, dispatchers=dispatchers, r=r, d=d,
        threshold=threshold, with_replacement=with_replacement, tasks=tasks,
        horizon=horizon, warmup=warmup, replications=replications, batches=batches,
        precision=precision, max_tasks=max_tasks, initial=initial, service=service,
        arrivals=arrivals, speeds=speeds, trace=trace, service_scale=service_scale,
        engine=engine, keep_response_times=keep_response_times,
    )  # fmt: skip
    rng = check_seed("seed", rng)
    if plan.work.load >= 1.0:
        warnings.warn(overload_note(plan.work.load, plan.tasks, plan.horizon), RuntimeWarning,
                      stacklevel=2)  # fmt: skip
    return _run(plan, rng, progress)


def _run(
    p: SimulationPlan,
    rng: int | np.random.Generator | None,
    progress: Callable[[float, str], None] | None,
) -> SimulationResult:
    """Run the checked plan ``p``: the replications, then the summary record."""
    work, n = p.work, p.servers
    variability, unit = work.variability()
    pol = get_policy(p.policy)
    relax = relaxation_time(pol.relaxation, work.load, servers=n, r=n / p.m, d=p.d,
                            variability=variability, time_unit=unit)  # fmt: skip
    seed, gens = _generators(rng, p.replications)
    open_end = p.tasks is None and p.horizon is None
    spec = RunSpec(
        p.policy, n, p.m, work.rate_per_server, p.d, p.threshold,
        p.with_replacement, record=p.keep_response_times, open_end=open_end,
    )  # fmt: skip
    if p.tasks is not None:
        spec = replace(spec, warm_tasks=0, end_tasks=p.tasks)
    elif p.horizon is not None:
        spec = replace(spec, t_warm=0.0, t_end=p.horizon)
    else:  # micro-batches start at about 1/16 of a relaxation time
        per_time = work.rate_per_server * n
        spec = replace(spec, width=max(1, int(min(per_time * relax / 16, p.max_tasks / 1024))))
    starts = [_initial(p.start, pol.meanfield, n, p.m, work, p.d, g) for g in gens]
    if open_end:
        engines = [
            Engine(spec, g, work.source(g, n), work.speeds, init)
            for g, init in zip(gens, starts, strict=True)
        ]
        runs, reason = run_until_precise(
            engines, batches=p.batches, relaxation=relax, precision=p.precision,
            max_tasks=p.max_tasks, progress=progress,
        )  # fmt: skip
    else:
        runs = []
        for k, (g, init) in enumerate(zip(gens, starts, strict=True)):
            sub = None
            if progress is not None:
                sub = lambda f, k=k: progress((k + f) / len(gens), "")  # noqa: E731
            runs.append(run_once(spec, g, sub, work.source(g, n), work.speeds, init))
        reason = "horizon" if p.horizon is not None else "tasks"
        if work.trace is not None and p.tasks == work.trace.arrivals.size - 1:
            reason = "trace"  # the whole log was replayed
    return _summarise(
        runs, p.policy, spec, work, p.tasks, p.horizon, p.warmup, p.fixed_warmup, seed,
        p.batches, relax, p.precision if open_end else None, reason, p.start,
        p.keep_response_times,
    )  # fmt: skip

def _initial(
    start: str, policy: str | None, n: int, m: int, work: Workload, d: int, rng: np.random.Generator
) -> InitialState | None:
    if start != "meanfield" or policy is None:
        return None
    return meanfield_state(
        policy, n, m, work.load, r=n / m, d=d, rng=rng,
        service=work.service if work.general else None,
    )  # fmt: skip


def _summarise(
    runs: list[RawRun],
    policy: str,
    spec: RunSpec,
    work: Workload,
    tasks: int | None,
    horizon: float | None,
    warmup: float | str,
    fixed_warmup: float | None,
    seed: int | None,
    batches: int,
    relax: float,
    precision: float | None,
    reason: str,
    start: str,
    keep: bool,
) -> SimulationResult:
    n, m = spec.n, spec.m
    ests = [estimate(raw, batches=batches, relaxation=relax, warmup=fixed_warmup) for raw in runs]
    wins = [window(raw, est.truncation) for raw, est in zip(runs, ests, strict=True)]
    if any(raw.batches_used == 0 or est.batches == 0 for raw, est in zip(runs, ests, strict=True)):
        raise ParameterError(
            "horizon" if horizon is not None else "tasks", horizon or tasks,
            "long enough for tasks to arrive and be measured after the warm-up",
        )  # fmt: skip
    steady = work.load < 1.0 and all(e.warmup_found and not e.drifts(len(ests)) for e in ests)
    notes: list[str] = []
    if work.load >= 1.0:
        notes.append(overload_note(work.load, tasks, horizon))
    elif not all(e.warmup_found for e in ests):
        notes.append("no warm-up truncation point found (the response times still trend): "
                     "no steady state reached; run longer")  # fmt: skip
    elif any(e.drifts(len(ests)) for e in ests):
        z = max(abs(e.drift_z) for e in ests)
        notes.append(f"the two halves of the run differ by {z:.1f} standard errors: "
                     "not steady; run longer")  # fmt: skip
    log_span = None
    if work.trace is not None:
        _, unit = work.variability()
        log_span = work.trace.span / unit
        window_span = min(w.duration for w in wins) / unit
        if steady and window_span < TRACE_RELAXATIONS * relax / unit:
            steady = False
            notes.append(
                f"the log spans {log_span:.3g} mean service times ({window_span:.3g} after the "
                f"warm-up): too short for a steady state, which needs "
                f"{TRACE_RELAXATIONS * relax / unit:.3g} here ({TRACE_RELAXATIONS:g} relaxation "
                "times); the numbers describe this replay only"
            )
    if len(runs) > 1:
        means = np.array([e.mean for e in ests])
        centre, half = float(means.mean()), replication_interval(means)
        method = f"replications ({len(runs)}), each cut at its {_warmup_name(fixed_warmup)}"
        certified = steady
    else:
        est = ests[0]
        centre, half = est.mean, est.half_width
        method = _batch_method(est, fixed_warmup)
        certified = steady and est.certified
        if steady and not est.certified:
            notes.append(_why_not_certified(est, work.trace is not None))
    ci = None
    if certified and math.isfinite(half):
        ci = (max(centre - half, 0.0), centre + half)
    reached = half / abs(centre) if ci is not None and centre != 0 else None
    if reason == "max_tasks" and precision is not None:
        shown = "none" if reached is None else f"{reached:.2%}"
        notes.append(f"stopped at max_tasks = {_max_measured(runs)} arrivals before the stopping "
                     f"rule held: precision reached {shown} (target {precision:.2%})")  # fmt: skip
    duration = sum(w.duration for w in wins)
    levels = max(w.tail_area.size for w in wins)
    area = np.zeros(levels)
    for w in wins:
        area[: w.tail_area.size] += w.tail_area
    s = area / (n * duration)
    s[0] = 1.0
    nz = np.flatnonzero(s > 0)
    s = s[: nz[-1] + 1]
    occupancy = s - np.append(s[1:], 0.0)
    msgs = np.sum([w.messages for w in wins], axis=0) / (n * duration)
    is_iq = get_policy(policy).iqueues
    p0 = sum(w.p0_area for w in wins) / (m * duration) if is_iq else 1.0
    hist = np.sum([w.hist for w in wins], axis=0)
    events = sum(run.events for run in runs)
    wall = sum(run.wall_seconds for run in runs)
    low, high = min(run.rt_min for run in runs), max(run.rt_max for run in runs)
    pct = histogram_percentiles(hist, list(PERCENTILES.values()), low, high)
    kept = [
        run.response_times[
            (run.orders >= est.truncation * run.width)
            & (run.orders < run.batches_estimated * run.width)
        ]
        for run, est in zip(runs, ests, strict=True)
    ]
    measured = sum(
        int(run.batch_count[est.truncation : run.batches_estimated].sum())
        for run, est in zip(runs, ests, strict=True)
    )
    return SimulationResult(
        policy=get_policy(policy).name, plugin=get_policy(policy).source, servers=n,
        dispatchers=m, load=work.load, d=spec.d, threshold=spec.z,
        with_replacement=spec.replace, tasks=tasks, horizon=horizon, warmup=str(warmup),
        replications=len(runs), seed=seed, mean_response_time=centre, ci95=ci,
        ci_method=method, steady_state=steady, initial=start,
        warmup_detected=all(e.warmup_found for e in ests) and fixed_warmup is None,
        warmup_time=float(np.mean([w.start for w in wins])), measured_time=float(duration),
        relaxation_estimate=max(e.relaxation for e in ests), precision_target=precision,
        precision_reached=reached, stop_reason=reason, warnings=tuple(notes),
        percentiles={k: float(v) for k, v in zip(PERCENTILES, pct, strict=True)},
        tail=[float(x) for x in s[1:]], occupancy=[float(x) for x in occupancy],
        p0=float(p0),
        messages={
            "join": float(msgs[K.M_JOIN]),
            "delete": float(msgs[K.M_DELETE]),
            "probe": float(msgs[K.M_PROBE]),
            "stale": float(msgs[K.M_STALE]),
        },
        measured_tasks=measured, events=events, wall_seconds=wall,
        events_per_second=events / wall if wall > 0 else math.inf,
        engine="general" if work.general else "exponential", log_span=log_span,
        response_times=np.concatenate(kept) if keep else None,
    )  # fmt: skip


def _max_measured(runs: list[RawRun]) -> int:
    """Largest number of measured arrivals among ``runs``."""
    return max(run.measured for run in runs)


def _warmup_name(fixed: float | None) -> str:
    return "MSER warm-up" if fixed is None else f"fixed warm-up ({fixed:g} of the run)"


def _batch_method(est: SeriesEstimate, fixed: float | None) -> str:
    relax = est.batch_span / est.relaxation if est.relaxation > 0 else math.inf
    return (
        f"batch means ({est.batches} batches of {est.batch_span:.4g} time units = "
        f"{relax:.3g} relaxation times), {_warmup_name(fixed)}, widened x{est.correction:.3f} "
        "for batch length"
    )


def _why_not_certified(est: SeriesEstimate, trace: bool) -> str:
    remedy = "the log is too short" if trace else "run longer or use replications"
    if not math.isfinite(est.half_width):
        return f"interval withheld: too few measured batches; {remedy}"
    if not est.long_enough:
        return (
            f"interval withheld: batches span {est.batch_span / est.relaxation:.3g} relaxation "
            f"times (an honest interval needs {MIN_BATCH_RELAXATIONS:g}); {remedy}"
        )
    return (
        f"interval withheld: the batch means are correlated (von Neumann z = "
        f"{est.independence_z:.2f}); {remedy}"
    )
