"""Slot-sharing groups for a Flink job: the fewest records across TaskManagers that fit.

:func:`advise` scores every way of putting the job's vertices in slot-sharing groups (all
partitions up to :data:`EXHAUSTIVE` vertices, else splits of the topological order into
runs) under each load-balance mode, by :func:`cloudsched.placement.flink.evaluate`, and
keeps the configurations whose busiest TaskManager, whatever order Flink picks, stays
within ``cpu_per_tm`` cores.  The best is the one with the fewest records across
TaskManagers on average (ties: fewer slots, fewer TaskManagers, fewer groups,
``NONE``); with ``sizes`` every cluster size is tried.

:func:`lower_bound` bounds the records across TaskManagers of *every* placement of the
subtasks on the TaskManagers that keeps at most ``slots`` subtasks of a vertex on one
TaskManager (one per slot) and each within ``cpu_per_tm``: any slot-sharing
configuration Flink can run within them is one.  It is the larger of a closed form (an
all-to-all edge keeps at most the ``slots`` largest shares of either end on one
TaskManager) and HiGHS's dual bound on the placement MILP (within ``time_limit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint

from cloudsched.errors import ParameterError
from cloudsched.placement.flink import (
    MODES,
    Configuration,
    FlinkJob,
    contiguous,
    evaluate,
    partitions,
)

__all__ = ["EXHAUSTIVE", "FlinkAdvice", "advise", "lower_bound"]

#: jobs with at most this many vertices have every partition tried
EXHAUSTIVE = 8
_MAX_VERTICES = 16
_MAX_MILP_COLUMNS = 200_000


@dataclass
class FlinkAdvice:
    """The configurations tried, ranked, with Flink's two defaults and the bound."""

    job: FlinkJob
    taskmanagers: int
    slots: int
    cpu_per_tm: float | None
    ranked: list[Configuration]
    default: Configuration
    spread: Configuration
    bound: float
    bound_exact: bool
    searched: str
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> Configuration | None:
        """The configuration with the fewest records across that fits (None: none fits)."""
        return self.ranked[0] if self.ranked and self.ranked[0].fits else None

    @property
    def gap(self) -> float | None:
        """``(best - bound) / best`` (0 when the best sends nothing across)."""
        best = self.best
        if best is None or best.crossing_mean <= 0:
            return 0.0 if best is not None else None
        return max(0.0, (best.crossing_mean - self.bound) / best.crossing_mean)


def _key(c: Configuration) -> tuple[float, ...]:
    return (
        0.0 if c.fits else 1.0,
        round(c.crossing_mean, 9) if c.placed else float("inf"),
        float(c.slots),
        float(c.taskmanagers),
        float(max(c.groups) + 1),
        float(MODES.index(c.mode)),
    )


def advise(
    job: FlinkJob,
    taskmanagers: int,
    slots: int,
    cpu_per_tm: float | None = None,
    modes: tuple[str, ...] = MODES,
    time_limit: float = 20.0,
    sizes: Sequence[tuple[int, int]] = (),
) -> FlinkAdvice:
    """Rank slot-sharing configurations of ``job`` on ``taskmanagers`` x ``slots``.

    ``sizes``: other clusters (TaskManagers, slots each) to try too, each TaskManager with
    ``cpu_per_tm`` cores; Flink's default and evenly spread slots are scored on the first,
    and the bound is the least over all (it holds for a placement on any of them).
    """
    n = len(job.names)
    if n > _MAX_VERTICES:
        raise ParameterError("job", f"{n} vertices", f"at most {_MAX_VERTICES} vertices")
    if n <= EXHAUSTIVE:
        words, searched = list(partitions(n)), "every partition"
    else:
        words, searched = list(contiguous(n)), "every split of the topological order"
    every = list(dict.fromkeys([(taskmanagers, slots), *sizes]))
    searched = f"{searched} of the {n} vertices ({len(words)}) x modes {', '.join(modes)}"
    if len(every) > 1:
        searched += " x sizes " + ", ".join(f"{t}x{s}" for t, s in every)
    tried = [
        evaluate(job, w, mode, t, s, cpu_per_tm) for t, s in every for w in words for mode in modes
    ]
    tried.sort(key=_key)
    one = tuple([0] * n)
    default = evaluate(job, one, "NONE", taskmanagers, slots, cpu_per_tm)
    spread = evaluate(job, one, "SLOTS", taskmanagers, slots, cpu_per_tm)
    bounds = [lower_bound(job, t, s, cpu_per_tm, time_limit / len(every)) for t, s in every]
    bound = min(b for b, _ in bounds)
    exact = all(e for _, e in bounds)
    advice = FlinkAdvice(
        job, taskmanagers, slots, cpu_per_tm, tried, default, spread, bound, exact, searched
    )
    if advice.best is None:
        advice.notes.append(
            "no configuration fits: every one needs more slots than the cluster has or puts "
            "more than the CPU limit on a TaskManager"
        )
    return advice


def _closed_form(job: FlinkJob, slots: int) -> float:
    total = 0.0
    for edge in job.edges:
        if edge.ship == "FORWARD":
            continue
        a = np.sort(job.out_share[edge.source])[::-1][:slots].sum()
        b = np.sort(job.in_share[edge.target])[::-1][:slots].sum()
        total += edge.records * max(0.0, 1.0 - min(a, b))
    return total


def lower_bound(
    job: FlinkJob,
    taskmanagers: int,
    slots: int,
    cpu_per_tm: float | None = None,
    time_limit: float = 20.0,
) -> tuple[float, bool]:
    """Bound the records across TaskManagers from below; True if the MILP proved it."""
    closed = _closed_form(job, slots)
    cols = _columns(job, taskmanagers)
    if cols > _MAX_MILP_COLUMNS:
        return closed, False
    from cloudsched.placement._highs import solve_milp

    c, a, lo, hi = _placement_milp(job, taskmanagers, slots, cpu_per_tm)
    res = solve_milp(
        "flink-bound",
        c,
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(c.size),
        bounds=Bounds(0, 1),
        time_limit=time_limit,
        fine=False,
    )
    if res.status == 2:  # no placement within the limits at all
        return float("inf"), True
    dual = res.mip_dual_bound
    if dual is None or not np.isfinite(dual):
        return closed, False
    milp = max(0.0, job.total_records + float(dual))
    return max(closed, milp), res.status == 0


def _columns(job: FlinkJob, tms: int) -> int:
    subtasks = sum(job.parallelism)
    pairs = sum(
        job.parallelism[e.source] * (1 if e.ship == "FORWARD" else job.parallelism[e.target])
        for e in job.edges
    )
    return (subtasks + pairs) * tms


def _placement_milp(
    job: FlinkJob, tms: int, slots: int, cpu: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """x[subtask, tm] and z[pair, tm] <= both ends; maximise the records kept local."""
    from scipy import sparse

    start = np.concatenate([[0], np.cumsum(job.parallelism)])
    nx = int(start[-1]) * tms
    rows: list[tuple[list[int], list[float], float, float]] = []
    cost: list[float] = [0.0] * nx

    def x(v: int, i: int, t: int) -> int:
        return (int(start[v]) + i) * tms + t

    for v, p in enumerate(job.parallelism):
        for i in range(p):
            rows.append(([x(v, i, t) for t in range(tms)], [1.0] * tms, 1.0, 1.0))
        for t in range(tms):
            rows.append(([x(v, i, t) for i in range(p)], [1.0] * p, 0.0, float(slots)))
    if cpu is not None:
        for t in range(tms):
            idx = [x(v, i, t) for v, p in enumerate(job.parallelism) for i in range(p)]
            val = [float(job.cpu[v][i]) for v, p in enumerate(job.parallelism) for i in range(p)]
            rows.append((idx, val, 0.0, float(cpu)))
    rows.append(([x(0, 0, 0)], [1.0], 1.0, 1.0))  # TaskManagers are interchangeable
    for edge in job.edges:
        flows = job.flows(edge)
        for i, j in zip(*np.nonzero(flows), strict=False):
            for t in range(tms):
                z = len(cost)
                cost.append(-float(flows[i, j]))
                for end in (x(edge.source, int(i), t), x(edge.target, int(j), t)):
                    rows.append(([z, end], [1.0, -1.0], -1.0, 0.0))
    r, cidx, vals, lo, hi = [], [], [], [], []
    for k, (idx, val, low, high) in enumerate(rows):
        r += [k] * len(idx)
        cidx += idx
        vals += val
        lo.append(low)
        hi.append(high)
    a = sparse.csr_array((vals, (r, cidx)), shape=(len(rows), len(cost)))
    return np.array(cost), a, np.array(lo), np.array(hi)
