"""Storm 2.x's ResourceAwareScheduler at the level of worker slots, as Storm runs it.

:func:`cloudsched.placement.baselines.resource_aware` is the paper's model of RAS (a slot
per executor).  Storm's own places executors into *worker slots* (``supervisor.slots.ports``
of each supervisor), several executors to a worker, and a worker's heap is limited.  Every
rule below is read from Apache Storm's source (``apache/storm``, commit 73da988):

* **Order of executors.** ``ExecSorterByConnectionCount.sortExecutors`` orders the user's
  components only (``getUserTopolgyComponents``, "excludes system components"), as
  :func:`~cloudsched.placement.baselines.ras_order` does; system executors come after,
  and ``BaseResourceAwareStrategy.isolateAckersToEnd`` moves the ackers to the end.
* **Order of machines.** :func:`~cloudsched.placement.baselines.machine_order`
  (``NodeSorter.sortObjectResourcesCommon``), for the whole topology (CHOICE: Storm sorts
  again for each component, ranking first the machines that already hold the topology's
  executors; a fixed order filled first-fit holds those first as well).
* **Worker slots.** ``scheduleExecutorsOnNodes`` tries, on each machine in turn, the slots
  that were free when the topology's scheduling began (``RasNode.getSlotsAvailableToScheduleOn``),
  in port order, and takes the first where ``Cluster.wouldFit`` holds: the executor's CPU
  and memory (on- plus off-heap) within the machine's free CPU and memory, and the worker's
  on-heap memory with it at most ``topology.worker.max.heap.size.mb`` (768 in
  ``conf/defaults.yaml``).
* **Bound ackers.** When a user executor opens a worker, up to
  ``topology.ras.acker.executors.per.worker`` ackers (1 by default; with
  ``topology.acker.executors`` set, that count over the estimated workers, rounded up, as
  ``Nimbus.setUpAckerExecutorConfigs``) join it at once, as many as the heap left by that
  executor holds (``SchedulingSearcherState.getNumOfAckersToBind``); ackers left over are
  placed last like any executor.
* **Estimated workers** (``ServerUtils.getEstimatedWorkerCountForRasTopo``): the on-heap
  memory of every executor, ackers included, over the worker heap limit, rounded up.  With
  ``topology.acker.executors`` unset, Storm under RAS runs that many times the per-worker
  count of ackers (not ``topology.workers``); :func:`ras_acker_count` gives it, and
  ``place static`` says so when the topology carries another count.

CHOICE: where first-fit finds no slot for an executor, Storm's search backtracks (up to
its state and time limits); this one says the topology did not fit.  A machine's CPU and
memory are the cluster file's (unlimited where it gives none, with Storm's own defaults
``supervisor.cpu.capacity`` 400 and ``supervisor.memory.capacity.mb`` 4096 not assumed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.placement.baselines import machine_order, ras_order
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.storm import ACKER, FIRST_PORT, STORM_PORTS, EvenPlacement
from cloudsched.placement.topology import Topology

__all__ = [
    "MAX_HEAP_MB",
    "RAS_KEY",
    "estimated_workers",
    "ras_acker_count",
    "ras_scheduler",
    "ras_settings",
]

#: ``topology.worker.max.heap.size.mb`` in Storm's ``conf/defaults.yaml``.
MAX_HEAP_MB = 768.0
#: The graph attribute holding a Flux topology's RAS settings (see :func:`ras_settings`).
RAS_KEY = "storm_ras"


def ras_settings(topology: Topology) -> dict[str, Any]:
    """Return the topology's RAS settings from its Flux file (Storm's defaults where unset).

    ``max_heap``: ``topology.worker.max.heap.size.mb``; ``ackers_per_worker``:
    ``topology.ras.acker.executors.per.worker`` (None unset); ``ackers``:
    ``topology.acker.executors`` (None unset); ``acker_memory``: an acker's on- plus
    off-heap memory.
    """
    got = dict(topology.graph.graph.get(RAS_KEY) or {})
    return {
        "max_heap": float(got.get("max_heap", MAX_HEAP_MB)),
        "ackers_per_worker": got.get("ackers_per_worker"),
        "ackers": got.get("ackers"),
        "acker_memory": float(got.get("acker_memory", 128.0)),
    }


def _onheap(topology: Topology, v: int) -> float:
    """On-heap MB of node ``v``: Flux's, else its memory, else Storm's default 128."""
    d = topology.graph.nodes[v]
    return float(d.get("onheap", d.get("memory", 128.0)))


def _users(topology: Topology) -> list[int]:
    g = topology.graph
    return [v for v in g.nodes if g.nodes[v].get("component") != ACKER]


def estimated_workers(topology: Topology) -> int:
    """``ServerUtils.getEstimatedWorkerCountForRasTopo``: heap asked over the worker limit.

    The heap asked is every user executor's on-heap memory and, at their whole memory,
    the ackers ``StormCommon.addAcker`` adds (``topology.acker.executors``, else
    ``topology.workers``), rounded up.
    """
    s = ras_settings(topology)
    n = s["ackers"] if s["ackers"] is not None else (topology.workers or 1)
    heap = sum(_onheap(topology, v) for v in _users(topology)) + n * s["acker_memory"]
    return math.ceil(heap / s["max_heap"]) if s["max_heap"] > 0 else 0


def ras_acker_count(topology: Topology) -> int:
    """Ackers nimbus runs under RAS (``Nimbus.setUpAckerExecutorConfigs``).

    ``topology.acker.executors`` where set, else the estimated workers times
    ``topology.ras.acker.executors.per.worker`` (1 unset).
    """
    s = ras_settings(topology)
    if s["ackers"] is not None:
        return int(s["ackers"])
    per = 1 if s["ackers_per_worker"] is None else int(s["ackers_per_worker"])
    return estimated_workers(topology) * per


def _per_worker(topology: Topology) -> int:
    s = ras_settings(topology)
    if s["ackers"] is not None:
        est = estimated_workers(topology)
        return 0 if est == 0 else math.ceil(int(s["ackers"]) / est)
    return 1 if s["ackers_per_worker"] is None else int(s["ackers_per_worker"])


class _Workers:
    """The free CPU, memory and worker slots of the cluster; ``max_heap`` of a worker."""

    def __init__(self, cluster: Cluster, ports: np.ndarray) -> None:
        self.free = [list(range(FIRST_PORT, FIRST_PORT + int(p))) for p in ports]
        self.res = cluster.capacity.copy()
        self.max_heap = MAX_HEAP_MB

    def fits(self, m: int, used_heap: float, d: tuple[float, float, float]) -> bool:
        """``Cluster.wouldFit``: CPU and memory of machine ``m``, the worker's heap."""
        cpu, mem, onheap = d
        return bool(
            self.res[m, 0] >= cpu and self.res[m, 1] >= mem and used_heap + onheap <= self.max_heap
        )


def _demand(t: Topology, v: int) -> tuple[float, float, float]:
    d = t.graph.nodes[v]
    return float(d.get("cpu", 0.0)), float(d.get("memory", 0.0)), _onheap(t, v)


def _schedule(t: Topology, state: _Workers, order: list[int]) -> EvenPlacement | None:
    g = t.graph
    s = ras_settings(t)
    state.max_heap = s["max_heap"]
    users = [v for v in ras_order(t) if g.nodes[v].get("component") != ACKER]  # as Storm
    ackers = [v for v in sorted(g.nodes) if g.nodes[v].get("component") == ACKER]
    per = _per_worker(t)
    slots = {m: list(state.free[m]) for m in order}  # free when the topology begins
    heap: dict[tuple[int, int], float] = {}
    where = np.full(g.number_of_nodes(), -1, dtype=np.int64)
    port = np.full(g.number_of_nodes(), -1, dtype=np.int64)
    bound: set[tuple[int, int]] = set()
    left = list(ackers)

    def put(v: int, m: int, p: int) -> None:
        cpu, mem, onheap = _demand(t, v)
        where[v], port[v] = m, p
        state.res[m] -= (cpu, mem)
        heap[(m, p)] = heap.get((m, p), 0.0) + onheap

    for v in users + ackers:
        if where[v] >= 0:
            continue  # an acker bound to a worker already
        d = _demand(t, v)
        spot = next(
            ((m, p) for m in order for p in slots[m] if state.fits(m, heap.get((m, p), 0.0), d)),
            None,
        )
        if spot is None:
            return None
        put(v, *spot)
        if v in ackers:
            left.remove(v)
        elif spot not in bound and left and per > 0:
            room = s["max_heap"] - d[2]
            acker_heap = _onheap(t, left[0])
            take = min(per, len(left), math.floor(room / acker_heap) if acker_heap > 0 else per)
            for _ in range(max(take, 0)):
                if not state.fits(spot[0], heap[spot], _demand(t, left[0])):
                    break
                put(left.pop(0), *spot)
                bound.add(spot)
    for m, p in set(zip(where.tolist(), port.tolist(), strict=True)):
        state.free[m].remove(p)
    return EvenPlacement(where, port, len(set(zip(where.tolist(), port.tolist(), strict=True))))


def ras_scheduler(
    cluster: Cluster, topologies: Sequence[Topology], ports: int | Sequence[int] = STORM_PORTS
) -> list[EvenPlacement | None]:
    """Place ``topologies`` in turn as Storm 2.x's RAS does (None: it did not fit).

    ``ports``: worker slots of each machine (one number for all, or one per machine).
    Machines are ranked by :func:`machine_order` on their free worker slots and, where the
    cluster file limits them, CPU and memory (CHOICE: Storm's ``NodeSorter`` ranks by CPU,
    memory and generic resources only; with neither limited, free slots break the tie
    that would otherwise leave every machine equal).  The model's executor slots are not
    Storm's: a row may run more executors on a machine than
    the model gives it (the caller says so).
    """
    per = np.broadcast_to(np.asarray(ports, dtype=np.int64), (cluster.machines,))
    if np.any(per < 0) or np.any(per > 10_000):
        raise ParameterError("worker ports", ports, "0 to 10000 worker slots a machine")
    state = _Workers(cluster, per)
    out: list[EvenPlacement | None] = []
    for t in topologies:
        free = np.array([len(f) for f in state.free], dtype=np.int64)
        order = machine_order(cluster, free, state.res)
        res = state.res.copy()
        got = _schedule(t, state, order)
        if got is None:
            state.res = res  # Storm keeps nothing of a topology it could not schedule
        out.append(got)
    return out
