"""Slow pure-Python mirror of the delay engine, for differential tests.

The same random draws in the same order as :mod:`cloudsched.dispatch.engines.delay.kernel`, with
plain Python bookkeeping: lists for the queues, the busy servers and the I-queues, a dict
per dispatcher of its active requests, a :mod:`heapq` of messages (ties broken by the order
sent), and each server's tasks as a list of the dispatchers that sent them.  The ordered
views are kept as the kernel keeps them (a permutation sorted by value, one swap per level
crossed), because which of the least-loaded servers ``jsq`` takes is read off their order.
Runs are in tasks, open from the first arrival, with one micro-batch width and no merge.
For the same seed it gives bit-identical micro-batch sums and counts, levels joined,
message counts and final state.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from cloudsched.dispatch.delays import DELAY_KINDS, Delays

__all__ = ["MirrorRun", "mirror_delay"]

INFO, JOIN, DELETE = range(3)


@dataclass
class _View:
    """An ordered view: ``val`` and a permutation sorted by it (the kernel's swap rules)."""

    val: list[int]
    perm: list[int] = field(init=False)
    pos: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.perm = sorted(range(len(self.val)), key=lambda s: self.val[s])
        self.pos = [0] * len(self.val)
        for i, s in enumerate(self.perm):
            self.pos[s] = i

    def _start(self, v: int) -> int:
        return sum(1 for x in self.val if x < v)

    def _swap(self, s: int, i: int) -> None:
        other = self.perm[i]
        self.perm[self.pos[s]] = other
        self.pos[other] = self.pos[s]
        self.perm[i] = s
        self.pos[s] = i

    def up(self, s: int) -> None:
        self._swap(s, self._start(self.val[s] + 1) - 1)
        self.val[s] += 1

    def down(self, s: int) -> None:
        self._swap(s, self._start(self.val[s]))
        self.val[s] -= 1

    def set(self, s: int, to: int) -> None:
        while self.val[s] < to:
            self.up(s)
        while self.val[s] > to:
            self.down(s)

    def least(self, x: float) -> int:
        low = self.val[self.perm[0]]
        return self.perm[int(x * self._start(low + 1))]


@dataclass
class MirrorRun:
    """What the mirror measured: per micro-batch sums and counts, levels joined, messages."""

    bsum: np.ndarray
    bcnt: np.ndarray
    joins: np.ndarray
    msg: np.ndarray
    queues: list[int]
    iqueues: list[list[int]]
    board: list[int]


def _erlang(rng: np.random.Generator, j: int) -> float:
    if j > 8:
        return float(rng.standard_gamma(j))
    return sum(float(rng.standard_exponential()) for _ in range(j))


def mirror_delay(
    policy: str,
    n: int,
    m: int,
    load: float,
    d: int,
    replace: bool,
    delays: Delays,
    own: bool,
    tasks: int,
    width: int,
    rng: np.random.Generator,
) -> MirrorRun:
    """Run ``tasks`` arrivals from an empty farm (every server listed in a uniform I-queue).

    ``width``: measured arrivals per micro-batch (the engine's; no merge may happen).
    """
    mean = [getattr(delays, k).mean for k in DELAY_KINDS]
    expo = [getattr(delays, k).exponential for k in DELAY_KINDS]
    iqueues = policy in ("jiq", "jiq-pod")
    reads = policy in ("pod", "jsq", "jiq-pod")
    probes = d if policy in ("pod", "jiq-pod") else 0
    lam_n = load * n
    q = [0] * n
    listed = rng.integers(0, m, size=n) if iqueues else np.zeros(n, np.int64)
    iqe: list[list[int]] = [[] for _ in range(m)]
    edisp, eseq, sseq = [int(k) for k in listed], [0] * n, [0] * n
    if iqueues:
        for s in range(n):
            iqe[edisp[s]].append(s)
    board = _View([0] * n)
    bseq, useq = [0] * n, [0] * n
    own_views = [_View([0] * n) for _ in range(m)] if own else []
    sent_by: list[list[int]] = [[] for _ in range(n)]
    busy: list[int] = []
    chan = [0.0] * n
    heap: list[tuple[float, int, int, int, int, int]] = []
    order_sent = 0
    samp = list(range(n))
    bsum = np.zeros(1024)
    bcnt = np.zeros(1024, np.int64)
    joins = np.zeros((16, 4096))
    msg = np.zeros(4, np.int64)
    now, arrivals = 0.0, 0

    def send(kind: int, s: int, value: int, seq: int) -> bool:
        nonlocal order_sent
        t = now
        if mean[kind] > 0.0:
            t = now + (mean[kind] * float(rng.standard_exponential()) if expo[kind] else mean[kind])
        if kind != INFO:
            if chan[s] >= t and chan[s] > now:
                t = math.nextafter(chan[s], math.inf)
            chan[s] = t
        if t <= now:
            return True
        heapq.heappush(heap, (t, order_sent, kind, s, value, seq))
        order_sent += 1
        return False

    def unlist(s: int) -> None:
        entries = iqe[edisp[s]]
        i = entries.index(s)
        entries[i] = entries[-1]
        entries.pop()

    def listed_now(s: int) -> bool:
        return s in iqe[edisp[s]]

    while arrivals <= tasks:
        rate = lam_n + len(busy)
        step = float(rng.standard_exponential()) / rate
        if heap and heap[0][0] <= now + step:
            t, _, kind, s, value, seq = heapq.heappop(heap)
            now = t
            if kind == INFO and seq > bseq[s]:
                bseq[s] = seq
                board.set(s, value)
            elif kind == JOIN:
                iqe[value].append(s)
                edisp[s], eseq[s] = value, seq
            elif kind == DELETE and listed_now(s) and eseq[s] == seq:
                unlist(s)
            continue
        now += step
        u = float(rng.random()) * rate
        if u < lam_n:
            if arrivals == tasks:
                break  # the arrival that closes the window is not applied
            k = min(int(u / lam_n * m), m - 1)
            taken = -1
            if iqueues and iqe[k]:
                s = iqe[k][-1]
                taken = eseq[s]
                iqe[k].pop()
                if q[s] > 0:
                    msg[3] += 1
            else:
                if policy in ("random", "jiq"):
                    s = int(float(rng.random()) * n)
                elif policy == "jsq":
                    s = (own_views[k] if own else board).least(float(rng.random()))
                else:
                    best, low = -1, 1 << 62
                    for i in range(d):
                        if replace:
                            t_ = int(float(rng.random()) * n)
                        else:
                            j = i + int(float(rng.random()) * (n - i))
                            t_ = samp[j]
                            samp[j], samp[i] = samp[i], t_
                        v = own_views[k].val[t_] if own else board.val[t_]
                        if v < low:
                            best, low = t_, v
                    s = best
                msg[2] += probes
            j0 = q[s]
            if iqueues and j0 == 0 and taken != sseq[s]:
                msg[1] += 1
                seq = sseq[s]
                if send(DELETE, s, 0, seq) and listed_now(s) and eseq[s] == seq:
                    unlist(s)
            b = arrivals // width
            bsum[b] += _erlang(rng, j0 + 1)
            bcnt[b] += 1
            joins[b * 16 // 1024, j0] += 1.0
            q[s] = j0 + 1
            if j0 == 0:
                busy.append(s)
            if own:
                own_views[k].up(s)
                sent_by[s].append(k)
            arrivals += 1
        else:
            s = busy[min(int(u - lam_n), len(busy) - 1)]
            kk = q[s]
            q[s] = kk - 1
            if own:
                own_views[sent_by[s].pop(0)].down(s)
            if kk == 1:
                i = busy.index(s)
                busy[i] = busy[-1]
                busy.pop()
                if iqueues:
                    sseq[s] += 1
                    kd = min(int(float(rng.random()) * m), m - 1)
                    msg[0] += 1
                    if send(JOIN, s, kd, sseq[s]):
                        iqe[kd].append(s)
                        edisp[s], eseq[s] = kd, sseq[s]
        if reads and not own:
            useq[s] += 1
            if send(INFO, s, q[s], useq[s]):
                bseq[s] = useq[s]
                board.set(s, q[s])
    return MirrorRun(bsum, bcnt, joins, msg, q, iqe, board.val)
