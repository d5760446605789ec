"""NGINX ``least_time`` on a log: could NGINX's estimates have made each choice.

NGINX (open source since 1.31.0; src/http/modules/ngx_http_upstream_least_time_module.c,
``ngx_http_upstream_get_least_time_peer`` and ``ngx_http_upstream_least_time_eta``)
chooses the upstream of least estimate ``rt x (1 + connections)``, where ``rt`` is the
upstream's average response time (``ngx_http_upstream_response_time_avg``, the simulator's
:func:`~cloudsched.dispatch.balancers.ngx_time.ngx_avg`: an EWMA of
weight 0.05 in whole milliseconds, rounded, taken when a response completes), halved once
per ``fail_timeout + 1`` seconds since the upstream was last *checked* (marked when it is
chosen ``fail_timeout`` seconds after the last mark), then put in the next 20 ms cluster
(5000 ms at most); ties go by smooth weighted round robin.  No chance in it: a law of the
sequence, like round robin's and Envoy's EDF.

A log has every completed response's time (``$upstream_response_time``), so the averages
follow the log; what it lacks is their values when it starts (a rotated log) and when
each upstream was last checked.  The check keeps bounds: two averages per upstream, one
from the least start and one from the largest (1 ms and 1,000,000 ms; the EWMA is
monotone in its old value, so the true one stays between; whole-millisecond rounding
keeps them apart by up to 10 ms, its dead band, and a whole run starts both at 0), and the
halvings the last choice in the log allows (the mark is at most ``fail_timeout`` seconds
before it).  A choice is *inconsistent* when the chosen upstream's least estimate exceeds
another's largest one; a true least_time log has none.  Checked: the arrivals whose counts
the log fixes (:func:`~cloudsched.experiments.checklb_counts.tested_counts`'s rules).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch.balancers.ngx_time import ngx_avg, ngx_cluster, ngx_halvings
from cloudsched.errors import ParameterError
from cloudsched.experiments.checklb_edf import Sequence

__all__ = ["LeastTimeLaw", "check_least_time", "least_time_law"]

#: The bounds' starts (ms) for a log that is a window of a longer run.
LOW_START, HIGH_START = 1.0, 1e6


@dataclass(frozen=True)
class LeastTimeLaw:
    """NGINX least_time as configured: fail_timeout in whole seconds."""

    fail_timeout: int
    header: bool = True  # least_time header (else last_byte)

    @property
    def schedule(self) -> str:
        """What the verdict names."""
        mode = "header" if self.header else "last_byte"
        return f"NGINX's least_time {mode} (fail_timeout {self.fail_timeout} s)"


def least_time_law(options: Iterable[str] | None) -> LeastTimeLaw:
    """Read ``least-time``'s ``-o`` options; ``inflight=on`` is refused (not from a log)."""
    from cloudsched.dispatch.options import options_by_name

    given = list(options or ())
    opts = options_by_name("least-time", given)
    if opts["inflight"] > 0.5:
        raise ParameterError(
            "option",
            "inflight=on",
            "inflight=off: least_time ... inflight reads the time of every request still in "
            "flight at each choice, which a log (a line when a request ends) cannot rebuild",
        )
    fail = opts["fail-timeout"] * opts["service-time"]
    return LeastTimeLaw(math.floor(fail + 1e-9), opts["mode"] < 0.5)


class _Run(NamedTuple):
    """The log as the kernel reads it: events in order (< n arrivals, else ends)."""

    order: np.ndarray
    upstream: np.ndarray
    sent: np.ndarray
    levels: np.ndarray  # each arrival's counts (rows)
    checked: np.ndarray  # arrivals to check
    ms_low: np.ndarray  # each response's whole milliseconds, bounds
    ms_high: np.ndarray


def check_least_time(
    log: Any, law: LeastTimeLaw, whole_run: bool, levels: np.ndarray | None = None
) -> Sequence:
    """Check a log's choices against NGINX least_time.

    ``levels``: the shared counts at every arrival, when already rebuilt.
    """
    from cloudsched.experiments.checklb_counts import (
        levels_at_arrivals,
        stop_times,
        unresolved_arrivals,
        window_edges,
    )

    n, k = int(log.upstream.size), len(log.names)
    if levels is None:
        levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    edges = np.zeros(n, dtype=bool)
    if not whole_run:
        edges = window_edges(log.sent, log.end, log.resolution, log.end_slack)
    unsure = unresolved_arrivals(log.sent, log.end, log.resolution)
    if log.resolution <= 0 and log.end_slack > 0:  # an end within the slack may or may not
        ends = np.sort(stop_times(log.sent, log.end, log.end_slack))  # have updated it
        near = np.searchsorted(ends, log.sent, "right") - np.searchsorted(
            ends, log.sent - log.end_slack, "right"
        )
        unsure |= near > 0
    stop = stop_times(log.sent, log.end, log.end_slack)
    times = np.concatenate([log.sent, stop])
    kinds = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    order = np.lexsort((kinds, times)).astype(np.int64)  # by time, ends first at one instant
    ms = (log.end - log.sent) * 1000.0
    header = getattr(log, "header", None) if law.header else None
    if header is not None:  # least_time header averages the time to the header
        ms = np.where(np.isnan(header), ms, header * 1000.0)
    run = _Run(
        order,
        np.ascontiguousarray(log.upstream, dtype=np.int64),
        np.ascontiguousarray(log.sent, dtype=np.float64),
        levels,
        ~(edges | unsure),
        np.floor(ms + 1e-6),
        np.ceil(ms - 1e-6),
    )
    start = 0.0 if whole_run else LOW_START, 0.0 if whole_run else HIGH_START
    out = _scan(run, k, float(law.fail_timeout), start[0], start[1])
    notes = [
        f"{n - int(out[1])} of {n} arrivals not checked: at the log's edges or within its "
        f"{log.resolution * 1e3:g} ms resolution of another request (their counts unknown)"
    ]
    if not whole_run:
        notes.append(
            "the averages when the log starts are unknown: each upstream's is bounded from "
            "1 ms and from 1,000,000 ms, and the bounds meet within NGINX's rounding (about "
            "10 ms) after some hundred responses (--whole-run if the log holds NGINX's run)"
        )
    if law.header and header is None:
        notes.append(
            "least_time header averages the time to the response header, which the log does "
            "not hold: the check reads each response's whole time ($upstream_response_time), "
            "the same for responses whose body follows the header at once; add "
            "$upstream_header_time to the log_format"
        )
    if log.client_times:
        notes.append("least_time averages the upstream's own times: log $upstream_response_time")
    return Sequence(int(out[0]), int(out[1]), int(edges.sum()), law.schedule, notes)


@kernel(nrt=False, inline=True)
def _bounds(low, high):
    """Least and largest cluster of an average between ``low`` and ``high`` (ms)."""
    if high <= 5000.0:
        return ngx_cluster(low), ngx_cluster(high)
    if low > 5000.0:
        return 5000.0, 5000.0
    return min(ngx_cluster(low), 5000.0), max(ngx_cluster(min(high, 5000.0)), 5000.0)


@kernel(entry=True, label="check-lb's least_time scan")
def _scan(run, k, fail, low_start, high_start):
    """Follow the averages' bounds through the log; count the inconsistent choices."""
    n = run.sent.size
    low = np.full(k, low_start)
    high = np.full(k, high_start)
    last = np.full(k, -1.0)  # second of each upstream's last choice in the log
    eta_low = np.empty(k)
    eta_high = np.empty(k)
    out = np.zeros(2, dtype=np.int64)  # inconsistent, checked
    for e in run.order:
        if e >= n:  # a response completes: the averages take its time
            r = e - n
            u = run.upstream[r]
            low[u] = ngx_avg(low[u], run.ms_low[r])
            high[u] = ngx_avg(high[u], run.ms_high[r])
            continue
        u = run.upstream[e]
        now = math.floor(run.sent[e])
        if run.checked[e]:
            for j in range(k):
                h_min, h_max = 0.0, 64.0
                if last[j] >= 0.0:  # marked at most fail seconds before that choice
                    h_min = ngx_halvings(now - last[j], fail)
                    h_max = ngx_halvings(now - last[j] + fail, fail)
                lo = math.floor(low[j] / 2.0**h_max) if h_max < 64.0 else 0.0
                hi = math.floor(high[j] / 2.0**h_min) if h_min < 64.0 else 0.0
                c_lo, c_hi = _bounds(lo, hi)
                eta_low[j] = c_lo * (1.0 + run.levels[e, j])
                eta_high[j] = c_hi * (1.0 + run.levels[e, j])
            out[1] += 1
            for j in range(k):
                if j != u and eta_high[j] < eta_low[u]:
                    out[0] += 1
                    break
        last[u] = now
    return out
