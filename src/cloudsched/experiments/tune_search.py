"""Certification by simulation, for :func:`cloudsched.experiments.tune.tune`.

One candidate (a policy with one ``d``, threshold and ``r``) is simulated at several N, each
run on a stream that depends on the setting alone; a run is *certified* when it reached a
steady state, the upper end of the 95% interval of its metric is at most the target, its
messages per task are within the limit (and, given a log, the log replayed as it is meets
the target too).  :class:`Search` finds the smallest certified N by stepping up (1, 2, 4, ...
servers) and bisecting back.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched._quantiles import t_quantile
from cloudsched.errors import ParameterError
from cloudsched.experiments.compare import messages_per_task, setting_args

__all__ = ["MAX_STEPS", "SECTIONS", "Search", "Tuner", "fits", "metric_interval", "smallest_fit"]

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


def fits(cand: dict[str, Any], rate: float, n: int, options: dict[str, Any]) -> str | None:
    """Return why a candidate cannot run on ``n`` servers (d above N, ...), or None."""
    from cloudsched.dispatch.spec import SimulationSpec

    try:
        SimulationSpec(load=rate / n, **setting_args(cand, n), **options)
    except ParameterError as exc:
        return str(exc)
    return None


def smallest_fit(
    cand: dict[str, Any], rate: float, lo: int, hi: int, options: dict[str, Any]
) -> tuple[int | None, str | None]:
    """Return the smallest N in [lo, hi] the candidate can run on (d, r fit), and why not."""
    why = None
    for n in range(lo, min(hi, lo + 64) + 1):  # d and r need at most a few servers more
        why = fits(cand, rate, n, options)
        if why is None:
            return n, None
    return None, why


class Search:
    """Simulations of one candidate at several N, cached, with the certification rule."""

    def __init__(self, t: Tuner, cand: dict[str, Any]) -> None:
        self.t, self.cand, self.runs = t, cand, 0
        self.seen: dict[int, dict[str, Any]] = {}

    def at(self, n: int) -> dict[str, Any]:
        """Return the run of the candidate on ``n`` servers (simulated once, then cached)."""
        if n in self.seen:
            return self.seen[n]
        self.runs += 1
        row = self.t.simulate(self.cand, n)
        self.seen[n] = row
        u, k = self.t.unit, self.t.scale
        if not math.isfinite(row["estimate"]):
            self.t.say(f"  N = {n} (load {row['load']:.3f}): {row['why']}")
            return row
        self.t.say(
            f"  N = {n} (load {row['load']:.3f}): {self.t.metric} "
            f"{row['estimate'] * k:.4g} [{row['low'] * k:.4g}, {row['high'] * k:.4g}] {u},"
            f" {row['messages_per_task']:.3g} msg/task -> "
            f"{'certified' if row['certified'] else row['why']}"
        )
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
class Tuner:
    """One search's settings (metric, target, rate, limits, laws) and its simulations."""

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
    #: a production balancer's ``NAME=VALUE`` options, per policy (checked by the caller)
    policy_options: dict[str, list[str]] | None = None

    def simulate(self, cand: dict[str, Any], n: int) -> dict[str, Any]:
        """Simulate ``cand`` on ``n`` servers and judge it: one row, certified or why not."""
        from cloudsched.dispatch.simulation import simulate

        self.count += 1
        # the stream depends on the setting alone (not on what else was searched before)
        name = f"{cand['policy']}|{cand['d']}|{cand['r']:g}" + (
            f"|{cand['threshold']}" if cand["threshold"] is not None else ""
        )
        words = [self.seed, zlib.crc32(name.encode()), n]
        stream = np.random.SeedSequence(words)
        load = self.rate / n
        try:
            res = simulate(
                load=load,
                **setting_args(cand, n),
                keep_response_times=self.metric == "p99",
                rng=np.random.default_rng(stream),
                options=(self.policy_options or {}).get(cand["policy"]) or None,
                **self.options,
            )
        except ParameterError as exc:  # its queues outgrew the memory: not a setting to keep
            return {
                "policy": cand["policy"],
                "d": cand["d"],
                "threshold": cand["threshold"],
                "r": float(min(cand["r"], n)),
                "servers": n,
                "load": load,
                "estimate": math.nan,
                "low": math.nan,
                "high": math.nan,
                "mean_response_time": math.nan,
                "messages_per_task": math.nan,
                "replay": math.nan,
                "certified": False,
                "why": f"refused: {exc}",
                "seed_words": words,
            }
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
                why = (
                    f"the log itself, replayed: {self.metric} {replayed * self.scale:.4g} "
                    f"{self.unit} > target"
                )
        return {
            "policy": cand["policy"],
            "d": cand["d"],
            "threshold": cand["threshold"],
            "r": res.servers / res.dispatchers,
            "servers": n,
            "load": load,
            "estimate": est,
            "low": low,
            "high": high,
            "mean_response_time": res.mean_response_time,
            "messages_per_task": msgs,
            "replay": replayed,
            "certified": not why,
            "why": why,
            "seed_words": words,
        }
