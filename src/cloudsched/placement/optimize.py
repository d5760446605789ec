"""Exact optimisation: the max-weight configuration and the static partitioning optimum.

Both are solved with HiGHS through SciPy: :func:`scipy.optimize.milp` for the integer program
of the max-weight configuration, :func:`scipy.optimize.linprog` for the master linear program
of the static problem (``shared/design/graph-placement.md``).

Max-weight configuration, as an integer program.  For each type j there are ``U_j`` template
copies ``t`` (``U_j`` = the cap, at most ``S // K_j``); binary ``u_t`` says the copy is used and
binary ``x[t, v, l]`` puts node ``v`` on machine ``l``::

    maximise   sum_t value_j u_t - sum_{t, e} w_e (z[t, e] + (c - 1) y[t, e])
    subject to sum_l x[t, v, l] = u_t                    (each node of a used copy placed once)
               sum_{t, v} x[t, v, l] <= K_l                (slots of machine l)
               sum_{t, v} d_v^r x[t, v, l] <= C_l^r        (CPU, memory of l, where limited)
               z[t, e] >= x[t, a, l] - x[t, b, l]          (edge e = (a, b) broken, every l)
               y[t, e] >= X[t, a, r] - X[t, b, r]          (broken across racks, every rack r)
               u_{t+1} <= u_t                              (copies of a type used in order)

where ``w_e`` is the edge's traffic, ``X[t, v, r]`` sums ``x`` over the machines of rack ``r``
and ``c`` is the cross-rack cost (the rack rows exist only with racks and ``c > 1``): an edge costs 1 when broken inside a
rack and ``c`` across racks, as in :class:`~cloudsched.placement.cluster.Cluster`.

Static optimum, by column generation.  Columns are configurations (templates per type, cost);
the master LP ``min sum_C x_C cost_C`` subject to ``sum_C x_C n_j(C) >= rho_j`` and
``sum_C x_C <= 1`` (the empty configuration takes the rest) prices new columns with the
max-weight problem above, with the duals of the load rows as values; it stops when no
configuration has negative reduced cost, which proves the optimum.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from cloudsched._quiet import solve_quietly
from cloudsched.errors import ParameterError
from cloudsched.placement.baselines import greedy
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology
from cloudsched.placement.workload import JobType

__all__ = ["MaxWeightSolution", "StaticOptimum", "max_weight_configuration", "static_optimum"]


@dataclass(frozen=True)
class MaxWeightSolution:
    """A configuration: ``templates`` is a list of ``(type index, machine of each node)``.

    ``optimal`` is False when the solver stopped at its time limit with the best
    configuration found so far (then it is a heuristic answer, not a proven optimum).
    """

    templates: list[tuple[int, np.ndarray]]
    weight: float
    cost: float
    optimal: bool
    solve_time: float

    def counts(self, types: int) -> np.ndarray:
        """Templates of each type, shape ``(types,)``."""
        out = np.zeros(types, dtype=np.int64)
        for j, _ in self.templates:
            out[j] += 1
        return out


def max_weight_configuration(
    cluster: Cluster,
    topologies: Sequence[Topology],
    values: Sequence[float],
    caps: Sequence[int] | np.ndarray | None = None,
    *,
    time_limit: float | None = None,
) -> MaxWeightSolution:
    """Find the configuration maximising ``sum over templates (values[j] - cost)``, solved exactly.

    Parameters
    ----------
    cluster : Cluster
        Machines, slots and distance cost.
    topologies : sequence of Topology
        The graph of each type.
    values : sequence of float
        Value of one type-j template (``alpha * f(Q_j)`` for MaxWeight, a dual price for
        column generation); types with a value <= 0 get no template.
    caps : sequence of int, optional
        At most ``caps[j]`` type-j templates (default: as many as fit).
    time_limit : float, optional
        Seconds for HiGHS; past it the best configuration found is returned with
        ``optimal=False``.

    Returns
    -------
    MaxWeightSolution
    """
    t0 = time.perf_counter()
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
        return MaxWeightSolution([], 0.0, 0.0, True, time.perf_counter() - t0)

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
                    rows.append(([xs + a * nm + m, xs + b * nm + m, zs + e], [1.0, -1.0, -1.0],
                                 -np.inf, 0.0))  # fmt: skip
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
    options: dict[str, float | bool] = {"mip_rel_gap": 1e-9, "disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = solve_quietly(
        "HiGHS (max-weight MILP)", milp, np.asarray(obj),
        constraints=LinearConstraint(a, lo, hi), integrality=np.asarray(integral),
        bounds=Bounds(0.0, 1.0), options=options,
    )  # fmt: skip
    if res.x is None:  # no feasible point within the time limit: use the empty configuration
        return MaxWeightSolution([], 0.0, 0.0, False, time.perf_counter() - t0)
    x = np.round(res.x).astype(np.int64)
    templates: list[tuple[int, np.ndarray]] = []
    weight = cost = 0.0
    for j, u in layout:
        if x[u] == 1:
            k = topologies[j].nodes
            machines = x[u + 1 : u + 1 + k * nm].reshape(k, nm).argmax(axis=1)
            b = cluster.cost(topologies[j], machines)
            templates.append((j, machines))
            weight += float(values[j]) - b
            cost += b
    optimal = res.status == 0
    return MaxWeightSolution(templates, weight, cost, optimal, time.perf_counter() - t0)


@dataclass(frozen=True)
class StaticOptimum:
    """The static partitioning optimum: a time-sharing of configurations.

    Attributes
    ----------
    cost_rate : float
        Optimal average partitioning cost per unit time (sum over templates in use).
    cost_per_job : float
        ``cost_rate / sum_j rho_j``: average cost per job in service.
    configurations : list of (float, numpy.ndarray, float)
        The configurations used: time share, templates per type, cost.
    columns : int
        Configurations generated.
    solve_time : float
        Seconds.
    proven : bool
        False when a pricing problem hit its time limit: ``cost_rate`` is then the cost of
        a feasible time-sharing (an upper bound), not a proven optimum.
    """

    cost_rate: float
    cost_per_job: float
    configurations: list[tuple[float, np.ndarray, float]]
    columns: int
    solve_time: float
    proven: bool = True

    def to_dict(self, job_names: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-ready dict; each configuration as ``{share, <type>: templates, cost}``.

        Types are named by ``job_names`` (default ``type0, type1, ...``).
        """
        def names(k: int) -> list[str]:
            return list(job_names) if job_names is not None else [f"type{i}" for i in range(k)]

        configs = [
            {"share": float(x), **{nm: int(c) for nm, c in zip(names(len(n)), n, strict=True)},
             "cost": float(b)}
            for x, n, b in self.configurations
        ]  # fmt: skip
        return {"cost_rate": self.cost_rate, "cost_per_job": self.cost_per_job,
                "proven": self.proven, "columns": self.columns,
                "solve_time": self.solve_time, "configurations": configs}  # fmt: skip


def _greedy_pack(cluster: Cluster, top: Topology) -> tuple[int, float]:
    """Pack copies of one graph greedily until the next does not fit: (count, cost)."""
    free = cluster.slots.copy()
    res = cluster.capacity.copy()
    n, cost = 0, 0.0
    while (where := greedy(top, free, cluster, res)) is not None:
        np.subtract.at(free, where, 1)
        np.subtract.at(res, where, top.demands())
        n += 1
        cost += cluster.cost(top, where)
    return n, cost


def static_optimum(
    cluster: Cluster,
    job_types: Sequence[JobType],
    *,
    max_columns: int = 2000,
    time_limit: float | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> StaticOptimum:
    """Solve the static partitioning LP exactly by column generation.

    ``time_limit`` bounds each pricing MILP (seconds); if one stops early the answer is
    marked ``proven=False``.  ``progress(columns, cost_rate)`` is called after each master
    LP (the cost rate of the columns so far, an upper estimate of the optimum).

    Raises
    ------
    ParameterError
        When the loads are outside the capacity region (no time-sharing of configurations
        serves every type's load) or a graph is larger than the cluster.
    """
    t0 = time.perf_counter()
    tops = [j.topology for j in job_types]
    for top in tops:
        cluster.check_fits(top)
    rho = np.array([j.load for j in job_types])
    nj = len(tops)
    big = 10.0 * (1.0 + max(t.edges for t in tops) * cluster.cross_rack_cost)
    cols: list[tuple[np.ndarray, float]] = []
    seen: set[tuple[tuple[int, ...], float]] = set()

    def add(counts: np.ndarray, cost: float) -> bool:
        key = (tuple(int(c) for c in counts), round(cost, 9))
        if key in seen:
            return False
        seen.add(key)
        cols.append((counts.astype(np.int64), float(cost)))
        return True

    for j, top in enumerate(tops):
        n, cost = _greedy_pack(cluster, top)
        counts = np.zeros(nj, dtype=np.int64)
        counts[j] = n
        add(counts, cost)
    proven = True
    while True:
        ncol = len(cols)
        n_mat = np.array([c for c, _ in cols], dtype=float).T  # (J, C)
        cost_vec = np.array([b for _, b in cols])
        c = np.concatenate([cost_vec, np.full(nj, big)])
        a_ub = np.vstack([
            np.hstack([-n_mat, -np.eye(nj)]),
            np.concatenate([np.ones(ncol), np.zeros(nj)])[None, :],
        ])  # fmt: skip
        b_ub = np.concatenate([-rho, [1.0]])
        res = solve_quietly("HiGHS (master LP)", linprog, c, A_ub=a_ub, b_ub=b_ub,
                            bounds=(0, None), method="highs")  # fmt: skip
        if res.status != 0:  # pragma: no cover - the master always has a feasible point
            raise RuntimeError(f"static optimum: master LP failed: {res.message}")
        if progress is not None:
            progress(ncol, float(res.fun))
        duals = -res.ineqlin.marginals
        prices, sigma = duals[:nj], -duals[nj]
        best = max_weight_configuration(cluster, tops, prices, time_limit=time_limit)
        proven = best.optimal and len(cols) < max_columns
        if best.weight <= -sigma + 1e-9 * (1.0 + abs(sigma)) or len(cols) >= max_columns:
            break
        if not add(best.counts(nj), best.cost):
            break
    slack = res.x[ncol:]
    if np.any(slack > 1e-7):
        short = ", ".join(
            f"{job_types[j].name} ({slack[j]:.3g} of {rho[j]:.3g})"
            for j in np.flatnonzero(slack > 1e-7).tolist()
        )
        raise ParameterError(
            "workload", f"loads short by {short}", "inside the cluster's capacity region"
        )
    used = [(float(res.x[i]), cols[i][0], cols[i][1]) for i in range(ncol) if res.x[i] > 1e-12]
    cost_rate = float(cost_vec @ res.x[:ncol])
    return StaticOptimum(
        cost_rate, cost_rate / float(rho.sum()), used, len(cols), time.perf_counter() - t0, proven
    )
