"""Simulate task dispatch: the public API (:func:`simulate`) and its result record.

Each policy's bookkeeping (and the rules we chose where the paper is silent) is described
with its code, in :mod:`cloudsched.dispatch.builtin_policies`.

Measurement (how it is done and why: ``docs/explanation/trust.md``):

* Start: by default from a state drawn from the mean field where the policy has a model
  and the run is on the Markov-chain fast path (:mod:`cloudsched.dispatch.initial`), else
  empty; ``initial`` chooses.
* Warm-up: detected by MSER on the micro-batch means of the response times
  (:mod:`cloudsched.steadystate`), or a fixed fraction ``warmup`` of the run.
* Length: without ``tasks`` or ``horizon`` the run is a pilot and then a fresh stretch of
  planned length, checked until its certified 95% half-width is at most ``precision``
  times the mean, or ``max_tasks`` arrivals (:mod:`cloudsched.dispatch.stopping`); the
  estimate is the stretch's.  ``tasks`` / ``horizon`` fix the length.
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

import dataclasses
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.dispatch.delays import Delays
from cloudsched.dispatch.engines.registry import ENGINES
from cloudsched.dispatch.engines.replication import RawRun, Replication, RunSpec
from cloudsched.dispatch.plugin import Policy
from cloudsched.dispatch.result import SimulationResult, summarise
from cloudsched.dispatch.short_run import ShortRun, check_run_length, short_run
from cloudsched.dispatch.spec import (
    DEFAULT_BATCHES,
    DEFAULT_MAX_TASKS,
    DEFAULT_PRECISION,
    SimulationSpec,
    overload_note,
)
from cloudsched.dispatch.stopping import run_until_precise
from cloudsched.dispatch.theory.relaxation import relaxation_time
from cloudsched.dispatch.workload.distributions import Distribution
from cloudsched.dispatch.workload.resolved import Trace
from cloudsched.dispatch.workload.slowdown import Slowdown
from cloudsched.progress import Progress
from cloudsched.randomness import Seed, streams

__all__ = ["run_simulation", "simulate"]

_CHUNK_EVENTS = 1 << 22


def simulate(
    policy: str | Policy,
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
    rng: Seed = None,
    service: Distribution | str | None = None,
    arrivals: Distribution | str | None = None,
    speeds: ArrayLike | None = None,
    trace: Trace | None = None,
    service_scale: float = 1.0,
    engine: str = "auto",
    keep_response_times: bool = False,
    time_limit: float | None = None,
    unchecked: bool = False,
    delay: Delays | str | list[str] | None = None,
    view: str = "shared",
    options: Mapping[str, object] | Sequence[str] | None = None,
    slowdown: Slowdown | str | None = None,
    refresh: float = 0.0,
    progress: Progress | None = None,
) -> SimulationResult:
    """Simulate a dispatch policy until its steady-state mean is known to ``precision``.

    By default arrivals are Poisson and service times exponential with mean 1, simulated
    by the compiled per-server engine on the Markov clock (the fast path).  Other service
    or inter-arrival laws, per-server speeds or a trace switch it to the event list, with
    the same policies, measurements and result record; very large farms run on occupancy
    counts, late messages on the delay engine (``engine``).  How runs start, how long they
    last, and how the warm-up and the interval are found: see the module notes.

    Parameters
    ----------
    policy : str or Policy
        One of :data:`cloudsched.dispatch.POLICIES`, a registered plug-in, or
        ``path/to/policy.py[:NAME]``.
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
        Neither given: r = min(10, N) for ``round-robin`` and the JIQ family (as
        ``predict``, and as on the command line), M = 1 for the others.
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
        Root seed (:func:`cloudsched.randomness.streams`).  An int (or None: fresh entropy,
        recorded in the result as ``seed``) seeds a :class:`numpy.random.SeedSequence`; a
        Generator is used directly (``seed`` is None).
    service, arrivals : Distribution or str, optional
        Service-time law and inter-arrival shape (see :func:`parse_spec`); default ``exp``.
    speeds : array_like, optional
        Speed of each server (a task of size x takes x / speed).
    trace : Trace, optional
        Replay these tasks instead of drawing them.
    service_scale : float
        Multiplies trace service times (unit conversion).
    engine : str
        ``auto`` (chosen by :func:`~cloudsched.dispatch.engines.choice.choose`: the delay
        engine for delays or ``view="own"``; from 100,000 servers the count engines where
        they apply; else the per-server engine), or one engine by name: ``servers`` (every
        server apart; its clock is the Markov chain where arrivals are Poisson and service
        exp(1) at equal speeds, else the event list; ``exponential`` insists on the Markov
        clock, ``general`` on the event list), ``counts`` (occupancy counts: the policies
        whose table row lists it, no ``keep_response_times``; its cost does not grow with
        N), ``classes`` (occupancy counts per speed class: random, pod, jsq with at most 16
        distinct speeds; ``counts`` with speeds runs it too) or ``delay``.  The result says
        which ran (``engine``), with which clock (``clock``) and why (``engine_reason``).
    keep_response_times : bool
        Keep every response time measured after the warm-up (``response_times``, float32, in
        arrival order).
    time_limit : float, optional
        Stop the run after this many seconds of wall time with
        :class:`~cloudsched.dispatch.engines.guard.TimeLimitExceeded` (also a plug-in hook that
        never returns; Ctrl-C stops any run at once).
    unchecked : bool
        Compile a plug-in's kernel without bounds checking (its speed is then the
        built-ins'; an index outside an array is no longer caught).  Built-ins are never
        checked.
    delay : Delays or str, optional
        Message delays, e.g. ``"info=0.5"`` or ``"join=exp:1,delete=0.2"`` (kinds ``info``,
        ``join``, ``delete``; ``X`` fixed or ``exp:X`` exponential, in mean service times;
        :mod:`cloudsched.dispatch.delays`).  Runs with delays go to the delay engine
        (``random``, ``pod``, ``jsq``, ``jiq``, ``jiq-pod``; Poisson arrivals, exp(1)
        service, equal speeds); without, nothing changes.
    view : str
        ``shared`` (dispatchers read the published queue lengths) or ``own`` (``pod`` and
        ``jsq`` with M >= 2 dispatchers: each reads only its own active requests).
    options : mapping or list of str, optional
        The options of a production balancer (``ewma``, ``least-time``, ``wlr``, ...), as
        ``{"decay": "10s"}`` or ``["decay=10s"]``, named and defaulted as that balancer
        ships them (:mod:`cloudsched.dispatch.options`; ``cloudsched policies`` lists them).
        Each dispatcher of these policies is a client with its own state (its requests in
        flight, its latency estimates), as each proxy of a fleet is.
    slowdown : Slowdown or str, optional
        ``"F:X@T0-T1"``: a fraction F of the servers (spread evenly) runs at X times its
        speed from time T0 to T1, then recovers; a service keeps the speed it started at
        (:mod:`cloudsched.dispatch.workload.slowdown`).  The per-server event list runs it.
    refresh : float
        Polled information (a bulletin board): the queue lengths ``jsq``, ``pod`` and
        ``jiq-pod`` read are those published at the last multiple of ``refresh`` (mean
        service times; 0: read live).  JSQ then sends to a uniform server among the
        shortest on the board.  The per-server engine runs it.
    progress : callable, optional
        Called as ``progress(fraction, status)`` while the run goes: ``fraction`` in [0, 1]
        is the share done (an estimate for open-ended runs; negative: no new estimate) and
        ``status`` a short text (the precision reached so far).

    Returns
    -------
    SimulationResult
        The summary record.
    """
    given = locals()  # every argument but rng and progress is a field of the spec
    spec = SimulationSpec(
        **{f.name: given[f.name] for f in dataclasses.fields(SimulationSpec) if f.init}
    )
    return run_simulation(spec, rng=rng, progress=progress)


def run_simulation(
    spec: SimulationSpec, *, rng: Seed = None, progress: Progress | None = None
) -> SimulationResult:
    """Run a checked :class:`~cloudsched.dispatch.spec.SimulationSpec` (see :func:`simulate`).

    Returns
    -------
    SimulationResult
        The summary record.
    """
    if spec.work.load >= 1.0:
        warnings.warn(
            overload_note(spec.work.load, spec.tasks, spec.horizon), RuntimeWarning, stacklevel=2
        )
    work, n = spec.work, spec.servers
    variability, unit = work.variability()
    relax = relaxation_time(
        spec.model.relaxation,
        work.load,
        servers=n,
        r=n / spec.m,
        d=spec.d,
        variability=variability,
        time_unit=unit,
    )
    # CHOICE: late information makes the farm remember for longer (a herd builds and drains
    # over a few delays); five times the longest mean delay is added to the relaxation time
    relax += 5.0 * max(spec.delays.info.mean, spec.delays.join.mean, spec.delays.delete.mean)
    short = short_run(spec, relax)  # None unless short replications apply and cost less
    seed, gens = streams(rng, short.replications if short is not None else spec.replications)
    if spec.open_ended and short is None:
        check_run_length(spec, relax)
    run = _run_spec(spec, relax, short)
    if spec.time_limit is not None:
        run = replace(run, deadline=time.perf_counter() + spec.time_limit)
    chosen = ENGINES[spec.choice.engine]
    if not chosen.records:
        run = replace(run, record=False)

    def engine(g: np.random.Generator) -> Replication:
        return chosen.replication(spec, run, g, spec.choice.clock)

    if short is not None and spec.choice.engine == "servers":
        # the per-server engine measures a task when it leaves, after the span at this N:
        # each replication measures the arrivals of its span and follows them out
        run = replace(run, open_end=False, t_warm=0.0, t_end=short.span)
        runs = _fixed_runs([partial(engine, g) for g in gens], progress)
        return summarise(runs, spec, seed, relax, "span", short)
    if spec.open_ended:
        engines = [engine(g) for g in gens]
        runs, reason = run_until_precise(
            engines,
            batches=spec.batches,
            relaxation=relax,
            precision=spec.precision,
            max_tasks=spec.max_tasks,
            progress=progress,
            short=short,
        )
    else:
        runs = _fixed_runs([partial(engine, g) for g in gens], progress)
        reason = "horizon" if spec.horizon is not None else "tasks"
        if work.trace is not None and spec.tasks == work.trace.arrivals.size - 1:
            reason = "trace"  # the whole log was replayed
    return summarise(runs, spec, seed, relax, reason, short)


def _run_spec(spec: SimulationSpec, relax: float, short: ShortRun | None = None) -> RunSpec:
    """Say what the kernel needs to know about each replication of ``spec``."""
    work, n = spec.work, spec.servers
    run = RunSpec(
        spec.model,
        n,
        spec.m,
        work.rate_per_server,
        spec.d,
        spec.threshold,
        spec.with_replacement,
        record=spec.keep_response_times,
        open_end=spec.open_ended,
        unchecked=bool(spec.unchecked),
        opt=spec.opt,
        slots=spec.slots,
        refresh=spec.refresh,
    )
    if spec.tasks is not None:
        return replace(run, warm_tasks=0, end_tasks=spec.tasks)
    if spec.horizon is not None:
        return replace(run, t_warm=0.0, t_end=spec.horizon)
    # micro-batches start at about 1/16 of a relaxation time (short replications: the first
    # check, after 64 of them, comes past the arrivals their precision needs, so that it is
    # usually the only look and does not pick a lucky low estimate of the spread)
    per_time = work.rate_per_server * n
    if short is not None:
        return replace(run, width=max(1, short.tasks // 48))
    return replace(run, width=max(1, int(min(per_time * relax / 16, spec.max_tasks / 1024))))


def _fixed_runs(
    engines: list[Callable[[], Replication]], progress: Progress | None
) -> list[RawRun]:
    """Replications of fixed length, one after the other (each engine built when it runs)."""
    out = []
    for k, make in enumerate(engines):
        eng = make()
        while not eng.advance(_CHUNK_EVENTS):
            if progress is not None:
                progress((k + min(1.0, eng.events / eng.expected_events)) / len(engines), "")
        out.append(eng.result())
    if progress is not None:
        progress(1.0, "")
    return out
