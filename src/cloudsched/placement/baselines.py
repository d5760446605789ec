"""Placement baselines that ignore queues: the Storm default scheduler and a greedy packer.

Both take the free slots of each machine (``free``, shape ``(L,)``) and return the machine of
every node of the job (shape ``(K,)``, int64), or ``None`` when the job does not fit.  Neither
moves a running job: they only use free slots.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology

__all__ = ["bfs_order", "greedy", "storm_default"]


def storm_default(topology: Topology, free: np.ndarray) -> np.ndarray | None:
    """EvenScheduler-style round robin over free slots; the graph is ignored.

    Machines are ordered by free slots, most first (ties: lower index); their free slots are
    interleaved round-robin (one slot of each machine, then a second of each, ...), and node
    ``i`` takes the ``i``-th slot of that list.
    """
    k = topology.nodes
    if k > int(free.sum()):
        return None
    order = np.lexsort((np.arange(free.size), -free))  # most free first, then by index
    slots: list[int] = []
    depth = 0
    while len(slots) < k:
        slots.extend(int(m) for m in order if free[m] > depth)
        depth += 1
    return np.asarray(slots[:k], dtype=np.int64)


def bfs_order(topology: Topology) -> list[int]:
    """Breadth-first order from the sources: the lowest node of each connected component."""
    g = topology.graph
    seen: set[int] = set()
    order: list[int] = []
    for root in sorted(g.nodes):
        if root in seen:
            continue
        seen.add(root)
        queue = deque([root])
        while queue:
            v = queue.popleft()
            order.append(v)
            for w in sorted(g.neighbors(v)):
                if w not in seen:
                    seen.add(w)
                    queue.append(w)
    return order


def greedy(topology: Topology, free: np.ndarray, cluster: Cluster) -> np.ndarray | None:
    """Traffic-aware greedy packing (in the spirit of R-Storm).

    Nodes are visited breadth first from the sources.  A node goes to the machine that hosts
    most of its already placed neighbours and still has a free slot (ties: more free slots,
    then lower index); if none has room, to the machine with the most free slots, preferring
    the racks of its placed neighbours (same rack first).
    """
    k = topology.nodes
    if k > int(free.sum()):
        return None
    left = free.astype(np.int64).copy()
    where = np.full(k, -1, dtype=np.int64)
    for v in bfs_order(topology):
        hosts = [int(where[w]) for w in topology.graph.neighbors(v) if where[w] >= 0]
        best = -1
        if hosts:
            counts = np.bincount(hosts, minlength=left.size)
            room = np.flatnonzero((counts > 0) & (left > 0))
            if room.size:
                best = int(room[np.lexsort((room, -left[room], -counts[room]))[0]])
        if best < 0:
            racks = {cluster.rack_of(h) for h in hosts}
            candidates = np.flatnonzero(left > 0)
            same = np.array([cluster.rack_of(int(m)) in racks for m in candidates])
            # same rack first, then most free slots, then lower index
            best = int(candidates[np.lexsort((candidates, -left[candidates], ~same))[0]])
        where[v] = best
        left[best] -= 1
    return where
