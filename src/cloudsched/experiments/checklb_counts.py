"""The counts a proxy saw, rebuilt from its access log, and the arrivals the log cannot know.

A request counts at its upstream from its send time until (``end_slack`` after) its end.
Three things make the count an arrival saw unknown, and such arrivals are left out of the
test rather than guessed (leaving out depends on the other requests' times, not on the
choice made at the arrival, so the test of the rest stays exact):

* the clock (:func:`unresolved_arrivals`): times truncated to a resolution cannot order an
  arrival against another start within it, or an end within (two before, one after);
* the window (:func:`window_edges`): proxies write a line when a request ends (NGINX,
  HAProxy without ``option logasap``, Envoy), so a rotated log holds the requests that ended
  between its first and its last line.  An arrival before the first logged end may have
  had requests outstanding that ended before the log began; one within the longest logged
  request of the last end may have had requests outstanding that ended after it;
* the proxy's own view (several workers or proxies, each with its own counts) is a law's
  business, not the log's (:mod:`cloudsched.experiments.checklb`).

:func:`in_flight` gives what operators read off the same counts: each upstream's share,
its in-flight requests at arrivals and its latency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched._jit import kernel

__all__ = [
    "InFlight",
    "Tested",
    "in_flight",
    "levels_at_arrivals",
    "levels_by_numpy",
    "stop_times",
    "tested_counts",
    "unresolved_arrivals",
    "window_edges",
]


def levels_at_arrivals(
    sent: np.ndarray, end: np.ndarray, upstream: np.ndarray, k: int, end_slack: float = 0.0
) -> np.ndarray:
    """Outstanding requests of each upstream at each arrival, shape ``(n, k)`` (int32).

    A request counts from its send time until ``end_slack`` after its logged end (see
    :class:`~cloudsched.dispatch.workload.upstreams.UpstreamLog`); one that ended by then
    has left before an arrival at that time.  Requests sent at the same logged time (a
    millisecond cannot order them) do not count each other: counted in log order, they
    would make the upstreams *not* chosen look busier than they were, and every law would
    seem to prefer less-loaded upstreams.  A request that ends at the logged time it was
    sent (0 ms in HAProxy's ``Ta``) counts at no arrival, its own included.  (Compiled;
    :func:`levels_by_numpy` is the slow reference.)
    """
    order = np.argsort(sent, kind="stable")
    end = stop_times(sent, end, end_slack)
    by_end = np.argsort(end, kind="stable")
    out = np.empty((sent.size, k), dtype=np.int32)
    _levels(
        np.ascontiguousarray(sent, dtype=np.float64),
        order,
        np.ascontiguousarray(end[by_end], dtype=np.float64),
        np.ascontiguousarray(upstream[by_end], dtype=np.int64),
        np.ascontiguousarray(upstream, dtype=np.int64),
        np.zeros(k, dtype=np.int32),
        out,
    )
    return out


def stop_times(sent: np.ndarray, end: np.ndarray, end_slack: float) -> np.ndarray:
    """Return when each request stops counting: ``end_slack`` after its end, and after its send.

    A request whose end is not after its send (a 0 ms duration) leaves just after it, so
    that no arrival sees it gone before it came (a count of -1).
    """
    return np.maximum(np.asarray(end, dtype=np.float64) + end_slack, np.nextafter(sent, np.inf))


@kernel(nrt=False, entry=True, label="check-lb's in-flight counts")
def _levels(sent, order, ends, end_up, upstream, counts, out):
    """Fill ``out`` (see :func:`levels_at_arrivals`): arrivals in send order, ends in order."""
    n = sent.size
    j = 0
    g = 0
    while g < n:
        t = sent[order[g]]
        h = g
        while h < n and sent[order[h]] == t:
            h += 1
        while j < n and ends[j] <= t:
            counts[end_up[j]] -= 1
            j += 1
        for i in range(g, h):
            row = order[i]
            for u in range(counts.size):
                out[row, u] = counts[u]
        for i in range(g, h):
            counts[upstream[order[i]]] += 1
        g = h


def levels_by_numpy(
    sent: np.ndarray, end: np.ndarray, upstream: np.ndarray, k: int, end_slack: float = 0.0
) -> np.ndarray:
    """Return the counts as :func:`levels_at_arrivals` does, in numpy (the slow reference)."""
    n = sent.size
    order = np.argsort(sent, kind="stable")
    stops = stop_times(sent, end, end_slack)
    by_end = np.argsort(stops, kind="stable")
    end_t, end_u = stops[by_end], upstream[by_end]
    counts = np.zeros(k, dtype=np.int32)
    out = np.empty((n, k), dtype=np.int32)
    j = g = 0
    while g < n:
        t = sent[order[g]]
        h = g
        while h < n and sent[order[h]] == t:
            h += 1
        while j < n and end_t[j] <= t:
            counts[end_u[j]] -= 1
            j += 1
        group = order[g:h]
        out[group] = counts
        np.add.at(counts, upstream[group], 1)
        g = h
    return out


def _eps(times: np.ndarray) -> float:
    """Return the rounding of logged times of this magnitude (the epoch's seconds in a float64)."""
    return 4 * float(np.spacing(np.median(np.abs(times)))) if times.size else 0.0


def unresolved_arrivals(sent: np.ndarray, end: np.ndarray, resolution: float) -> np.ndarray:
    """Which arrivals a log with times truncated to ``resolution`` cannot order (bool mask).

    A request sent at logged time ``s`` was sent in ``[s, s + resolution)`` and one that
    ended at logged ``e`` ended in ``[e, e + 2 resolution)`` (its start and its duration
    both truncated).  An arrival is unresolved when another request's send falls within one
    resolution of it, or an end within ``(s - 2 resolution, s + resolution)``: whether that
    request counted at the arrival is unknown.
    """
    if resolution <= 0:
        return np.zeros(sent.size, dtype=bool)
    eps = _eps(sent)
    ends, sends = np.sort(end), np.sort(sent)
    r = resolution - eps
    near_end = np.searchsorted(ends, sent + r, "left") - np.searchsorted(
        ends, sent - 2 * resolution + eps, "right"
    )
    near_end -= end < sent + r  # its own end (a request shorter than the resolution)
    near_send = np.searchsorted(sends, sent + r, "left") - np.searchsorted(sends, sent - r, "right")
    return (near_end > 0) | (near_send > 1)


def window_edges(
    sent: np.ndarray, end: np.ndarray, resolution: float, end_slack: float = 0.0
) -> np.ndarray:
    """Which arrivals a window of a longer run cannot know the counts of (bool mask).

    The log is read as the requests that *ended* between its first and last logged end
    (see the module notes).  Left out: arrivals before the first end plus a margin (a
    request that ended before the log began may still have counted at them), and arrivals
    within the longest logged request plus a margin of the last end (a request still
    outstanding when the log ends, sent before them, is not in it, unless it was longer
    than every request the log holds).  The margin is the clock's truncation (three
    resolutions) and ``end_slack``.
    """
    if sent.size == 0:
        return np.zeros(0, dtype=bool)
    margin = 3 * resolution + end_slack + _eps(sent)
    longest = float(np.max(end - sent))
    return (sent < end.min() + margin) | (sent + longest + margin > end.max())


@dataclass(frozen=True)
class InFlight:
    """What operators read off the rebuilt counts (see :func:`in_flight`)."""

    names: tuple[str, ...]
    share: np.ndarray
    mean_in_flight: np.ndarray
    mean_latency: np.ndarray
    p99_latency: np.ndarray
    max_over_avg: float
    p99_over_avg: float
    mean: float
    p99: float


def in_flight(
    levels: np.ndarray, upstream: np.ndarray, latency: np.ndarray, names: tuple[str, ...]
) -> InFlight:
    """Each upstream's share of requests, in-flight requests at arrivals and latency (s).

    ``levels``: the counts at the arrivals whose counts the log fixes, one row each (their
    average over arrivals is the time average for Poisson arrivals); ``upstream`` and
    ``latency``: of every request.  ``max_over_avg``: the busiest upstream's mean in-flight
    count over the mean of all; ``p99_over_avg``: the 99th percentile of any upstream's
    in-flight count at an arrival over the same mean (how far the worst moments reach).
    """
    k = len(names)
    counts = np.bincount(upstream, minlength=k).astype(float)
    mean_lat = np.full(k, np.nan)
    p99_lat = np.full(k, np.nan)
    order = np.argsort(upstream, kind="stable")  # each upstream's requests, in log order
    groups = np.split(latency[order], np.cumsum(counts[:-1]).astype(np.int64))
    for u, mine in enumerate(groups):
        if mine.size:
            mean_lat[u], p99_lat[u] = float(mine.mean()), float(np.quantile(mine, 0.99))
    per = levels.mean(axis=0) if levels.shape[0] else np.zeros(k)
    avg = float(per.mean())
    p99 = float(np.quantile(levels, 0.99)) if levels.size else 0.0
    return InFlight(
        names,
        counts / counts.sum(),
        per,
        mean_lat,
        p99_lat,
        float(per.max() / avg) if avg > 0 else float("nan"),
        p99 / avg if avg > 0 else float("nan"),
        avg,
        p99,
    )


@dataclass(frozen=True)
class Tested:
    """The arrivals whose counts a log fixes (see :func:`tested_counts`)."""

    levels: np.ndarray  # the counts each saw, one row an arrival
    chosen: np.ndarray  # the level of the upstream chosen
    upstream: np.ndarray  # the upstream chosen
    left_out: int  # arrivals not tested, for any reason
    edges: np.ndarray  # bool, every arrival: at the window's edges
    group: np.ndarray | None = None  # each tested arrival's worker or proxy (a view's)
    subsets: tuple[np.ndarray, ...] = ()  # the upstreams each group sent requests to
    every: np.ndarray | None = None  # the counts at every arrival (rows in log order)


def tested_counts(log: Any, whole_run: bool, need: int = 2, view: str = "shared") -> Tested:
    """Rebuild the counts of an :class:`UpstreamLog` and keep the arrivals it fixes.

    Left out: the arrivals the clock cannot order (:func:`unresolved_arrivals`) and,
    unless ``whole_run``, those at the edges of a window (:func:`window_edges`).  Fewer
    than ``need`` kept is a one-line error naming the log.  ``view``: ``shared`` (the
    proxy's counts are of all its requests) or ``worker`` (each worker process counts its
    own, as NGINX's do without a shared ``zone``: the log must name the worker, ``$pid``)
    or ``proxy`` (each file read is one proxy's log, and each proxy counts its own).
    """
    from cloudsched.errors import ParameterError
    from cloudsched.resources import check_memory

    n, k = int(log.upstream.size), len(log.names)
    check_memory("log", log.source, n * k * 12.0, "the counts of every upstream at every arrival")
    if view in ("worker", "proxy"):
        group = getattr(log, "worker" if view == "worker" else "file", None)
        if group is None:
            raise ParameterError(
                "view",
                view,
                "shared, proxy (one file a proxy), or worker for a log that names each "
                "request's worker ($pid in NGINX's log_format)",
            )
        levels = np.empty((n, k), dtype=np.int32)
        subsets = tuple(np.unique(log.upstream[group == w]) for w in range(int(group.max()) + 1))
        for w in np.unique(group):
            mine = np.flatnonzero(group == w)
            levels[mine] = levels_at_arrivals(
                log.sent[mine], log.end[mine], log.upstream[mine], k, log.end_slack
            )
    else:
        group, subsets = None, ()
        levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    chosen = levels[np.arange(n), log.upstream]
    edges = np.zeros(n, dtype=bool)
    if not whole_run:
        edges = window_edges(log.sent, log.end, log.resolution, log.end_slack)
    keep = ~unresolved_arrivals(log.sent, log.end, log.resolution) & ~edges
    if int(keep.sum()) < need:
        raise ParameterError(
            "log",
            log.source,
            f"requests whose counts it fixes (its {log.resolution * 1e3:g} ms clock orders "
            f"{n - int(edges.sum())} arrivals away from its edges, fewer than two"
            + ("; --whole-run if it holds the proxy's whole run)" if not whole_run else ")"),
        )
    kept = None if group is None else group[keep]
    left = n - int(keep.sum())
    return Tested(
        levels[keep], chosen[keep], log.upstream[keep], left, edges, kept, subsets, levels
    )
