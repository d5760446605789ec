"""Placement baselines that ignore queues: Storm's default, a greedy packer, Storm's RAS.

Each takes the free slots of each machine (``free``, shape ``(L,)``) and, on a cluster with
CPU or memory limits, the free CPU and memory of each machine (``free_res``, shape
``(L, 2)``; None: the whole capacity, as on an empty cluster), and returns the machine of
every node of the job (shape ``(K,)``, int64), or ``None`` when the job does not fit.  None
moves a running job: they only use free slots.  The compiled kernel
(:mod:`cloudsched.placement._kernel_slots`) follows these plain versions exactly; tests
compare the two.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from cloudsched.placement.cluster import Cluster
from cloudsched.placement.storm import ACKER
from cloudsched.placement.topology import Topology

__all__ = ["bfs_order", "greedy", "machine_order", "ras_order", "resource_aware", "storm_default"]


def _resources(
    cluster: Cluster | None, free: np.ndarray, free_res: np.ndarray | None
) -> np.ndarray:
    if free_res is not None:
        return np.asarray(free_res, dtype=float).copy()
    if cluster is None:
        return np.full((free.size, 2), np.inf)
    return cluster.capacity.copy()


def _fits(left_res: np.ndarray, m: int, demand: np.ndarray) -> bool:
    return bool(np.all(left_res[m] >= demand))


def storm_default(
    topology: Topology,
    free: np.ndarray,
    cluster: Cluster | None = None,
    free_res: np.ndarray | None = None,
) -> np.ndarray | None:
    """Storm's EvenScheduler when every executor is its own worker; the graph is ignored.

    This is the paper's model, a slot per executor (``place simulate``); Storm's own, with
    ``topology.workers`` workers holding many executors, is
    :func:`cloudsched.placement.storm.even_scheduler` (``place static``).

    Machines are ordered by free slots, most first (ties: lower index); their free slots are
    interleaved round-robin (one slot of each machine, then a second of each, ...), and node
    ``i`` takes the ``i``-th slot of that list.  CHOICE: on a cluster with CPU or memory
    limits (which Storm's EvenScheduler does not know), node ``i`` takes the first slot of
    the list not yet taken whose machine still has room for its demand.
    """
    k = topology.nodes
    if k > int(free.sum()):
        return None
    order = np.lexsort((np.arange(free.size), -free))  # most free first, then by index
    slots: list[int] = []
    depth = 0
    while len(slots) < int(free.sum()):
        slots.extend(int(m) for m in order if free[m] > depth)
        depth += 1
    left = _resources(cluster, free, free_res)
    dem = topology.demands()
    taken = np.zeros(len(slots), dtype=bool)
    out = np.empty(k, dtype=np.int64)
    for v in range(k):
        i = next((i for i, m in enumerate(slots) if not taken[i] and _fits(left, m, dem[v])), -1)
        if i < 0:
            return None
        taken[i] = True
        out[v] = slots[i]
        left[slots[i]] -= dem[v]
    return out


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


def greedy(
    topology: Topology, free: np.ndarray, cluster: Cluster, free_res: np.ndarray | None = None
) -> np.ndarray | None:
    """Traffic-aware greedy packing (in the spirit of R-Storm).

    Nodes are visited breadth first from the sources.  A node goes to the machine that has
    room for it and carries most of its traffic to already placed neighbours (ties: more
    free slots, then lower index); if none has room, to the machine with room and the most
    free slots, preferring the racks of its placed neighbours (same rack first).
    """
    k = topology.nodes
    if k > int(free.sum()):
        return None
    left = free.astype(np.int64).copy()
    left_res = _resources(cluster, free, free_res)
    dem = topology.demands()
    g = topology.graph
    where = np.full(k, -1, dtype=np.int64)
    for v in bfs_order(topology):
        room = np.array([left[m] > 0 and _fits(left_res, m, dem[v]) for m in range(left.size)])
        if not room.any():
            return None
        traffic = np.zeros(left.size)
        racks: set[int] = set()
        for w in sorted(g.neighbors(v)):  # the kernel's order: sums equal to the last bit
            if where[w] >= 0:
                traffic[where[w]] += g.edges[v, w].get("weight", 1.0)
                racks.add(cluster.rack_of(int(where[w])))
        best = -1
        near = np.flatnonzero((traffic > 0) & room)
        if near.size:
            best = int(near[np.lexsort((near, -left[near], -traffic[near]))[0]])
        else:
            candidates = np.flatnonzero(room)
            same = np.array([cluster.rack_of(int(m)) in racks for m in candidates])
            # same rack first, then most free slots, then lower index
            best = int(candidates[np.lexsort((candidates, -left[candidates], ~same))[0]])
        where[v] = best
        left[best] -= 1
        left_res[best] -= dem[v]
    return where


def ras_order(topology: Topology) -> list[int]:
    """Executors in the order of Storm's DefaultResourceAwareStrategy (``orderExecutors``).

    Components (Flux's spouts and bolts; every node is its own component in other graphs)
    are sorted by their connections (sum over neighbouring components of the product of the
    two parallelisms), most first, ties by id; for each in turn, one executor of it, then
    one of each neighbour (neighbours by fewest connections, ties by id), until none is
    left.  Storm's system components (``__acker``) are left out of that
    (``ExecSorterByConnectionCount.sortExecutors`` sorts ``getUserTopolgyComponents``) and
    their executors come last (``BaseResourceAwareStrategy.isolateAckersToEnd``).
    """
    g = topology.graph
    comp = {v: g.nodes[v].get("component", v) for v in g.nodes}
    system = sorted(v for v in g.nodes if comp[v] == ACKER)
    execs: dict[object, deque[int]] = {}
    for v in sorted(g.nodes, key=lambda v: (str(comp[v]), g.nodes[v].get("index", v))):
        if comp[v] != ACKER:
            execs.setdefault(comp[v], deque()).append(v)
    size = {c: len(e) for c, e in execs.items()}
    nbrs: dict[object, set[object]] = {c: set() for c in execs}
    for u, v in g.edges:
        if comp[u] != comp[v] and comp[u] in execs and comp[v] in execs:
            nbrs[comp[u]].add(comp[v])
            nbrs[comp[v]].add(comp[u])

    def key(c: object) -> tuple[int, str] | tuple[int, int]:
        return (0, c) if isinstance(c, int) else (1, str(c))

    links = {c: sum(size[n] * size[c] for n in nbrs[c]) for c in execs}
    order: list[int] = []
    for c in sorted(execs, key=lambda c: (-links[c], key(c))):
        around = sorted(nbrs[c], key=lambda n: (size[n] * size[c], key(n)))
        took = True
        while took:
            took = False
            for d in (c, *around):
                if execs[d]:
                    order.append(execs[d].popleft())
                    took = True
    return order + system


def _shares(avail: np.ndarray, total: np.ndarray) -> tuple[float, float]:
    """Effective resources (the least share, in percent) and the mean share of ``avail``."""
    pct = [avail[r] / total[r] * 100.0 if total[r] > 0 else 0.0 for r in range(avail.size)]
    return min(pct), sum(pct) / len(pct)


def machine_order(cluster: Cluster, free: np.ndarray, free_res: np.ndarray) -> list[int]:
    """Machines in the order Storm 2.x's RAS tries them: racks, then machines in each.

    Racks by the mean of their shares of the cluster's free resources (slots, and CPU and
    memory where every machine limits them), most first, ties by the least share, then id;
    machines in a rack the same way against the rack's free resources.  This is Storm 2.x's
    ``NodeSorter.sortObjectResourcesCommon`` (``NodeSortType.COMMON``, what
    ``DefaultResourceAwareStrategy`` uses; read at Storm commit 73da988): average first,
    minimum second.  Storm 1.x (``sortObjectResourcesDefault``) ranked by the least share
    first.  Storm also ranks first the machines that already hold the topology's executors;
    an order fixed for the whole job and filled first-fit does the same.
    """
    limited = [r for r in range(2) if np.isfinite(cluster.capacity[:, r]).all()]
    avail = np.column_stack([free.astype(float)] + [free_res[:, r] for r in limited])
    racks = range(cluster.racks)
    members = [[m for m in range(cluster.machines) if cluster.rack_of(m) == r] for r in racks]
    rack_avail = np.zeros((cluster.racks, avail.shape[1]))
    for r in racks:
        for m in members[r]:
            rack_avail[r] += avail[m]
    total = np.zeros(avail.shape[1])
    for r in racks:
        total += rack_avail[r]

    def ranked(items: list[int], rows: np.ndarray, whole: np.ndarray) -> list[int]:
        keyed = [(-_shares(rows[i], whole)[1], -_shares(rows[i], whole)[0], i) for i in items]
        return [i for *_, i in sorted(keyed)]

    out: list[int] = []
    for r in ranked(list(racks), rack_avail, total):
        out.extend(ranked(members[r], avail, rack_avail[r]))
    return out


def resource_aware(
    topology: Topology, free: np.ndarray, cluster: Cluster, free_res: np.ndarray | None = None
) -> np.ndarray | None:
    """Storm's ResourceAwareScheduler (DefaultResourceAwareStrategy, after R-Storm).

    Executors in :func:`ras_order`; machines in :func:`machine_order`, computed once for
    the job; each executor on the first machine of that order with a free slot and room for
    its CPU and memory.  It packs a job onto few machines of one rack, and never looks at
    which executors talk to each other beyond the order it places them in.
    """
    k = topology.nodes
    if k > int(free.sum()):
        return None
    left = free.astype(np.int64).copy()
    left_res = _resources(cluster, free, free_res)
    order = machine_order(cluster, left, left_res)
    dem = topology.demands()
    where = np.full(k, -1, dtype=np.int64)
    for v in ras_order(topology):
        m = next((m for m in order if left[m] > 0 and _fits(left_res, m, dem[v])), -1)
        if m < 0:
            return None
        where[v] = m
        left[m] -= 1
        left_res[m] -= dem[v]
    return where
