"""The result record of a dispatch simulation, and how raw runs become one.

:func:`summarise` cuts each replication's warm-up, decides whether the numbers describe a
steady state, forms the interval (batch means of one run, or the means of several
replications) and the time averages, and says in words what it withheld and why.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RawRun
from cloudsched.dispatch.measure import (
    Window,
    estimate,
    histogram_percentiles,
    replication_interval,
    window,
)
from cloudsched.dispatch.options import describe_options
from cloudsched.dispatch.spec import DEFAULT_BATCHES, SimulationSpec, overload_note
from cloudsched.errors import ParameterError
from cloudsched.results import finite_or_none, interval, interval_columns
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS, SeriesEstimate

if TYPE_CHECKING:
    from cloudsched.dispatch.short_run import ShortRun

__all__ = ["PERCENTILES", "SimulationResult", "summarise"]

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
    ``max_tasks``, ``span`` (short replications, :mod:`~cloudsched.dispatch.short_run`),
    ``tasks``, ``horizon`` or ``trace``), ``ci_method``, ``engine`` (``servers``,
    ``counts``, ``classes`` or ``delay``), ``clock`` (``markov``: the next event drawn from
    the chain's rates; ``event-list``: the earliest of the given arrivals and the
    completions) and ``engine_reason``.  ``ci95`` is None
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
    clock: str = "markov"  # how the engine finds the next event: markov or event-list
    engine_reason: str = ""  # why that engine ran (engines.choice.choose)
    delay: str = "none"  # message delays (delay engine), as Delays prints them
    view: str = "shared"  # what dispatchers read: published lengths or their own requests
    options: str = ""  # a production balancer's options, resolved (dispatch.options)
    refresh: float = 0.0  # queue lengths read from a board published every refresh (0: live)
    slowdown: str = ""  # servers that slow down and recover (workload.slowdown)
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
        row.update(interval_columns(self.ci95))
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
        return cast(dict[str, Any], finite_or_none(out))


def summarise(
    runs: list[RawRun],
    spec: SimulationSpec,
    seed: int | None,
    relax: float,
    reason: str,
    short: ShortRun | None = None,
) -> SimulationResult:
    """Build the result record of the finished replications ``runs`` of ``spec``.

    ``seed`` is the root seed (None for a given generator), ``relax`` the model's
    relaxation time, ``reason`` why the run stopped and ``short`` the short route's
    replications (:mod:`cloudsched.dispatch.short_run`), if they ran.
    """
    fixed = 0.0 if short is not None else spec.fixed_warmup
    ests = [estimate(raw, batches=spec.batches, relaxation=relax, warmup=fixed) for raw in runs]
    wins = [window(raw, est.truncation) for raw, est in zip(runs, ests, strict=True)]
    if any(raw.batches_used == 0 or est.batches == 0 for raw, est in zip(runs, ests, strict=True)):
        raise ParameterError(
            "horizon" if spec.horizon is not None else "tasks",
            spec.horizon or spec.tasks,
            "long enough for tasks to arrive and be measured after the warm-up",
        )
    steady, notes = _verdict(spec, ests, wins, relax)
    fresh = all(raw.measure_from is not None for raw in runs)
    centre, ci, reached, method = _interval(spec, ests, steady, notes, short, fresh)
    if reason == "span" and short is not None and (reached is None or reached > spec.precision):
        notes.append(
            f"the {len(runs)} short replications reached their span of {short.span:g} time "
            f"units before the precision target: precision reached "
            f"{'none' if reached is None else f'{100 * reached:.3g}%'} (target "
            f"{100 * spec.precision:.3g}%)"
        )
    if reason == "max_tasks" and spec.open_ended:
        shown = "none" if reached is None else f"{100 * reached:.3g}%"
        notes.append(
            f"stopped at max_tasks = {max(r.measured for r in runs)} arrivals before "
            f"the stopping rule held: precision reached {shown} (target "
            f"{100 * spec.precision:.3g}%)"
        )
    averages = _averages(spec, wins)
    events, wall = sum(run.events for run in runs), sum(run.wall_seconds for run in runs)
    work, model = spec.work, spec.model
    return SimulationResult(
        policy=model.name,
        plugin=model.source,
        servers=spec.servers,
        dispatchers=spec.m,
        load=work.load,
        d=spec.d,
        threshold=spec.threshold,
        with_replacement=spec.with_replacement,
        tasks=spec.tasks,
        horizon=spec.horizon,
        warmup=str(spec.warmup),
        replications=len(runs),
        seed=seed,
        mean_response_time=centre,
        ci95=ci,
        ci_method=method,
        steady_state=steady,
        initial=spec.start,
        warmup_detected=all(e.warmup_found for e in ests) and fixed is None,
        warmup_time=float(np.mean([w.start for w in wins])),
        measured_time=float(sum(w.duration for w in wins)),
        relaxation_estimate=max(e.relaxation for e in ests),
        precision_target=spec.precision if spec.open_ended else None,
        precision_reached=reached,
        stop_reason=reason,
        warnings=tuple(notes),
        percentiles=_percentiles(runs, wins),
        **averages,
        measured_tasks=sum(
            int(run.batch_count[est.truncation : run.batches_estimated].sum())
            for run, est in zip(runs, ests, strict=True)
        ),
        events=events,
        wall_seconds=wall,
        events_per_second=events / wall if wall > 0 else math.inf,
        engine=spec.choice.engine,
        clock=spec.choice.clock,
        engine_reason=spec.choice.reason,
        delay=str(spec.delays),
        view=spec.view,
        options=describe_options(spec.model.name, np.asarray(spec.opt)) if spec.opt else "",
        refresh=float(spec.refresh),
        slowdown=str(work.slowdown or ""),
        log_span=work.trace.span / work.variability()[1] if work.trace is not None else None,
        response_times=_kept(runs, ests) if spec.keep_response_times else None,
    )


def _verdict(
    spec: SimulationSpec, ests: list[SeriesEstimate], wins: list[Window], relax: float
) -> tuple[bool, list[str]]:
    """Whether the runs describe a steady state, and the warnings that say why not."""
    work = spec.work
    steady = work.load < 1.0 and all(e.warmup_found and not e.drifts(len(ests)) for e in ests)
    notes: list[str] = []
    if work.load >= 1.0:
        notes.append(overload_note(work.load, spec.tasks, spec.horizon))
    elif not all(e.warmup_found for e in ests):
        notes.append(
            "no warm-up truncation point found (the response times still trend): "
            "no steady state reached; run longer"
        )
    elif any(e.drifts(len(ests)) for e in ests):
        z = max(abs(e.drift_z) for e in ests)
        notes.append(
            f"the two halves of the run differ by {z:.1f} standard errors: not steady; run longer"
        )
    if work.trace is not None and steady:
        unit = work.variability()[1]
        log_span = work.trace.span / unit
        window_span = min(w.duration for w in wins) / unit
        need = TRACE_RELAXATIONS * relax / unit
        if window_span < need:
            steady = False
            notes.append(
                f"the log spans {log_span:.3g} mean service times ({window_span:.3g} after the "
                f"warm-up): too short for a steady state, which needs {need:.3g} here "
                f"({TRACE_RELAXATIONS:g} relaxation times); the numbers describe this replay "
                "only"
            )
    return steady, notes


def _interval(
    spec: SimulationSpec,
    ests: list[SeriesEstimate],
    steady: bool,
    notes: list[str],
    short: ShortRun | None = None,
    fresh: bool = False,
) -> tuple[float, tuple[float, float] | None, float | None, str]:
    """Estimate, 95% interval (None unless certified), precision reached and method.

    ``fresh``: the estimate is a fresh stretch after a pilot (open-ended runs).
    """
    cut = _FRESH if fresh else _warmup_name(spec.fixed_warmup)
    if len(ests) > 1:
        means = np.array([e.mean for e in ests])
        centre, half = float(means.mean()), replication_interval(means)
        method = f"replications ({len(ests)}), each cut at its {cut}"
        if short is not None:
            half += short.bias
            method = (
                f"short replications ({len(ests)}), each from its own mean-field start for at "
                f"most {short.span:g} time units (at N = {spec.servers:,} the farm stays near "
                f"it), Student t over their means + {short.bias:.2g} for the O(1/N) gap to the "
                "steady state (3x the refined mean field's)"
            )
        certified = steady
    else:
        est = ests[0]
        centre, half = est.mean, est.half_width
        method = _batch_method(est, cut)
        certified = steady and est.certified
        if steady and not est.certified:
            notes.append(_why_not_certified(est, spec.work.trace is not None))
    ci = None
    if certified and math.isfinite(half):
        ci = interval(centre, half)
    reached = half / abs(centre) if ci is not None and centre != 0 else None
    return centre, ci, reached, method


def _averages(spec: SimulationSpec, wins: list[Window]) -> dict[str, Any]:
    """Time averages over the windows: tail, occupancy, p0 and message rates."""
    n, duration = spec.servers, sum(w.duration for w in wins)
    area = np.zeros(max(w.tail_area.size for w in wins))
    for w in wins:
        area[: w.tail_area.size] += w.tail_area
    s = area / (n * duration)
    s[0] = 1.0
    s = s[: np.flatnonzero(s > 0)[-1] + 1]
    occupancy = s - np.append(s[1:], 0.0)
    msgs = np.sum([w.messages for w in wins], axis=0) / (n * duration)
    p0 = sum(w.p0_area for w in wins) / (spec.m * duration) if spec.model.iqueues else 1.0
    names = {"join": K.M_JOIN, "delete": K.M_DELETE, "probe": K.M_PROBE, "stale": K.M_STALE}
    return {
        "tail": [float(x) for x in s[1:]],
        "occupancy": [float(x) for x in occupancy],
        "p0": float(p0),
        "messages": {k: float(msgs[i]) for k, i in names.items()},
    }


def _percentiles(runs: list[RawRun], wins: list[Window]) -> dict[str, float]:
    """Percentiles of the measured response times (from the windows' histograms)."""
    hist = np.sum([w.hist for w in wins], axis=0)
    low, high = min(run.rt_min for run in runs), max(run.rt_max for run in runs)
    pct = histogram_percentiles(hist, list(PERCENTILES.values()), low, high)
    return {k: float(v) for k, v in zip(PERCENTILES, pct, strict=True)}


def _kept(runs: list[RawRun], ests: list[SeriesEstimate]) -> np.ndarray:
    """Return the response times of the tasks behind the estimate (after each warm-up)."""
    kept = [
        run.response_times[est.truncation * run.width : run.batches_estimated * run.width]
        for run, est in zip(runs, ests, strict=True)
    ]
    return kept[0] if len(kept) == 1 else np.concatenate(kept)  # one run: a view, no copy


#: How an open-ended run's estimate is cut (:mod:`cloudsched.dispatch.stopping`).
_FRESH = "pilot (MSER warm-up), then a fresh stretch of planned length"


def _warmup_name(fixed: float | None) -> str:
    return "MSER warm-up" if fixed is None else f"fixed warm-up ({fixed:g} of the run)"


def _batch_method(est: SeriesEstimate, cut: str) -> str:
    relax = est.batch_span / est.relaxation if est.relaxation > 0 else math.inf
    return (
        f"batch means ({est.batches} batches of {est.batch_span:.4g} time units = "
        f"{relax:.3g} relaxation times), {cut}, widened x{est.correction:.3f} "
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
