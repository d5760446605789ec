"""Slow pure-Python mirror of the production balancers, for differential tests.

A transliteration of :mod:`cloudsched.dispatch.balancers` written plainly (lists, dicts,
one object per client), making the same random draws in the same order; the per-server
mirror (:mod:`.mirror`) calls these rules (and those of :mod:`.mirror_reports`).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from cloudsched.policy_table import TABLE

__all__ = ["BalancerRule", "Ewma", "LeastTime", "Wlr", "index"]


def index(rng: np.random.Generator, n: int) -> int:
    """Draw a uniform integer in ``[0, n)`` as the kernel does (one draw)."""
    return min(int(rng.random() * n), n - 1)


class BalancerRule:
    """What every production balancer shares: clients, subsets, joins, weights, marks."""

    def __init__(
        self,
        code: str,
        n: int,
        m: int,
        slots: int,
        opt: tuple[float, ...],
        rng: np.random.Generator,
        speeds: np.ndarray | None,
        held: list[int],
    ) -> None:
        """``held[s]``: tasks at server ``s`` at time 0 (unmarked)."""
        names = [o.name for o in TABLE[code].options]
        self.o = dict(zip(names, opt, strict=True))
        self.n, self.m, self.slots, self.rng = n, m, slots, rng
        self.weights = (
            [float(x) for x in speeds]
            if speeds is not None and self.o["weights"] == 1.0
            else [1.0] * n
        )
        self.join_n, self.join_t = int(self.o["join-count"]), self.o["join-time"]
        self.subsets: list[list[int]] = []
        for _ in range(m):
            if slots == n:
                sub = list(range(n))
            else:
                perm = list(range(n))
                sub = []
                for j in range(slots):
                    k = j + index(rng, n - j)
                    perm[k], perm[j] = perm[j], perm[k]
                    sub.append(perm[j])
            there = [s for s in sub if not self.joining(s)]
            self.subsets.append(there + [s for s in sub if self.joining(s)])
        self.present = [sum(1 for s in sub if not self.joining(s)) for sub in self.subsets]
        self.inflight = [[0] * slots for _ in range(m)]
        self.marks = [deque([(-1, -1)] * held[s]) for s in range(n)]
        self.chosen = -1
        self.probes_sent = 0  # probe messages of the last choice
        self.now = 0.0  # time of the last choice
        self.held = held  # tasks at each server, kept by the mirror

    def joining(self, s: int) -> bool:
        """Whether server ``s`` joins mid-run."""
        return s >= self.n - self.join_n

    def joined(self, now: float) -> bool:
        """Whether the joining servers have joined at ``now``."""
        return self.join_n == 0 or now >= self.join_t

    def available(self, m: int, now: float) -> int:
        """Slots dispatcher ``m`` may use at ``now``."""
        return self.slots if self.joined(now) else self.present[m]

    def fallback(self) -> int:
        """Pick a uniform server that is there (unmarked)."""
        self.chosen = -1
        return index(self.rng, self.n - self.join_n)

    def choose(self, m: int, now: float) -> int:
        """Return the server for a task arriving at dispatcher ``m``."""
        self.probes_sent = 0
        self.now = now
        k = self.available(m, now)
        if k == 0:
            return self.fallback()
        self.chosen = self.pick(m, k, now)
        return self.subsets[m][self.chosen]

    def pick(self, m: int, k: int, now: float) -> int:  # pragma: no cover - overridden
        """Return the slot of dispatcher ``m`` (of its first ``k``) the rule picks."""
        raise NotImplementedError

    def sent(self, s: int, m: int) -> None:
        """Record that a task from dispatcher ``m`` joined server ``s``."""
        if self.chosen < 0:
            self.marks[s].append((-1, -1))
            return
        self.marks[s].append((m, self.chosen))
        self.inflight[m][self.chosen] += 1

    def left(self, s: int, now: float, rt: float) -> None:
        """Record that the task in service at ``s`` left after ``rt``."""
        self.server_left(s, now, rt)
        m, j = self.marks[s].popleft()
        if m < 0:
            return
        self.inflight[m][j] -= 1
        self.returned(m, j, now, rt)

    def returned(self, m: int, j: int, now: float, rt: float) -> None:
        """Learn from a response through dispatcher ``m``'s slot ``j`` (none by default)."""

    def server_left(self, s: int, now: float, rt: float) -> None:
        """Learn, as server ``s``, from its own completion (nothing by default)."""


class Ewma(BalancerRule):
    """tower's PeakEwma behind P2C."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.est = [[self.o["default-rtt"]] * self.slots for _ in range(self.m)]
        self.stamp = [[0.0] * self.slots for _ in range(self.m)]

    def cost(self, m: int, j: int, now: float) -> float:
        """Return the peak-EWMA cost of client ``m``'s slot ``j``, decayed to ``now``."""
        self.est[m][j] *= math.exp(-(now - self.stamp[m][j]) / self.o["decay"])
        self.stamp[m][j] = now
        return self.est[m][j] * (self.inflight[m][j] + 1)

    def pick(self, m: int, k: int, now: float) -> int:
        """Return the slot the rule picks among the first ``k`` of client ``m``."""
        if k == 1:
            return 0
        a = index(self.rng, k)
        b = index(self.rng, k - 1)
        b += b >= a
        return a if self.cost(m, a, now) <= self.cost(m, b, now) else b

    def returned(self, m: int, j: int, now: float, rt: float) -> None:
        """Learn from a response through client ``m``'s slot ``j``."""
        if self.est[m][j] < rt:
            self.est[m][j] = rt
        else:
            w = math.exp(-(now - self.stamp[m][j]) / self.o["decay"])
            self.est[m][j] = self.est[m][j] * w + rt * (1.0 - w)
        self.stamp[m][j] = now


def _ngx_avg(old: float, value: float) -> float:
    return value if old == 0.0 else math.floor(0.5 + value * 0.05 + old * 0.95)


class LeastTime(BalancerRule):
    """NGINX's least_time module (one peer list per client)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        shape = [[0.0] * self.slots for _ in range(self.m)]
        self.avg, self.checked = [r[:] for r in shape], [r[:] for r in shape]
        self.if_last, self.if_changed = [r[:] for r in shape], [r[:] for r in shape]
        self.if_reqs, self.if_time = [r[:] for r in shape], [r[:] for r in shape]
        self.current = [r[:] for r in shape]

    def ms(self, t: float) -> float:
        """Return NGINX's millisecond clock at time ``t``."""
        return math.floor(t * self.o["service-time"] * 1000.0)

    def eta(self, m: int, j: int, now_s: float, fail_s: float) -> float:
        """Return NGINX's estimated time of client ``m``'s slot ``j``."""
        rt = self.avg[m][j]
        elapsed = now_s - self.checked[m][j]
        if elapsed > fail_s:
            shift = math.floor(elapsed / (fail_s + 1.0))
            rt = math.floor(rt / 2.0**shift) if shift < 64 else 0.0
        if self.if_reqs[m][j] > 0:
            rt = max(rt, self.if_time[m][j])
        rt = 5000.0 if rt > 5000.0 else rt + 20.0 - rt % 20.0
        return rt * (1.0 + self.inflight[m][j])

    def pick(self, m: int, k: int, now: float) -> int:
        """Return the slot the rule picks among the first ``k`` of client ``m``."""
        now_ms, now_s = self.ms(now), math.floor(now * self.o["service-time"])
        fail_s = math.floor(self.o["fail-timeout"] * self.o["service-time"])
        inflight = self.o["inflight"] == 1.0
        w_of = [self.weights[s] for s in self.subsets[m]]
        etas = []
        for j in range(k):
            if inflight and self.if_reqs[m][j] > 0:
                ift = math.floor(self.if_last[m][j] / self.if_reqs[m][j]) + (
                    now_ms - self.if_changed[m][j]
                )
                self.if_time[m][j] = _ngx_avg(self.if_time[m][j], ift)
            etas.append(self.eta(m, j, now_s, fail_s))
        best = 0
        for j in range(1, k):  # the least eta / weight, the first on a tie
            if etas[j] * w_of[best] < etas[best] * w_of[j]:
                best = j
        best_eta = etas[best]
        if any(etas[j] * w_of[best] == best_eta * w_of[j] for j in range(best + 1, k)):
            total = 0.0  # smooth weighted round robin among the tied, from the first
            for j in range(best, k):
                if etas[j] * w_of[best] != best_eta * w_of[j]:  # the best so far's weight
                    continue
                self.current[m][j] += w_of[j]
                total += w_of[j]
                if self.current[m][j] > self.current[m][best]:
                    best = j
            self.current[m][best] -= total
        if inflight:
            if self.if_reqs[m][best] > 0:
                self.if_last[m][best] += (now_ms - self.if_changed[m][best]) * self.if_reqs[m][best]
            self.if_changed[m][best] = now_ms
            self.if_reqs[m][best] += 1.0
        if now_s - self.checked[m][best] > fail_s:
            self.checked[m][best] = now_s
        return best

    def returned(self, m: int, j: int, now: float, rt: float) -> None:
        """Learn from a response through client ``m``'s slot ``j``."""
        now_ms = self.ms(now)
        last = now_ms - self.ms(now - rt)
        if self.o["inflight"] == 1.0:
            if self.if_reqs[m][j] == 1.0:
                self.if_last[m][j] = 0.0
            else:
                acc = self.if_last[m][j] + (now_ms - self.if_changed[m][j]) * self.if_reqs[m][j]
                self.if_last[m][j] = max(0.0, acc - last)
                self.if_changed[m][j] = now_ms
            self.if_reqs[m][j] -= 1.0
        self.avg[m][j] = _ngx_avg(self.avg[m][j], last)


class Wlr(BalancerRule):
    """Envoy's least request: P2C with replacement, or an EDF schedule (a sorted list)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.edf = [False] * self.m
        self.seen_join = [False] * self.m
        self.entries: list[list[tuple[float, float, int]]] = [[] for _ in range(self.m)]
        self.time = [0.0] * self.m
        self.order = [0.0] * self.m
        for m in range(self.m):
            k = self.available(m, 0.0)
            if k > 0 and self.differ(m, k):
                self.edf[m] = True
                self.build(m, k, 0.0)

    def differ(self, m: int, k: int) -> bool:
        """Whether the weights of client ``m``'s first ``k`` slots differ."""
        return len({self.weights[s] for s in self.subsets[m][:k]}) > 1

    def slow_start(self, s: int, now: float) -> float:
        """Return Envoy's slow-start factor of server ``s`` at ``now``."""
        window = self.o["slow-start-window"]
        if window <= 0.0 or not self.joining(s):
            return 1.0
        age = now - self.join_t
        if age >= window:
            return 1.0
        factor = max(0.001 / self.o["service-time"], age) / window
        if self.o["aggression"] != 1.0 and factor != 1.0:
            factor = factor ** (1.0 / self.o["aggression"])
        return max(factor, self.o["min-weight-percent"] / 100.0)

    def weight(self, m: int, j: int, now: float) -> float:
        """Return Envoy's EDF weight of client ``m``'s slot ``j`` at ``now``."""
        s = self.subsets[m][j]
        w = self.weights[s]
        active = self.inflight[m][j] + 1.0
        bias = self.o["active-request-bias"]
        if bias == 1.0:
            w = w / active
        elif bias != 0.0:
            w = w / active**bias
        return w * self.slow_start(s, now)

    def add(self, m: int, j: int, weight: float) -> None:
        """Add slot ``j`` to client ``m``'s EDF schedule at ``weight``."""
        self.entries[m].append((self.time[m] + 1.0 / weight, self.order[m], j))
        self.order[m] += 1.0

    def pick_and_add(self, m: int, now: float) -> int:
        """Pick the earliest deadline and add it back at its weight now."""
        entry = min(self.entries[m])
        self.entries[m].remove(entry)
        self.time[m] = entry[0]
        self.add(m, entry[2], self.weight(m, entry[2], now))
        return entry[2]

    def build(self, m: int, k: int, now: float) -> None:
        """Build client ``m``'s schedule over its first ``k`` slots."""
        self.entries[m], self.time[m] = [], 0.0
        for j in range(k):
            self.add(m, j, self.weight(m, j, now))
        for _ in range(index(self.rng, k)):
            self.pick_and_add(m, now)

    def pick(self, m: int, k: int, now: float) -> int:
        """Return the slot the rule picks among the first ``k`` of client ``m``."""
        if self.join_n > 0 and not self.seen_join[m] and self.joined(now):
            self.seen_join[m] = True
            self.edf[m] = self.o["slow-start-window"] > 0.0 or self.differ(m, k)
            if self.edf[m]:
                self.build(m, k, now)
        if self.edf[m]:
            return self.pick_and_add(m, now)
        j = -1
        for _ in range(int(self.o["choice-count"])):
            c = index(self.rng, k)
            if j < 0 or self.inflight[m][c] < self.inflight[m][j]:
                j = c
        return j
