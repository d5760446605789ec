"""The production balancers the lab's own dispatchers run, as the simulator runs them.

* ``ewma``: Linkerd's peak EWMA behind P2C (tower's ``PeakEwma``; the simulator's
  :mod:`cloudsched.dispatch.balancers.ewma`): two distinct servers, the lower of the
  peak-EWMA round-trip time x (this dispatcher's requests outstanding there + 1), the
  estimate decaying on every read and taking a slower response at once; round trips are
  measured by the dispatcher on the real sockets, in wall-clock seconds.
* ``prequal``: Prequal's pool of probes (our reading of the paper, as
  :mod:`cloudsched.dispatch.balancers.prequal`): after each choice ``probe-rate`` probes go
  to uniform servers over UDP, each answer (the server's requests in flight and its own
  EWMA of service times) joins the pool when it arrives, asynchronously; a query takes the
  coldest probe by latency, else the least in flight, reuses a probe ``reuse`` times and
  drops probes older than ``max-age``.
"""

from __future__ import annotations

import math
import time

import numpy as np

__all__ = ["MAX_PENDING", "PeakEwma", "PrequalPool", "balancer_state", "parse_option"]

#: Prequal's probes awaiting an answer, at most (the oldest are forgotten, counted lost).
MAX_PENDING = 4096


def parse_option(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` (the controller's, already checked) as a name and a number."""
    name, _, value = text.partition("=")
    return name, float(value)


class PeakEwma:
    """tower's PeakEwma per server, in wall-clock seconds (``decay``, ``default_rtt``)."""

    def __init__(self, n: int, decay: float, default_rtt: float, now: float) -> None:
        self.decay = decay
        self.est = [default_rtt] * n
        self.stamp = [now] * n

    def cost(self, s: int, outstanding: int, now: float) -> float:
        """Return the estimate decayed to ``now`` (kept) x (outstanding + 1)."""
        self.est[s] *= math.exp(-(now - self.stamp[s]) / self.decay)
        self.stamp[s] = now
        return self.est[s] * (outstanding + 1)

    def choose(
        self, rng: np.random.Generator, live: list[int], outstanding: list[int], now: float
    ) -> int:
        """Return the cheaper of two distinct ``live`` servers (the only one if one is)."""
        if len(live) == 1:
            return live[0]
        a, b = (live[int(i)] for i in rng.choice(len(live), size=2, replace=False))
        cost_a, cost_b = self.cost(a, outstanding[a], now), self.cost(b, outstanding[b], now)
        return a if cost_a <= cost_b else b

    def observe(self, s: int, rtt: float, now: float) -> None:
        """Learn a response's round trip: a slower one at once, a faster one by the EWMA."""
        if self.est[s] < rtt:
            self.est[s] = rtt
        else:
            w = math.exp(-(now - self.stamp[s]) / self.decay)
            self.est[s] = self.est[s] * w + rtt * (1.0 - w)
        self.stamp[s] = now


class PrequalPool:
    """One dispatcher's Prequal pool: ``[server, rif, latency, time, uses]`` per probe."""

    HISTORY = 64

    def __init__(self, options: dict[str, float]) -> None:
        self.o = options
        self.pool: list[list[float]] = []
        self.history = [0.0] * self.HISTORY
        self.seen = 0
        self.pending: dict[int, int] = {}  # probes sent, awaiting their answer: seq -> server

    def drop(self, i: int) -> None:
        """Remove probe ``i`` (the last takes its place)."""
        self.pool[i] = self.pool[-1]
        self.pool.pop()

    def threshold(self) -> float:
        """Return the q-rif quantile of the recent answers' RIFs (nearest rank)."""
        recent = sorted(min(r, 1023.0) for r in self.history[: min(self.seen, self.HISTORY)])
        rank = max(1, math.ceil(self.o["q-rif"] * len(recent)))
        if not recent or recent[rank - 1] >= 1023.0:
            return math.inf
        return recent[rank - 1]

    def pick(self, now: float, usable: list[bool]) -> int:
        """Return the server of the hot-cold choice, or -1 when the pool has none usable."""
        pool, i = self.pool, 0
        while i < len(pool):
            if now - pool[i][3] > self.o["max-age"] or not usable[int(pool[i][0])]:
                self.drop(i)
            else:
                i += 1
        if not pool:
            return -1
        hot = self.threshold()
        cold = [i for i in range(len(pool)) if pool[i][1] <= hot]
        if cold:
            chosen = min(cold, key=lambda i: (pool[i][2], i))
        else:
            chosen = min(range(len(pool)), key=lambda i: (pool[i][1], i))
        s = int(pool[chosen][0])
        pool[chosen][1] += 1.0
        pool[chosen][4] += 1.0
        if pool[chosen][4] >= self.o["reuse"]:
            self.drop(chosen)
        return s

    def choose(self, rng: np.random.Generator, live: list[int], n: int, now: float) -> int:
        """Return the pool's choice among the ``live`` servers, else a uniform one of them."""
        s = self.pick(now, [i in live for i in range(n)])
        return s if s >= 0 else live[int(rng.integers(len(live)))]

    def targets(self, rng: np.random.Generator, live: list[int]) -> list[int]:
        """Return the servers to probe after a choice (probe-rate uniform ``live`` ones).

        A fractional rate is a random whole number of that mean.
        """
        rate = self.o["probe-rate"]
        probes = int(rate)
        if rate > probes and rng.random() < rate - probes:
            probes += 1
        return [live[int(rng.integers(len(live)))] for _ in range(probes)]

    def sent(self, seq: int, s: int) -> int:
        """Remember probe ``seq`` sent to ``s``; return how many unanswered ones were forgotten."""
        self.pending[seq] = s
        lost = 0
        while len(self.pending) > MAX_PENDING:  # answers never coming: forget the oldest
            self.pending.pop(next(iter(self.pending)))
            lost += 1
        return lost

    def answered(self, seq: int, s: int, rif: int, service: float, now: float) -> bool:
        """Take the answer to probe ``seq`` from ``s`` into the pool (False: not ours)."""
        if self.pending.get(seq) != s or rif < 0 or not (math.isfinite(service) and service >= 0):
            return False
        del self.pending[seq]
        self.answer(s, rif, service, now)
        return True

    def answer(self, s: int, rif: int, service: float, now: float) -> None:
        """Take a probe's answer into the pool (a full pool drops its oldest first)."""
        if len(self.pool) >= int(self.o["pool"]):
            oldest = min(range(len(self.pool)), key=lambda i: (self.pool[i][3], i))
            self.drop(oldest)
        self.pool.append([float(s), float(rif), (rif + 1.0) * service, now, 0.0])
        self.history[self.seen % self.HISTORY] = float(rif)
        self.seen += 1


def balancer_state(
    pick: str, n: int, options: dict[str, float]
) -> tuple[PeakEwma | None, PrequalPool | None]:
    """Return a dispatcher's state for the policy that picks by ``pick`` (None: not these)."""
    ewma = None
    if pick == "p2c cost":
        ewma = PeakEwma(n, options["decay"], options["default-rtt"], time.perf_counter())
    return ewma, PrequalPool(options) if pick == "probes" else None
