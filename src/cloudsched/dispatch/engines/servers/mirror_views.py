"""What the mirror's policies read: probes, JSQ's buckets and the published board.

A mixin of :class:`~cloudsched.dispatch.engines.servers.mirror._Reference`, the plain-Python
mirror of the per-server kernel, transliterating :mod:`cloudsched.dispatch.view`: probes of
``d`` servers (reading the lengths a dispatcher sees), JSQ's buckets by queue length, and
polled information (a board of lengths published every ``refresh``).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from cloudsched.dispatch.engines.servers.mirror_balancers import index

__all__ = ["Views"]


class Views:
    """Probes, buckets and the board, over the attributes the mirror keeps."""

    n: int
    d: int
    replace: bool
    rng: np.random.Generator
    perm: list[int]
    order: list[int]
    where: list[int]
    start: list[int]
    jsq_min: int
    queues: list[deque[Any]]
    refresh: float = 0.0
    next_pub: float = 0.0
    board: list[int]
    board_min: list[int]

    # the board ---------------------------------------------------------------------------
    def publish(self, now: float) -> None:
        """Publish the lengths when a period has ended (before the event at ``now``)."""
        if self.refresh <= 0 or now < self.next_pub:
            return
        self.board = [len(q) for q in self.queues]
        low = min(self.board)
        self.board_min = [s for s in range(self.n) if self.board[s] == low]
        self.next_pub = (math.floor(now / self.refresh) + 1.0) * self.refresh

    def reported(self, s: int) -> int:
        """Return the length of server ``s`` a dispatcher reads: published, or live."""
        return self.board[s] if self.refresh > 0 else len(self.queues[s])

    # probing ----------------------------------------------------------------------------
    def _probe(self) -> int:
        best = -1
        for k in range(self.d):
            if self.replace:
                s = index(self.rng, self.n)
            else:
                j = k + index(self.rng, self.n - k)
                self.perm[j], self.perm[k] = self.perm[k], self.perm[j]
                s = self.perm[k]
            if best < 0 or self.reported(s) < self.reported(best):
                best = s
        return best

    # JSQ buckets --------------------------------------------------------------------------
    def _swap(self, s: int, slot: int) -> None:
        other = self.order[slot]
        p = self.where[s]
        self.order[p], self.where[other] = other, p
        self.order[slot], self.where[s] = s, slot

    def _bucket_up(self, s: int, old: int) -> None:
        while len(self.start) <= old + 2:
            self.start.append(self.n)
        self._swap(s, self.start[old + 1] - 1)
        self.start[old + 1] -= 1
        if old == self.jsq_min and self.start[old] == self.start[old + 1]:
            self.jsq_min = old + 1

    def _bucket_down(self, s: int, old: int) -> None:
        self._swap(s, self.start[old])
        self.start[old] += 1
        self.jsq_min = min(self.jsq_min, old - 1)
