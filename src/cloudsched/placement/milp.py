"""The max-weight configuration as an integer program, solved exactly by HiGHS.

For each type j there are ``U_j`` template copies ``t`` (``U_j`` = the cap, at most
``S // K_j``); binary ``u_t`` says the copy is used and binary ``x[t, v, l]`` puts node ``v``
on machine ``l``::

    maximise   sum_t value_j u_t - sum_{t, e} w_e (z[t, e] + (c - 1) y[t, e])
    subject to sum_l x[t, v, l] = u_t                    (each node of a used copy placed once)
               sum_{t, v} x[t, v, l] <= K_l                (slots of machine l)
               sum_{t, v} d_v^r x[t, v, l] <= C_l^r        (CPU, memory of l, where limited)
               z[t, e] >= x[t, a, l] - x[t, b, l]          (edge e = (a, b) broken, every l)
               y[t, e] >= X[t, a, r] - X[t, b, r]          (broken across racks, every rack r)
               u_{t+1} <= u_t                              (copies of a type used in order)

where ``w_e`` is the edge's traffic, ``X[t, v, r]`` sums ``x`` over the machines of rack ``r``
and ``c`` is the cross-rack cost (the rack rows exist only with racks and ``c > 1``): an edge
costs 1 when broken inside a rack and ``c`` across racks, as in
:class:`~cloudsched.placement.cluster.Cluster`.  Its size grows with copies x nodes x
machines: it proves optimality in 0.01 s on 3 x 3 slots, but a single word-count template on
3 x 10 takes about 15 s, so larger clusters use :mod:`cloudsched.placement.fastpack`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint

from cloudsched.placement._highs import solve_milp
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology

__all__ = ["exact_max_weight"]


def exact_max_weight(
    cluster: Cluster,
    topologies: Sequence[Topology],
    values: Sequence[float] | np.ndarray,
    caps: Sequence[int] | np.ndarray | None = None,
    *,
    time_limit: float | None = None,
) -> tuple[list[tuple[int, np.ndarray]], bool, float]:
    """Solve the max-weight configuration MILP (module notes) with HiGHS.

    Returns the templates (type, machine of each node), whether HiGHS proved them optimal,
    and an upper bound on the best weight (HiGHS's dual bound; the weight found when
    proven).  ``time_limit`` is in seconds.
    """
    nm = cluster.machines
    total = cluster.total_slots
    use_racks = cluster.racks > 1 and cluster.cross_rack_cost > 1.0
    copies: list[int] = []
    for j, top in enumerate(topologies):
        limit = total // top.nodes
        if caps is not None:
            limit = min(limit, int(caps[j]))
        copies.append(limit if values[j] > 0 and top.nodes <= total else 0)
    if sum(copies) == 0:
        return [], True, 0.0

    # Variable layout, copy by copy: u, x[v, l] (K*L), z[e] (E), y[e] (E if racks).
    layout: list[tuple[int, int]] = []  # (type, first variable) per copy
    obj: list[float] = []
    integral: list[int] = []
    rows: list[tuple[list[int], list[float], float, float]] = []  # (cols, vals, lo, hi)
    capacity_cols: list[list[int]] = [[] for _ in range(nm)]
    rack_members = [np.flatnonzero(cluster.rack == r) for r in range(cluster.racks)]
    limited = [r for r in range(2) if np.isfinite(cluster.capacity[:, r]).any()]
    resource_cols: list[list[tuple[int, float]]] = [[] for _ in range(nm * len(limited))]
    for j, top in enumerate(topologies):
        k = top.nodes
        edges = top.edge_array()
        traffic = top.edge_weights()
        dem = top.demands()
        ne = len(edges)
        prev_u = -1
        for _ in range(copies[j]):
            u = len(obj)
            layout.append((j, u))
            obj.append(-float(values[j]))
            integral.append(1)
            xs = u + 1
            obj.extend([0.0] * (k * nm))
            integral.extend([1] * (k * nm))
            zs = len(obj)
            obj.extend(traffic.tolist())
            integral.extend([0] * ne)
            ys = len(obj)
            if use_racks:
                obj.extend((traffic * (cluster.cross_rack_cost - 1.0)).tolist())
                integral.extend([0] * ne)
            for v in range(k):
                rows.append(([*(xs + v * nm + m for m in range(nm)), u], [1.0] * nm + [-1.0], 0, 0))
                for m in range(nm):
                    capacity_cols[m].append(xs + v * nm + m)
                    for i, r in enumerate(limited):
                        resource_cols[i * nm + m].append((xs + v * nm + m, float(dem[v, r])))
            for e, (a, b) in enumerate(edges):
                for m in range(nm):
                    rows.append(
                        (
                            [xs + a * nm + m, xs + b * nm + m, zs + e],
                            [1.0, -1.0, -1.0],
                            -np.inf,
                            0.0,
                        )
                    )
                if use_racks:
                    for members in rack_members:
                        cols = [
                            *(xs + a * nm + m for m in members),
                            *(xs + b * nm + m for m in members),
                            ys + e,
                        ]
                        vals = [1.0] * len(members) + [-1.0] * len(members) + [-1.0]
                        rows.append((cols, vals, -np.inf, 0.0))
            if prev_u >= 0:
                rows.append(([u, prev_u], [1.0, -1.0], -np.inf, 0.0))
            prev_u = u
    for m in range(nm):
        rows.append(
            (capacity_cols[m], [1.0] * len(capacity_cols[m]), -np.inf, float(cluster.slots[m]))
        )
        for i, r in enumerate(limited):
            cap = float(cluster.capacity[m, r])
            if np.isfinite(cap):
                cols = resource_cols[i * nm + m]
                rows.append(([c for c, _ in cols], [d for _, d in cols], -np.inf, cap))

    nvar = len(obj)
    r_idx = np.concatenate([np.full(len(c), i) for i, (c, _, _, _) in enumerate(rows)])
    c_idx = np.concatenate([np.asarray(c) for c, _, _, _ in rows])
    coef = np.concatenate([np.asarray(v, dtype=float) for _, v, _, _ in rows])
    a = sparse.csr_array((coef, (r_idx, c_idx)), shape=(len(rows), nvar))
    lo = np.array([r[2] for r in rows], dtype=float)
    hi = np.array([r[3] for r in rows], dtype=float)
    res = solve_milp(
        "HiGHS (max-weight MILP)",
        np.asarray(obj),
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.asarray(integral),
        bounds=Bounds(0.0, 1.0),
        time_limit=time_limit,
    )
    bound = -float(res.mip_dual_bound) if res.mip_dual_bound is not None else math.inf
    if res.x is None:  # no feasible point within the time limit: use the empty configuration
        return [], False, max(bound, 0.0)
    x = np.round(res.x).astype(np.int64)
    templates: list[tuple[int, np.ndarray]] = []
    for j, u in layout:
        if x[u] == 1:
            k = topologies[j].nodes
            templates.append((j, x[u + 1 : u + 1 + k * nm].reshape(k, nm).argmax(axis=1)))
    optimal = res.status == 0
    return templates, optimal, (-float(res.fun) if optimal else bound)
