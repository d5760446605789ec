"""The static partitioning optimum, by column generation over max-weight configurations.

The max-weight configuration (:mod:`cloudsched.placement.configuration`) and this bound
both come in two solvers (``solver``): ``exact``, HiGHS's MILP of
:mod:`cloudsched.placement.milp`, which proves optimality but only at small sizes, and
``fast``, the packing of :mod:`cloudsched.placement.fastpack` over each type's least-cost
template (:mod:`cloudsched.placement.shapes`), which comes with an upper bound on the best
weight; ``auto`` picks ``exact`` on clusters of at most 32 slots with graphs of at most 8
nodes.  Every answer says how far from optimal it may be.

Static optimum, by column generation.  Columns are configurations (templates per type, cost);
the master LP ``min sum_C x_C cost_C`` subject to ``sum_C x_C n_j(C) >= rho_j`` and
``sum_C x_C <= 1`` (the empty configuration takes the rest; HiGHS) prices new columns with
the max-weight problem, with the duals ``pi`` of the load rows as values: by the fast
solver, and (``exact``) by the MILP whenever the fast one finds no improving column.  For any
``pi >= 0``, ``pi . rho - W(pi)`` is a lower bound on the optimum (Lagrangian), where
``W(pi)`` bounds the best configuration's weight from above: the MILP's dual bound, or the
fast solver's bound.  The lower bound is also at least the optimum of the linear relaxation
of :mod:`cloudsched.placement.relaxation` (itself at least ``sum_j rho_j l_j``, ``l_j`` the
least cost of one type-j template).  The run stops when the master's value meets the
lower bound (``proven``), when no column improves it, or at ``time_limit``
(``hit_time_limit``); ``gap`` is ``(value - lower_bound) / value``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linprog

from cloudsched._quiet import solve_quietly
from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.configuration import max_weight_configuration, pick_solver
from cloudsched.placement.fastpack import Library, fast_max_weight, signature
from cloudsched.placement.workload import JobType
from cloudsched.progress import Progress

__all__ = ["StaticOptimum", "static_optimum"]


@dataclass(frozen=True)
class StaticOptimum:
    """The static partitioning problem: the best time-sharing found and a lower bound.

    Attributes
    ----------
    value : float
        Average partitioning cost per unit time of the best time-sharing found (an upper
        bound on the optimum; ``inf`` when none serving every load was found).
    lower_bound : float
        No time-sharing serving the loads costs less.
    gap : float
        ``(value - lower_bound) / value`` (0 when both are 0).
    proven : bool
        ``value`` is the optimum (``gap`` at most 1e-6).
    hit_time_limit : bool
        The search stopped at its time limit.
    cost_per_job : float
        ``value / sum_j rho_j``: average cost per job in service.
    configurations : list of (float, numpy.ndarray, float)
        The configurations used: time share, templates per type, cost.
    columns : int
        Configurations generated.
    solve_time : float
        Seconds.
    solver : str
        ``exact`` or ``fast``.
    note : str or None
        Why the value is not proven, when it is not.
    """

    value: float
    lower_bound: float
    gap: float
    proven: bool
    hit_time_limit: bool
    cost_per_job: float
    configurations: list[tuple[float, np.ndarray, float]]
    columns: int
    solve_time: float
    solver: str
    note: str | None = field(default=None)

    @property
    def cost_rate(self) -> float:
        """The value (the name the optimum had before bounds were reported)."""
        return self.value

    def to_dict(self, job_names: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-ready dict; each configuration as ``{share, <type>: templates, cost}``.

        Types are named by ``job_names`` (default ``type0, type1, ...``).
        """

        def names(k: int) -> list[str]:
            return list(job_names) if job_names is not None else [f"type{i}" for i in range(k)]

        configs = [
            {
                "share": float(x),
                **{nm: int(c) for nm, c in zip(names(len(n)), n, strict=True)},
                "cost": float(b),
            }
            for x, n, b in self.configurations
        ]
        value = self.value if math.isfinite(self.value) else None
        return {
            "value": value,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "proven": self.proven,
            "hit_time_limit": self.hit_time_limit,
            "solver": self.solver,
            "cost_per_job": self.cost_per_job,
            "columns": self.columns,
            "solve_time": self.solve_time,
            "note": self.note,
            "configurations": configs,
        }


class _Columns:
    """The configurations of the master LP (templates per type and cost), each once."""

    def __init__(self, types: int) -> None:
        self.types = types
        self.items: list[tuple[np.ndarray, float]] = []
        self._seen: set[tuple[tuple[int, ...], float]] = set()

    def add(self, counts: np.ndarray, cost: float) -> bool:
        key = (tuple(int(c) for c in counts), round(float(cost), 9))
        if key in self._seen or not np.any(counts):
            return False
        self._seen.add(key)
        self.items.append((np.asarray(counts, dtype=np.int64), float(cost)))
        return True

    def master(self, rho: np.ndarray, big: float) -> Any:
        """Solve ``min cost . x`` s.t. loads served (with dear slack), shares <= 1."""
        nj, ncol = self.types, len(self.items)
        n_mat = np.array([c for c, _ in self.items], dtype=float).reshape(ncol, nj).T
        cost = np.array([b for _, b in self.items])
        c = np.concatenate([cost, np.full(nj, big)])
        a_ub = np.vstack(
            [
                np.hstack([-n_mat, -np.eye(nj)]),
                np.concatenate([np.ones(ncol), np.zeros(nj)])[None, :],
            ]
        )
        b_ub = np.concatenate([-rho, [1.0]])
        res = solve_quietly(
            "HiGHS (master LP)", linprog, c, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs"
        )
        if res.status != 0:  # pragma: no cover - the master always has a feasible point
            raise RuntimeError(f"static optimum: master LP failed: {res.message}")
        return res


def _capacity_check(cluster: Cluster, job_types: Sequence[JobType], rho: np.ndarray) -> None:
    """Refuse loads that need more slots, CPU or memory on average than the cluster has."""
    need = [float(sum(r * jt.topology.nodes for r, jt in zip(rho, job_types, strict=True)))]
    have = [float(cluster.total_slots)]
    for k in range(2):
        need.append(
            float(
                sum(
                    r * jt.topology.demands()[:, k].sum()
                    for r, jt in zip(rho, job_types, strict=True)
                )
            )
        )
        have.append(float(cluster.capacity[:, k].sum()))
    for what, n, h in zip(("slots", "CPU", "memory"), need, have, strict=True):
        if n > h * (1 + 1e-12):
            raise ParameterError(
                "workload",
                f"loads needing {n:.4g} {what} on average",
                f"inside the cluster's capacity region ({h:.4g} {what})",
            )


def static_optimum(
    cluster: Cluster,
    job_types: Sequence[JobType],
    *,
    solver: str = "auto",
    time_limit: float = 60.0,
    max_columns: int = 2000,
    progress: Progress | None = None,
    library: Library | None = None,
) -> StaticOptimum:
    """Solve the static partitioning problem by column generation, with a lower bound.

    ``solver`` prices columns exactly (MILP) or fast (packing), ``auto`` as in the module
    notes; ``time_limit`` (seconds) bounds the whole search.  ``progress(-1, status)``
    (:mod:`cloudsched.progress`) is called after each master LP, the status giving the
    columns and the bracket ``lower <= optimum <= value``.  ``library`` reuses the
    least-cost templates of these job types' graphs on ``cluster`` where already solved.

    Raises
    ------
    ParameterError
        When the loads are outside the capacity region (they need more slots, CPU or memory
        than the cluster has, or, when proven, no time-sharing serves them) or a graph is
        larger than the cluster.
    """
    t0 = time.perf_counter()
    tops = [j.topology for j in job_types]
    for top in tops:
        cluster.check_fits(top)
    rho = np.array([j.load for j in job_types])
    _capacity_check(cluster, job_types, rho)
    kind = pick_solver(solver, cluster, tops)
    nj = len(tops)
    big = 10.0 * (1.0 + max(t.total_traffic for t in tops) * cluster.cross_rack_cost)
    lib = library
    same = lib is not None and len(lib.topologies) == nj and lib.cluster is cluster
    if lib is None or not (same and all(a is b for a, b in zip(lib.topologies, tops, strict=True))):
        lib = Library.within(cluster, tops, time_limit)
    lower = max(
        float(rho @ np.where(np.isfinite(lib.lower_bounds), lib.lower_bounds, 0.0)),
        lib.relaxation.static_bound(rho),
    )
    cols = _Columns(nj)
    hit = False
    alone: dict[tuple[Any, ...], tuple[int, float]] = {}  # copies of one graph pack alike
    for j in range(nj):  # as many least-cost templates of one type as fit
        key = signature(tops[j])
        if key not in alone:
            if alone and time.perf_counter() - t0 > time_limit:
                hit = True  # the master's slack covers the types left; the bound holds
                break
            only = np.zeros(nj)
            only[j] = big
            tpl, _ = fast_max_weight(lib, only)
            alone[key] = (len(tpl), sum(cluster.cost(tops[i], m) for i, m in tpl))
        counts = np.zeros(nj, dtype=np.int64)
        counts[j] = alone[key][0]
        cols.add(counts, alone[key][1])
    while True:
        res = cols.master(rho, big)
        ncol = len(cols.items)
        short = res.x[ncol:] > 1e-7
        value = math.inf if short.any() else float(res.fun)
        duals = -res.ineqlin.marginals
        prices, sigma = np.maximum(duals[:nj], 0.0), duals[nj]
        sol = max_weight_configuration(cluster, tops, prices, solver="fast", library=lib)
        improves = sol.weight > sigma + 1e-9 * (1.0 + abs(sigma))
        if kind == "exact" and not improves:  # the MILP proves no column is missing, or finds it
            left = time_limit - (time.perf_counter() - t0)
            sol = max_weight_configuration(
                cluster, tops, prices, solver="exact", time_limit=max(left, 0.1)
            )
            improves = sol.weight > sigma + 1e-9 * (1.0 + abs(sigma))
        lower = max(lower, float(prices @ rho) - max(sol.upper_bound, 0.0))
        if progress is not None:
            progress(-1.0, f"({ncol} columns, {lower:.4g} <= optimum <= {value:.4g})")
        if math.isfinite(value) and value - lower <= 1e-6 * max(1.0, abs(value)):
            break  # (an infinite value, loads not yet served, is never within 1e-6 of it)
        if time.perf_counter() - t0 > time_limit or ncol >= max_columns:
            hit = True
            break
        if not improves or not cols.add(sol.counts(nj), sol.cost):
            break
    return _result(cols, res, rho, value, lower, hit, kind, t0, job_types)


def _result(
    cols: _Columns,
    res: Any,
    rho: np.ndarray,
    value: float,
    lower: float,
    hit: bool,
    kind: str,
    t0: float,
    job_types: Sequence[JobType],
) -> StaticOptimum:
    ncol = len(cols.items)
    lower = min(lower, value)
    proven = math.isfinite(value) and value - lower <= 1e-6 * max(1.0, abs(value))
    note = None
    if not math.isfinite(value):
        slack = res.x[ncol:]
        short = ", ".join(
            f"{job_types[j].name} ({slack[j]:.3g} of {rho[j]:.3g})"
            for j in np.flatnonzero(slack > 1e-7).tolist()
        )
        if kind == "exact" and not hit:
            raise ParameterError(
                "workload", f"loads short by {short}", "inside the cluster's capacity region"
            )
        note = f"no time-sharing found that serves every load (short: {short})"
    elif not proven:
        note = ("time limit reached" if hit else "no better configuration found") + (
            f": the optimum is between {lower:.6g} and {value:.6g}"
        )
    used = [
        (float(res.x[i]), cols.items[i][0], cols.items[i][1])
        for i in range(ncol)
        if res.x[i] > 1e-12
    ]
    gap = 0.0 if proven else (math.inf if not math.isfinite(value) else (value - lower) / value)
    per_job = value / float(rho.sum())
    return StaticOptimum(
        value, lower, gap, proven, hit, per_job, used, ncol, time.perf_counter() - t0, kind, note
    )
