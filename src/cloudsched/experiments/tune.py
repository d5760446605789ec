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
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched._quantiles import t_quantile
from cloudsched.dispatch.policies import MEANFIELD_POLICIES
from cloudsched.errors import SEED_LIMIT, ParameterError, check_choice, check_int, check_real
from cloudsched.experiments.compare import (
    meanfield_mean,
    meanfield_quantile,
    messages_per_task,
    setting_grid,
    threshold_of,
)

__all__ = ["TuneResult", "meanfield_quantile", "metric_interval", "tune"]

METRICS = ("p99", "mean")
#: Sections of a run for the p99 interval.
SECTIONS = 20
#: Most simulations spent on one candidate.
MAX_STEPS = 14


def metric_interval(res: Any, metric: str) -> tuple[float, float, float]:
    """Return ``(estimate, low, high)`` of a run's metric (NaN bounds: no interval)."""
    if metric == "mean":
        lo, hi = res.ci95 if res.ci95 else (math.nan, math.nan)
        return res.mean_response_time, lo, hi
    x = np.asarray(res.response_times, dtype=np.float64)
    if x.size < SECTIONS * 200 or not res.steady_state:
        return float(np.quantile(x, 0.99)) if x.size else math.nan, math.nan, math.nan
    parts = np.array([np.quantile(s, 0.99) for s in np.array_split(x, SECTIONS)])
    half = t_quantile(0.975, SECTIONS - 1) * parts.std(ddof=1) / math.sqrt(SECTIONS)
    est = float(np.quantile(x, 0.99))
    return est, est - half, est + half


@dataclass
class TuneResult:
    """What :func:`tune` found: certified settings (best first), every candidate, the log."""

    target: float
    metric: str
    rate: float
    certified: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def _bisect_meanfield(policy: str, d: int, r: float, rate: float, lo: int, hi: int,
                      target: float, metric: str) -> int | None:  # fmt: skip
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


def _fits(cand: dict[str, Any], rate: float, n: int, options: dict[str, Any]) -> str | None:
    """Return why a candidate cannot run on ``n`` servers (d above N, ...), or None."""
    from cloudsched.dispatch.spec import SimulationSpec

    try:
        SimulationSpec(cand["policy"], servers=n, load=rate / n, r=min(cand["r"], n),
                       d=cand["d"] or 2, threshold=threshold_of(cand["threshold"]),
                       **options)  # fmt: skip
    except ParameterError as exc:
        return str(exc)
    return None


def _smallest_fit(cand: dict[str, Any], rate: float, lo: int, hi: int,
                  options: dict[str, Any]) -> tuple[int | None, str | None]:  # fmt: skip
    """Return the smallest N in [lo, hi] the candidate can run on (d, r fit), and why not."""
    why = None
    for n in range(lo, min(hi, lo + 64) + 1):  # d and r need at most a few servers more
        why = _fits(cand, rate, n, options)
        if why is None:
            return n, None
    return None, why


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


class _Search:
    """Simulations of one candidate at several N, cached, with the certification rule."""

    def __init__(self, t: _Tune, cand: dict[str, Any]) -> None:
        self.t, self.cand, self.runs = t, cand, 0
        self.seen: dict[int, dict[str, Any]] = {}

    def at(self, n: int) -> dict[str, Any]:
        if n in self.seen:
            return self.seen[n]
        self.runs += 1
        row = self.t.simulate(self.cand, n)
        self.seen[n] = row
        u, k = self.t.unit, self.t.scale
        if not math.isfinite(row["estimate"]):
            self.t.say(f"  N = {n} (load {row['load']:.3f}): {row['why']}")
            return row
        self.t.say(f"  N = {n} (load {row['load']:.3f}): {self.t.metric} "
                   f"{row['estimate'] * k:.4g} [{row['low'] * k:.4g}, {row['high'] * k:.4g}] {u},"
                   f" {row['messages_per_task']:.3g} msg/task -> "
                   f"{'certified' if row['certified'] else row['why']}")  # fmt: skip
        return row

    def smallest(self, lo: int, hi: int) -> dict[str, Any] | None:
        """Return the run at the smallest certified N in [lo, hi] (None: not found).

        It steps up from ``lo`` by 1, 2, 4, ... servers, then bisects back.
        """
        step, last_bad, n = 1, lo - 1, lo
        while True:
            if self.runs >= MAX_STEPS:
                return None
            row = self.at(n)
            if row["certified"]:
                break
            last_bad, n = n, min(hi, n + step)
            if last_bad == hi:
                return None
            step *= 2
        good = n
        while good - last_bad > 1 and self.runs < MAX_STEPS:
            mid = (good + last_bad) // 2
            if self.at(mid)["certified"]:
                good = mid
            else:
                last_bad = mid
        return self.seen[good]


@dataclass
class _Tune:
    metric: str
    target: float
    rate: float
    max_messages: float
    seed: int
    options: dict[str, Any]
    exponential: bool
    say: Callable[[str], None]
    replay: Callable[[dict[str, Any], int, float, np.random.Generator], float] | None = None
    scale: float = 1.0
    unit: str = "mean service times"
    count: int = 0

    def simulate(self, cand: dict[str, Any], n: int) -> dict[str, Any]:
        from cloudsched.dispatch.simulation import simulate

        self.count += 1
        # the stream depends on the setting alone (not on what else was searched before)
        name = f"{cand['policy']}|{cand['d']}|{cand['r']:g}" + (
            f"|{cand['threshold']}" if cand["threshold"] is not None else "")  # fmt: skip
        words = [self.seed, zlib.crc32(name.encode()), n]
        stream = np.random.SeedSequence(words)
        load = self.rate / n
        try:
            res = simulate(cand["policy"], servers=n, load=load, r=min(cand["r"], n),
                           d=cand["d"] or 2, threshold=threshold_of(cand["threshold"]),
                           keep_response_times=self.metric == "p99",
                           rng=np.random.default_rng(stream), **self.options)  # fmt: skip
        except ParameterError as exc:  # its queues outgrew the memory: not a setting to keep
            return {"policy": cand["policy"], "d": cand["d"], "threshold": cand["threshold"],
                    "r": float(min(cand["r"], n)), "servers": n, "load": load,
                    "estimate": math.nan, "low": math.nan, "high": math.nan,
                    "mean_response_time": math.nan, "messages_per_task": math.nan,
                    "replay": math.nan, "certified": False, "why": f"refused: {exc}",
                    "seed_words": words}  # fmt: skip
        est, low, high = metric_interval(res, self.metric)
        msgs = messages_per_task(res)
        why = ""
        if not res.steady_state:
            why = "not steady"
        elif not math.isfinite(high):
            why = "no interval"
        elif high > self.target:
            why = f"{self.metric} too high"
        elif msgs > self.max_messages:
            why = f"messages per task {msgs:.3g} > {self.max_messages:g}"
        replayed = math.nan
        if not why and self.replay is not None:
            replayed = self.replay(cand, n, load, np.random.default_rng([*words, 1]))
            if replayed > self.target:
                why = (f"the log itself, replayed: {self.metric} {replayed * self.scale:.4g} "
                       f"{self.unit} > target")  # fmt: skip
        return {"policy": cand["policy"], "d": cand["d"], "threshold": cand["threshold"],
                "r": res.servers / res.dispatchers,
                "servers": n, "load": load, "estimate": est, "low": low, "high": high,
                "mean_response_time": res.mean_response_time, "messages_per_task": msgs,
                "replay": replayed, "certified": not why, "why": why,
                "seed_words": words}  # fmt: skip


def tune(
    *,
    rate: float,
    target: float,
    metric: str = "p99",
    servers: tuple[int, int],
    policies: Sequence[str] = ("random", "pod", "jiq", "jiq-pod"),
    ds: Sequence[int] = (2, 3),
    rs: Sequence[float] = (10.0,),
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
) -> TuneResult:
    """Search the cheapest certified settings (see the module notes for the method).

    ``rate`` is the farm's arrival rate and ``target`` the metric's bound, both in mean
    service times; ``servers`` the range of N; ``service`` and ``arrivals`` laws as
    :func:`~cloudsched.dispatch.simulate` takes them (default Poisson and exp(1)).
    ``replay(candidate, n, load, rng)``, given, returns the metric of the setting on a log
    replayed as it is (in the same unit); a setting certified on the laws must also meet
    the target there.  ``scale`` and ``unit`` only say how the search log shows times
    (``scale`` units to a mean service time).
    """
    metric = check_choice("metric", metric, METRICS)
    target = check_real("target", target, low=0.0, low_open=True)
    rate = check_real("rate", rate, low=0.0, low_open=True)
    lo_n, hi_n = (check_int("servers", n, low=1, high=2**62) for n in servers)
    ds = [check_int("d", x, low=1) for x in ds]
    rs = [check_real("r", x, low=1.0) for x in rs]
    thresholds = [check_int("threshold", x, low=0, high=2**62) for x in thresholds]
    precision = check_real("precision", precision, low=0.0, high=1.0, low_open=True)
    max_tasks = check_int("max_tasks", max_tasks, low=1, high=2**62)
    seed = check_int("seed", seed, low=0, high=SEED_LIMIT - 1)
    if not ds or not rs or not policies:
        raise ParameterError("policies/d/r", None, "at least one value each")
    if lo_n > hi_n:
        raise ParameterError("servers", f"{lo_n}:{hi_n}", "MIN:MAX with MIN <= MAX")
    if max_messages != math.inf:
        max_messages = check_real("max_messages", max_messages, low=0.0)
    out = TuneResult(target, metric, rate)
    speak = say or (lambda _: None)

    def log(line: str) -> None:
        out.log.append(line)
        speak(line)

    floor = service_floor(metric, service, seed)
    if target <= floor:
        raise ParameterError(metric, f"{target * scale:.6g} {unit}", (
            f"above {floor * scale:.4g} {unit}, the {metric} of the service times alone: "
            "every response includes its own service, so no setting meets a target below it"
        ))  # fmt: skip
    exponential = service is None and arrivals is None
    t = _Tune(metric, target, rate, max_messages, seed,
              {"service": service, "arrivals": arrivals, "precision": precision,
               "max_tasks": max_tasks}, exponential, log, replay, scale, unit)  # fmt: skip
    stable = max(lo_n, math.floor(rate / 0.999) + 1)
    log(f"stability: load < 0.999 needs N >= {stable}")
    for cand in setting_grid(policies, [None], ds, rs, thresholds):
        name = cand["policy"] + (f" d={cand['d']}" if cand["d"] else "") + (
            f" z={cand['threshold']}" if cand["threshold"] is not None else "") + (
            f" r={cand['r']:g}" if len(rs) > 1 else "")  # fmt: skip
        entry = {"candidate": name, **cand, "status": "", "servers": None}
        out.candidates.append(entry)
        log(f"{name}:")
        if stable > hi_n:
            entry["status"] = f"pruned: unstable below N = {stable} > {hi_n}"
            log("  " + entry["status"])
            continue
        start, why = _smallest_fit(cand, rate, stable, hi_n, t.options)
        if start is None:  # d (or r) needs more servers than the range has
            entry["status"] = f"skipped: does not fit N <= {hi_n} ({why})"
            log("  " + entry["status"])
            continue
        if start > stable:
            log(f"  fits from N = {start} (below: {_fits(cand, rate, start - 1, t.options)})")
        if exponential and cand["policy"] in MEANFIELD_POLICIES:
            bound = _bisect_meanfield(cand["policy"], cand["d"] or 2, cand["r"], rate, start,
                                      hi_n, target, metric)  # fmt: skip
            if bound is None:
                entry["status"] = f"pruned: the mean field misses the target even at N = {hi_n}"
                log("  " + entry["status"])
                continue
            sent = [_meanfield_messages(cand, rate, n) for n in (bound, hi_n)]
            args = (cand["policy"], rate / bound, min(cand["r"], bound), cand["d"] or 2)
            shown = (meanfield_mean(*args) if metric == "mean" else
                     meanfield_quantile(*args)) or math.nan  # fmt: skip
            log(f"  mean field: N >= {bound} ({metric} {shown * scale:.4g} {unit} there, "
                f"{sent[0]:.3g} msg/task; {sent[1]:.3g} at N = {hi_n})")  # fmt: skip
            # messages per task move one way with N (pod: constant; jiq-pod: fewer probes
            # on more servers; jiq: more joins): pruned only if both ends send too many
            if min(sent) > max_messages * 1.05:
                entry["status"] = (f"pruned: mean field sends {min(sent):.3g} msg/task or more "
                                   f"> {max_messages:g}")  # fmt: skip
                log("  " + entry["status"])
                continue
            start = bound
        best = _Search(t, cand).smallest(start, hi_n)
        if best is None:
            entry["status"] = f"not certified in N <= {hi_n}"
            continue
        entry.update(best, status="certified")
        out.certified.append(entry)
    out.certified.sort(key=lambda e: (e["servers"], e["messages_per_task"]))
    return out
