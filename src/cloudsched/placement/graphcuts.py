"""Cuts a job graph must make to fit machines: exact for trees, bounds for any graph.

Used by :mod:`cloudsched.placement.shapes` for graphs whose twin classes are too many to
enumerate: trees and chains are split exactly by dynamic programming (:func:`forest_split`),
other graphs get a lower bound from their degrees and minimum cut (:func:`graph_bound`).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from cloudsched.placement.topology import Topology

__all__ = ["forest_split", "graph_bound"]


def graph_bound(topology: Topology, slots: int) -> float:
    """Least traffic a split over machines of at most ``slots`` nodes must break.

    The larger of: each node keeps at most its ``slots - 1`` heaviest links (half the rest,
    summed over nodes, since a broken edge is counted at both ends); and, when the graph
    needs ``p = ceil(K / slots) >= 2`` machines, ``p`` times its minimum cut over 2 (each
    machine's share is cut from the rest by at least the minimum cut).
    """
    g = topology.graph
    k = topology.nodes
    if k <= slots:
        return 0.0
    loose = 0.0
    for v in g.nodes:
        ws = sorted((float(d.get("weight", 1.0)) for *_, d in g.edges(v, data=True)), reverse=True)
        loose += sum(ws[max(slots - 1, 0) :])
    best = loose / 2
    if nx.is_connected(g) and topology.edges:
        cut, _ = nx.stoer_wagner(g, weight="weight")
        best = max(best, math.ceil(k / slots) * float(cut) / 2)
    return best


def forest_split(topology: Topology, slots: int) -> tuple[float, np.ndarray]:
    """Least traffic to cut so that no piece of a forest has more than ``slots`` nodes.

    Dynamic programme over each tree (rooted at its lowest node): ``best[v][n]`` is the
    least cut inside ``v``'s subtree when ``v``'s piece holds ``n`` of its nodes.  Returns
    the cut and a piece label per node.  Any placement on machines of at most ``slots``
    nodes cuts at least this much, since removing its broken edges leaves pieces that each
    sit on one machine.
    """
    g = topology.graph
    piece = np.full(topology.nodes, -1, dtype=np.int64)
    total = 0.0
    for comp in nx.connected_components(g):
        root = min(comp)
        order = list(nx.dfs_preorder_nodes(g, root))
        parent = {root: -1}
        for v in order:
            for w in g.neighbors(v):
                if w not in parent:
                    parent[w] = v
        best: dict[int, np.ndarray] = {}
        choice: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for v in reversed(order):
            cur = np.full(slots + 1, math.inf)
            cur[1] = 0.0
            plan: dict[int, list[tuple[int, int]]] = {1: []}
            for c in (w for w in g.neighbors(v) if parent.get(w) == v):
                w = float(g.edges[v, c].get("weight", 1.0))
                cut_c = int(np.argmin(best[c][1:])) + 1
                nxt = cur + w + best[c][cut_c]  # cut the edge to c
                nplan = {n: [*p, (c, 0)] for n, p in plan.items()}
                for a in np.flatnonzero(np.isfinite(cur)).tolist():
                    for b in range(1, slots - a + 1):
                        if cur[a] + best[c][b] < nxt[a + b]:
                            nxt[a + b] = cur[a] + best[c][b]
                            nplan[a + b] = [*plan[a], (c, b)]
                cur = nxt
                plan = {n: p for n, p in nplan.items() if np.isfinite(cur[n])}
            best[v] = cur
            for n, p in plan.items():
                choice[(v, n)] = p
        n_root = int(np.argmin(best[root][1:])) + 1
        total += float(best[root][n_root])
        stack = [(root, n_root, int(piece.max()) + 1)]
        while stack:
            v, n, label = stack.pop()
            piece[v] = label
            for c, b in choice[(v, n)]:
                if b == 0:
                    cut_c = int(np.argmin(best[c][1:])) + 1
                    stack.append((c, cut_c, int(piece.max()) + 1 + len(stack)))
                else:
                    stack.append((c, b, label))
    _, piece = np.unique(piece, return_inverse=True)
    return total, piece.astype(np.int64)
