"""Envoy's weighted least request on a log: could its EDF schedule make every choice.

With unequal weights (or a host in slow start) Envoy's least request does not sample: it
keeps an earliest-deadline-first schedule (``EdfScheduler::pickAndAdd``,
source/common/upstream/edf_scheduler.h): the host with the earliest deadline is chosen,
the schedule's time becomes that deadline, and the host goes back with the deadline
``time + 1 / weight``, its weight taken at the pick
(``LeastRequestLoadBalancer::hostWeight``,
source/extensions/load_balancing_policies/least_request/least_request_lb.cc):
``weight / (active + 1) ** active_request_bias``, times slow start's factor
``max((in_healthy / window) ** (1 / aggression), min_weight_percent / 100)`` while the
host has been healthy for less than the window (``EdfLoadBalancerBase::
applySlowStartFactor``).  The law is deterministic given the deadlines; a log does not
hold them, but each host's next deadline is its last one plus the increment ``1 / weight``
the log's counts give.

So the test keeps what the log fixes about the deadlines: a *difference-bound matrix* (the
zones of timed automata), ``M[a, b]`` the least upper bound on ``D_a - D_b`` that the
choices so far imply.  A choice of ``p`` says ``D_p <= D_o`` for every other host; it is
*inconsistent* when the matrix already has ``D_o < D_p`` (``M[o, p] < 0``); then ``D_p``
goes back to unknown (no cascade from one bad reading).  The pick then moves ``D_p`` by
the increment, an interval when the log leaves the host's count (``active``) or slow
start's elapsed time unsure.  Every step is exact for what it keeps (the matrix is closed
after each: O(k^2) a choice), so a true EDF log has no inconsistent choice at all.  Kept
out, never guessed: choices the clock cannot order against each other (sent in one logged
time step: they are checked only against hosts outside the step), the window's edges
(picks missing from a rotated log break the sequence) and every host's first pick (a host
joining rebuilds the schedule, ``EdfLoadBalancerBase::refresh``, so the matrix restarts
there).  :func:`cloudsched.testing.edf_reference.edf_feasible` is the slow reference: a linear
program over the deadlines.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched._jit import kernel
from cloudsched.errors import ParameterError

__all__ = [
    "MAX_HOSTS",
    "Sequence",
    "WlrLaw",
    "check_edf",
    "edf_increments",
    "edf_steps",
    "edf_violations",
    "sampled_law",
    "wlr_law",
]


@dataclass(frozen=True)
class WlrLaw:
    """Envoy's least request as configured: per-upstream weights and the options."""

    weights: np.ndarray  # by the log's upstream index
    bias: float  # active_request_bias
    window: float  # slow_start_window, s (0: none)
    aggression: float
    floor: float  # min_weight_percent / 100
    choice_count: int

    @property
    def edf(self) -> bool:
        """Whether Envoy schedules by EDF (weights differ or slow start) rather than P2C."""
        return bool(np.ptp(self.weights) > 0 or self.window > 0)


def wlr_law(weights: str | None, options: Iterable[str] | None, names: tuple[str, ...]) -> WlrLaw:
    """Read ``--weights HOST=W,...`` (others 1, Envoy's default) and ``wlr``'s ``-o`` options."""
    from cloudsched.dispatch.options import options_by_name

    opts = options_by_name("wlr", list(options or ()))
    w = np.ones(len(names))
    for item in (weights or "").split(","):
        if not item.strip():
            continue
        host, _, value = item.strip().rpartition("=")
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if host not in names or not (math.isfinite(x) and 1 <= x <= 2**32 - 1):
            raise ParameterError(
                "weights",
                item.strip(),
                "HOST=W with W a load_balancing_weight in [1, 4294967295] and HOST one of the "
                "log's upstreams: " + ", ".join(names[:8]) + (", ..." if len(names) > 8 else ""),
            )
        w[names.index(host)] = x
    unit = opts["service-time"]  # durations come in mean service times
    return WlrLaw(
        w,
        opts["active-request-bias"],
        opts["slow-start-window"] * unit,
        opts["aggression"],
        opts["min-weight-percent"] / 100,
        int(opts["choice-count"]),
    )


def sampled_law(
    expect: str, weights: str | None, options: Iterable[str] | None, names: tuple[str, ...]
) -> str:
    """Return the sampling law ``expect`` is: wlr with equal weights is Envoy's P2C.

    Refused for wlr's EDF (unequal weights or slow start): no sampling law replays it.
    """
    if expect.strip().lower() != "wlr":
        return expect
    law = wlr_law(weights, options, names)
    if law.edf:
        raise ParameterError(
            "advise",
            "wlr",
            "a sampling law: the replay has no EDF schedule (unequal weights or slow start); "
            "check without --advise",
        )
    return f"pod:{law.choice_count}r"


def _slow_factor(law: WlrLaw, elapsed: np.ndarray) -> np.ndarray:
    """Slow start's factor after ``elapsed`` seconds healthy (1 at or past the window)."""
    if law.window <= 0:
        return np.ones_like(elapsed)
    ramp = np.maximum(elapsed, 1e-3) / law.window
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.maximum(ramp ** (1 / law.aggression), law.floor)
    return np.where(elapsed >= law.window, 1.0, f)


def edf_increments(
    law: WlrLaw, log: Any, chosen_level: np.ndarray, inside: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the increment ``1 / weight`` of each pick as an interval ``(lo, hi)``.

    In log order.  ``chosen_level``: the chosen host's count at each arrival as rebuilt;
    each of that host's requests ending within the log's resolution of the arrival (or
    its ``end_slack`` before it) may or may not have counted, and the requests sent to it
    in the same time step may have counted before it.  Outside ``inside`` (the window's
    edges) requests missing from the log may have counted: no upper bound.  Slow start: a
    host joined at the latest at its first request in the log, so it had been healthy at
    least since then.
    """
    up, sent, end, r = log.upstream, log.sent, log.end, log.resolution
    slack = float(log.end_slack)  # a logged end may still count this long after
    n = up.size
    unsure = np.zeros(n, dtype=np.int64)
    same = np.zeros(n, dtype=np.int64)
    if r > 0 or slack > 0:
        for h in range(len(log.names)):
            mine = np.flatnonzero(up == h)
            ends, sends = np.sort(end[mine]), np.sort(sent[mine])
            s = sent[mine]
            unsure[mine] = np.searchsorted(ends, s + r, "left") - np.searchsorted(
                ends, s - 2 * r - slack, "right"
            )
            unsure[mine] -= (end[mine] > s - 2 * r - slack) & (end[mine] < s + r)  # its own
            same[mine] = np.searchsorted(sends, s, "right") - np.searchsorted(sends, s, "left") - 1
    a_lo = np.maximum(chosen_level - unsure, 0).astype(float)
    a_hi = (chosen_level + unsure + same).astype(float)
    a_hi[~inside] = np.inf
    first = np.full(len(log.names), np.inf)
    np.minimum.at(first, up, sent)
    f_lo = _slow_factor(law, sent - first[up])
    w = law.weights[up]
    with np.errstate(over="ignore"):
        lo = (a_lo + 1) ** law.bias / w
        hi = (a_hi + 1) ** law.bias / (w * f_lo)
    return lo, hi  # bias 0: inf ** 0 is 1, so an unbounded count leaves the increment fixed


def edf_steps(sent: np.ndarray, resolution: float) -> np.ndarray:
    """Return the logged time step of each send (sends in order).

    Sends closer than the resolution share one (the clock cannot order them; chained, so
    a step may span more).
    """
    if sent.size == 0:
        return np.zeros(0, dtype=np.int64)
    step = np.diff(sent)
    if resolution <= 0:
        gap = step > 0
    else:  # within the float rounding of the epoch's seconds, still one step
        gap = step >= max(resolution - 4 * float(np.spacing(np.max(np.abs(sent)))), 0.0)
    return np.concatenate([[0], np.cumsum(gap)]).astype(np.int64)


#: The most upstreams the EDF check takes (its matrix costs hosts squared a pick: 256 hosts
#: take about a minute per million picks).
MAX_HOSTS = 256
#: The matrix counts in whole units of ``mean increment / 2**24`` (int64): floating sums
#: of tied deadlines round to cycles of -1e-16 that each closure compounds (a true EDF log
#: drifts into false departures within a hundred picks); whole units are exact, and each
#: increment is rounded outward (its low end down, its high end up), which only loosens.
UNITS = 2**24
_INF = 2**62  # unknown; any bound past _INF / 4 is treated as unknown too


def edf_violations(
    upstream: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    step: np.ndarray,
    fresh: np.ndarray,
    k: int,
) -> tuple[int, int, np.ndarray]:
    """Check picks (in send order) against an EDF schedule; see the module notes.

    ``step``: the logged time step of each pick (picks of one step are unordered);
    ``fresh``: the matrix restarts before this pick.  Returns the inconsistent picks, the
    picks checked and a mask of the inconsistent ones.
    """
    bad = np.zeros(upstream.size, dtype=np.bool_)
    finite = lo[np.isfinite(lo)]
    unit = (float(np.mean(finite)) if finite.size else 1.0) / UNITS
    with np.errstate(over="ignore", invalid="ignore"):
        lo_u = np.floor(np.asarray(lo, dtype=float) / unit)
        hi_u = np.ceil(np.asarray(hi, dtype=float) / unit)
    cap = float(_INF // 4)
    counts = _zone(
        np.ascontiguousarray(upstream, dtype=np.int64),
        np.where(lo_u < cap, lo_u, cap).astype(np.int64),
        np.where(hi_u < cap, hi_u, _INF).astype(np.int64),
        np.ascontiguousarray(step, dtype=np.int64),
        np.ascontiguousarray(fresh, dtype=np.bool_),
        k,
        bad,
    )
    return int(counts[0]), int(counts[1]), bad


@kernel(entry=True, label="check-lb's Envoy EDF check")
def _zone(up, lo, hi, step, fresh, k, bad):
    """Keep the difference-bound matrix of the hosts' deadlines, pick by pick (units)."""
    inf = _INF
    cap = _INF // 4
    m = np.full((k, k), inf, dtype=np.int64)
    for a in range(k):
        m[a, a] = 0
    row = np.empty(k, dtype=np.int64)
    member = np.zeros(k, dtype=np.bool_)
    out = np.zeros(2, dtype=np.int64)  # inconsistent, checked
    n = up.size
    i = 0
    while i < n:
        j = i
        while j + 1 < n and step[j + 1] == step[i]:
            j += 1
        for q in range(i, j + 1):
            member[up[q]] = True
        for q in range(i, j + 1):
            p = up[q]
            if fresh[q]:
                m[:, :] = inf
                for a in range(k):
                    m[a, a] = 0
            # D_p <= D_o for every host o outside this time step
            for b in range(k):
                row[b] = m[p, b]
            others = False
            for o in range(k):
                if not member[o]:
                    others = True
                    for b in range(k):
                        if m[o, b] < row[b]:
                            row[b] = m[o, b]
            if others:
                out[1] += 0 if fresh[q] else 1
                if row[p] < 0:  # never after a restart: the matrix is empty
                    out[0] += 1
                    bad[q] = True
                    for b in range(k):  # forget D_p
                        m[p, b] = inf
                        m[b, p] = inf
                    m[p, p] = 0
                else:
                    for b in range(k):
                        m[p, b] = row[b]
                    m[p, p] = 0
                    for a in range(k):
                        via = m[a, p]
                        if via < cap:
                            for b in range(k):
                                if m[p, b] < cap and via + m[p, b] < m[a, b]:
                                    m[a, b] = via + m[p, b]
            # the pick moves D_p on by its increment
            for b in range(k):
                if b != p:
                    if m[p, b] < cap and hi[q] < cap:
                        m[p, b] += hi[q]
                    else:
                        m[p, b] = inf
                    if m[b, p] < cap:
                        m[b, p] -= lo[q]
                    if m[p, b] >= cap:
                        m[p, b] = inf
                    if m[b, p] >= cap:
                        m[b, p] = inf
        for q in range(i, j + 1):
            member[up[q]] = False
        i = j + 1
    return out


@dataclass
class Sequence:
    """A law of the sequence checked on a log: choices it cannot make, of those checked."""

    inconsistent: int
    checked: int
    edges: int  # arrivals at the window's edges, left out
    schedule: str  # what was checked, for the verdict
    notes: list[str]


def check_edf(log: Any, law: WlrLaw, whole_run: bool, levels: np.ndarray | None = None) -> Sequence:
    """Check a log's picks against ``law``'s EDF schedule.

    ``levels``: the shared counts at every arrival, when already rebuilt.

    One schedule for the log (Envoy keeps one per worker thread: a log of several is read
    as one, and departs).
    """
    from cloudsched.experiments.checklb_counts import levels_at_arrivals, window_edges

    order = np.argsort(log.sent, kind="stable")
    k = len(log.names)
    if k > MAX_HOSTS:
        raise ParameterError(
            "expect",
            "wlr",
            f"a log of at most {MAX_HOSTS} upstreams for Envoy's EDF schedule (this one has "
            f"{k}; the check costs hosts squared a pick): check one subset's log at a time",
        )
    if levels is None:
        levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    chosen = levels[np.arange(log.upstream.size), log.upstream]
    inside = np.ones(log.upstream.size, dtype=bool)
    if not whole_run:
        inside = ~window_edges(log.sent, log.end, log.resolution, log.end_slack)
    lo, hi = edf_increments(law, log, chosen, inside)
    up = log.upstream[order]
    keep = inside[order]  # picks missing from a window break the sequence at its edges
    fresh = np.zeros(up.size, dtype=bool)
    seen = np.zeros(k, dtype=bool)
    for q in np.flatnonzero(keep):
        if not seen[up[q]]:
            seen[up[q]] = fresh[q] = True
    steps = edf_steps(log.sent[order], log.resolution)
    bad, checked, _ = edf_violations(
        up[keep], lo[order][keep], hi[order][keep], steps[keep], fresh[keep], k
    )
    edges = int((~inside).sum())
    notes = []
    if edges:
        notes.append(
            f"{edges} picks at the log's edges left out: a window misses picks there, and the "
            "schedule is a sequence (--whole-run if the log holds the proxy's run)"
        )
    notes.append(
        f"{up.size - edges - checked} picks not checked: the first of each host (a host "
        "joining rebuilds Envoy's schedule) and those whose time step holds every other host"
    )
    if bad:
        notes.append(
            "Envoy keeps one schedule per worker thread (--concurrency): a log of several "
            "threads interleaves schedules and departs; a join or a weight change rebuilds "
            "the schedule, and the picks just before a new host's first one may depart"
        )
    return Sequence(bad, checked, edges, f"an EDF schedule ({_configured(law, log.names)})", notes)


def _configured(law: WlrLaw, names: tuple[str, ...]) -> str:
    """Return the configuration checked, for the verdict."""
    slow = (
        f", slow start {law.window:g} s (aggression {law.aggression:g}, floor {law.floor:.0%})"
        if law.window > 0
        else ""
    )
    w = ", ".join(f"{name}={x:g}" for name, x in zip(names, law.weights, strict=True))
    text = f"weights {w}; active_request_bias {law.bias:g}{slow}"
    if len(text) > 160:
        lo, hi = law.weights.min(), law.weights.max()
        text = f"{len(law.weights)} weights {lo:g} to {hi:g}; bias {law.bias:g}{slow}"
    return text
