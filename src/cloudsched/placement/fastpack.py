"""A fast max-weight configuration for large clusters, with a bound on how far it can be off.

*Packing.*  Every type has a least-cost template on the empty cluster
(:func:`~cloudsched.placement.shapes.least_cost_template`): its *shape*, the groups of nodes
that share a machine.  Templates are added one at a time, the type of the highest value per
slot ``(value_j - c_j) / K_j`` first (``c_j`` its shape's cost): the shape's groups, largest
first, each on the fullest machine of one rack that still has room for it (best fit, racks
with the most free slots first; across racks only if no rack can hold it), or failing that
the greedy packer's template on what is left.  A template is kept while its weight
``value_j - cost`` is positive and the type's cap is not reached.  When this packing does
not reach the bound below, it is repeated with the largest graphs first, and the heavier of
the two is kept.

*Bound.*  Every type-j template costs at least ``l_j``, the lower bound of its least-cost
template, and uses ``K_j`` slots and its nodes' CPU and memory, so the best configuration
weighs at most the optimum of the fractional knapsack::

    maximise sum_j x_j (value_j - l_j)   subject to   sum_j x_j K_j <= S,
             sum_j x_j D_j^r <= C^r (each limited resource),   0 <= x_j <= cap_j

(solved by HiGHS), and at most the bound of the relaxation that also sees how templates
split over machines (:mod:`cloudsched.placement.relaxation`); the smaller is used.  Where the
cluster is large beside the jobs, packing reaches the bound and the configuration is proven
optimal; ``gap`` says how far it can be otherwise.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog

from cloudsched.placement.baselines import greedy
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.relaxation import Relaxation
from cloudsched.placement.shapes import LeastCost, least_cost_template
from cloudsched.placement.topology import Topology

__all__ = ["Library", "fast_max_weight", "knapsack_bound", "signature", "weight_bound"]


def signature(t: Topology) -> tuple[Any, ...]:
    """Return what a least-cost template depends on: the graph, traffic and demands."""
    return (t.nodes, t.edge_array().tobytes(), t.edge_weights().tobytes(), t.demands().tobytes())


@dataclass(frozen=True, eq=False)
class Library:
    """Each type's least-cost template on the empty cluster, and its groups of nodes."""

    cluster: Cluster
    topologies: tuple[Topology, ...]
    best: tuple[LeastCost, ...]

    @classmethod
    def build(
        cls,
        cluster: Cluster,
        topologies: Sequence[Topology],
        time_limit: float | None = None,
        budget: float | None = None,
    ) -> Library:
        """Solve each type's least-cost template (``time_limit`` seconds per MILP).

        Copies of one graph (same nodes, edges, traffic and demands; names aside) are
        solved once: many running topologies are copies of a few.  Once ``budget``
        seconds are spent, the graphs left get the greedy template and the graph bound.
        """
        t0 = time.perf_counter()
        solved: dict[tuple[Any, ...], LeastCost] = {}
        best = []
        for t in topologies:
            key = signature(t)
            if key not in solved:
                exact = budget is None or time.perf_counter() - t0 < budget
                solved[key] = least_cost_template(cluster, t, time_limit=time_limit, exact=exact)
            best.append(solved[key])
        return cls(cluster, tuple(topologies), tuple(best))

    @classmethod
    def within(cls, cluster: Cluster, topologies: Sequence[Topology], seconds: float) -> Library:
        """Build within about ``seconds``: half of them, shared by the distinct graphs' MILPs."""
        distinct = len({signature(t) for t in topologies})
        per = max(seconds / (2 * distinct), 0.1)
        return cls.build(cluster, topologies, time_limit=per, budget=seconds / 2)

    @functools.cached_property
    def relaxation(self) -> Relaxation:
        """The linear relaxation (:mod:`cloudsched.placement.relaxation`) of these graphs."""
        return Relaxation(self.cluster, self.topologies, self.lower_bounds)

    @functools.cached_property
    def shape_costs(self) -> np.ndarray:
        """Cost of each type's least-cost template found (its shape's cost)."""
        return np.array([b.cost for b in self.best])

    @property
    def lower_bounds(self) -> np.ndarray:
        """Least cost of any template of each type (``inf``: the type never fits)."""
        return np.array([b.lower_bound for b in self.best])

    @property
    def proven(self) -> bool:
        """Whether every type's least-cost template is proven."""
        return all(b.proven for b in self.best)

    def groups(self, j: int) -> list[np.ndarray]:
        """Nodes of type ``j`` sharing a machine in its least-cost template, largest first."""
        where = self.best[j].machines
        if where is None:
            return []
        out = [np.flatnonzero(where == m) for m in np.unique(where)]
        return sorted(out, key=lambda g: (-g.size, int(g[0])))


def _place_groups(
    lib: Library, j: int, free: np.ndarray, res: np.ndarray, machines: np.ndarray
) -> np.ndarray | None:
    """Put the shape's groups on distinct ``machines`` (best fit), or None."""
    top = lib.topologies[j]
    dem = top.demands()
    where = np.full(top.nodes, -1, dtype=np.int64)
    used: set[int] = set()
    for g in lib.groups(j):
        need = dem[g].sum(axis=0)
        ok = [
            m
            for m in machines.tolist()
            if m not in used and free[m] >= g.size and np.all(res[m] >= need - 1e-9)
        ]
        if not ok:
            return None
        m = min(ok, key=lambda m: (int(free[m]), m))
        where[g] = m
        used.add(m)
    return where


def place_shape(
    lib: Library, j: int, free: np.ndarray, res: np.ndarray
) -> tuple[np.ndarray, float] | None:
    """Choose the type-``j`` template to add on the free capacity (module notes), and its cost."""
    cl = lib.cluster
    racks = sorted(range(cl.racks), key=lambda r: (-int(free[cl.rack == r].sum()), r))
    for r in racks:
        where = _place_groups(lib, j, free, res, np.flatnonzero(cl.rack == r))
        if where is not None:
            return where, cl.cost(lib.topologies[j], where)
    where = _place_groups(lib, j, free, res, np.argsort(cl.rack, kind="stable"))
    fallback = greedy(lib.topologies[j], free, cl, res)
    options = [w for w in (where, fallback) if w is not None]
    if not options:
        return None
    costs = [cl.cost(lib.topologies[j], w) for w in options]
    i = int(np.argmin(costs))
    return options[i], costs[i]


def knapsack_bound(
    lib: Library, values: Sequence[float] | np.ndarray, caps: Sequence[float] | np.ndarray
) -> float:
    """Upper bound on the weight of any configuration (module notes)."""
    caps = np.asarray(caps, dtype=float)
    lower = lib.lower_bounds
    profit = np.asarray(values, dtype=float) - lower
    use = np.flatnonzero((profit > 0) & np.isfinite(lower) & (np.asarray(caps) > 0))
    if use.size == 0:
        return 0.0
    cl = lib.cluster
    slots = float(cl.total_slots)
    room = cl.capacity.sum(axis=0)
    rows: list[list[float]] = [[float(lib.topologies[j].nodes) for j in use]]
    rhs = [slots]
    for r in range(2):
        if np.isfinite(room[r]):
            rows.append([float(lib.topologies[j].demands()[:, r].sum()) for j in use])
            rhs.append(float(room[r]))
    hi = [min(float(caps[j]), slots / lib.topologies[j].nodes) for j in use]
    # a tiny LP, solved in place (solve_quietly's thread and capture cost more than it)
    res = linprog(
        -profit[use],
        A_ub=np.array(rows),
        b_ub=np.array(rhs),
        bounds=list(zip([0.0] * use.size, hi, strict=True)),
        method="highs",
        options={"disp": False},
    )
    if res.status != 0:  # pragma: no cover - the box always holds a feasible point
        return math.inf
    return -float(res.fun)


def weight_bound(
    lib: Library, values: Sequence[float] | np.ndarray, caps: Sequence[int] | np.ndarray | None
) -> float:
    """Upper bound on the weight of any configuration: knapsack or relaxation, the smaller."""
    left = _caps(lib, caps)
    return min(knapsack_bound(lib, values, left), lib.relaxation.weight_bound(values, left))


def _caps(lib: Library, caps: Sequence[int] | np.ndarray | None) -> list[float]:
    return [
        int(caps[j]) if caps is not None else lib.cluster.total_slots // t.nodes
        for j, t in enumerate(lib.topologies)
    ]


def fast_max_weight(
    lib: Library,
    values: Sequence[float] | np.ndarray,
    caps: Sequence[int] | np.ndarray | None = None,
    *,
    keep: Sequence[tuple[int, np.ndarray, float]] = (),
    bound: float | None = None,
) -> tuple[list[tuple[int, np.ndarray]], float]:
    """Pack templates (module notes): the templates, and the upper bound on the best weight.

    ``keep`` lists templates in place (running jobs) as (type, machines, cost): each is kept
    first when it costs no more than its type's least-cost template and its weight is
    positive, so that a frame does not move a job that is already as well placed as it can
    be.  ``bound``: the upper bound, if already known for these values and caps.

    Types are packed in order of value per slot; when that packing does not reach the bound,
    the largest graphs first as well (a large graph's shape needs whole machines that small
    ones would otherwise take), and the heavier packing is returned.
    """
    if bound is None:
        bound = weight_bound(lib, values, caps)
    shape_cost = lib.shape_costs
    nodes = [t.nodes for t in lib.topologies]

    def per_slot(j: int) -> tuple[float, ...]:
        return ((values[j] - shape_cost[j]) / nodes[j], values[j], -j)

    def largest(j: int) -> tuple[float, ...]:
        return (nodes[j], *per_slot(j))

    out, weight = _pack(lib, values, caps, keep, per_slot)
    if weight < bound - 1e-9 * max(1.0, abs(bound)):
        other, heavier = _pack(lib, values, caps, keep, largest)
        if heavier > weight + 1e-9 * max(1.0, abs(weight)):
            out = other
    return out, bound


def _pack(
    lib: Library,
    values: Sequence[float] | np.ndarray,
    caps: Sequence[int] | np.ndarray | None,
    keep: Sequence[tuple[int, np.ndarray, float]],
    order: Callable[[int], tuple[float, ...]],
) -> tuple[list[tuple[int, np.ndarray]], float]:
    """Add templates, the type of the largest ``order`` key first: the templates, their weight."""
    cl = lib.cluster
    nj = len(lib.topologies)
    left = _caps(lib, caps)
    free = cl.slots.copy()
    res = cl.capacity.copy()
    shape_cost = lib.shape_costs
    out: list[tuple[int, np.ndarray]] = []
    weight = 0.0
    for j, where, cost in keep:
        if left[j] > 0 and cost <= shape_cost[j] + 1e-9 and values[j] - cost > 0:
            out.append((j, where))
            np.subtract.at(free, where, 1)
            np.subtract.at(res, where, lib.topologies[j].demands())
            left[j] -= 1
            weight += values[j] - cost
    active = {j for j in range(nj) if left[j] > 0 and values[j] > lib.best[j].lower_bound}
    while active:
        j = max(active, key=order)
        got = place_shape(lib, j, free, res)
        if got is None or values[j] - got[1] <= 0:
            active.discard(j)
            continue
        where, cost = got
        out.append((j, where))
        np.subtract.at(free, where, 1)
        np.subtract.at(res, where, lib.topologies[j].demands())
        left[j] -= 1
        weight += values[j] - cost
        if left[j] == 0:
            active.discard(j)
    return out, weight
