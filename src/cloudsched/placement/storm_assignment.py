"""A placement written as Storm's scheduler API sees it: executors, hosts and worker slots.

Storm assigns *executors* (``ExecutorDetails(startTask, endTask)``) to *worker slots*
(``WorkerSlot(supervisorId, port)``), the ports a supervisor lists in
``supervisor.slots.ports``.  :func:`storm_assignment` writes a placement that way, for the
scheduler shipped in ``cloudsched/data/storm`` (``cloudsched.storm.AssignmentScheduler``),
which nimbus runs as its ``storm.scheduler``.  Every rule is read from Apache Storm's source
(``apache/storm``, master at commit 73da988):

* **Task ids.**  ``StormCommon.stormTaskInfoImpl`` numbers tasks from 1, component by
  component in ``TreeMap`` order (Java's ``String.compareTo``), ``__acker`` among them; a
  component has ``topology.tasks`` tasks (Flux's ``numTasks``, its parallelism when unset;
  ``ServerUtils.getComponentParallelism`` caps it at ``topology.max.task.parallelism``).
* **Executors.**  ``Nimbus.computeExecutors`` splits a component's sorted tasks over its
  parallelism with ``Utils.partitionFixed``: ``integerDivided`` sizes, larger chunks first;
  an executor is ``[first task, last task]`` of its chunk.  Executor ``k`` of a component
  here (node attribute ``index``) is chunk ``k``.  With fewer tasks than executors
  ``partitionFixed`` stops when the tasks run out, so Storm runs fewer executors than the
  parallelism: refused here, since the model would place executors that do not exist.
* **Workers.**  One worker per topology per machine it uses (executors in a worker talk
  in-process); a machine offers ``worker_ports`` ports from 6700 up (``conf/defaults.yaml``
  lists 6700-6703), so a machine can run the workers of at most that many topologies.

System components that take task ids besides ackers (``__eventlogger`` when
``topology.eventlogger.executors`` > 0, metrics consumers from
``topology.metrics.consumer.register``) would shift the ids: a topology whose Flux config
sets them is refused, and the scheduler itself checks each topology's executors against
the file before it places anything (``conf/defaults.yaml``'s 0 event loggers is assumed for
what nimbus's own ``storm.yaml`` may set).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cloudsched.errors import InputError, ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.hosts import check_hosts
from cloudsched.placement.storm import ACKER, FIRST_PORT, STORM_PORTS, java_key
from cloudsched.placement.topology import Topology

__all__ = ["FORMAT", "SCHEDULER", "executor_tasks", "partition_fixed", "storm_assignment"]

#: The assignment file's format tag (the scheduler refuses files of another).
FORMAT = "cloudsched-storm-assignment/2"
#: The class nimbus loads (``storm.scheduler`` in its ``storm.yaml``).
SCHEDULER = "cloudsched.storm.AssignmentScheduler"


def partition_fixed(chunks: int, items: Sequence[int]) -> list[list[int]]:
    """``Utils.partitionFixed(maxNumChunks, coll)``, line for line."""
    if chunks == 0:
        return []
    base, inc = divmod(len(items), chunks)
    sizes = {base: chunks - inc}  # Utils.integerDivided
    if inc:
        sizes[base + 1] = inc
    out: list[list[int]] = []
    pos = 0
    for size in sorted(sizes, reverse=True):
        if pos >= len(items):
            break
        for _ in range(sizes[size]):
            if pos >= len(items):
                break
            out.append(list(items[pos : pos + size]))
            pos += size
    return out


def executor_tasks(t: Topology) -> dict[int, tuple[int, int]]:
    """Each node's executor as Storm numbers it: ``(startTask, endTask)``.

    The graph's nodes carry ``component`` and ``index`` (from a Flux file); the number of
    tasks of a component is ``graph.graph["storm_tasks"][component]`` when set, else its
    executors.  Raises :class:`InputError` where Storm would number them otherwise.
    """
    g = t.graph
    comps: dict[str, list[int]] = {}
    for v, d in g.nodes(data=True):
        if "component" not in d:
            raise InputError(t.name, "a Storm assignment needs a topology read from Flux")
        comps.setdefault(str(d["component"]), []).append(v)
    if not g.graph.get("storm_ackers"):
        raise InputError(
            t.name, "read it with Storm's ackers (ackers='storm'): Storm's task ids count them"
        )
    blocked = g.graph.get("storm_system") or []
    if blocked:
        raise InputError(
            t.name,
            f"config {blocked[0]} adds system components that take task ids: "
            "not supported in a Storm assignment",
        )
    tasks_of = g.graph.get("storm_tasks") or {}
    out: dict[int, tuple[int, int]] = {}
    next_task = 1
    for cid in sorted(comps, key=java_key):
        nodes = sorted(comps[cid], key=lambda v: g.nodes[v]["index"])
        count = int(tasks_of.get(cid, len(nodes)))
        if count < len(nodes):
            raise InputError(
                t.name,
                f"component {cid!r} has {count} tasks for {len(nodes)} executors: Storm "
                f"runs only {count} executors (Nimbus.computeExecutors); set its "
                f"parallelism to at most its tasks",
            )
        chunks = partition_fixed(len(nodes), range(next_task, next_task + count))
        for v, chunk in zip(nodes, chunks, strict=True):
            out[v] = (chunk[0], chunk[-1])
        next_task += count
    return out


def storm_assignment(
    cluster: Cluster,
    topologies: Sequence[Topology],
    placement: Any,
    hosts: Sequence[str] | None = None,
    worker_ports: int = STORM_PORTS,
) -> dict[str, Any]:
    """Write ``placement`` per worker: host, port and the executors' task ranges.

    ``placement.machines[j]`` is the machine of each node of topology ``j`` (None: not
    placed).  ``hosts``: one name per machine (default: the cluster's, else ``machine-<i>``
    placeholders no supervisor has).  Raises :class:`ParameterError` naming
    ``--worker-ports`` when a machine would run more workers than it has ports.
    """
    if hosts is None:
        hosts = getattr(cluster, "hosts", None) or [f"machine-{m}" for m in range(cluster.machines)]
    names = check_hosts(hosts, cluster.machines)
    per_machine = np.zeros(cluster.machines, dtype=np.int64)
    for where in placement.machines:
        if where is not None:
            per_machine[np.unique(where)] += 1
    if per_machine.max() > worker_ports:
        m = int(per_machine.argmax())
        raise ParameterError(
            "--worker-ports",
            worker_ports,
            f"at least {per_machine[m]}: {names[m]} runs a worker of each of "
            f"{per_machine[m]} topologies placed on it",
        )
    used = dict.fromkeys(range(cluster.machines), 0)
    out: dict[str, Any] = {"format": FORMAT, "scheduler": SCHEDULER, "topologies": {}}
    for t, where in zip(topologies, placement.machines, strict=True):
        if where is None:
            out["topologies"][t.name] = {"placed": False}
            continue
        ranges = executor_tasks(t)
        workers = []
        for m in (int(x) for x in np.unique(where)):
            nodes = sorted((int(v) for v in np.flatnonzero(where == m)), key=lambda v: ranges[v])
            execs = [
                {"component": str(t.graph.nodes[v]["component"]), "tasks": list(ranges[v])}
                for v in nodes
            ]
            workers.append({"host": names[m], "port": FIRST_PORT + used[m], "executors": execs})
            used[m] += 1
        out["topologies"][t.name] = {
            "placed": True,
            "traffic_cost": cluster.cost(t, where),
            "workers": workers,
            "ras": _ras_settings(t),
        }
    out["supervisors"] = _supervisors(cluster, names, worker_ports)
    return out


def _ras_settings(t: Topology) -> dict[str, dict[str, float]]:
    comps: dict[str, dict[str, float]] = {}
    for _, d in t.graph.nodes(data=True):
        if "component" in d and d["component"] != ACKER:
            comps[str(d["component"])] = {
                "topology.component.cpu.pcore.percent": float(d.get("cpu", 0.0)),
                "topology.component.resources.onheap.memory.mb": float(
                    d.get("onheap", d.get("memory", 0.0))
                ),
                "topology.component.resources.offheap.memory.mb": float(d.get("offheap", 0.0)),
            }
    return comps


def _supervisors(cluster: Cluster, names: Sequence[str], ports: int) -> dict[str, dict[str, Any]]:
    out = {}
    for m, name in enumerate(names):
        cpu, mem = (float(x) for x in cluster.capacity[m])
        entry: dict[str, Any] = {
            "supervisor.slots.ports": [FIRST_PORT + k for k in range(ports)],
            "executors": int(cluster.slots[m]),
        }
        if math.isfinite(cpu):
            entry["supervisor.cpu.capacity"] = cpu
        if math.isfinite(mem):
            entry["supervisor.memory.capacity.mb"] = mem
        out[name] = entry
    return out
