"""Slow pure-Python mirror of the balancers that learn from the servers' own reports.

Prequal's probes and gRPC WRR's load reports, transliterated from
:mod:`cloudsched.dispatch.balancers.prequal` and :mod:`cloudsched.dispatch.balancers.wrr`
with the same draws in the same order; :data:`RULES` maps every production balancer to its
mirror rule.
"""

from __future__ import annotations

import math

from cloudsched.dispatch.engines.servers.mirror_balancers import (
    BalancerRule,
    Ewma,
    LeastTime,
    Wlr,
    index,
)

__all__ = ["RULES"]


class Prequal(BalancerRule):
    """Prequal's pool of probes, one list of [slot, rif, latency, time, uses] per client."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.pool: list[list[list[float]]] = [[] for _ in range(self.m)]
        self.history: list[list[float]] = [[0.0] * 64 for _ in range(self.m)]
        self.seen = [0] * self.m
        self.service = [0.0] * self.n
        self.last_done = [0.0] * self.n

    def drop(self, m: int, i: int) -> None:
        """Remove probe ``i`` from client ``m``'s pool (the last takes its place)."""
        pool = self.pool[m]
        pool[i] = pool[-1]
        pool.pop()

    def threshold(self, m: int) -> float:
        """Return the q-rif quantile of client ``m``'s recent probe answers."""
        recent = sorted(min(r, 1023.0) for r in self.history[m][: min(self.seen[m], 64)])
        rank = max(1, math.ceil(self.o["q-rif"] * len(recent)))
        if not recent or recent[rank - 1] >= 1023.0:
            return math.inf
        return recent[rank - 1]

    def pick(self, m: int, k: int, now: float) -> int:
        """Return the slot the rule picks among the first ``k`` of client ``m``."""
        pool = self.pool[m]
        i = 0
        while i < len(pool):
            if now - pool[i][3] > self.o["max-age"] or pool[i][0] >= k:
                self.drop(m, i)
            else:
                i += 1
        chosen = -1
        if pool:
            hot = self.threshold(m)
            cold = [i for i in range(len(pool)) if pool[i][1] <= hot]
            if cold:
                chosen = min(cold, key=lambda i: (pool[i][2], i))
            else:
                chosen = min(range(len(pool)), key=lambda i: (pool[i][1], i))
        if chosen < 0:
            j = index(self.rng, k)
        else:
            j = int(pool[chosen][0])
            pool[chosen][1] += 1.0
            pool[chosen][4] += 1.0
            if pool[chosen][4] >= self.o["reuse"]:
                self.drop(m, chosen)
        rate = self.o["probe-rate"]
        probes = int(rate)
        if rate > probes and self.rng.random() < rate - probes:
            probes += 1
        for _ in range(probes):
            self.probe(m, k, now)
        self.probes_sent = probes
        return j

    def probe(self, m: int, k: int, now: float) -> None:
        """Send one probe to a uniform server of client ``m``'s first ``k`` slots."""
        j = index(self.rng, k)
        s = self.subsets[m][j]
        pool = self.pool[m]
        if len(pool) >= int(self.o["pool"]):
            oldest = min(range(len(pool)), key=lambda i: (pool[i][3], i))
            self.drop(m, oldest)
        rif = float(self.held[s])
        pool.append([float(j), rif, (rif + 1.0) * self.service[s], now, 0.0])
        self.history[m][self.seen[m] % 64] = rif
        self.seen[m] += 1

    def server_left(self, s: int, now: float, rt: float) -> None:
        """Update the server's own estimate of its service time, from every completion."""
        service = now - max(now - rt, self.last_done[s])
        self.last_done[s] = now
        old = self.service[s]
        self.service[s] = service if old == 0.0 else old + (service - old) / 16.0


class Wrr(BalancerRule):
    """gRPC weighted round robin: servers' window reports, a static stride schedule."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        shape = [[0.0] * self.slots for _ in range(self.m)]
        self.weight = [r[:] for r in shape]
        self.since = [[-1.0] * self.slots for _ in range(self.m)]
        self.updated = [r[:] for r in shape]
        self.scaled = [[0] * self.slots for _ in range(self.m)]
        n = self.n
        self.busy, self.done, self.changed = [0.0] * n, [0.0] * n, [0.0] * n
        self.is_busy = [1.0 if self.held[s] > 0 else 0.0 for s in range(n)]
        self.win, self.win_busy, self.win_done = [0.0] * n, [0.0] * n, [0.0] * n
        self.last_busy, self.last_done = [0.0] * n, [0.0] * n
        self.sequence = [int(self.rng.random() * 4294967296.0) for _ in range(self.m)]
        self.next_build = [0.0] * self.m
        self.built = [0] * self.m
        self.stride = [False] * self.m

    def server_event(self, s: int, now: float, completed: float) -> None:
        """Bring server ``s``'s load report up to ``now``."""
        width = self.o["server-window"]
        window = math.floor(now / width)
        busy = self.is_busy[s]
        if window > self.win[s]:
            t1 = window * width
            if window == self.win[s] + 1:
                self.last_busy[s] = self.busy[s] + busy * (t1 - self.changed[s]) - self.win_busy[s]
                self.last_done[s] = self.done[s] - self.win_done[s]
            else:
                self.last_busy[s], self.last_done[s] = busy * width, 0.0
            self.win[s] = window
            self.win_busy[s] = self.busy[s] + busy * (t1 - self.changed[s])
            self.win_done[s] = self.done[s]
        self.busy[s] += busy * (now - self.changed[s])
        self.changed[s] = now
        self.done[s] += completed
        self.is_busy[s] = 1.0 if self.held[s] > 0 else 0.0

    def usable(self, m: int, j: int, now: float) -> float:
        """Return the weight of client ``m``'s slot ``j`` the schedule may use."""
        if self.since[m][j] < 0.0:
            return 0.0
        if now - self.updated[m][j] >= self.o["weight-expiration-period"]:
            self.since[m][j] = -1.0
            return 0.0
        if now - self.since[m][j] < self.o["blackout-period"]:
            return 0.0
        return self.weight[m][j]

    def build(self, m: int, k: int, now: float) -> bool:
        """Build client ``m``'s schedule over its first ``k`` slots."""
        weights = [self.usable(m, j, now) for j in range(k)]
        known = [w for w in weights if w > 0.0]
        if k < 2 or not known:
            return False
        mean = sum(known) / len(known)
        largest = min(max(known), 10.0 * mean)
        scale = 65535 / largest
        scaled_mean = math.floor(scale * mean + 0.5)
        floor = max(1, math.floor(scaled_mean * 0.01 + 0.5))
        for j in range(k):
            w = self.usable(m, j, now)
            self.scaled[m][j] = (
                scaled_mean if w == 0.0 else max(math.floor(min(w, largest) * scale + 0.5), floor)
            )
        return True

    def next(self, m: int) -> int:
        """Return client ``m``'s next 32-bit sequence number."""
        seq = self.sequence[m]
        self.sequence[m] = (seq + 1) & 0xFFFFFFFF
        return seq

    def pick(self, m: int, k: int, now: float) -> int:
        """Return the slot the rule picks among the first ``k`` of client ``m``."""
        if now >= self.next_build[m] or self.built[m] != k:
            self.stride[m] = self.build(m, k, now)
            self.built[m] = k
            period = self.o["weight-update-period"]
            self.next_build[m] = (math.floor(now / period) + 1.0) * period
        if not self.stride[m]:
            return self.next(m) % k
        while True:
            seq = self.next(m)
            j = seq % k
            w = self.scaled[m][j]
            if (w * (seq // k) + j * 32767) % 65535 >= 65535 - w:
                return j

    def sent(self, s: int, m: int) -> None:
        """Record that a task from dispatcher ``m`` joined server ``s``."""
        super().sent(s, m)
        self.server_event(s, self.now, 0.0)

    def server_left(self, s: int, now: float, rt: float) -> None:
        """Learn, as server ``s``, from its own completion."""
        self.server_event(s, now, 1.0)

    def returned(self, m: int, j: int, now: float, rt: float) -> None:
        """Learn from a response through client ``m``'s slot ``j``."""
        s = self.subsets[m][j]
        width = self.o["server-window"]
        busy, qps = self.last_busy[s] / width, self.last_done[s] / width
        if busy <= 0.0 or qps <= 0.0:
            return
        if self.since[m][j] < 0.0:
            self.since[m][j] = now
        self.updated[m][j] = now
        self.weight[m][j] = qps / busy


#: The mirror's rule of each production balancer.
RULES: dict[str, type[BalancerRule]] = {
    "ewma": Ewma,
    "least-time": LeastTime,
    "wlr": Wlr,
    "prequal": Prequal,
    "wrr": Wrr,
}
