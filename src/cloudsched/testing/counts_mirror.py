"""Slow pure-Python mirror of the occupancy-count engine, for differential tests.

The same random draws in the same order as :mod:`cloudsched.dispatch._kernel_counts`, with
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

from cloudsched.dispatch import state as K
from cloudsched.dispatch.replication import RunSpec, initial_width

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
        if d == 2:
            p = c * (c - 1.0) * (1.0 / (n * (n - 1.0)))
        else:
            p = 1.0
            for i in range(d):
                p *= (c - i) / (n - i)
                if p <= 0.0:
                    break
        if p < v or p <= 0.0:
            return k
        k += 1


def _erlang(rng: np.random.Generator, j: int) -> float:
    if j <= 8:
        rt = 0.0
        for _ in range(j):
            rt += float(rng.standard_exponential())
        return rt
    return float(rng.standard_gamma(j))


def mirror_counts(spec: RunSpec, rng: np.random.Generator,
                  initial: list[int] | None = None) -> dict[str, object]:  # fmt: skip
    """Run ``spec`` (fixed length, in tasks or in time) from ``initial`` queue lengths.

    Returns ``bsum``, ``bcnt``, ``joins`` (``(H_SEGMENTS, levels)``), ``width``, ``queues``
    (final, sorted), ``tail_area``, ``t_warm``, ``t_end``, ``events`` and ``probes``.
    """
    n, policy = spec.n, str(spec.policy)
    d = 1 if policy == "random" else spec.d
    queues = list(initial) if initial is not None else [0] * n
    lam_n = spec.rate * n
    timed = spec.end_tasks < 0
    now, arrivals, events = 0.0, 0, 0
    phase = K.WARMUP
    t_warm = t_end = 0.0
    area = np.zeros(64)
    records: list[tuple[float, int]] = []  # per measured arrival: response time, level
    probes = 0

    def accumulate(t0: float, t1: float) -> None:
        for k in range(1, max(queues) + 1):
            area[k] += _at_least(queues, k) * (t1 - t0)
        area[0] += n * (t1 - t0)

    while phase != K.DRAIN:
        busy = _at_least(queues, 1)
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
                not timed and is_arrival and arrivals == spec.end_tasks)  # fmt: skip
            if closes:
                t_end = spec.t_end if timed else t_next
                accumulate(max(now, t_warm), t_end)
                events += 1
                break
            accumulate(max(now, t_warm), t_next)
        now = t_next
        events += 1
        if is_arrival:
            v = 1.0 if policy == "jsq" else 1.0 - float(rng.random())  # jsq draws nothing
            k = _level(queues, policy, d, spec.replace, v)
            if phase == K.MEASURE:
                records.append((_erlang(rng, k + 1), k))
                probes += d if policy == "pod" else 0
            i = queues.index(k)  # any server of that level: they are exchangeable
            queues[i] += 1
            arrivals += 1
        else:
            w = u - lam_n
            k = 1
            while _at_least(queues, k + 1) > w:
                k += 1
            queues[queues.index(k)] -= 1
    measured = len(records)
    width = initial_width(spec)
    while measured > width * spec.micro:
        width *= 2
    used = -(-measured // width)
    bsum, bcnt = np.zeros(used), np.zeros(used, np.int64)
    seg_batches = spec.micro // K.H_SEGMENTS
    joins = np.zeros((K.H_SEGMENTS, 64))
    for order, (rt, k) in enumerate(records):
        b = order // width
        bsum[b] += rt
        bcnt[b] += 1
        joins[b // seg_batches, k] += 1.0
    return {"bsum": bsum, "bcnt": bcnt, "joins": joins, "width": width,
            "queues": sorted(queues), "tail_area": area, "t_warm": t_warm, "t_end": t_end,
            "events": events, "probes": probes}  # fmt: skip
