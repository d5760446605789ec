"""Storm as it runs: one placement of a set of long-running topologies, with its bound.

Running topologies have no arrival rates: each is placed once and stays.  The question is
where its executors go so that the traffic broken across machines (and racks) is least,
within every machine's slots, CPU and memory.  :func:`place_static` answers it with the
max-weight configuration of :mod:`cloudsched.placement.configuration`, each topology worth
more than any placement of all of them can cost (so every set of topologies that can be
placed together is, never trading one out to spare the others traffic) and capped at one
copy: the exact MILP where it is cheap, the packing otherwise.  Its cost is bounded
from below by the largest of

* the configuration solver's own bound: ``sum(values) - upper bound on the weight``;
* the static optimum's lower bound (:func:`~cloudsched.placement.optimize.static_optimum`)
  with every load 1: a time-sharing of configurations that serves one copy of each, which
  any placement of all of them is;
* the sum of each topology's least cost alone on the empty cluster;

so the gap it reports holds for every placement.  :func:`place_baseline` places the same
topologies, in the order given, the way Storm's EvenScheduler (``storm-default``) and
ResourceAwareScheduler (``resource-aware``) would on the empty cluster.
:func:`cloudsched.placement.storm_assignment.storm_assignment` writes a placement as
Storm's scheduler API sees it, for the scheduler shipped in ``cloudsched/data/storm``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.storm import ACKER, STORM_PORTS
from cloudsched.placement.topology import Topology

__all__ = ["BASELINES", "StaticPlacement", "over_capacity", "place_baseline", "place_static"]

#: Storm's schedulers :func:`place_baseline` imitates.
BASELINES = ("storm-default", "resource-aware")


@dataclass
class StaticPlacement:
    """Where each topology's nodes went (``machines[j]``; None: it did not fit) and the cost."""

    policy: str
    machines: list[np.ndarray | None]
    cost: float
    lower_bound: float | None = None
    solver: str = ""
    solve_time: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: within every machine's slots, CPU and memory (Storm's EvenScheduler may not be)
    fits: bool = True

    @property
    def placed(self) -> int:
        """Topologies placed."""
        return sum(m is not None for m in self.machines)

    @property
    def gap(self) -> float | None:
        """``(cost - lower_bound) / cost`` (0 when both are 0; None without a bound)."""
        if self.lower_bound is None:
            return None
        if self.cost <= 0:
            return 0.0
        return max(self.cost - self.lower_bound, 0.0) / self.cost

    @property
    def proven(self) -> bool:
        """The cost is the least possible (within 1e-6)."""
        return self.gap is not None and self.gap <= 1e-6


def _check_all_fit(cluster: Cluster, tops: Sequence[Topology]) -> None:
    for t in tops:
        cluster.check_fits(t, "topology")  # the parameter; the message names the topology
    need = sum(t.nodes for t in tops)
    if need > cluster.total_slots:
        names = [t.name for t in tops]
        shown = ", ".join(names[:5]) + (f", ... ({len(names)} in all)" if len(names) > 5 else "")
        raise ParameterError(
            "topology",
            shown,
            f"at most {cluster.total_slots} executors in all (the cluster's slots), not "
            f"{need}; {cluster.would_hold(need)}",
        )


def _bounds(
    cluster: Cluster, tops: Sequence[Topology], time_limit: float, lib: Any
) -> tuple[float, str]:
    """Return the static optimum's lower bound with every load 1 (and why it is missing)."""
    from cloudsched.placement.optimize import static_optimum
    from cloudsched.placement.workload import JobType

    if time_limit <= 0:
        return 0.0, "no time-sharing bound (--time-limit reached before it)"
    jobs = [JobType(f"{t.name}#{j}", 1.0, 1.0, t) for j, t in enumerate(tops)]
    try:
        opt = static_optimum(cluster, jobs, time_limit=time_limit, library=lib)
    except ParameterError as exc:  # they fit one by one, not as a time-sharing of loads 1
        return 0.0, f"no time-sharing bound ({exc})"
    return float(opt.lower_bound), ""


def place_static(
    cluster: Cluster,
    topologies: Sequence[Topology],
    *,
    solver: str = "auto",
    time_limit: float = 60.0,
) -> StaticPlacement:
    """Place every topology once at the least traffic cost found, with a lower bound.

    Raises :class:`ParameterError` when the topologies cannot all fit (slots, CPU, memory).
    """
    from cloudsched.placement.configuration import max_weight_configuration
    from cloudsched.placement.fastpack import Library

    t0 = time.perf_counter()
    tops = list(topologies)
    _check_all_fit(cluster, tops)
    worst = float(cluster.distance.max())
    # every topology worth more than the whole set can cost: leaving one out never pays,
    # even one whose own traffic is small (a lone spout), for what it makes others pay
    every = 1.0 + 2.0 * worst * sum(t.total_traffic for t in tops)
    values = np.full(len(tops), every)
    lib = Library.within(cluster, tops, time_limit)
    sol = max_weight_configuration(
        cluster,
        tops,
        values,
        np.ones(len(tops), dtype=np.int64),
        solver=solver,
        time_limit=time_limit,
        library=lib,
    )
    machines: list[np.ndarray | None] = [None] * len(tops)
    for j, where in sol.templates:
        machines[j] = np.asarray(where, dtype=np.int64)
    out = StaticPlacement("optimised", machines, float(sol.cost), solver=sol.solver)
    missing = [tops[j].name for j, m in enumerate(machines) if m is None]
    if missing:
        out.notes.append("not placed together with the others: " + ", ".join(missing))
        out.solve_time = time.perf_counter() - t0
        return out
    _no_worse_than_storm(cluster, tops, out)
    own = float(values.sum() - sol.upper_bound)
    alone = float(np.sum(lib.lower_bounds))
    shared, note = _bounds(cluster, tops, time_limit - (time.perf_counter() - t0), lib)
    if note:
        out.notes.append(note)
    out.lower_bound = max(own, alone, shared, 0.0)
    left = time_limit - (time.perf_counter() - t0)
    _split_racks(cluster, tops, lib.lower_bounds, out, solver, left)
    out.solve_time = time.perf_counter() - t0
    return out


def _split_racks(
    cluster: Cluster,
    tops: Sequence[Topology],
    alone: np.ndarray,
    out: StaticPlacement,
    solver: str,
    seconds: float,
) -> None:
    """Raise the bound (and maybe lower the cost) by :mod:`.rack_split` where racks matter."""
    from cloudsched.placement.rack_split import MAX_SOLVES, rack_split

    if cluster.racks < 2 or cluster.cross_rack_cost <= 1.0 or out.proven:
        return
    solves = cluster.racks * 2 ** len(tops)
    if solves > MAX_SOLVES or seconds < 0.5 * solves:  # each per-rack solve gets >= 0.5 s
        most = int(math.log2(MAX_SOLVES / cluster.racks))
        out.notes.append(
            f"the bound does not count racks here (it does for up to {most} topologies "
            "with time left)"
        )
        return

    index = {id(t): j for j, t in enumerate(tops)}

    def solve(
        sub: Cluster, chosen: Sequence[Topology], limit: float
    ) -> tuple[float, list[np.ndarray] | None, float]:
        got = place_static(sub, chosen, solver=solver, time_limit=max(limit, 0.5))
        if got.placed < len(chosen) or got.lower_bound is None:  # each alone still bounds
            return float(sum(alone[index[id(t)]] for t in chosen)), None, math.inf
        return got.lower_bound, [m for m in got.machines if m is not None], got.cost

    split = rack_split(cluster, tops, alone, solve, seconds)
    if split is None:
        out.notes.append("the bound does not count racks here (--time-limit reached)")
        return
    if split.machines is not None and split.cost < out.cost - 1e-9:
        out.machines, out.cost = list(split.machines), split.cost
        out.notes.append("placing each topology within one rack found a cheaper placement")
    out.lower_bound = max(float(out.lower_bound or 0.0), min(split.bound, out.cost))


def _no_worse_than_storm(cluster: Cluster, tops: Sequence[Topology], out: StaticPlacement) -> None:
    """Take a Storm scheduler's placement where it fits and the solver found none cheaper."""
    for policy in BASELINES:
        row = place_baseline(cluster, tops, policy)
        if row.placed == len(tops) and row.fits and row.cost < out.cost - 1e-9:
            out.machines, out.cost = row.machines, row.cost
            out.notes.append(f"the solver found none cheaper than {policy}'s, which is taken")


def place_baseline(
    cluster: Cluster,
    topologies: Sequence[Topology],
    policy: str,
    ports: int | Sequence[int] = STORM_PORTS,
) -> StaticPlacement:
    """Place the topologies in the order given, as ``policy`` (:data:`BASELINES`) would.

    ``storm-default`` is Storm's EvenScheduler (:func:`~cloudsched.placement.storm.
    even_scheduler`) on ``ports`` worker slots a machine: it packs each topology's
    executors into its ``topology.workers`` workers and looks at nothing else, so the
    placement may run more executors, CPU or memory on a machine than the cluster gives it
    (said in the notes; no gap is given then, since the bound is for placements that fit).
    ``resource-aware`` is Storm 2.x's ResourceAwareScheduler on the same worker slots
    (:func:`~cloudsched.placement.storm_ras.ras_scheduler`: CPU, memory and each worker's
    heap limit, ackers bound to workers), which knows nothing of the model's slots either;
    a note says where nimbus would run another number of ackers under RAS.
    """
    from cloudsched.placement.storm import even_scheduler
    from cloudsched.placement.storm_ras import ras_acker_count, ras_scheduler

    if policy not in BASELINES:
        raise ParameterError("policy", policy, " or ".join(BASELINES))
    if policy == "storm-default":
        runs = even_scheduler(cluster.machines, topologies, ports)
        return _storm_row(cluster, topologies, policy, runs, "no free worker slot for: ")
    runs = ras_scheduler(cluster, topologies, ports)
    out = _storm_row(cluster, topologies, policy, runs, "did not fit: ")
    for t in topologies:
        has = sum(1 for _, c in t.graph.nodes(data="component") if c == ACKER)
        want = ras_acker_count(t)
        if has and has != want:
            out.notes.append(
                f"{t.name}: under RAS Storm runs {want} ackers, not the {has} placed here "
                "(--ackers)"
            )
    return out


def _storm_row(
    cluster: Cluster, tops: Sequence[Topology], policy: str, runs: Sequence[Any], missing_note: str
) -> StaticPlacement:
    machines = [None if r is None else r.machines for r in runs]
    cost = sum(cluster.cost(t, m) for t, m in zip(tops, machines, strict=True) if m is not None)
    out = StaticPlacement(policy, machines, cost)
    missing = [t.name for t, m in zip(tops, machines, strict=True) if m is None]
    if missing:
        out.notes.append(missing_note + ", ".join(missing))
    over = over_capacity(cluster, tops, machines)
    out.notes.extend(over)
    out.fits = not over
    return out


def over_capacity(
    cluster: Cluster, tops: Sequence[Topology], machines: Sequence[np.ndarray | None]
) -> list[str]:
    """Say where a placement runs more executors, CPU or memory than a machine has."""
    count = np.zeros(cluster.machines, dtype=np.int64)
    used = np.zeros((cluster.machines, 2))
    for t, m in zip(tops, machines, strict=True):
        if m is not None:
            np.add.at(count, m, 1)
            np.add.at(used, m, t.demands())
    out = []
    over = np.flatnonzero(count > cluster.slots)
    if over.size:
        k = int(over[np.argmax(count[over] - cluster.slots[over])])
        out.append(
            f"over capacity on {_machines(over.size)}: machine {k} runs {count[k]} "
            f"executors on {cluster.slots[k]} slots"
        )
    for r, what in enumerate(("CPU", "memory")):
        over = np.flatnonzero(used[:, r] > cluster.capacity[:, r] * (1 + 1e-9))
        if over.size:
            k = int(over[0])
            out.append(
                f"over capacity on {_machines(over.size)}: machine {k} needs "
                f"{used[k, r]:.6g} {what} of {cluster.capacity[k, r]:.6g}"
            )
    return out


def _machines(n: int) -> str:
    return "1 machine" if n == 1 else f"{n} machines"
