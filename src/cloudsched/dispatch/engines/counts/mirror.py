"""Slow pure-Python mirror of the occupancy-count engine, for differential tests.

The same random draws in the same order as :mod:`cloudsched.dispatch.engines.counts.kernel`, with
independent bookkeeping: the farm is a plain list of N queue lengths, and the number of
servers holding at least ``k`` tasks is counted from that list at every event (not kept);
time averages are accumulated over every level at every event; micro-batch sums, counts,
snapshots and the levels joined per histogram segment are rebuilt at the end from
per-arrival records, with the final micro-batch width.  For the same seed it gives
bit-identical micro-batch sums and counts, levels joined and final state; time averages agree
to rounding.
"""

from __future__ import annotations

import math

import numpy as np

from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RunSpec, initial_width

__all__ = ["mirror_counts"]


def _at_least(queues: list[int], k: int) -> int:
    return sum(1 for q in queues if q >= k)


def _level(queues: list[int], policy: str, d: int, replace: bool, v: float) -> int:
    n = len(queues)
    k = 0
    if policy == "jsq":
        return min(queues)
    if replace or d == 1:
        w = n * v if d == 1 else n * math.sqrt(v) if d == 2 else n * v ** (1.0 / d)
        while _at_least(queues, k + 1) >= w:
            k += 1
        return k
    while True:
        c = _at_least(queues, k + 1)
        p = c * (c - 1.0) * (1.0 / (n * (n - 1.0))) if d == 2 else _all_among(c, n, d)
        if p < v or p <= 0.0:
            return k
        k += 1


def _all_among(count: float, total: float, d: int) -> float:
    """Return the chance that d distinct draws from ``total`` all fall among ``count``."""
    p = 1.0
    for i in range(d):
        p *= (count - i) / (total - i)
        if p <= 0.0:
            return 0.0
    return p


def _erlang(rng: np.random.Generator, j: int) -> float:
    if j <= 8:
        rt = 0.0
        for _ in range(j):
            rt += float(rng.standard_exponential())
        return rt
    return float(rng.standard_gamma(j))


class _IQueues:
    """Each dispatcher's I-queue size (jiq, jiq-pod, jiq-sq).

    The kernel reads a dispatcher's size class off a uniform over the sizes in increasing
    order, and a listed entry's off a uniform over the entries grouped the same way: here the
    same uniform indexes the sorted list of dispatchers (or of entries), and the dispatcher
    found there changes.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = list(sizes)

    def dispatcher(self, x: float) -> int:
        order = sorted(range(len(self.sizes)), key=lambda i: (self.sizes[i], i))
        return order[int(x)]

    def entry(self, x: float) -> int:
        owners = [
            i
            for i in sorted(range(len(self.sizes)), key=lambda i: (self.sizes[i], i))
            for _ in range(self.sizes[i])
        ]
        return owners[int(x)]

    def shortest(self, d: int, v: float) -> int:
        """Return the dispatcher of the shortest of d distinct uniform I-queues (jiq-sq)."""
        m = len(self.sizes)
        c = 0
        while True:
            p = _all_among(sum(1 for s in self.sizes if s >= c + 1), m, d)
            if p < v or p <= 0.0:
                break
            c += 1
        return self.sizes.index(c)

    def take(self, x: float) -> bool:
        """Give the arrival's dispatcher (read off ``x``) one of its idle servers, if any."""
        owner = self.dispatcher(x)
        if self.sizes[owner] == 0:
            return False
        self.sizes[owner] -= 1
        return True

    def join(self, policy: str, d: int, rng: np.random.Generator) -> int:
        """List a server that empties (jiq-sq: the shortest of d); return the probes sent."""
        if policy == "jiq-sq":
            self.sizes[self.shortest(d, 1.0 - float(rng.random()))] += 1
            return d
        self.sizes[self.dispatcher(float(rng.random()) * len(self.sizes))] += 1
        return 0

    def empty(self) -> int:
        return sum(1 for v in self.sizes if v == 0)


def _batches(
    spec: RunSpec, records: list[tuple[float, int]], classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Return micro-batch sums and counts, levels joined per segment, and the final width.

    The levels joined are kept per class too: a record's level is ``k + 64 c``.
    """
    measured = len(records)
    width = initial_width(spec)
    while measured > width * spec.micro:
        width *= 2
    used = -(-measured // width)
    bsum, bcnt = np.zeros(used), np.zeros(used, np.int64)
    seg_batches = spec.micro // K.H_SEGMENTS
    joins = np.zeros((K.H_SEGMENTS, classes, 64))
    for order, (rt, key) in enumerate(records):
        b = order // width
        bsum[b] += rt
        bcnt[b] += 1
        c, k = divmod(key, 64)
        joins[b // seg_batches, c, k] += 1.0
    return bsum, bcnt, joins, width


def _speed_class(
    queues: list[int], cls: list[int], speed: list[float], w: float
) -> tuple[int, float]:
    """Class of a departure read off ``w``, and ``w`` within that class (kernel's order)."""
    last = len(speed) - 1
    busy = [
        sum(1 for q, c in zip(queues, cls, strict=True) if q >= 1 and c == k)
        for k in range(len(speed))
    ]
    c, before = 0, 0.0
    while c < last:
        upto = before + speed[c] * busy[c]
        if w < upto and busy[c] > 0:
            break
        before = upto
        c += 1
    while busy[c] <= 0:
        c -= 1
    return c, (w - before) / speed[c]


def _class_at(queues: list[int], cls: list[int], classes: int, k: int, x: float) -> int:
    """Return the class of the server an arrival joins at level ``k``.

    ``x`` is a uniform times the servers at level ``k``; classes are summed in order, as
    the kernel sums them.
    """
    at = [
        sum(1 for q, c in zip(queues, cls, strict=True) if q == k and c == j)
        for j in range(classes)
    ]
    c, acc = 0, 0.0
    while c < classes - 1:
        acc += at[c]
        if x < acc:
            break
        c += 1
    while at[c] <= 0:
        c -= 1
    return c


def mirror_counts(
    spec: RunSpec,
    rng: np.random.Generator,
    initial: list[int] | None = None,
    iqueues: list[int] | None = None,
    speeds: list[float] | None = None,
) -> dict[str, object]:
    """Run ``spec`` (fixed length, in tasks or in time) from ``initial`` queue lengths.

    ``iqueues``: each dispatcher's I-queue size at time 0 (jiq, jiq-pod; they must list the
    idle servers); ``speeds``: each server's speed (random, pod, jsq; an empty start).
    Returns ``bsum``, ``bcnt``, ``joins`` (``(H_SEGMENTS, levels)``, with speeds
    ``(H_SEGMENTS, classes, levels)``), ``width``, ``queues`` (final, sorted), ``iqueues``
    (final sizes, sorted), ``tail_area``, ``p0_area``, ``t_warm``, ``t_end``, ``events``
    and ``messages`` (join, delete, probe); with speeds also ``class_queues`` (each class's
    final queue lengths, sorted).
    """
    n, policy = spec.n, str(spec.policy)
    speed = sorted(set(speeds)) if speeds is not None else [1.0]
    cls = [speed.index(x) for x in speeds] if speeds is not None else [0] * n
    d = 1 if policy in ("random", "jiq", "jiq-sq") else spec.d
    queues = list(initial) if initial is not None else [0] * n
    jiq = policy in ("jiq", "jiq-pod", "jiq-sq")
    iq = _IQueues(list(iqueues) if iqueues is not None else [n // spec.m] * spec.m)
    if jiq:
        assert sum(iq.sizes) == queues.count(0), "every idle server is listed once"
    p0_area = 0.0
    messages = [0, 0, 0]
    lam_n = spec.rate * n
    timed = spec.end_tasks < 0
    now, arrivals, events = 0.0, 0, 0
    phase = K.WARMUP
    t_warm = t_end = 0.0
    area = np.zeros(64)
    records: list[tuple[float, int]] = []  # per measured arrival: response time, level

    def accumulate(t0: float, t1: float) -> None:
        nonlocal p0_area
        for k in range(1, max(queues) + 1):
            area[k] += _at_least(queues, k) * (t1 - t0)
        area[0] += n * (t1 - t0)
        p0_area += (iq.empty() if jiq else spec.m) * (t1 - t0)

    while phase != K.DRAIN:
        busy = 0.0
        for c in range(len(speed)):  # in class order, as the kernel sums
            busy += speed[c] * sum(1 for q, j in zip(queues, cls, strict=True) if q >= 1 and j == c)
        rate = lam_n + busy
        step = float(rng.standard_exponential()) / rate
        u = float(rng.random()) * rate
        is_arrival = u < lam_n
        t_next = now + step
        if phase == K.WARMUP and timed and t_next >= spec.t_warm:
            phase, t_warm = K.MEASURE, spec.t_warm
        elif phase == K.WARMUP and not timed and is_arrival and arrivals == spec.warm_tasks:
            phase, t_warm = K.MEASURE, t_next
        if phase == K.MEASURE:
            closes = (timed and t_next >= spec.t_end) or (
                not timed and is_arrival and arrivals == spec.end_tasks
            )
            if closes:
                t_end = spec.t_end if timed else t_next
                accumulate(max(now, t_warm), t_end)
                events += 1
                break
            accumulate(max(now, t_warm), t_next)
        now = t_next
        events += 1
        measuring = phase == K.MEASURE
        if is_arrival:
            took = jiq and iq.take(u / lam_n * spec.m)
            k = 0
            if not took:
                v = 1.0 if policy == "jsq" else 1.0 - float(rng.random())  # jsq draws nothing
                k = _level(queues, policy, d, spec.replace, v)
                messages[2] += d if measuring and policy in ("pod", "jiq-pod") else 0
                if jiq and k == 0:  # a delete request for the idle server chosen
                    iq.sizes[iq.entry(float(rng.random()) * queues.count(0))] -= 1
                    messages[1] += measuring
            c = 0
            if len(speed) > 1:
                x = float(rng.random()) * sum(1 for q in queues if q == k)
                c = _class_at(queues, cls, len(speed), k, x)
            if measuring:
                records.append((_erlang(rng, k + 1) / speed[c], k + 64 * c))
            # any server of that level and class: they are exchangeable
            i = next(i for i in range(n) if queues[i] == k and cls[i] == c)
            queues[i] += 1
            arrivals += 1
        else:
            c, w = _speed_class(queues, cls, speed, u - lam_n)
            mine = [q for q, j in zip(queues, cls, strict=True) if j == c]
            k = 1
            while _at_least(mine, k + 1) > w:
                k += 1
            queues[next(i for i in range(n) if queues[i] == k and cls[i] == c)] -= 1
            if jiq and k == 1:  # idle: it joins an I-queue
                probes = iq.join(policy, spec.d, rng)
                messages[0] += measuring
                messages[2] += probes * measuring
    bsum, bcnt, joins, width = _batches(spec, records, len(speed))
    if speeds is None:
        joins = joins[:, 0, :]
    return {
        "bsum": bsum,
        "bcnt": bcnt,
        "joins": joins,
        "width": width,
        "class_queues": [
            sorted(q for q, j in zip(queues, cls, strict=True) if j == c) for c in range(len(speed))
        ],
        "queues": sorted(queues),
        "iqueues": sorted(iq.sizes),
        "tail_area": area,
        "p0_area": p0_area,
        "t_warm": t_warm,
        "t_end": t_end,
        "events": events,
        "messages": messages,
    }
