"""Steady state at very large N from short replications: a cost that does not grow with N.

The stopping rule of :mod:`cloudsched.dispatch.stopping` asks for batches of several
relaxation times.  A relaxation time is a fixed span of simulated time whatever N, so at N
servers it holds about ``N`` times as many events: at N = 10^9 an interval would need some
10^12 of them.  Yet at large N the farm's occupancy barely moves: the fractions of servers
per queue length stay within O(1/sqrt(N)) of the mean-field point, and the steady-state mean
response time differs from the mean-field value by O(1/N) (Gast and Van Houdt's refined mean
field).  A run need not wait for the farm to forget its start when its start is already a
draw from around that point.  Hence this route, taken when it applies (:func:`short_run`):

* :data:`SHORT_REPLICATIONS` independent replications, each from its own mean-field start
  (every server's queue, and every I-queue's size, drawn from the mean-field law: the start
  every default run already uses), each run for at most :data:`SHORT_SPAN` mean service
  times, with no warm-up cut;
* a Student-t interval over the replication means: the tasks' own variability and the
  start's O(1/sqrt(N)) randomness are both independent across replications, so both are in
  it;
* plus an allowance for the O(1/N) gap between the response time near the mean-field point
  and the steady-state mean: three times the refined mean field's 1/N correction, added to
  the half-width.

It applies to the policies with a 1/N model (random, pod, jiq, jiq-pod), on the
occupancy-count engine (Poisson arrivals, exponential service, equal speeds), one
replication asked, an open-ended run, from N = :data:`SHORT_MIN_SERVERS` on; and only when a
span holds enough tasks to reach the precision (the mean-field response-time variance over
the tasks of one span at most a quarter of the budget, the allowance at most a quarter of
the target half-width).  Otherwise the usual rule runs.  The cost is then set by the
precision, not by N: about the same number of events at 10^7 servers as at 10^9.

Not jsq: its gap to the mean field (response time 1) is its mean wait at N, and no bound
here holds it.  The M/M/N queue's Erlang-C wait is below it (JSQ never moves a waiting
task: at N = 1000, load 0.99, simulated 1.152 [1.146, 1.158] against M/M/N's 1.066), so
it cannot serve as the allowance.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from cloudsched._quantiles import t_quantile
from cloudsched.dispatch.spec import DEFAULT_MAX_TASKS, SimulationSpec
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS

__all__ = [
    "SHORT_MIN_SERVERS",
    "SHORT_REPLICATIONS",
    "SHORT_SPAN",
    "ShortRun",
    "check_run_length",
    "join_tail",
    "response_moments",
    "short_events",
    "short_run",
    "usual_events",
]

#: Longest span of a short replication, in mean service times.
SHORT_SPAN = 0.05
#: Replications of the short route.
SHORT_REPLICATIONS = 20
#: Smallest farm for the short route (its coverage is measured from here up; below it the
#: usual rule takes seconds).
SHORT_MIN_SERVERS = 100_000
#: Most events a default open-ended run spends on the certified interval's floor beyond
#: four times what its precision needs (about 10 s): more is refused up front, with why.
DEFAULT_EVENT_CAP = 2.5e8
#: A replication's span holds this many times the arrivals its precision needs (the
#: replications at moderate N run to their span: their tasks outlast it)
SPAN_TASKS = 2
#: Events the usual rule spends per arrival of the floor it must span: its pilot and fresh
#: stretch take about 2.25 times the floor, at two events per task.
USUAL_EVENTS_PER_ARRIVAL = 2.25 * 2
#: The allowance is this many times the 1/N correction.
BIAS_FACTOR = 3.0
#: Largest I-queue population model solved for the allowance, so that it costs seconds at
#: most (318 equations, jiq at load 0.99 and r = 10: 4 s; 581, jiq-pod at 0.5 and r = 100:
#: 1.6 s; the cost grows as the cube): beyond it the route does not apply.
MAX_REFINED = 600


@dataclass(frozen=True)
class ShortRun:
    """How the short route runs.

    ``replications`` of at most ``span`` time units each; ``bias``, the allowance added to
    the half-width (in time units); ``tasks``, the arrivals per replication the precision
    needs if the start adds no variance.
    """

    span: float
    bias: float
    tasks: int
    replications: int = SHORT_REPLICATIONS


def join_tail(policy: str, load: float, *, r: float, d: int) -> tuple[np.ndarray, float]:
    """Return the mean field's ``P(K >= j)``, j = 1, 2, ..., and its mean response time.

    K is the queue a task joins and ``T = 1 + sum_j P(K >= j)``; ``P(K >= j) = p0 s_j^d``
    (``p0 = 1`` without I-queues, ``d = 1`` for random and JIQ, none for jsq); ``r``
    matters to I-queues only.
    """
    model = TABLE[policy]
    pred = predict(policy, [load], r=r if model.iqueues else 1.0, d=d)
    tail = np.asarray(pred.tails[0], dtype=np.float64)
    power = 0 if model.probes == "all" else (pred.d or 1)
    g = pred.p0[0] * tail**power if power else np.zeros(tail.size)
    return g, float(pred.mean_response_time[0])


def response_moments(policy: str, load: float, *, r: float, d: int) -> tuple[float, float]:
    """Mean and variance of the mean-field response time (exp(1) service, FCFS).

    A task joins behind K tasks (:func:`join_tail`), and its response time is Erlang(K + 1):
    ``E R = 1 + E K`` and ``E R^2 = E K^2 + 3 E K + 2``.
    """
    g, _ = join_tail(policy, load, r=r, d=d)  # G_1, G_2, ...
    j = np.arange(1, g.size + 1)
    ek, ek2 = float(g.sum()), float(np.sum((2 * j - 1) * g))
    mean = 1.0 + ek
    return mean, ek2 + 3 * ek + 2 - mean * mean


def _gap(spec: SimulationSpec, mf_mean: float) -> float | None:
    """Return |steady-state mean at N - mean-field mean| to first order (service times).

    None where the refined model is too large to solve in a few seconds.
    """
    from cloudsched.dispatch.theory.finite import refined_mean
    from cloudsched.dispatch.theory.finite_models import population_size

    n, load = spec.servers, spec.work.load
    if TABLE[spec.model.name].independent:  # random: M/M/1 queues, the mean field is exact
        return 0.0
    r = n / spec.m if spec.model.iqueues else 1.0
    if spec.model.iqueues and population_size(spec.model.name, load, r, spec.d) > MAX_REFINED:
        return None
    refined = refined_mean(spec.model.name, n, load, r, spec.d, replace=spec.with_replacement)
    return abs(refined - mf_mean)


def short_run(spec: SimulationSpec, relax: float | None = None) -> ShortRun | None:
    """Return the short route for ``spec``, or None where it does not apply (module notes).

    ``relax``: the run's relaxation time; given, the route is taken only where it costs
    fewer events than the usual rule (:func:`usual_events`).
    """
    model, work, n = spec.model, spec.work, spec.servers
    markov = spec.choice.engine == "counts" or (
        spec.choice.engine == "servers" and spec.choice.clock == "markov"
    )
    if not (
        spec.open_ended
        and spec.replications == 1
        and markov
        and spec.start == "meanfield"
        and n >= SHORT_MIN_SERVERS
        and model.source is None
        and model.meanfield is not None
        and 0.0 < work.load < 1.0
    ):
        return None
    if not TABLE[model.name].refined:  # jsq among them: no bound on its gap (notes)
        return None
    unit = work.variability()[1]
    mean, var = response_moments(
        model.name, work.load, r=n / spec.m if model.iqueues else 1.0, d=spec.d
    )
    gap = _gap(spec, mean)
    if gap is None:
        return None
    bias = BIAS_FACTOR * gap
    target = spec.precision * mean
    t = float(t_quantile(0.975, SHORT_REPLICATIONS - 1))
    per_replication = SHORT_REPLICATIONS * (target / t) ** 2  # variance budget of one mean
    if bias > target / 4:
        return None
    need = math.ceil(var / per_replication)
    # a span that holds SPAN_TASKS times the arrivals the precision needs (at least
    # SHORT_SPAN): the replications stop when precise, long before its end
    per_time = work.rate_per_server * n
    span = max(SHORT_SPAN, SPAN_TASKS * need / per_time)
    route = ShortRun(span=span * unit, bias=bias * unit, tasks=need)
    if relax is not None and short_events(spec, route) >= usual_events(spec, relax, need):
        return None
    return route


def short_events(spec: SimulationSpec, route: ShortRun) -> float:
    """Return the events the short route is expected to take.

    Each replication's start, and the arrivals its span holds (two events each).
    """
    start = spec.servers if spec.choice.engine == "servers" else 0  # every server drawn
    per_time = spec.work.rate_per_server * spec.servers
    return route.replications * (start + 2 * min(route.span * per_time, 4 / 3 * route.tasks))


def usual_events(spec: SimulationSpec, relax: float, need: int) -> float:
    """Return the events the usual rule (:mod:`cloudsched.dispatch.stopping`) is expected to take.

    Its pilot and fresh stretch each span the certified interval's floor (``batches``
    batches of five relaxation times) or the arrivals the precision needs, whichever is
    more: about 2.25 times that, at two events per task.
    """
    per_time = spec.work.rate_per_server * spec.servers
    floor = per_time * spec.batches * MIN_BATCH_RELAXATIONS * relax
    return USUAL_EVENTS_PER_ARRIVAL * max(floor, SHORT_REPLICATIONS * need)


def check_run_length(spec: SimulationSpec, relax: float) -> None:
    """Refuse or warn when an open-ended run cannot certify, or only at a needless cost.

    A certified interval needs ``batches`` batches of at least five relaxation times: at
    least that span of arrivals, whatever the engine (at N = 10^8 that is ~10^11).  With
    the default ``max_tasks`` the run is refused before it starts when that floor is more
    than ``max_tasks`` (it would spend its whole budget and still print no interval), and
    when the floor costs more than :data:`DEFAULT_EVENT_CAP` events and four times what the
    precision needs (jsq at N = 10^6: the floor is 4 x 10^8 events, the precision ten
    thousand times fewer): no such default run spends minutes on a length its precision
    does not need.  A ``max_tasks`` the caller chose is a budget they accept, so the run
    goes ahead with a warning.
    """
    per_time = spec.work.rate_per_server * spec.servers
    need = per_time * spec.batches * MIN_BATCH_RELAXATIONS * relax
    default = spec.max_tasks == DEFAULT_MAX_TASKS
    events = USUAL_EVENTS_PER_ARRIVAL * need  # the pilot and the fresh stretch
    precise = _precision_events(spec)
    short = (
        " (short replications, whose cost does not grow with N, need random, pod, or "
        "jiq or jiq-pod with r small enough for their 1/N model (up to about 100), "
        "Poisson arrivals and exponential service, one replication and a mean-field start)"
        if spec.servers >= SHORT_MIN_SERVERS
        else ""
    )
    if default and math.isfinite(need) and events > max(DEFAULT_EVENT_CAP, 4 * precise):
        raise ParameterError(
            "tasks",
            None,
            "given (or horizon, for a run of a chosen length, or max_tasks, to accept the "
            f"cost): a certified interval needs about {events:.2g} events here ({spec.batches} "
            f"batches of {MIN_BATCH_RELAXATIONS:g} relaxation times of {relax:.3g}), "
            f"{events / max(precise, 1.0):.2g} times what {100 * spec.precision:g}% precision "
            f"needs, beyond a default run's {DEFAULT_EVENT_CAP:.2g}{short}",
        )
    if not (math.isfinite(need) and need > spec.max_tasks):
        return
    why = (
        f"a certified interval needs about {need:.2g} arrivals here ({spec.batches} batches "
        f"of {MIN_BATCH_RELAXATIONS:g} relaxation times), more than max_tasks = "
        f"{spec.max_tasks:.2g}{short}"
    )
    if default:
        raise ParameterError(
            "tasks",
            None,
            f"given (or horizon, for a run of a chosen length, or a larger max_tasks): {why}",
        )
    warnings.warn(
        f"{why}: give tasks or horizon for a run of a chosen length", RuntimeWarning, stacklevel=4
    )


def _precision_events(spec: SimulationSpec) -> float:
    """Return the events the asked precision needs of independent tasks.

    From the mean field's response-time moments; inf where there is no mean field to say
    (no cap then).
    """
    model, work = spec.model, spec.work
    if model.source is not None or model.name not in TABLE:  # a plug-in: no moments here
        return math.inf
    if model.meanfield is None or not 0.0 < work.load < 1.0 or work.trace is not None:
        return math.inf
    try:
        mean, var = response_moments(
            model.name, work.load, r=spec.servers / spec.m if model.iqueues else 1.0, d=spec.d
        )
    except (ParameterError, ValueError):
        return math.inf
    target = spec.precision * mean / 1.96
    return 2 * var / target**2
