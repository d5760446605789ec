"""Which choice_count? Power-of-d against the full scan, on the user's farm and traffic.

The question a platform engineer asks of a least-request / power-of-two balancer (Envoy's
``choice_count``, NGINX's ``random two``, HAProxy's ``random(d)``): how many endpoints
should each request sample, with or without replacement, and how close is that to
scanning them all?  :func:`advise` simulates pod(d) on ``servers`` endpoints for each ``d``
(1 is a uniform choice) and both ways of sampling, and the full scan (``d = servers``
without replacement examines every endpoint and joins a uniform one among the least
loaded: that is JSQ, run as ``jsq``, whose cost per event does not grow with N), each on its own
seeded stream, with the same workload (Poisson/exponential, laws, or laws resampled from
a log); and, where the workload is Poisson/exponential, puts the finite-N theory beside
it (:func:`cloudsched.dispatch.predict` at ``servers=N``: exact chain, refined or mean
field, as its model table allows).

The advice is the smallest ``d`` (without replacement when both qualify: it never probes
an endpoint twice) whose metric is within ``tolerance`` of the full scan's, judged on the
intervals: the upper end of the 95% interval of its mean (or its p99, by sectioning)
against the full scan's estimate times ``1 + tolerance``.  With a ``target``, the smallest
``d`` whose interval's upper end meets it is given as well.  On the default grid, whose
steps double from 8 on, each answer is then searched for by bisection between the largest
``d`` tried that does not qualify and the one that does (both samplings at each ``d``), so
the advice is a ``d`` whose predecessor was tried and failed, not the next grid value.

Where a theory value lies outside its row's 95% interval, that row is run again on an
independent stream: a 95% interval misses its true value one time in 20, so a single miss
does not say which is off.  The note says what the second interval shows.

``examined`` is what a request costs the balancer: the endpoints it looks at (``d``; the
full scan: ``servers``), messages when the loads are probed, counter reads when they are
local.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import SEED_LIMIT, ParameterError, check_choice, check_int, check_real
from cloudsched.experiments.tune_search import metric_interval
from cloudsched.progress import Progress
from cloudsched.results import in_interval, interval_columns

__all__ = ["METRICS", "Advice", "advise", "default_ds", "theory_off"]

METRICS = ("p99", "mean")


def default_ds(servers: int) -> list[int]:
    """Return the d values tried by default: 1, 2, 3, 4, 6, 8, 16, 32 below N, and N."""
    return sorted({d for d in (1, 2, 3, 4, 6, 8, 16, 32) if d < servers} | {servers})


@dataclass
class Advice:
    """The rows (one per d and sampling), the full scan's row, and the advice."""

    servers: int
    load: float
    metric: str
    tolerance: float
    target: float | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    recommended: dict[str, Any] | None = None
    meets_target: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)

    @property
    def full_scan(self) -> dict[str, Any]:
        """The row of d = N without replacement."""
        return next(r for r in self.rows if r["full_scan"])


def _theory(servers: int, load: float, d: int, replace: bool) -> tuple[float, str] | None:
    """Finite-N mean response time and its source (None where no model is cheap here)."""
    from cloudsched.dispatch.theory.prediction import predict

    if d == 1:  # a uniform choice: independent M/M/1 queues at every N
        return 1.0 / (1.0 - load), "exact"
    policy = "jsq" if d == servers and not replace else "pod"
    try:
        (p,) = predict(policy, [load], servers=servers, d=d, replace=replace, r=servers)
    except ParameterError:
        return None
    if p.source == "meanfield":  # the N -> infinity limit: not this farm's number
        return None
    return p.value, p.source


def _row(res: Any, d: int, replace: bool, servers: int, metric: str) -> dict[str, Any]:
    est, low, high = metric_interval(res, metric)
    return {
        "d": d,
        "with_replacement": replace,
        "full_scan": d == servers and not replace,
        "mean_response_time": res.mean_response_time,
        **interval_columns(res.ci95),
        "p99": res.percentiles.get("p99", math.nan),
        "metric": est,
        "metric_low": low,
        "metric_high": high,
        "examined": d,
        "steady_state": res.steady_state,
        "warnings": "; ".join(res.warnings),
    }


def _check(
    servers: int,
    load: float,
    ds: Sequence[int] | None,
    metric: str,
    tolerance: float,
    target: float | None,
    seed: int,
) -> tuple[int, float, list[int], str, float, float | None, int]:
    n = check_int("servers", servers, low=2, high=10**7)
    load = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    d_list = sorted({check_int("d", d, low=1, high=n) for d in (ds or default_ds(n))} | {n})
    metric = check_choice("metric", metric, METRICS)
    tolerance = check_real("tolerance", tolerance, low=0.0, high=10.0)
    if target is not None:
        target = check_real("target", target, low=0.0, low_open=True)
    seed = check_int("seed", seed, low=0, high=SEED_LIMIT - 1)
    return n, load, d_list, metric, tolerance, target, seed


def advise(
    *,
    servers: int,
    load: float,
    ds: Sequence[int] | None = None,
    metric: str = "p99",
    tolerance: float = 0.05,
    target: float | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    **options: Any,
) -> Advice:
    """Simulate pod(d) for each d, with and without replacement, and advise a d.

    Parameters
    ----------
    servers : int
        Endpoints N (>= 2).
    load : float
        Arrival rate per endpoint, in (0, 1) (mean service time 1).
    ds : sequence of int, optional
        The d values (default :func:`default_ds`, then the bisection of the module notes);
        N (the full scan) is always added.  Given values are tried as given, no others.
    metric : str
        ``p99`` or ``mean``: what the advice compares.
    tolerance : float
        How far above the full scan's metric the advised d may be (0.05: 5%).
    target : float, optional
        A bound on the metric (mean service times): the smallest d meeting it is given.
    seed : int
        Root seed; setting k (in table order) runs on stream k of ``SeedSequence(seed)``.
    progress : callable, optional
        ``progress(fraction, status)`` (:mod:`cloudsched.progress`) before each run (the
        fraction of the most runs the searches can take).
    **options
        Passed to :func:`~cloudsched.dispatch.simulate` (``service``, ``arrivals``,
        ``precision``, ``max_tasks``, ``time_limit``...).
    """
    from cloudsched.dispatch.simulation import simulate

    n, load, d_list, metric, tolerance, target, seed = _check(
        servers, load, ds, metric, tolerance, target, seed
    )
    exponential = options.get("service") is None and options.get("arrivals") is None
    root = np.random.SeedSequence(seed)
    out = Advice(n, load, metric, tolerance, target)
    # with replacement: d = 1 is the same choice, and d = N is no full scan (and O(N) a probe)
    grid = [(d, rep) for d in d_list for rep in (False, True) if not (rep and d in (1, n))]
    search = ds is None  # the default grid doubles from 8 on: search between its values
    widest = max((b - a for a, b in itertools.pairwise(d_list)), default=1) if search else 1
    planned = len(grid) + (2 if target is not None else 1) * 2 * math.ceil(math.log2(widest))
    done = 0

    def run(d: int, rep: bool, stream: np.random.SeedSequence) -> Any:
        nonlocal done
        if progress is not None:
            what = f"d={d} {'with' if rep else 'without'} replacement"
            progress(min(done / max(planned, 1), 0.99), what)
        done += 1
        full = d == n and not rep
        return simulate(
            "jsq" if full else "pod",
            servers=n,
            load=load,
            d=2 if full else d,
            with_replacement=rep,
            keep_response_times=metric == "p99",
            rng=np.random.default_rng(stream),
            **options,
        )

    def add(d: int, rep: bool, stream: np.random.SeedSequence) -> None:
        res = run(d, rep, stream)
        row = _row(res, d, rep, n, metric)
        theory = _theory(n, load, d, rep) if exponential else None
        row["theory_mean"], row["theory_source"] = theory if theory else (math.nan, "")
        row["theory_in_interval"] = in_interval(
            theory[0] if theory else None, row["ci95_low"], row["ci95_high"]
        )
        row.update(recheck_ci95_low=math.nan, recheck_ci95_high=math.nan)
        row["recheck_in_interval"] = None  # set by _recheck where the theory is outside
        out.rows.append(row)

    for (d, rep), stream in zip(grid, root.spawn(len(grid)), strict=True):
        add(d, rep, stream)
    _conclude(out)
    if search:
        for goal in ("recommended", "meets_target"):
            _search(out, goal, lambda d: _add_d(d, n, add, root))
    _recheck(out, lambda r: run(r["d"], r["with_replacement"], root.spawn(1)[0]))
    if progress is not None:
        progress(1.0, "")
    _conclude(out)
    return out


def _add_d(d: int, n: int, add: Any, root: np.random.SeedSequence) -> None:
    """Run ``d`` both ways (one way where the other is the same or no full scan)."""
    for rep in (False, True):
        if not (rep and d in (1, n)):
            add(d, rep, root.spawn(1)[0])


def _search(out: Advice, goal: str, run_d: Any) -> None:
    """Bisect for the smallest d meeting ``goal`` between the grid's last failure and success.

    Assumes, as the bisection must, that a d larger than one that qualifies qualifies too;
    the answer is a d that qualifies whose predecessor was tried and did not.
    """
    found = getattr(out, goal)
    if found is None:
        return
    hi = found["d"]
    below = [r["d"] for r in out.rows if r["d"] < hi]
    if not below:
        return
    lo, tried = max(below), []
    start = (lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        run_d(mid)
        tried.append(mid)
        _conclude(out)  # the rule judges mid: it qualifies if it is now the smallest that does
        now = getattr(out, goal)
        if now is not None and now["d"] == mid:
            hi = mid
        else:
            lo = mid
    if tried:
        what = "the advice" if goal == "recommended" else "the target's d"
        out.searched.append(
            f"{what} searched between d={start[0]} (not met) and d={start[1]} (met) by "
            f"bisection, trying d={', '.join(map(str, tried))}: d={hi} meets it, d={lo} does not"
        )


def _recheck(out: Advice, rerun: Any) -> None:
    """Run each row whose theory is outside its interval once more, on a fresh stream."""
    for row in out.rows:
        if row["theory_in_interval"] is False:
            res = rerun(row)
            low, high = res.ci95 if res.ci95 else (math.nan, math.nan)
            row["recheck_ci95_low"], row["recheck_ci95_high"] = low, high
            row["recheck_in_interval"] = in_interval(row["theory_mean"], low, high)


def _conclude(out: Advice) -> None:
    """Fill in the advice: the smallest d near the full scan, the smallest meeting the target.

    Rows without an interval (not steady, or too short) cannot qualify; a note says so.
    The notes are rebuilt from the rows (and the searches) at each call.
    """
    scan = out.full_scan["metric"]
    near = scan * (1.0 + out.tolerance)
    out.rows.sort(key=lambda r: (r["d"], r["with_replacement"]))
    ordered = out.rows
    for row in ordered:
        row["within_tolerance"] = bool(row["metric_high"] <= near)  # NaN: False
    out.recommended = next((r for r in ordered if r["within_tolerance"]), None)
    if out.target is not None:
        out.meets_target = next((r for r in ordered if r["metric_high"] <= out.target), None)
    out.notes = [*out.searched, *_theory_notes(out)]
    missing = [r for r in ordered if not math.isfinite(r["metric_high"])]
    if missing:
        out.notes.append(
            f"no interval for {_names(missing)} (not steady, or too few tasks): "
            "run longer (--precision, --max-tasks) to judge them"
        )


def _names(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"d={r['d']}{'+r' if r['with_replacement'] else ''}" for r in rows)


def theory_off(row: dict[str, Any]) -> bool:
    """Whether a row's theory is outside its interval and no rerun's interval holds it."""
    return row.get("theory_in_interval") is False and row.get("recheck_in_interval") is not True


def _theory_notes(out: Advice) -> list[str]:
    """Say what the theory values outside their intervals mean, after their reruns."""
    off = [r for r in out.rows if r.get("theory_in_interval") is False]
    held = [r for r in off if r.get("recheck_in_interval") is True]
    twice = [r for r in off if r.get("recheck_in_interval") is False]
    once = [r for r in off if r.get("recheck_in_interval") is None]
    notes = []
    if held:
        shown = "; ".join(
            f"d={r['d']}{'+r' if r['with_replacement'] else ''}: {r['theory_mean']:.4g} in "
            f"[{r['recheck_ci95_low']:.4g}, {r['recheck_ci95_high']:.4g}]"
            for r in held
        )
        notes.append(
            "the theory is outside the simulated mean's 95% interval but inside an "
            f"independent rerun's at {shown}: a 95% interval misses one time in 20, and "
            "nothing here says the theory is off"
        )
    refined = [r for r in twice + once if r["theory_source"] == "refined"]
    why = (
        "; the refined 1/N expansion loses accuracy as d(d-1)/N grows (up to "
        f"{max(r['d'] * (r['d'] - 1) / out.servers for r in refined):.3g} here)"
        if refined
        else ""
    )
    if twice:
        notes.append(
            f"the theory is outside two independent 95% intervals of the simulated mean at "
            f"{_names(twice)} (marked *; two misses happen one time in 400 by chance){why}; "
            "the simulation is the number to use"
        )
    if once:
        notes.append(
            f"the theory is outside the simulated mean's 95% interval at {_names(once)} "
            f"(marked *): an interval misses one time in 20, so either may be off{why}"
        )
    return notes
