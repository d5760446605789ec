"""Storm's own scheduling as Storm 2.x runs it: task order, ackers, and EvenScheduler.

Every rule below is read from Apache Storm's source (``apache/storm``, master at commit
73da988, the 2.x line):

* **Task order.** ``StormCommon.stormTaskInfoImpl`` numbers the tasks of the system
  topology (the user's components and Storm's ``__acker``) from 1, component by component,
  components in ``TreeMap`` order, that is Java's ``String.compareTo`` (UTF-16 code units);
  an executor's tasks are consecutive, so executors follow their component's order, then
  their index.  :func:`task_order` gives that order.
* **Ackers.** ``StormCommon.addAcker`` adds ``__acker`` with ``topology.acker.executors``
  tasks, unset (``conf/defaults.yaml``: ``null``) the topology's ``topology.workers``.  Its
  inputs are every spout's ``__ack_init`` stream and every bolt's ``__ack_ack`` (fields
  grouping on the tuple id, ``ackerInputs``); it answers every spout by direct grouping.
  An acker demands ``topology.acker.cpu.pcore.percent`` and
  ``topology.acker.resources.*.memory.mb`` where set, the component defaults otherwise
  (``NormalizedResourceRequest.getDefaultResources``).  :func:`add_ackers` adds them.
* **EvenScheduler** (``DefaultScheduler``, nimbus's scheduler when ``storm.scheduler`` is
  unset, calls ``EvenScheduler.scheduleTopologiesEvenly`` for each topology that needs
  scheduling).  ``EvenScheduler.scheduleTopology`` uses ``min(topology.workers, free
  slots)`` worker slots: the first of ``sortSlots`` (free slots grouped by supervisor,
  each supervisor's by port, supervisors with more free slots first, the order of
  ``TreeMap`` on ties, interleaved one slot per supervisor by ``ServerUtils.interleaveAll``)
  and deals the executors, sorted by start task, executor ``i`` to slot ``i mod W``.  It
  looks at worker slots (``supervisor.slots.ports``, four by default) only, never at CPU or
  memory.  :func:`even_scheduler` does this.

CHOICE: supervisor ids are the machines' positions in the cluster (Storm's are ids chosen
at start, so ties between supervisors with as many free slots fall in an order the
operator does not choose either); topologies are scheduled in the order given (Storm's
``Topologies`` is a hash map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from cloudsched.errors import InputError, ParameterError, check_int

__all__ = [
    "ACKER",
    "FIRST_PORT",
    "STORM_PORTS",
    "EvenPlacement",
    "acker_count",
    "add_ackers",
    "component_tasks",
    "conf_int",
    "even_scheduler",
    "java_key",
    "ras_config",
    "sort_slots",
    "system_components",
    "task_order",
]

#: Storm's acker component id (``Acker.ACKER_COMPONENT_ID``).
ACKER = "__acker"
#: The first worker port (``supervisor.slots.ports`` in Storm's ``conf/defaults.yaml``).
FIRST_PORT = 6700
#: Worker slots per supervisor by default (6700 to 6703 in ``conf/defaults.yaml``).
STORM_PORTS = 4
#: Storm's per-executor defaults (``conf/defaults.yaml``): CPU percent, on-heap MB.
_ACKER_KEYS = (
    ("topology.acker.cpu.pcore.percent", "topology.component.cpu.pcore.percent", 10.0),
    (
        "topology.acker.resources.onheap.memory.mb",
        "topology.component.resources.onheap.memory.mb",
        128.0,
    ),
    (
        "topology.acker.resources.offheap.memory.mb",
        "topology.component.resources.offheap.memory.mb",
        0.0,
    ),
)


def java_key(s: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def task_order(graph: nx.Graph) -> list[int]:
    """Nodes in Storm's task order: component id (Java order), then executor index.

    Nodes without a ``component`` (graphs not read from Flux) keep their own order.
    """
    if not all("component" in d for _, d in graph.nodes(data=True)):
        return sorted(graph.nodes)
    return sorted(
        graph.nodes,
        key=lambda v: (java_key(str(graph.nodes[v]["component"])), graph.nodes[v]["index"]),
    )


def conf_int(config: Mapping[str, Any], key: str, default: int, where: str, low: int = 0) -> int:
    """Return the topology config's integer ``key`` in ``[low, 1e6]`` (``default`` unset)."""
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not (low <= value <= 10**6):
        raise InputError(
            where, f"config {key} must be an integer in [{low}, 1000000], got {value!r}"
        )
    return value


def component_tasks(
    items: Mapping[str, Mapping[str, Any]], config: Mapping[str, Any], where: str
) -> dict[str, int]:
    """Each Flux component's task count as nimbus sets it (``topology.tasks``).

    ``ServerUtils.getComponentParallelism``: the topology config merged with the
    component's, the parallelism when unset, at most ``topology.max.task.parallelism``.
    Flux's ``FluxBuilder`` sets the component's ``topology.tasks`` from ``numTasks`` when it
    is above -1 (its unset value), then applies the component's own ``config`` over it.
    """
    out = {}
    for cid, item in items.items():
        merged = dict(config)
        num = item.get("numTasks")
        if num is not None:
            if isinstance(num, bool) or not isinstance(num, int):
                raise InputError(where, f"numTasks of {cid!r} must be an integer, got {num!r}")
            if num > -1:
                merged["topology.tasks"] = num
        own = item.get("config")
        merged.update(own if isinstance(own, Mapping) else {})
        par = item.get("parallelism", 1)
        tasks = conf_int(merged, "topology.tasks", par, f"{where}: {cid}", low=0)
        cap = merged.get("topology.max.task.parallelism")
        if cap is not None:
            tasks = min(tasks, conf_int(merged, "topology.max.task.parallelism", 0, where))
        out[cid] = tasks
    return out


def system_components(config: Mapping[str, Any]) -> list[str]:
    """Config keys that add components with task ids besides ackers (``systemTopologyImpl``)."""
    out = []
    loggers = config.get("topology.eventlogger.executors", 0)  # conf/defaults.yaml: 0
    if loggers is None or (not isinstance(loggers, bool) and loggers != 0):
        out.append("topology.eventlogger.executors")
    if config.get("topology.metrics.consumer.register"):
        out.append("topology.metrics.consumer.register")
    return out


def acker_count(config: Mapping[str, Any], where: str) -> int:
    """``topology.acker.executors``, or ``topology.workers`` when unset (``addAcker``)."""
    workers = conf_int(config, "topology.workers", 1, where, low=1)
    return conf_int(config, "topology.acker.executors", workers, where)


def ras_config(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Return the settings Storm's RAS reads from a topology config (:mod:`.storm_ras`)."""
    heap = config.get("topology.worker.max.heap.size.mb", 768.0)
    if isinstance(heap, bool) or not isinstance(heap, int | float) or not (0 < heap <= 1e12):
        raise InputError(
            where,
            f"config topology.worker.max.heap.size.mb must be a number in (0, 1e12], got {heap!r}",
        )
    per = config.get("topology.ras.acker.executors.per.worker")
    out = {
        "max_heap": float(heap),
        "ackers_per_worker": None
        if per is None
        else conf_int(config, "topology.ras.acker.executors.per.worker", 1, where),
        "ackers": None
        if config.get("topology.acker.executors") is None
        else conf_int(config, "topology.acker.executors", 0, where),
    }
    _, onheap, offheap = _acker_demand(config, where)
    out["acker_memory"] = onheap + offheap
    return out


def _acker_demand(config: Mapping[str, Any], where: str) -> list[float]:
    out = []
    for key, fallback, default in _ACKER_KEYS:
        value = config.get(key, config.get(fallback, default))
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (0 <= value <= 1e12)
        ):
            raise InputError(where, f"config {key} must be a number in [0, 1e12], got {value!r}")
        out.append(float(value))
    return out


def add_ackers(
    g: nx.Graph,
    count: int,
    spouts: Sequence[int],
    bolts: Sequence[int],
    traffic: str,
    config: Mapping[str, Any],
    where: str,
) -> None:
    """Add ``count`` acker executors to ``g`` and their streams (see the module notes).

    With ``traffic == "grouping"`` every executor emits one unit per stream, as for the
    user's streams: a spout's ``__ack_init`` and a bolt's ``__ack_ack`` spread over the
    ackers (fields grouping), an acker's answer over the spouts' executors (direct).
    """
    if count == 0:
        return
    cpu, onheap, offheap = _acker_demand(config, where)
    first = g.number_of_nodes()
    ackers = range(first, first + count)
    g.add_nodes_from(
        (
            a,
            {
                "component": ACKER,
                "index": a - first,
                "cpu": cpu,
                "memory": onheap + offheap,
                "onheap": onheap,
                "offheap": offheap,
            },
        )
        for a in ackers
    )

    def add(u: int, v: int, share: float) -> None:
        if traffic == "edges":
            g.add_edge(u, v, weight=1.0)
        else:
            old = g.edges[u, v]["weight"] if g.has_edge(u, v) else 0.0
            g.add_edge(u, v, weight=old + share)

    for a in ackers:
        for s in spouts:
            add(s, a, 1.0 / count)  # __ack_init
            add(s, a, 1.0 / len(spouts))  # the acker's answer
        for b in bolts:
            add(b, a, 1.0 / count)  # __ack_ack


def sort_slots(free: Mapping[int, Sequence[int]]) -> list[tuple[int, int]]:
    """``EvenScheduler.sortSlots``: ``free[m]`` are machine ``m``'s free ports."""
    groups = [(m, sorted(ports)) for m, ports in sorted(free.items()) if ports]
    groups.sort(key=lambda mp: -len(mp[1]))  # stable, as Collections.sort
    out: list[tuple[int, int]] = []
    depth = 0
    while True:  # ServerUtils.interleaveAll
        layer = [(m, ports[depth]) for m, ports in groups if len(ports) > depth]
        if not layer:
            return out
        out.extend(layer)
        depth += 1


@dataclass
class EvenPlacement:
    """One topology placed by EvenScheduler: each node's machine and worker port."""

    machines: np.ndarray
    ports: np.ndarray
    workers: int


def even_scheduler(
    machines: int, topologies: Sequence[Any], ports: int | Sequence[int] = STORM_PORTS
) -> list[EvenPlacement | None]:
    """Place ``topologies`` in turn as Storm's EvenScheduler does (None: no free slot).

    ``ports``: worker slots of each machine (one number for all, or one per machine).
    A topology asks for its ``workers`` (``topology.workers``; 1 when unset).
    """
    per = np.broadcast_to(np.asarray(ports, dtype=np.int64), (machines,))
    if np.any(per < 0) or np.any(per > 10_000):
        raise ParameterError("worker ports", ports, "0 to 10000 worker slots a machine")
    free = {m: [FIRST_PORT + k for k in range(int(per[m]))] for m in range(machines)}
    out: list[EvenPlacement | None] = []
    for t in topologies:
        slots = sort_slots(free)
        want = check_int("topology.workers", getattr(t, "workers", None) or 1, low=1)
        use = slots[: min(want, len(slots))]
        if not use:
            out.append(None)
            continue
        order = task_order(t.graph)
        where = np.empty(len(order), dtype=np.int64)
        port = np.empty(len(order), dtype=np.int64)
        for i, v in enumerate(order):
            where[v], port[v] = use[i % len(use)]
        for m, p in set(zip(where.tolist(), port.tolist(), strict=True)):
            free[m].remove(p)
        out.append(EvenPlacement(where, port, len(use)))
    return out
