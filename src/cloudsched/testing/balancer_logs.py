"""Access logs of a balancer whose policy is known, for testing ``check-lb``.

:func:`balancer_log` simulates one proxy in front of ``k`` single-server FCFS upstreams
(exponential service, Poisson arrivals), choosing each upstream by ``policy`` from the
outstanding counts it sees (its own requests), and returns the lines it would log: in the
NGINX format :data:`~cloudsched.dispatch.workload.upstreams.NGINX_UPSTREAM_FORMAT` with
microsecond times (no two events share a timestamp), or in Envoy's default text format or
a JSON format (``start_time``, ``duration``, ``upstream_host``) with Envoy's millisecond
resolution: ``%START_TIME%`` and ``%DURATION%`` are both truncated to the millisecond, as
Envoy formats them.  Written from the policy descriptions, independently of
:mod:`cloudsched.experiments.checklb`.

Production's logs, too: ``window`` keeps the lines written in a share of the run (a rotated
log: lines are written when requests end); ``client_time`` adds a time after the upstream
is done before the line is written (NGINX's ``$request_time`` and Envoy's ``DURATION``
include sending the response to the client; the upstream is free, and counts one less, at
its end), and the NGINX lines then carry ``$upstream_response_time``, the Envoy JSON lines
``us_tx_beg`` and ``us_rx_end``; ``bias`` makes the load-aware policies draw
upstream 0 that many times as often as each other (Envoy's P2C draws from a host list
in which a host may appear more than once).

``wlr`` is Envoy's least request with unequal ``weights``, as Envoy's source runs it
(``EdfScheduler::pickAndAdd`` and ``LeastRequestLoadBalancer::hostWeight``): the host
with the earliest deadline (ties: the one added first), added back at the current time
plus ``1 / weight``, with weight ``w / (active + 1) ** active_bias`` times slow start's
factor ``max((elapsed / window) ** (1 / aggression), min_percent / 100)`` while the
host has been in for less than the window.  ``joins`` maps an upstream to the time (from
the run's start) it joins; every join rebuilds the schedule (``EdfLoadBalancerBase::
refresh``: every host added at its weight, then a random number of picks below the
host count).

``least-time`` is NGINX's ``least_time header`` (without ``inflight``), as
ngx_http_upstream_least_time_module computes it: each upstream's estimate is its average
response time (an EWMA of weight 0.05 in whole milliseconds, rounded, updated when a
response completes; halved once per ``fail_timeout + 1`` seconds since it was last
checked), put in the next 20 ms cluster (5000 ms at most), times one plus its
connections; the least wins, ties by smooth weighted round robin among the tied (equal
weights), and a choice marks the upstream checked when ``fail_timeout`` seconds passed.

``ewma`` is tower's (Linkerd's) peak EWMA behind power of two choices, as
tower/src/load/peak_ewma.rs and tower/src/balance/p2c/service.rs run it: two distinct
upstreams drawn, each one's cost read (its estimate decays toward 0 by
``exp(-elapsed / decay)`` and its stamp moves to now) times its requests in flight plus
one, the first drawn kept on a tie; a response sets the estimate to its time if larger,
else blends it in with weight ``1 - exp(-elapsed / decay)``; every estimate starts at
``default_rtt``.
"""

from __future__ import annotations

import heapq
import json
import math
from datetime import UTC, datetime

import numpy as np

__all__ = ["balancer_log"]


def _choose(
    policy: str, counts: list[int], rng: np.random.Generator, state: list[int], bias: float
) -> int:
    k = len(counts)
    if policy == "random":
        return int(rng.integers(k))
    if policy == "round-robin":
        state[0] = (state[0] + 1) % k
        return state[0]
    if policy == "least-request":
        low = min(counts)
        ties = [u for u in range(k) if counts[u] == low]
        return ties[int(rng.integers(len(ties)))]
    if policy == "extremes":  # a planted wrong policy: whose mean transform under random
        # is near 0.5 (the least loaded 60% of the time, the most loaded otherwise)
        pick = min(counts) if rng.random() < 0.6 else max(counts)
        ties = [u for u in range(k) if counts[u] == pick]
        return ties[int(rng.integers(len(ties)))]
    if policy == "skewed":  # random, but the first upstream drawn twice as often
        u = int(rng.integers(k + 1))
        return 0 if u == k else u
    if policy == "jiq":  # one dispatcher: an idle upstream if it knows one, else any
        idle = [u for u in range(k) if counts[u] == 0]
        return idle[int(rng.integers(len(idle)))] if idle else int(rng.integers(k))
    d = int(policy.split(":")[1].rstrip("r"))
    if bias != 1.0:  # upstream 0 drawn bias times as often as each other
        weights = np.ones(k)
        weights[0] = bias
        weights /= weights.sum()
        if policy.endswith("r"):
            sample = [int(x) for x in rng.choice(k, size=d, p=weights)]
        else:
            sample = [int(x) for x in rng.choice(k, size=d, replace=False, p=weights)]
    elif policy.endswith("r"):
        sample = [int(x) for x in rng.integers(k, size=d)]
    else:
        sample = [int(x) for x in rng.permutation(k)[:d]]
    return min(sample, key=lambda u: counts[u])  # the first least loaded in sample order


def _nginx_line(
    start: float, done: float, written: float, u: int, client_time: float, ms: bool
) -> str:
    if ms:  # NGINX's cached millisecond clock: every time truncated, durations differences
        start, done, written = (math.floor(x * 1000) / 1000 for x in (start, done, written))
    digits = 3 if ms else 6
    line = f"{written:.{digits}f} {written - start:.{digits}f} 10.0.0.{u + 1}:8080 200"
    return line + (f" {done - start:.{digits}f}" if client_time > 0 or ms else "")


def _haproxy_line(start: float, end: float, u: int) -> str:
    ms = int(start * 1000)  # HAProxy's accept date and timers, in whole milliseconds
    stamp = datetime.fromtimestamp(ms / 1000, UTC)
    date = stamp.strftime("%d/%b/%Y:%H:%M:%S") + f".{ms % 1000:03d}"
    ta = int(end * 1000) - ms
    return (
        f"{stamp:%b %e %H:%M:%S} lb haproxy[7]: 10.0.0.99:{40000 + ms % 20000} [{date}] fe "
        f'be/s{u + 1} 0/0/0/{ta}/{ta} 200 512 - - ---- 1/1/0/0/0 0/0 "GET /api HTTP/1.1"'
    )


def _envoy_line(start: float, end: float, u: int, fmt: str, done: float | None = None) -> str:
    ms = int(start * 1000)  # Envoy truncates both to the millisecond
    stamp = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    duration = int((end - start) * 1000)
    host = f"10.0.0.{u + 1}:8080"
    if fmt == "envoy-json":
        line = {"start_time": stamp, "method": "GET", "duration": duration, "upstream_host": host}
        if done is not None:  # %COMMON_DURATION(DS_RX_BEG:US_TX_BEG / US_RX_END:ms)%
            line |= {"us_tx_beg": 0, "us_rx_end": int((done - start) * 1000)}
        return json.dumps(line)
    return (
        f'[{stamp}] "GET /api HTTP/1.1" 200 - 0 512 {duration} {max(duration - 1, 0)} "-" '
        f'"curl/8.5.0" "{u:08x}-{ms % 9973:04x}" "api.example.com" "{host}"'
    )


class _Edf:
    """Envoy's EDF schedule over the upstreams in: deadline, order added, upstream."""

    def __init__(
        self,
        weights: list[float],
        bias: float,
        slow_start: tuple[float, float, float] | None,
        joined: list[float],
        rng: np.random.Generator,
    ) -> None:
        self.weights, self.bias, self.slow, self.joined = weights, bias, slow_start, joined
        self.rng = rng
        self.heap: list[tuple[float, int, int]] = []
        self.now, self.order = 0.0, 0

    def weight(self, u: int, active: int, t: float) -> float:
        w = self.weights[u] / (active + 1) ** self.bias
        if self.slow is not None:
            window, aggression, floor = self.slow
            elapsed = t - self.joined[u]
            if elapsed < window:
                factor = max(elapsed, 1e-3) / window
                w *= max(factor ** (1 / aggression), floor / 100)
        return w

    def add(self, u: int, weight: float) -> None:
        heapq.heappush(self.heap, (self.now + 1 / weight, self.order, u))
        self.order += 1

    def rebuild(self, present: list[int], counts: list[int], t: float) -> None:
        self.heap, self.now = [], 0.0
        for u in present:
            self.add(u, self.weight(u, counts[u], t))
        for _ in range(int(self.rng.integers(len(present)))):
            self.pick(counts, t)

    def pick(self, counts: list[int], t: float) -> int:
        self.now, _, u = heapq.heappop(self.heap)
        self.add(u, self.weight(u, counts[u], t))
        return u


class _LeastTime:
    """NGINX least_time's state: average (ms), last checked (s), round-robin weight."""

    def __init__(self, k: int, fail_timeout: int) -> None:
        self.avg, self.checked, self.current = [0.0] * k, [0.0] * k, [0.0] * k
        self.fail = fail_timeout

    def done(self, u: int, ms: float) -> None:
        old = self.avg[u]
        self.avg[u] = ms if old == 0 else math.floor(0.5 + ms * 0.05 + old * 0.95)

    def estimate(self, u: int, conns: int, now_s: float) -> float:
        rt = self.avg[u]
        elapsed = now_s - self.checked[u]
        if elapsed > self.fail:
            shift = math.floor(elapsed / (self.fail + 1))
            rt = math.floor(rt / 2.0**shift) if shift < 64 else 0.0
        rt = 5000.0 if rt > 5000 else rt + 20 - rt % 20
        return rt * (1 + conns)

    def choose(self, counts: list[int], t: float) -> int:
        now_s = math.floor(t)
        eta = [self.estimate(u, counts[u], now_s) for u in range(len(counts))]
        best = min(range(len(counts)), key=lambda u: (eta[u], u))
        tied = [u for u in range(best, len(counts)) if eta[u] == eta[best]]
        if len(tied) > 1:  # smooth weighted round robin among the tied, from the first
            for u in tied:
                self.current[u] += 1
                if self.current[u] > self.current[best]:
                    best = u
            self.current[best] -= len(tied)
        if now_s - self.checked[best] > self.fail:
            self.checked[best] = now_s
        return best


class _PeakEwma:
    """tower's peak EWMA per upstream: estimate (s) and its stamp."""

    def __init__(self, k: int, decay: float, default_rtt: float, start: float) -> None:
        self.est, self.stamp = [default_rtt] * k, [start] * k
        self.decay = decay

    def cost(self, u: int, in_flight: int, t: float) -> float:
        self.est[u] *= math.exp(-(t - self.stamp[u]) / self.decay)
        self.stamp[u] = t
        return self.est[u] * (in_flight + 1)

    def done(self, u: int, rtt: float, t: float) -> None:
        if self.est[u] < rtt:
            self.est[u] = rtt
        else:
            w = math.exp(-(t - self.stamp[u]) / self.decay)
            self.est[u] = self.est[u] * w + rtt * (1 - w)
        self.stamp[u] = t

    def choose(self, counts: list[int], t: float, rng: np.random.Generator) -> int:
        a, b = (int(x) for x in rng.choice(len(counts), size=2, replace=False))
        cost_a, cost_b = self.cost(a, counts[a], t), self.cost(b, counts[b], t)
        return a if cost_a <= cost_b else b


def balancer_log(
    policy: str,
    *,
    k: int,
    load: float,
    requests: int,
    seed: int,
    mean_service: float = 0.1,
    fmt: str = "nginx",
    window: tuple[float, float] | None = None,
    client_time: float = 0.0,
    bias: float = 1.0,
    milliseconds: bool = False,
    workers: int = 1,
    weights: list[float] | None = None,
    active_bias: float = 1.0,
    slow_start: tuple[float, float, float] | None = None,
    joins: dict[int, float] | None = None,
    fail_timeout: int = 10,
    speeds: list[float] | None = None,
    decay: float = 10.0,
    default_rtt: float = 0.03,
    header_share: float | None = None,
) -> list[str]:
    """Return the log lines of ``requests`` requests balanced by ``policy`` over ``k``.

    ``fmt``: ``nginx`` (exact times), ``envoy``, ``envoy-json`` or ``haproxy`` (``option
    httplog``, with a syslog prefix; milliseconds).
    ``window``: keep the lines written between these shares of the run's lines (by the time
    they were written); ``client_time``: mean (exponential) of the time after the upstream
    is done until the line is written; ``bias``: see the module notes; ``milliseconds``:
    NGINX's times as NGINX writes them, from its millisecond clock (``$msec`` truncated,
    the durations differences of truncated times), else exact to the microsecond;
    ``workers``: NGINX worker processes without a shared ``zone``, each request to a
    uniform one, each counting its own requests (the lines end with ``$pid``, after
    ``$upstream_response_time``); ``weights``, ``active_bias``, ``slow_start`` (window,
    aggression, min percent) and ``joins``: ``wlr``'s, see the module notes;
    ``fail_timeout`` (whole seconds): ``least-time``'s; ``decay`` and ``default_rtt``
    (s): ``ewma``'s; ``header_share``: least_time ``header``: the response header comes at
    this share of the upstream's time, NGINX averages the time to it, and the NGINX lines
    end with ``$upstream_header_time`` (None: the whole time, no such field); ``speeds``:
    each upstream's speed (its mean service time is ``mean_service / speed``; default 1).
    """
    rng = np.random.default_rng(seed)
    joined = [-math.inf] * k  # in long before the run, unless it joins in it
    for u, when in (joins or {}).items():
        joined[u] = when
    edf = _Edf(weights or [1.0] * k, active_bias, slow_start, joined, rng)
    present: list[int] = []
    lt = _LeastTime(k, fail_timeout)
    peak = _PeakEwma(k, decay, default_rtt, 1.7e9)
    speed = speeds or [1.0] * k
    counts = [[0] * k for _ in range(workers)]
    free_at = [0.0] * k  # when each upstream's FCFS queue empties
    ends: list[tuple[float, int, int, float]] = []
    state = [-1]
    t = 1.7e9
    lines: list[tuple[float, str]] = []
    for _ in range(requests):
        t += rng.exponential(mean_service / (load * k))
        while ends and ends[0][0] <= t:
            done_at, gone, by, began = heapq.heappop(ends)
            counts[by][gone] -= 1
            seen = done_at if header_share is None else began + header_share * (done_at - began)
            lt.done(gone, math.floor(seen * 1000) - math.floor(began * 1000))
            peak.done(gone, done_at - began, done_at)
        w = int(rng.integers(workers)) if workers > 1 else 0
        if policy == "wlr":
            now = [u for u in range(k) if joined[u] <= t - 1.7e9]
            if now != present:  # a host joined: the schedule is rebuilt
                present = now
                edf.rebuild(present, counts[w], t - 1.7e9)
            u = edf.pick(counts[w], t - 1.7e9)
        elif policy == "least-time":
            u = lt.choose(counts[w], t)
        elif policy == "ewma":
            u = peak.choose(counts[w], t, rng)
        else:
            u = _choose(policy, counts[w], rng, state, bias)
        done = max(t, free_at[u]) + rng.exponential(mean_service / speed[u])
        free_at[u] = done
        counts[w][u] += 1
        heapq.heappush(ends, (done, u, w, t))
        written = done + (rng.exponential(client_time) if client_time > 0 else 0.0)
        if fmt == "nginx" and workers > 1:
            line = _nginx_line(t, done, written, u, 1.0, milliseconds)
            lines.append((written, f"{line} {4000 + w}"))
        elif fmt == "nginx":
            line = _nginx_line(t, done, written, u, client_time, milliseconds)
            if header_share is not None:  # $upstream_header_time, from NGINX's ms clock
                head = math.floor((t + header_share * (done - t)) * 1000) - math.floor(t * 1000)
                line += f" {head / 1000:.3f}"
            lines.append((written, line))
        elif fmt == "haproxy":
            lines.append((written, _haproxy_line(t, written, u)))
        else:
            upstream_end = done if client_time > 0 else None
            lines.append((written, _envoy_line(t, written, u, fmt, upstream_end)))
    lines.sort(key=lambda line: line[0])  # written when each request ends
    if window is not None:
        lines = lines[int(window[0] * len(lines)) : int(window[1] * len(lines))]
    return [text for _, text in lines]
