"""Find the cheapest dispatch setting that meets a latency target, certified by simulation.

The question: tasks arrive at ``rate`` (tasks per unit time, the whole farm); which policy,
with which ``d`` and ``r``, on how few servers, keeps the p99 (or the mean) response time
under ``target``, sending at most ``max_messages`` messages per task?

How it searches (:func:`tune`), candidate by candidate (a policy with one ``d``, one
threshold and one ``r``):

1. **Stability**: fewer than ``rate`` servers (in units of the mean service time) cannot
   carry the load; the search starts at the smallest N whose load is below 0.999.
2. **Mean-field pruning** (Poisson/exponential workloads, policies with a model): the
   mean-field mean and p99 (:func:`meanfield_quantile`) are the large-N limits, which the
   finite farms measured here do not beat, and they fall as N grows; the smallest N whose
   mean-field metric meets the target, found by bisection without simulating, is where
   the simulations start.  A candidate whose bound exceeds the largest N, or whose
   mean-field message rate exceeds ``max_messages``, is pruned.  (A finite farm that beat
   its limit would be found at the bound, never below it.)
3. **Certification by simulation**: simulate at the bound; if the setting is not
   certified, step up (1, 2, 4, ... servers more) until one is, then bisect back between
   the last failure and the first success.  A setting is *certified* when its run reached
   a steady state, the upper end of the 95% interval of its metric is at most the target,
   and its measured messages per task are within the limit.  The p99 interval comes from
   sectioning: the run's tasks in 20 consecutive sections, the overall p99 as the point
   estimate and Student's t on the sections' p99 values for the width.  The search assumes
   the metric falls as N grows (it does for these policies: more servers, less load).

The cheapest certified setting has the fewest servers, then the fewest messages per task.
A trace is used through its laws, inter-arrival and service times resampled from the log
(i.i.d.), so that runs can be as long as certification needs; since that loses the log's
bursts and correlations, a setting certified on the laws must also meet the target when
the log itself is replayed as it is (``replay``: one sample path of every request of the
log, so that check has no interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.dispatch.policies import MEANFIELD_POLICIES, get_policy
from cloudsched.errors import SEED_LIMIT, ParameterError, check_choice, check_int, check_real
from cloudsched.experiments.compare import (
    meanfield_mean,
    meanfield_quantile,
    options_per_policy,
    setting_grid,
)
from cloudsched.experiments.tune_search import Search, Tuner, fits, metric_interval, smallest_fit
from cloudsched.policy_table import default_policies
from cloudsched.progress import Progress, counted

#: r (servers per dispatcher) where a policy needs dispatchers and none is given
DEFAULT_R = 10.0

__all__ = ["TuneResult", "meanfield_quantile", "metric_interval", "tune"]


METRICS = ("p99", "mean")


@dataclass
class TuneResult:
    """What :func:`tune` found: certified settings (best first), every candidate, the log."""

    target: float
    metric: str
    rate: float
    certified: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def _bisect_meanfield(
    policy: str, d: int, r: float, rate: float, lo: int, hi: int, target: float, metric: str
) -> int | None:
    """Return the smallest N in [lo, hi] whose mean-field metric is <= target (None: none)."""

    def ok(n: int) -> bool:
        load = rate / n
        if metric == "mean":
            mf = meanfield_mean(policy, load, min(r, n), d)
        else:
            mf = meanfield_quantile(policy, load, min(r, n), d) if 0 < load < 1 else None
        return mf is not None and mf <= target

    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def service_floor(metric: str, service: Any, seed: int) -> float:
    """Return the metric of the service times alone, a floor no response time goes under.

    The mean is 1 (times are in mean service times); the p99 is ``log 100`` for the
    default exponential law, else the p99 of 200,000 service times drawn from ``service``.
    """
    if metric == "mean":
        return 1.0
    if service is None:
        return math.log(100.0)
    from cloudsched.dispatch.workload.distributions import parse_spec

    law = parse_spec(service) if isinstance(service, str) else service
    sample = law.scaled(1.0).sample(np.random.default_rng([seed, 99]), 200_000)
    return float(np.quantile(sample, 0.99))


def _meanfield_messages(cand: dict[str, Any], rate: float, n: int) -> float:
    """Return the mean-field messages per task of a candidate on ``n`` servers."""
    from cloudsched.dispatch.theory.meanfield import predict

    load = rate / n
    if not 0 < load < 1:
        return math.inf
    mf = predict(cand["policy"], [load], r=min(cand["r"], n), d=cand["d"] or 2)
    return float(mf.join_rate[0] + mf.delete_rate[0] + mf.probe_rate[0]) / load


def _check_grid(
    policies: Sequence[str],
    ds: Sequence[int],
    rs: Sequence[float] | None,
    thresholds: Sequence[int],
    lo_n: int,
    hi_n: int,
) -> tuple[list[int], list[float], list[int]]:
    """Check the candidates' grid and the range of N; return d, r and thresholds."""
    ds = [check_int("d", x, low=1) for x in ds]
    rs = [check_real("r", x, low=1.0) for x in ((DEFAULT_R,) if rs is None else rs)]
    thresholds = [check_int("threshold", x, low=0, high=2**62) for x in thresholds]
    if not ds or not rs or not policies:
        raise ParameterError("policies/d/r", None, "at least one value each")
    if lo_n > hi_n:
        raise ParameterError("servers", f"{lo_n}:{hi_n}", "MIN:MAX with MIN <= MAX")
    return ds, rs, thresholds


def _meanfield_start(t: Tuner, cand: dict[str, Any], lo: int, hi: int) -> int | str:
    """Return the smallest N whose mean field meets the target, or why the candidate is out.

    Messages per task move one way with N (pod: constant; jiq-pod: fewer probes on more
    servers; jiq: more joins): a candidate is pruned only if both ends send too many.
    """
    metric, rate = t.metric, t.rate
    bound = _bisect_meanfield(
        cand["policy"], cand["d"] or 2, cand["r"], rate, lo, hi, t.target, metric
    )
    if bound is None:
        return f"pruned: the mean field misses the target even at N = {hi}"
    sent = [_meanfield_messages(cand, rate, n) for n in (bound, hi)]
    args = (cand["policy"], rate / bound, min(cand["r"], bound), cand["d"] or 2)
    shown = (meanfield_mean(*args) if metric == "mean" else meanfield_quantile(*args)) or math.nan
    t.say(
        f"  mean field: N >= {bound} ({metric} {shown * t.scale:.4g} {t.unit} there, "
        f"{sent[0]:.3g} msg/task; {sent[1]:.3g} at N = {hi})"
    )
    if min(sent) > t.max_messages * 1.05:
        return f"pruned: mean field sends {min(sent):.3g} msg/task or more > {t.max_messages:g}"
    return bound


def _check_reachable(
    metric: str, target: float, service: Any, seed: int, scale: float, unit: str
) -> None:
    """Refuse a target below what the service times alone give."""
    floor = service_floor(metric, service, seed)
    if target <= floor:
        raise ParameterError(
            metric,
            f"{target * scale:.6g} {unit}",
            (
                f"above {floor * scale:.4g} {unit}, the {metric} of the service times alone: "
                "every response includes its own service, so no setting meets a target below it"
            ),
        )


def _laws(service: Any, arrivals: Any, precision: float, slowdown: str | None) -> dict[str, Any]:
    """Return the workload every run of the search gets (a slowdown checked here, once)."""
    laws = {"service": service, "arrivals": arrivals, "precision": precision}
    if slowdown is not None:
        from cloudsched.dispatch.workload.slowdown import parse_slowdown

        laws["slowdown"] = parse_slowdown(slowdown)
    return laws


def tune(
    *,
    rate: float,
    target: float,
    metric: str = "p99",
    servers: tuple[int, int],
    policies: Sequence[str] | None = None,
    ds: Sequence[int] = (2, 3),
    rs: Sequence[float] | None = None,
    thresholds: Sequence[int] = (1,),
    max_messages: float = math.inf,
    seed: int = 0,
    service: Any = None,
    arrivals: Any = None,
    precision: float = 0.02,
    max_tasks: int = 20_000_000,
    replay: Callable[[dict[str, Any], int, float, np.random.Generator], float] | None = None,
    say: Callable[[str], None] | None = None,
    scale: float = 1.0,
    unit: str = "mean service times",
    policy_options: Sequence[str] = (),
    slowdown: str | None = None,
    progress: Progress | None = None,
) -> TuneResult:
    """Search the cheapest certified settings (see the module notes for the method).

    ``rate`` is the farm's arrival rate and ``target`` the metric's bound, both in mean
    service times; ``servers`` the range of N; ``policies`` those to try (None: the policy
    table's defaults for ``tune``); ``service`` and ``arrivals`` laws as
    :func:`~cloudsched.dispatch.simulate` takes them (default Poisson and exp(1)).
    ``replay(candidate, n, load, rng)``, given, returns the metric of the setting on a log
    replayed as it is (in the same unit); a setting certified on the laws must also meet
    the target there.  ``scale`` and ``unit`` only say how the search log shows times
    (``scale`` units to a mean service time).  ``rs`` None: r = 10 where the policy needs
    dispatchers (round-robin, the JIQ family), one proxy for a production balancer (as
    ``compare`` and ``simulate`` run them).  ``policy_options``: a production balancer's
    ``NAME=VALUE`` options, each to the candidates that have it (checked before the first
    run); ``slowdown`` as :func:`~cloudsched.dispatch.simulate` takes it.  ``progress``:
    called with the share of candidates done as each one starts.
    """
    metric = check_choice("metric", metric, METRICS)
    target = check_real("target", target, low=0.0, low_open=True)
    rate = check_real("rate", rate, low=0.0, low_open=True)
    if policies is None:  # the policy table's defaults: random, pod, jiq, jiq-pod
        policies = default_policies("tune")
    lo_n, hi_n = (check_int("servers", n, low=1, high=2**62) for n in servers)
    given_rs = rs is not None
    ds, rs, thresholds = _check_grid(policies, ds, rs, thresholds, lo_n, hi_n)
    per_policy = options_per_policy(policies, policy_options)
    precision = check_real("precision", precision, low=0.0, high=1.0, low_open=True)
    max_tasks = check_int("max_tasks", max_tasks, low=1, high=2**62)
    seed = check_int("seed", seed, low=0, high=SEED_LIMIT - 1)
    if max_messages != math.inf:
        max_messages = check_real("max_messages", max_messages, low=0.0)
    out = TuneResult(target, metric, rate)
    speak = say or (lambda _: None)

    def log(line: str) -> None:
        out.log.append(line)
        speak(line)

    _check_reachable(metric, target, service, seed, scale, unit)
    exponential = service is None and arrivals is None and slowdown is None
    laws = _laws(service, arrivals, precision, slowdown)
    t = Tuner(
        metric,
        target,
        rate,
        max_messages,
        seed,
        {**laws, "max_tasks": max_tasks},
        exponential,
        log,
        replay,
        scale,
        unit,
        policy_options=per_policy,
    )
    stable = max(lo_n, math.floor(rate / 0.999) + 1)
    log(f"stability: load < 0.999 needs N >= {stable}")
    grid = list(setting_grid(policies, [None], ds, rs, thresholds))
    for i, cand in enumerate(grid):
        if progress is not None:
            progress(*counted(i, len(grid), "candidates"))
        if not given_rs and get_policy(cand["policy"]).dispatchers == "optional":
            cand["r"] = math.inf  # one proxy: r = N
        name = (
            cand["policy"]
            + (f" d={cand['d']}" if cand["d"] else "")
            + (f" z={cand['threshold']}" if cand["threshold"] is not None else "")
            + (f" r={cand['r']:g}" if len(rs) > 1 else "")
        )
        entry = {"candidate": name, **cand, "status": "", "servers": None}
        out.candidates.append(entry)
        log(f"{name}:")
        if stable > hi_n:
            entry["status"] = f"pruned: unstable below N = {stable} > {hi_n}"
            log("  " + entry["status"])
            continue
        start, why = smallest_fit(cand, rate, stable, hi_n, t.options)
        if start is None:  # d (or r) needs more servers than the range has
            entry["status"] = f"skipped: does not fit N <= {hi_n} ({why})"
            log("  " + entry["status"])
            continue
        if start > stable:
            log(f"  fits from N = {start} (below: {fits(cand, rate, start - 1, t.options)})")
        if exponential and cand["policy"] in MEANFIELD_POLICIES:
            bound = _meanfield_start(t, cand, start, hi_n)
            if isinstance(bound, str):
                entry["status"] = bound
                log("  " + entry["status"])
                continue
            start = bound
        best = Search(t, cand).smallest(start, hi_n)
        if best is None:
            entry["status"] = f"not certified in N <= {hi_n}"
            continue
        entry.update(best, status="certified")
        out.certified.append(entry)
    out.certified.sort(key=lambda e: (e["servers"], e["messages_per_task"]))
    return out
