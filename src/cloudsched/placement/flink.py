"""Flink's slot sharing, as Flink 2.x places it, and the records it sends across TaskManagers.

A Flink job is a graph of job vertices (chains of operators), each with a parallelism,
joined by edges with a ship strategy.  Where its subtasks run is decided in three steps,
which this module follows (all read in apache/flink's ``flink-runtime``):

1. **Execution slot sharing groups** (``LocalInputPreferredSlotSharingStrategy``).  Within
   one slot-sharing group, vertices are visited in topological order and subtask ``i`` of
   each joins the ``i``-th execution slot sharing group (a FORWARD input's producer group,
   or the first of its all-to-all producers' groups still free, or the first group still
   free for the vertex, or a new one; ``tests/test_flink_model.py`` checks on random graphs
   against a transcription of that builder that these all come to ``i``).  A group needs
   ``max parallelism`` slots, and one slot holds one subtask of each vertex.
2. **Slots on TaskManagers** (the resource manager's ``DefaultResourceAllocationStrategy``):
   with ``taskmanager.load-balance.mode: NONE`` (Flink's default) any matching TaskManager,
   as many slots as it has free, so the slots fill TaskManagers one after another; with
   ``SLOTS`` (what ``cluster.evenly-spread-out-slots`` became) the least used TaskManager
   for each slot, so they spread as evenly as they can.
3. **Which group gets which slot** (``SlotSharingExecutionSlotAllocator.allocateSlotsFor``):
   the slot requests are issued in the order of a ``HashMap`` keyed by the groups'
   identity hash codes, and matched in that order to the slots as TaskManagers offer them
   (``SimpleRequestSlotMatchingStrategy``).  Flink does not fix this order, so where more
   than one group shares a TaskManager the records that cross TaskManagers vary from run
   to run.  This module treats the order as uniformly random: it gives the mean exactly
   and a range by sampling, and says when the result does not depend on the order.

Records on an edge ``u -> v``: FORWARD sends subtask ``i``'s records to subtask ``i``;
the all-to-all strategies (HASH, REBALANCE, SHUFFLE, GLOBAL, BROADCAST) are taken to
send from subtask ``i`` to subtask ``j`` in proportion to ``i``'s share of ``u``'s output
times ``j``'s share of ``v``'s input (exact for REBALANCE up to rounding; for HASH when
every producer sees the same key mix).  RESCALE and unequal FORWARD are refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from cloudsched.errors import InputError, ParameterError

__all__ = [
    "ALL_TO_ALL",
    "MODES",
    "Configuration",
    "FlinkEdge",
    "FlinkJob",
    "contiguous",
    "crossing_samples",
    "evaluate",
    "execution_groups",
    "measured_crossing",
    "partitions",
    "slot_counts",
]

#: ship strategies that send from every producer subtask to every consumer subtask
ALL_TO_ALL = ("HASH", "REBALANCE", "SHUFFLE", "GLOBAL", "BROADCAST", "CUSTOM")
#: ``taskmanager.load-balance.mode`` values modelled (``TASKS`` is not)
MODES = ("NONE", "SLOTS")


@dataclass(frozen=True)
class FlinkEdge:
    """``records`` sent from vertex ``source`` to vertex ``target`` with strategy ``ship``."""

    source: int
    target: int
    ship: str
    records: float


@dataclass(frozen=True)
class FlinkJob:
    """Job vertices in topological order, with what each subtask wrote, read and used.

    ``out_share[v]`` and ``in_share[v]`` are each subtask's share of the vertex's output and
    input (each sums to 1); ``cpu[v]`` the cores each subtask keeps busy.
    """

    name: str
    names: tuple[str, ...]
    parallelism: tuple[int, ...]
    edges: tuple[FlinkEdge, ...]
    out_share: tuple[np.ndarray, ...]
    in_share: tuple[np.ndarray, ...]
    cpu: tuple[np.ndarray, ...]
    seconds: float = 0.0

    def __post_init__(self) -> None:
        for edge in self.edges:
            if edge.ship == "FORWARD" and (
                self.parallelism[edge.source] != self.parallelism[edge.target]
            ):
                raise InputError(
                    "job",
                    f"FORWARD edge {self.names[edge.source]} -> {self.names[edge.target]} "
                    "joins unequal parallelisms (a RESCALE, which is not modelled)",
                )
            if edge.ship != "FORWARD" and edge.ship not in ALL_TO_ALL:
                raise InputError(
                    "job",
                    f"ship strategy {edge.ship} ({self.names[edge.source]} -> "
                    f"{self.names[edge.target]}) is not modelled; modelled: FORWARD, "
                    + ", ".join(ALL_TO_ALL),
                )

    def flows(self, edge: FlinkEdge) -> np.ndarray:
        """Return the records from each producer subtask (rows) to each consumer subtask.

        A dense matrix: for small jobs (the MILP, the tests); :meth:`kept` needs none.
        """
        if edge.ship == "FORWARD":
            return np.diag(self.in_share[edge.target] * edge.records)
        return edge.records * np.outer(self.out_share[edge.source], self.in_share[edge.target])

    def kept(self, edge: FlinkEdge, tm_source: np.ndarray, tm_target: np.ndarray) -> float:
        """Return the edge's records that stay on one TaskManager (integer TaskManager ids)."""
        if edge.ship == "FORWARD":
            same = tm_source == tm_target
            return float(self.in_share[edge.target][same].sum() * edge.records)
        size = int(max(tm_source.max(), tm_target.max())) + 1
        a = np.bincount(tm_source, weights=self.out_share[edge.source], minlength=size)
        b = np.bincount(tm_target, weights=self.in_share[edge.target], minlength=size)
        return float(edge.records * (a * b).sum())

    @property
    def total_records(self) -> float:
        """Records on all edges together."""
        return float(sum(edge.records for edge in self.edges))


def execution_groups(job: FlinkJob, groups: Sequence[int]) -> tuple[list[np.ndarray], int]:
    """Each subtask's execution slot sharing group (``ess[v][i]``) and how many there are.

    ``groups[v]`` is vertex ``v``'s slot-sharing group (any integers).
    """
    if len(groups) != len(job.names):
        raise ParameterError("groups", len(groups), f"one per vertex ({len(job.names)})")
    base: dict[int, int] = {}
    width: dict[int, int] = {}
    for v, g in enumerate(groups):
        width[g] = max(width.get(g, 0), job.parallelism[v])
    offset = 0
    for g in dict.fromkeys(groups):
        base[g] = offset
        offset += width[g]
    ess = [base[g] + np.arange(job.parallelism[v]) for v, g in enumerate(groups)]
    return ess, offset


def slot_counts(slots: int, taskmanagers: int, per_tm: int, mode: str) -> np.ndarray | None:
    """Slots each TaskManager gives a job needing ``slots`` (None: they do not fit)."""
    if mode not in MODES:
        raise ParameterError("mode", mode, "one of " + ", ".join(MODES))
    if slots > taskmanagers * per_tm:
        return None
    if mode == "NONE":
        counts = np.zeros(taskmanagers, dtype=np.int64)
        full, rest = divmod(slots, per_tm)
        counts[:full] = per_tm
        if rest:
            counts[full] = rest
        return counts
    base, rest = divmod(slots, taskmanagers)
    return np.array([base + (t < rest) for t in range(taskmanagers)], dtype=np.int64)


@dataclass(frozen=True)
class Configuration:
    """One choice of slot-sharing groups and load-balance mode, and what Flink makes of it.

    ``may_vary``: more than one group may share a TaskManager, so the records across may
    depend on the order Flink places the groups in (:func:`crossing_samples` tells).
    """

    groups: tuple[int, ...]
    mode: str
    slots: int
    counts: tuple[int, ...] | None
    crossing_mean: float
    busiest_cpu: float
    fits: bool
    may_vary: bool
    taskmanagers: int = 0
    per_tm: int = 0

    @property
    def placed(self) -> bool:
        """Whether the cluster has the slots it needs."""
        return self.counts is not None


def _same_tm_probability(counts: np.ndarray) -> float:
    """Chance that two given groups share a TaskManager when the order is random."""
    n = int(counts.sum())
    if n < 2:
        return 1.0
    return float((counts * (counts - 1)).sum() / (n * (n - 1)))


def evaluate(
    job: FlinkJob,
    groups: Sequence[int],
    mode: str,
    taskmanagers: int,
    per_tm: int,
    cpu_per_tm: float | None = None,
) -> Configuration:
    """Score a configuration: records across TaskManagers (mean over Flink's order), CPU."""
    ess, n = execution_groups(job, groups)
    counts = slot_counts(n, taskmanagers, per_tm, mode)
    apart = 0.0  # records between subtasks in different execution groups
    for edge in job.edges:
        if groups[edge.source] != groups[edge.target]:
            apart += edge.records
        elif edge.ship != "FORWARD":  # subtask i of both in execution group i
            k = min(job.parallelism[edge.source], job.parallelism[edge.target])
            a, b = job.out_share[edge.source][:k], job.in_share[edge.target][:k]
            apart += edge.records * (1.0 - float(a @ b))
    loads = np.zeros(n)
    for v in range(len(job.names)):
        np.add.at(loads, ess[v], job.cpu[v])
    if counts is None:
        return Configuration(
            tuple(groups),
            mode,
            n,
            None,
            float("nan"),
            float("inf"),
            False,
            False,
            taskmanagers,
            per_tm,
        )
    q = _same_tm_probability(counts)
    busiest = float(np.sort(loads)[::-1][: int(counts.max())].sum())
    fits = cpu_per_tm is None or busiest <= cpu_per_tm * (1 + 1e-9)
    occupied = counts[counts > 0]
    may_vary = apart > 0 and len(occupied) > 1 and int(occupied.max()) > 1
    return Configuration(
        tuple(groups),
        mode,
        n,
        tuple(int(c) for c in counts),
        apart * (1.0 - q),
        busiest,
        fits,
        may_vary,
        taskmanagers,
        per_tm,
    )


def crossing_samples(
    job: FlinkJob,
    groups: Sequence[int],
    mode: str,
    taskmanagers: int,
    per_tm: int,
    rng: np.random.Generator,
    samples: int = 2000,
) -> np.ndarray:
    """Return the records across TaskManagers for ``samples`` random slot-request orders."""
    ess, n = execution_groups(job, groups)
    counts = slot_counts(n, taskmanagers, per_tm, mode)
    if counts is None:
        raise ParameterError("taskmanagers", taskmanagers, f"enough for {n} slots")
    slot_tm = np.repeat(np.arange(taskmanagers), counts)
    out = np.empty(samples)
    for k in range(samples):
        tm_of = slot_tm[rng.permutation(n)]
        kept = sum(job.kept(e, tm_of[ess[e.source]], tm_of[ess[e.target]]) for e in job.edges)
        out[k] = max(0.0, job.total_records - kept)
    return out


def measured_crossing(job: FlinkJob, tm_of: Sequence[Sequence[str]]) -> float:
    """Return the records that crossed TaskManagers in a run, given where subtasks ran."""
    ids: dict[str, int] = {}
    where = [np.array([ids.setdefault(str(t), len(ids)) for t in row]) for row in tm_of]
    kept = sum(job.kept(e, where[e.source], where[e.target]) for e in job.edges)
    return max(0.0, job.total_records - kept)


def partitions(n: int) -> Iterator[tuple[int, ...]]:
    """Every partition of ``range(n)`` as a restricted growth string."""
    word = [0] * n

    def grow(i: int, top: int) -> Iterator[tuple[int, ...]]:
        if i == n:
            yield tuple(word)
            return
        for g in range(top + 2):
            word[i] = g
            yield from grow(i + 1, max(top, g))

    if n == 0:
        yield ()
        return
    yield from grow(1, 0)


def contiguous(n: int) -> Iterator[tuple[int, ...]]:
    """Every split of ``range(n)`` into runs of consecutive vertices."""
    for cuts in range(1 << max(n - 1, 0)):
        word, g = [0], 0
        for i in range(1, n):
            g += (cuts >> (i - 1)) & 1
            word.append(g)
        yield tuple(word[:n])
