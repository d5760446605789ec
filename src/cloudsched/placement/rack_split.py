"""A lower bound for running topologies that knows racks: split them over racks first.

On a cluster with racks (an edge broken across racks costs ``c > 1``, inside a rack 1) a
placement puts each topology wholly in one rack or across racks.  For each assignment ``a``
of the topologies to a rack or to "across", the placement's cost is at least

* for each rack ``r``, a lower bound of placing the topologies assigned to ``r`` on ``r``'s
  machines alone (:func:`~cloudsched.placement.static.place_static` on that rack, whose
  bound holds for any placement there; with more room than the others leave, which only
  lowers it; infinite when their executors, CPU or memory exceed the rack's), plus
* for each topology across racks, the larger of its least cost anywhere (the library's
  bound) and its least cost on the same machines without racks (every broken edge costs
  at least 1) plus ``(c - 1)`` times its minimum cut (the executors in one rack are cut
  from the rest, so at least the graph's minimum cut crosses racks),

since no edge of a topology kept in one rack crosses racks and costs add up over
topologies.  The least of these over every assignment bounds every placement.  Where the
best assignment keeps each topology in one rack and each rack's solve placed them all,
those placements together are a placement of that cost.  The per-rack solves are shared
between assignments; there are ``R * 2**T`` of them, so this runs only for a few
topologies (:data:`MAX_SOLVES`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.fastpack import Library
from cloudsched.placement.graphcuts import graph_bound
from cloudsched.placement.topology import Topology

__all__ = ["MAX_SOLVES", "RackSplit", "rack_split"]

#: Largest number of per-rack solves (racks times subsets of topologies) tried.
MAX_SOLVES = 64


@dataclass
class RackSplit:
    """``bound`` holds for every placement; ``machines`` is a placement of ``cost`` (or None)."""

    bound: float
    machines: list[np.ndarray] | None
    cost: float


def _rack(cluster: Cluster, r: int) -> tuple[Cluster, np.ndarray]:
    members = np.flatnonzero(cluster.rack == r)
    cap = cluster.capacity[members]
    sub = Cluster(
        cluster.slots[members],
        racks=1,
        cross_rack_cost=cluster.cross_rack_cost,
        cpu=cap[:, 0],
        memory=cap[:, 1],
    )
    return sub, members


def _flat(cluster: Cluster) -> Cluster:
    """Return the same machines in one rack: every broken edge costs 1."""
    cap = cluster.capacity
    return Cluster(cluster.slots, racks=1, cpu=cap[:, 0], memory=cap[:, 1])


def _too_big(sub: Cluster, tops: Sequence[Topology]) -> bool:
    if sum(t.nodes for t in tops) > sub.total_slots:
        return True
    need = np.sum([t.demands().sum(axis=0) for t in tops], axis=0)
    return bool(np.any(need > sub.capacity.sum(axis=0) * (1 + 1e-9)))


def _across(cluster: Cluster, t: Topology, alone: float, flat: float) -> float:
    """Least cost of ``t`` when it spans racks (``flat``: its least cost without racks)."""
    g = t.graph
    cut = 0.0
    if nx.is_connected(g) and t.edges:
        cut = float(nx.stoer_wagner(g, weight="weight")[0])
    flat = max(flat, graph_bound(t, int(cluster.slots.max())))
    return max(alone, flat + (cluster.cross_rack_cost - 1.0) * cut)


Solve = Callable[[Cluster, Sequence[Topology], float], tuple[float, list[np.ndarray] | None, float]]


def rack_split(
    cluster: Cluster, tops: Sequence[Topology], alone: np.ndarray, solve: Solve, time_limit: float
) -> RackSplit | None:
    """Return the rack-split bound (None: too many solves, or the time ran out).

    ``alone[j]`` is a lower bound of topology ``j``'s cost anywhere; ``solve(sub, tops,
    seconds)`` places ``tops`` on the one-rack cluster ``sub`` and returns its lower bound,
    the machines of each topology (None when it did not place them all) and their cost.
    """
    racks, n = cluster.racks, len(tops)
    if cluster.racks < 2 or cluster.cross_rack_cost <= 1.0 or racks * 2**n > MAX_SOLVES:
        return None
    t0 = time.perf_counter()
    subs = [_rack(cluster, r) for r in range(racks)]
    solved: dict[tuple[int, tuple[int, ...]], tuple[float, list[np.ndarray] | None, float]] = {}
    per = 0.75 * time_limit / (racks * 2**n)  # a quarter for the bounds without racks

    def on_rack(r: int, js: tuple[int, ...]) -> tuple[float, list[np.ndarray] | None, float]:
        if not js:
            return 0.0, [], 0.0
        if (r, js) not in solved:
            sub, _ = subs[r]
            chosen = [tops[j] for j in js]
            if _too_big(sub, chosen):
                solved[(r, js)] = (math.inf, None, math.inf)
            else:
                try:
                    solved[(r, js)] = solve(sub, chosen, per)
                except ParameterError:  # one of them alone does not fit this rack
                    solved[(r, js)] = (math.inf, None, math.inf)
        return solved[(r, js)]

    flat = Library.within(_flat(cluster), tops, time_limit / 4).lower_bounds
    across = [_across(cluster, t, float(alone[j]), float(flat[j])) for j, t in enumerate(tops)]
    best, best_cost, best_where = math.inf, math.inf, None
    for a in itertools.product(range(racks + 1), repeat=n):  # racks: across
        if time.perf_counter() - t0 > time_limit:
            return None
        lb = sum(across[j] for j in range(n) if a[j] == racks)
        parts = [on_rack(r, tuple(j for j in range(n) if a[j] == r)) for r in range(racks)]
        lb += sum(p[0] for p in parts)
        best = min(best, lb)
        if racks in a or any(p[1] is None for p in parts):
            continue
        cost = sum(p[2] for p in parts)
        if cost < best_cost:
            best_cost, best_where = cost, _joined(subs, parts, a, n)
    return RackSplit(best, best_where, best_cost)


def _joined(
    subs: Sequence[tuple[Cluster, np.ndarray]],
    parts: Sequence[tuple[float, list[np.ndarray] | None, float]],
    a: Sequence[int],
    n: int,
) -> list[np.ndarray]:
    out: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * n
    for r, (_, where, _) in enumerate(parts):
        js = [j for j in range(n) if a[j] == r]
        for j, w in zip(js, where or [], strict=True):
            out[j] = subs[r][1][np.asarray(w, dtype=np.int64)]
    return out
