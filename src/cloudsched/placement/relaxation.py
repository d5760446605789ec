"""A linear relaxation of placement that sees how jobs split over machines: valid bounds.

A template splits its job into *parts*, the nodes it puts on one machine.  A part of ``g``
nodes is cut from the rest of its graph by at least ``b_j(g)``, the least traffic leaving any
``g`` nodes of graph ``j`` (0 for the whole graph), and a template's cost is half the sum of
its parts' cuts (each broken edge leaves two parts), at least the smallest distance ``d``
times that.  Machines hold parts: a machine of ``s`` slots holds a *bin*, a multiset of part
sizes adding up to at most ``s``.  Averaging any time-sharing of configurations gives a point
of the linear program::

    n_j templates of type j, y[j, g] parts of size g, m[t, b] machines of type t with bin b
    sum_g g y[j, g] = K_j n_j                        (a template's parts hold its nodes)
    C_j >= d/2 sum_g b_j(g) y[j, g],  C_j >= l_j n_j  (cost of type j; l_j: least cost)
    sum_j y[j, g] <= sum_{t, b} m[t, b] (parts of size g in bin b)   for every size g
    sum_b m[t, b] <= machines of type t,  sum_j D_j^r n_j <= capacity^r (CPU, memory)

so ``min sum_j C_j`` with ``n_j >= rho_j`` bounds the static optimum from below, and
``max sum_j (value_j n_j - C_j)`` with ``n_j <= cap_j`` bounds the max-weight
configuration from above (HiGHS).  ``b_j(g)`` is exact when the graph's twin classes
(:func:`~cloudsched.placement.shapes.twin_classes`) are few enough to enumerate every part;
otherwise it is the graph's minimum cut (a weaker, still valid bound).  Machines are typed
by their slots only (CPU and memory enter through the totals), and bins only up to
:data:`BIN_LIMIT` per type; beyond, the bins collapse to the total slots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from cloudsched.placement.cluster import Cluster
from cloudsched.placement.shapes import MAX_CLASSES, class_patterns, twin_classes
from cloudsched.placement.topology import Topology

__all__ = ["Relaxation", "part_cuts"]

#: Bins (multisets of part sizes) enumerated per machine type at most.
BIN_LIMIT = 20_000


def part_cuts(topology: Topology, largest: int) -> np.ndarray:
    """``b(g)`` for ``g = 0..largest``: the least traffic leaving any ``g`` nodes (a bound).

    Exact over the twin classes' count vectors when they can be enumerated; else the
    minimum cut of the graph (0 if it is not connected) for ``0 < g < K``.
    """
    k = topology.nodes
    out = np.zeros(largest + 1)
    cls = twin_classes(topology)
    pats = class_patterns(cls, largest) if len(cls.members) <= MAX_CLASSES else None
    if pats is not None:
        g = topology.graph
        wdeg = np.array(
            [
                sum(float(d.get("weight", 1.0)) for *_, d in g.edges(int(m[0]), data=True))
                for m in cls.members
            ]
        )
        size = pats.sum(axis=1)
        inside = np.array([cls.kept(p) for p in pats])
        leave = pats @ wdeg - 2.0 * inside
        out[1:] = math.inf
        np.minimum.at(out, size, leave)
        out[np.isinf(out)] = 0.0  # sizes no pattern has (above K): never used
    else:
        g = topology.graph
        cut = 0.0
        if topology.edges and nx.is_connected(g):
            cut = float(nx.stoer_wagner(g, weight="weight")[0])
        out[1:] = cut
    if k <= largest:
        out[k] = 0.0
    return np.maximum(out, 0.0)


def _bins(slots: int, largest: int) -> list[tuple[int, ...]] | None:
    """Every multiset of part sizes (each <= ``largest``) with total at most ``slots``."""
    out: list[tuple[int, ...]] = []

    def grow(prefix: list[int], left: int, top: int) -> bool:
        if prefix:
            out.append(tuple(prefix))
            if len(out) > BIN_LIMIT:
                return False
        for g in range(min(top, left), 0, -1):
            prefix.append(g)
            ok = grow(prefix, left - g, g)
            prefix.pop()
            if not ok:
                return False
        return True

    return out if grow([], slots, largest) else None


class Relaxation:
    """The linear relaxation of the module notes for one cluster and set of graphs.

    ``least`` gives each type's least template cost ``l_j`` (a lower bound is enough).
    """

    def __init__(
        self, cluster: Cluster, topologies: Sequence[Topology], least: Sequence[float] | np.ndarray
    ) -> None:
        self.cluster, self.tops = cluster, list(topologies)
        self.unit = cluster.unit
        self.least = np.asarray(least, dtype=float)
        smax = int(cluster.slots.max())
        self.largest = min(smax, max(t.nodes for t in self.tops))
        self.cuts = [part_cuts(t, self.largest) for t in self.tops]
        types: dict[int, int] = {}
        for s in cluster.slots.tolist():
            types[s] = types.get(s, 0) + 1
        bins = {s: _bins(s, self.largest) for s in types}
        self.collapsed = any(b is None for b in bins.values())
        self.types = types
        self.bins = {s: b for s, b in bins.items() if b is not None}
        self._matrix()

    def _matrix(self) -> None:
        """Build the constraint rows shared by both problems (variables n, C, y, m)."""
        nj, gmax = len(self.tops), self.largest
        self.ny = nj * gmax
        bin_list = [(s, b) for s in sorted(self.bins) for b in self.bins[s]]
        nb = 0 if self.collapsed else len(bin_list)
        nv = 2 * nj + self.ny + nb
        rows_eq, rows_ub, b_ub = [], [], []

        def y(j: int, g: int) -> int:
            return 2 * nj + j * gmax + (g - 1)

        for j, t in enumerate(self.tops):
            row = np.zeros(nv)
            row[j] = -t.nodes
            for g in range(1, gmax + 1):
                row[y(j, g)] = g
            rows_eq.append(row)
            row = np.zeros(nv)
            row[nj + j] = -1.0
            for g in range(1, gmax + 1):
                row[y(j, g)] = 0.5 * self.unit * self.cuts[j][g]
            rows_ub.append(row)
            b_ub.append(0.0)
            row = np.zeros(nv)
            row[nj + j], row[j] = -1.0, self.least[j] if np.isfinite(self.least[j]) else 0.0
            rows_ub.append(row)
            b_ub.append(0.0)
        if self.collapsed:
            row = np.zeros(nv)
            row[:nj] = [t.nodes for t in self.tops]
            rows_ub.append(row)
            b_ub.append(float(self.cluster.total_slots))
        else:
            for g in range(1, gmax + 1):
                row = np.zeros(nv)
                for j in range(nj):
                    row[y(j, g)] = 1.0
                for i, (_, b) in enumerate(bin_list):
                    row[2 * nj + self.ny + i] = -b.count(g)
                rows_ub.append(row)
                b_ub.append(0.0)
            for s, count in self.types.items():
                row = np.zeros(nv)
                for i, (si, _) in enumerate(bin_list):
                    row[2 * nj + self.ny + i] = 1.0 if si == s else 0.0
                rows_ub.append(row)
                b_ub.append(float(count))
        for r in range(2):
            cap = self.cluster.capacity[:, r].sum()
            if np.isfinite(cap):
                row = np.zeros(nv)
                row[:nj] = [float(t.demands()[:, r].sum()) for t in self.tops]
                rows_ub.append(row)
                b_ub.append(float(cap))
        self.nv = nv
        self.a_eq = sparse.csr_array(np.array(rows_eq))
        self.a_ub = sparse.csr_array(np.array(rows_ub))
        self.b_ub = np.array(b_ub)
        self.y_hi = np.array(
            [[math.inf if g <= t.nodes else 0.0 for g in range(1, gmax + 1)] for t in self.tops]
        ).ravel()

    def _solve(self, c: np.ndarray, n_lo: np.ndarray, n_hi: np.ndarray) -> float | None:
        nj = len(self.tops)
        bounds = (
            [(float(a), float(b)) for a, b in zip(n_lo, n_hi, strict=True)]
            + [(0.0, None)] * nj
            + [(0.0, None if math.isinf(h) else 0.0) for h in self.y_hi]
            + [(0.0, None)] * (self.nv - 2 * nj - self.ny)
        )
        # a small LP, solved in place (solve_quietly's thread and capture cost more than it)
        res = linprog(
            c,
            A_ub=self.a_ub,
            b_ub=self.b_ub,
            A_eq=self.a_eq,
            b_eq=np.zeros(nj),
            bounds=bounds,
            method="highs",
            options={"disp": False},
        )
        return float(res.fun) if res.status == 0 else None

    def static_bound(self, rho: Sequence[float] | np.ndarray) -> float:
        """Lower bound on the static optimum for loads ``rho`` (``inf``: no point serves them)."""
        nj = len(self.tops)
        c = np.zeros(self.nv)
        c[nj : 2 * nj] = 1.0
        got = self._solve(c, np.asarray(rho, dtype=float), np.full(nj, math.inf))
        return math.inf if got is None else got

    def weight_bound(
        self, values: Sequence[float] | np.ndarray, caps: Sequence[float] | np.ndarray
    ) -> float:
        """Upper bound on the weight of a configuration (at most ``caps[j]`` of type j)."""
        nj = len(self.tops)
        v = np.asarray(values, dtype=float)
        hi = np.array(
            [
                min(float(caps[j]), self.cluster.total_slots / t.nodes) if v[j] > 0 else 0.0
                for j, t in enumerate(self.tops)
            ]
        )
        if not hi.any():
            return 0.0
        c = np.zeros(self.nv)
        c[:nj] = -v
        c[nj : 2 * nj] = 1.0
        got = self._solve(c, np.zeros(nj), hi)
        return math.inf if got is None else max(-got, 0.0)
