"""The least-cost template of a job graph, exactly where the graph allows it.

A Storm topology's executors of one component are *twins*: they talk to the same executors
with the same traffic and demand the same CPU and memory, so a placement is described by how
many of each component sit on each machine.  :func:`twin_classes` finds such classes in any
graph (nodes with equal neighbourhoods, adjacent to each other or not).  The traffic kept
inside one machine is then a quadratic function of the counts, fixed for a *pattern* (the
count of each class on one machine), and the least-cost template is a cutting-stock problem:
choose patterns, each on a machine it fits, that cover every class exactly and keep the most
traffic inside machines::

    maximise   sum_{p, t} y[p, t] I(p)
    subject to sum_{p, t} y[p, t] n_p[c] = size_c      (every node of class c placed)
               sum_p y[p, t] <= machines of type t      (one pattern per machine)
               y integer >= 0, only for patterns that fit type t (slots, CPU, memory)

solved by HiGHS (:mod:`cloudsched.placement._highs`), with ``I(p)`` the traffic inside a pattern
and a machine type a set of machines with the same free slots, CPU and memory.  Its cost is
``W - I`` (``W``: all the graph's traffic) when every broken edge costs 1, that is within
one rack.  With several racks the least-cost template is looked for in each rack alone (an
exact value for it); the same problem over the whole cluster with every broken edge at the
smallest distance is a lower bound, and the two agree whenever some rack can hold the best
template, which proves it optimal.  A graph with too many patterns (many classes: long
chains, random graphs) gets the greedy packer's template and a lower bound from the graph
alone (each node keeps at most its ``s - 1`` heaviest links on a machine of ``s`` slots, and
every machine's share of a graph split ``p`` ways cuts at least its minimum cut).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint

from cloudsched.placement._highs import solve_milp
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.graphcuts import forest_split, graph_bound
from cloudsched.placement.topology import Topology

__all__ = [
    "MAX_CLASSES",
    "LeastCost",
    "TwinClasses",
    "class_patterns",
    "least_cost_template",
    "twin_classes",
]

#: Patterns enumerated at most (beyond, the graph gets the greedy template and a bound).
PATTERN_LIMIT = 20_000
#: Twin classes at most for the pattern MILP (beyond, HiGHS is slow on the weak relaxation).
MAX_CLASSES = 16
#: Seconds for one cutting-stock MILP unless the caller gives a limit.
MILP_TIME_LIMIT = 10.0


@dataclass(frozen=True)
class TwinClasses:
    """Nodes with identical neighbourhoods (and demands), and the traffic between classes.

    ``members[c]``: the nodes of class ``c`` (sorted); ``between[a, b]``: traffic of each
    edge between a node of ``a`` and one of ``b`` (0: none); ``inside[c]``: traffic of each
    edge inside class ``c`` (0 when its nodes are not linked); ``demand[c]``: CPU and memory
    of one node.
    """

    members: list[np.ndarray]
    between: np.ndarray
    inside: np.ndarray
    demand: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """Nodes per class."""
        return np.array([m.size for m in self.members], dtype=np.int64)

    def kept(self, counts: np.ndarray) -> float:
        """Traffic inside a machine holding ``counts[c]`` nodes of each class."""
        n = np.asarray(counts, dtype=float)
        return float(0.5 * (n @ self.between @ n) + (self.inside * n * (n - 1) / 2).sum())


def twin_classes(topology: Topology) -> TwinClasses:
    """Group the nodes of ``topology`` into classes of twins (see the module notes)."""
    g = topology.graph
    dem = topology.demands()

    def wt(u: int, v: int) -> float:
        return float(g.edges[u, v].get("weight", 1.0))

    keys: dict[tuple[object, ...], list[int]] = {}
    for v in sorted(g.nodes):
        near = tuple(sorted((w, wt(v, w)) for w in g.neighbors(v)))
        keys.setdefault(("open", tuple(dem[v]), near), []).append(v)
    classes = [vs for vs in keys.values() if len(vs) > 1]
    single = sorted(vs[0] for vs in keys.values() if len(vs) == 1)
    closed: dict[tuple[object, ...], list[int]] = {}
    for v in single:  # true twins: equal closed neighbourhoods, all links of equal traffic
        near = tuple(sorted((w, wt(v, w)) for w in g.neighbors(v)))
        closed.setdefault((tuple(dem[v]), tuple(sorted({*g.neighbors(v), v}))), []).append(v)
    for vs in closed.values():
        inner = {wt(u, w) for u, w in itertools.combinations(vs, 2)}
        outer_ok = all(
            len({wt(u, w) for u in vs}) == 1
            for w in set().union(*(set(g.neighbors(u)) for u in vs)) - set(vs)
        )
        if len(vs) > 1 and len(inner) == 1 and outer_ok:
            classes.append(vs)
        else:
            classes.extend([v] for v in vs)
    classes.sort(key=lambda vs: vs[0])
    members = [np.asarray(vs, dtype=np.int64) for vs in classes]
    c = len(members)
    between, inside = np.zeros((c, c)), np.zeros(c)
    for a in range(c):
        u = int(members[a][0])
        if members[a].size > 1 and g.has_edge(u, int(members[a][1])):
            inside[a] = wt(u, int(members[a][1]))
        for b in range(c):
            w = int(members[b][0])
            if a != b and g.has_edge(u, w):
                between[a, b] = wt(u, w)
    return TwinClasses(members, between, inside, np.array([dem[m[0]] for m in members]))


@dataclass(frozen=True)
class LeastCost:
    """The least-cost template found and a lower bound on any template's cost.

    ``machines`` gives the machine of each node (None: the graph does not fit the free
    capacity); ``cost`` its cost; ``lower_bound`` holds for every template on this free
    capacity; ``proven`` when the two agree (within 1e-9).
    """

    machines: np.ndarray | None
    cost: float
    lower_bound: float
    proven: bool
    method: str
    seconds: float


def class_patterns(cls: TwinClasses, cap_slots: int) -> np.ndarray | None:
    """Every count vector with 1..cap_slots nodes (rows), or None beyond PATTERN_LIMIT."""
    sizes = [int(x) for x in cls.sizes]
    out: list[tuple[int, ...]] = []

    def grow(prefix: list[int], left: int) -> bool:
        if len(prefix) == len(sizes):
            if sum(prefix) > 0:
                out.append(tuple(prefix))
            return len(out) <= PATTERN_LIMIT
        for n in range(min(sizes[len(prefix)], left) + 1):
            prefix.append(n)
            ok = grow(prefix, left - n)
            prefix.pop()
            if not ok:
                return False
        return True

    if len(sizes) > 400 or not grow([], cap_slots):
        return None
    return np.asarray(out, dtype=np.int64).reshape(-1, len(sizes))


def _machine_types(free: np.ndarray, res: np.ndarray, machines: np.ndarray) -> list[np.ndarray]:
    """Group the given machines by equal free slots, CPU and memory (slots >= 1)."""
    groups: dict[tuple[int, float, float], list[int]] = {}
    for m in machines.tolist():
        if free[m] > 0:
            groups.setdefault((int(free[m]), float(res[m, 0]), float(res[m, 1])), []).append(m)
    return [np.asarray(v, dtype=np.int64) for v in groups.values()]


def _cover(
    cls: TwinClasses,
    pats: np.ndarray,
    types: list[np.ndarray],
    free: np.ndarray,
    res: np.ndarray,
    time_limit: float | None,
) -> tuple[np.ndarray | None, float, float]:
    """Solve the cutting-stock MILP over ``types``: (groups per machine, kept, kept bound).

    Returns ``(counts, kept, bound)``: ``counts[m]`` the class counts on machine ``m`` (None
    if infeasible), the traffic kept inside machines, and an upper bound on it.
    """
    kept = np.array([cls.kept(p) for p in pats])
    size = pats.sum(axis=1)
    need = pats @ cls.demand  # (P, 2)
    cols: list[tuple[int, int]] = []  # (pattern, type)
    for t, ms in enumerate(types):
        m = int(ms[0])
        ok = (size <= free[m]) & np.all(need <= res[m] + 1e-9, axis=1)
        cols.extend((int(p), t) for p in np.flatnonzero(ok))
    if not cols:
        return None, 0.0, 0.0
    p_idx = np.array([p for p, _ in cols])
    t_idx = np.array([t for _, t in cols])
    nc = pats.shape[1]
    cover = sparse.csr_array(pats[p_idx].T.astype(float))
    count = sparse.csr_array(
        (np.ones(len(cols)), (t_idx, np.arange(len(cols)))), shape=(len(types), len(cols))
    )
    sizes = cls.sizes.astype(float)
    a = sparse.vstack([cover, count]).tocsr()
    lo = np.concatenate([sizes, np.zeros(len(types))])
    hi = np.concatenate([sizes, [float(ms.size) for ms in types]])
    limit = MILP_TIME_LIMIT if time_limit is None else time_limit
    res_ = solve_milp(
        "HiGHS (least-cost template)",
        -kept[p_idx],
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(len(cols)),
        bounds=Bounds(0, np.inf),
        time_limit=max(float(limit), 0.01),
        fine=False,
    )
    bound = -float(res_.mip_dual_bound) if res_.mip_dual_bound is not None else math.inf
    if res_.x is None:
        return None, 0.0, bound if res_.status != 2 else 0.0
    y = np.round(res_.x).astype(np.int64)
    counts = np.zeros((free.size, nc), dtype=np.int64)
    used = [0] * len(types)
    for i in np.flatnonzero(y):
        for _ in range(int(y[i])):
            t = int(t_idx[i])
            counts[types[t][used[t]]] = pats[p_idx[i]]
            used[t] += 1
    got = float(kept[p_idx] @ y)
    return counts, got, max(bound, got) if res_.status != 0 else got


def _assign(cls: TwinClasses, counts: np.ndarray, k: int) -> np.ndarray:
    """Machine of each node from the class counts per machine."""
    out = np.full(k, -1, dtype=np.int64)
    nxt = [0] * len(cls.members)
    for m in np.flatnonzero(counts.sum(axis=1)).tolist():
        for c, n in enumerate(counts[m].tolist()):
            out[cls.members[c][nxt[c] : nxt[c] + n]] = m
            nxt[c] += n
    return out


def least_cost_template(
    cluster: Cluster,
    topology: Topology,
    free: np.ndarray | None = None,
    res: np.ndarray | None = None,
    *,
    time_limit: float | None = None,
    exact: bool = True,
) -> LeastCost:
    """Find the least-cost template of ``topology`` on the free capacity, with a lower bound.

    ``free`` (slots per machine) and ``res`` (free CPU and memory, ``(L, 2)``) default to
    the empty cluster.  See the module notes for the method; ``time_limit`` bounds each
    MILP (past it the best template found and HiGHS's bound are used; HiGHS may overrun
    it on a large model).  ``exact=False`` stops at the greedy template and the graph
    bound (for a caller whose time is spent).
    """
    t0 = time.perf_counter()
    free = cluster.slots.copy() if free is None else np.asarray(free, dtype=np.int64)
    res = cluster.capacity.copy() if res is None else np.asarray(res, dtype=float)
    unit = cluster.unit
    k, total = topology.nodes, topology.total_traffic
    if k > int(free.sum()) or np.any(topology.demands().sum(axis=0) > res.sum(axis=0) + 1e-9):
        return LeastCost(None, math.inf, math.inf, True, "does not fit", time.perf_counter() - t0)
    quick = _fallback(cluster, topology, free, res, unit, t0)
    if quick.proven or not exact:
        return quick
    if nx.is_forest(topology.graph) and topology.edges:
        return _forest(cluster, topology, free, res, unit, t0, quick)
    cls = twin_classes(topology)
    pats = class_patterns(cls, int(free.max())) if len(cls.members) <= MAX_CLASSES else None
    if pats is None:
        return quick
    machines = np.arange(cluster.machines)
    counts, _, bound = _cover(cls, pats, _machine_types(free, res, machines), free, res, time_limit)
    lower = unit * max(total - bound, 0.0)
    best: tuple[float, np.ndarray] | None = None
    if counts is not None:
        where = _assign(cls, counts, k)
        best = (cluster.cost(topology, where), where)
    if (
        cluster.racks > 1
        and cluster.cross_rack_cost > 1.0
        and not (best is not None and best[0] <= lower + 1e-9)
    ):
        seen: set[tuple[tuple[int, float, float], ...]] = set()
        for r in range(cluster.racks):
            mine = np.flatnonzero(cluster.rack == r)
            sig = tuple(sorted((int(free[m]), float(res[m, 0]), float(res[m, 1])) for m in mine))
            if sig in seen or int(free[mine].sum()) < k:
                continue
            seen.add(sig)
            got, _, _ = _cover(cls, pats, _machine_types(free, res, mine), free, res, time_limit)
            if got is not None:
                where = _assign(cls, got, k)
                cost = cluster.cost(topology, where)
                if best is None or cost < best[0]:
                    best = (cost, where)
    if quick.machines is not None and (best is None or quick.cost < best[0]):
        best = (quick.cost, quick.machines)
    lower = max(lower, quick.lower_bound)
    if best is None:
        return _fallback(cluster, topology, free, res, unit, t0, lower)
    proven = best[0] <= lower + 1e-9 * max(1.0, total)
    return LeastCost(
        best[1], best[0], min(lower, best[0]), proven, "patterns", time.perf_counter() - t0
    )


def _fallback(
    cluster: Cluster,
    topology: Topology,
    free: np.ndarray,
    res: np.ndarray,
    unit: float,
    t0: float,
    lower: float = 0.0,
) -> LeastCost:
    """Return the greedy packer's template and the graph bound (nothing exact applies)."""
    from cloudsched.placement.baselines import greedy

    lower = max(lower, unit * graph_bound(topology, int(free.max())))
    where = greedy(topology, free, cluster, res)
    if where is None:
        return LeastCost(
            None, math.inf, lower, False, "greedy (no fit found)", time.perf_counter() - t0
        )
    cost = cluster.cost(topology, where)
    return LeastCost(
        where,
        cost,
        min(lower, cost),
        cost <= lower + 1e-9,
        "greedy + graph bound",
        time.perf_counter() - t0,
    )


def _forest(
    cluster: Cluster,
    topology: Topology,
    free: np.ndarray,
    res: np.ndarray,
    unit: float,
    t0: float,
    quick: LeastCost,
) -> LeastCost:
    """Trees and chains: the exact split (a lower bound), packed into one rack if it fits."""
    cut, piece = forest_split(topology, int(free.max()))
    lower = max(unit * cut, quick.lower_bound)
    dem = topology.demands()
    sizes = np.bincount(piece)
    best = (quick.cost, quick.machines) if quick.machines is not None else None
    # each rack alone, then the whole cluster (racks in order): pieces by decreasing size,
    # each on the fullest machine it fits (best fit)
    for r in [*range(cluster.racks), -1]:
        inside = cluster.rack == r if r >= 0 else np.ones(cluster.machines, dtype=bool)
        left = np.where(inside, free, 0).astype(np.int64)
        room = np.where(inside[:, None], res, 0.0)
        where = np.full(topology.nodes, -1, dtype=np.int64)
        for p in np.argsort(-sizes, kind="stable").tolist():
            need = dem[piece == p].sum(axis=0)
            fit = np.flatnonzero((left >= sizes[p]) & np.all(room >= need - 1e-9, axis=1))
            if fit.size == 0:
                break
            if r < 0:  # across racks: stay in the rack of the pieces placed so far
                fit = fit[cluster.rack[fit] == cluster.rack[fit].min()]
            m = int(fit[np.lexsort((fit, left[fit]))[0]])
            where[piece == p] = m
            left[m] -= sizes[p]
            room[m] -= need
        if np.all(where >= 0):
            cost = cluster.cost(topology, where)
            if best is None or cost < best[0]:
                best = (cost, where)
            if cost <= lower + 1e-9:
                break
    if best is None:
        return quick
    proven = best[0] <= lower + 1e-9 * max(1.0, topology.total_traffic)
    return LeastCost(
        best[1], best[0], min(lower, best[0]), proven, "tree split", time.perf_counter() - t0
    )
