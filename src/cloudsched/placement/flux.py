"""Apache Storm Flux files as job graphs.

Flux files (``spouts``, ``bolts``, ``streams``) are expanded to the executor level: a
component of parallelism p becomes p nodes (``component``, ``index`` attributes), spouts
first, in file order.  CHOICE, one rule per grouping (a stream from A, parallelism a, to B,
parallelism b):

* ``GLOBAL``: every executor of A sends to executor 0 of B (a edges);
* ``SHUFFLE``, ``LOCAL_OR_SHUFFLE``, ``FIELDS``, ``PARTIAL_KEY``, ``ALL``, ``NONE``,
  ``DIRECT``, ``CUSTOM``: any executor of A may send to any executor of B, so all a x b
  pairs are edges (the locality preference of ``LOCAL_OR_SHUFFLE`` and the choices of
  ``DIRECT``/``CUSTOM`` depend on run-time state the model does not have).

Direction is dropped (data flow in either direction crosses the network the same way) and
parallel streams between the same executors count once.

Traffic (``traffic``): ``edges`` (default) gives every edge traffic 1, so the cost counts
broken edges as in the paper; ``grouping`` derives it from the grouping and the parallelism:
every executor of A emits one unit per unit time on each of its streams, which ``GLOBAL``
sends whole to executor 0 of B, ``ALL`` copies to each of the b executors (1 per edge), and
every other grouping spreads evenly over them (1/b per edge); parallel streams add up.

Resources: each executor demands the CPU (``cpuLoad``, percent of a core) and memory
(``onHeapMemoryLoad`` + ``offHeapMemoryLoad``, MB) of its spout or bolt, as Flux sets them
for Storm's ResourceAwareScheduler; unset, the ``config``'s ``topology.component.*`` values or
Storm's defaults (10, 128 and 0) apply.  They matter only on a cluster with limits.

Flux files are read as Storm's ``FluxParser`` reads them: ``includes`` (one level, each
``{file: PATH, override: BOOL}``, PATH relative to the including file; classpath
``resource: true`` includes cannot be read here and are rejected) merge name, ``config``,
``components``, ``spouts``, ``bolts`` (by ``id``; an include replaces an existing definition
only with ``override: true``) and ``streams`` (appended); ``${name}`` is replaced by a
property from the ``properties`` file (Java ``key=value`` lines) and ``${ENV-NAME}`` by the
environment variable ``NAME``; a reference left unresolved is an error (Storm would keep
the literal text).  Every spout and bolt needs a ``className``, every ``components`` entry an
``id`` and a ``className``; a ``ref`` to an id not defined is read with a warning, as
Storm's ``FluxBuilder`` passes null for it; ``topologySource``
(a topology built by Java code) is rejected.  Storm's ackers are added on request
(``ackers="storm"``, as ``place static`` reads running topologies; see
:mod:`cloudsched.placement.storm`); its event loggers (none by default) and metrics
consumers are not modelled.

What takes a slot (``slots``): ``executors`` (default, the graph-job model: one node per
executor), ``workers`` (Storm's model: ``config: topology.workers`` worker processes, one
per slot; executors, ordered by component id then index as Storm numbers its tasks, go to
worker ``i mod W``, exactly as ``EvenScheduler.scheduleTopology`` deals them out; two
workers are linked when any of their executors communicate, links inside a worker cost
nothing), or ``executors_per_slot: k`` (consecutive groups of ``k`` executors, the same
ordering).  A grouped node demands the sum of its executors' CPU and memory; a link between
two groups carries traffic 1 with ``traffic: edges`` (it counts once) and the sum of its
executor edges' traffic with ``traffic: grouping``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

from cloudsched.errors import InputError, ParameterError, check_int
from cloudsched.placement.flux_read import apply_includes, read_flux, read_properties, scrubbed
from cloudsched.placement.storm import (
    acker_count,
    add_ackers,
    component_tasks,
    conf_int,
    ras_config,
    system_components,
    task_order,
)
from cloudsched.placement.topology import Topology, check_size

__all__ = ["GROUPINGS", "STORM_DEFAULT_DEMAND", "TRAFFIC_MODELS", "load_flux", "read_properties"]

GROUPINGS = (
    "SHUFFLE",
    "LOCAL_OR_SHUFFLE",
    "FIELDS",
    "PARTIAL_KEY",
    "ALL",
    "GLOBAL",
    "NONE",
    "DIRECT",
    "CUSTOM",
)

#: How edge traffic is set: 1 per edge, or derived from the grouping and parallelism.
TRAFFIC_MODELS = ("edges", "grouping")
#: Storm's defaults per executor (``topology.component.cpu.pcore.percent``,
#: ``topology.component.resources.onheap.memory.mb`` + ``...offheap.memory.mb``).
STORM_DEFAULT_DEMAND = (10.0, 128.0)
_DEMAND_KEYS = (
    ("cpuLoad", "topology.component.cpu.pcore.percent", 10.0),
    ("onHeapMemoryLoad", "topology.component.resources.onheap.memory.mb", 128.0),
    ("offHeapMemoryLoad", "topology.component.resources.offheap.memory.mb", 0.0),
)


def _demand(
    item: Mapping[str, Any], config: Mapping[str, Any], where: str
) -> tuple[float, float, float]:
    """CPU, on-heap and off-heap memory of one executor (unset: config, then Storm's)."""
    out = []
    for key, conf, default in _DEMAND_KEYS:
        value = item.get(key, -1)
        if value is None or (isinstance(value, int | float) and value < 0):
            value = config.get(conf, default)  # Flux's -1: not set
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (0 <= value <= 1e12)
        ):
            raise InputError(
                where,
                f"{key} of {item.get('id')!r} (or {conf}) must be a number "
                f"in [0, 1e12], got {value!r}",
            )
        out.append(float(value))
    return out[0], out[1], out[2]


def _components(doc: Mapping[str, Any], where: str) -> dict[str, int]:
    comps: dict[str, int] = {}
    if doc.get("topologySource") is not None:
        raise InputError(
            where,
            "'topologySource' builds the topology in Java code, which cloudsched cannot "
            "run: describe it with 'spouts', 'bolts' and 'streams' instead",
        )
    known = _check_object_defs(doc.get("components"), "components", where, need_id=True)
    for key in ("spouts", "bolts"):
        _check_object_defs(doc.get(key), key, where, need_id=True, known=known)
    for key in ("spouts", "bolts"):
        items = doc.get(key) or []
        if not isinstance(items, list):
            raise InputError(where, f"'{key}' must be a list")
        for item in items:
            if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                raise InputError(where, f"every entry of '{key}' needs a string 'id'")
            cid = item["id"]
            if cid in comps:
                raise InputError(where, f"component id {cid!r} is defined twice")
            par = item.get("parallelism", 1)
            if isinstance(par, bool) or not isinstance(par, int) or par < 1:
                raise InputError(
                    where, f"parallelism of {cid!r} must be an integer >= 1, got {par!r}"
                )
            comps[cid] = par
    if not doc.get("spouts"):
        raise InputError(where, "a topology needs at least one spout")
    return comps


def _check_object_defs(
    items: Any, key: str, where: str, *, need_id: bool, known: set[str] | None = None
) -> set[str]:
    """Check ``components`` / ``spouts`` / ``bolts`` entries: id, className, refs."""
    if items is None:
        return set()
    if not isinstance(items, list):
        raise InputError(where, f"'{key}' must be a list")
    ids: set[str] = set()
    for item in items:
        if not isinstance(item, Mapping):
            raise InputError(where, f"every entry of '{key}' is a mapping")
        cid = item.get("id")
        if need_id and not isinstance(cid, str):
            raise InputError(where, f"every entry of '{key}' needs a string 'id'")
        if not isinstance(item.get("className"), str) or not item["className"].strip():
            raise InputError(where, f"{key} entry {cid!r} needs a 'className' (Storm requires it)")
        if known is not None:
            for ref in sorted(set(_refs(item)) - known):
                # Storm resolves it to null (ExecutionContext.getComponent, a map lookup,
                # in FluxBuilder), and its own config-methods-test does so: said, not refused
                warnings.warn(
                    f"{where}: {key} entry {cid!r} refers to unknown component {ref!r} "
                    "(Storm passes null for it)",
                    UserWarning,
                    stacklevel=2,
                )
        ids.add(str(cid))
    return ids


def _refs(x: Any) -> list[str]:
    """Every ``ref:`` value (and ``reflist`` entry) inside a definition."""
    out: list[str] = []
    if isinstance(x, Mapping):
        for k, v in x.items():
            if k == "ref" and isinstance(v, str):
                out.append(v)
            elif k == "reflist" and isinstance(v, list):
                out.extend(str(r) for r in v)
            else:
                out.extend(_refs(v))
    elif isinstance(x, list):
        for v in x:
            out.extend(_refs(v))
    return out


def _flux_edges(doc: Mapping[str, Any], comps: Mapping[str, int]) -> float:
    """Upper estimate of the executor edges the streams create (before building them)."""
    total = 0.0
    for s in doc.get("streams") or []:
        if isinstance(s, Mapping):
            a, b = comps.get(str(s.get("from")), 0), comps.get(str(s.get("to")), 0)
            total += a * b
    return total


def load_flux(
    path: str | Path,
    *,
    slots: str = "executors",
    executors_per_slot: int | None = None,
    properties: Mapping[str, str] | None = None,
    traffic: str = "edges",
    ackers: int | str | None = None,
) -> Topology:
    """Read an Apache Storm Flux YAML file and build its graph (see module rules).

    ``slots`` is ``executors`` (one node per executor) or ``workers`` (one node per worker
    of ``config: topology.workers``, Storm's packing); ``executors_per_slot`` groups that
    many consecutive executors per node instead.  ``properties`` fills ``${name}``.
    ``traffic`` is ``edges`` (1 per edge) or ``grouping`` (from the groupings).
    ``ackers``: None (default) leaves Storm's ackers out; ``"storm"`` adds as many as Storm
    would (``topology.acker.executors``, else ``topology.workers``) and their streams, as
    Storm runs the topology (:func:`cloudsched.placement.storm.add_ackers`); a number adds
    that many.  An error never shows a value taken
    from the environment (``${ENV-NAME}`` stands in for it).
    """
    secrets: list[tuple[str, str]] = []
    try:
        return _load_flux(path, slots, executors_per_slot, properties, traffic, ackers, secrets)
    except ParameterError as exc:  # InputError too
        raise scrubbed(exc, secrets) from None


def _load_flux(
    path: str | Path,
    slots: str,
    executors_per_slot: int | None,
    properties: Mapping[str, str] | None,
    traffic: str,
    ackers: int | str | None,
    secrets: list[tuple[str, str]],
) -> Topology:
    where = str(path)
    slots = str(slots)
    if slots not in ("executors", "workers"):
        raise ParameterError("slots", slots, "executors or workers")
    if traffic not in TRAFFIC_MODELS:
        raise ParameterError("traffic", traffic, " or ".join(TRAFFIC_MODELS))
    doc = read_flux(Path(path), properties or {}, secrets)
    sources = (str(path), *apply_includes(doc, Path(path), properties or {}, secrets))
    comps = _components(doc, where)
    check_size("parallelism", where, sum(comps.values()), _flux_edges(doc, comps))
    config = doc.get("config") or {}
    if not isinstance(config, Mapping):
        raise InputError(where, "'config' must be a mapping")
    workers = conf_int(config, "topology.workers", 1, where, low=1)
    items = {d["id"]: d for key in ("spouts", "bolts") for d in doc.get(key) or []}
    first: dict[str, int] = {}
    g = nx.Graph()
    for cid, par in comps.items():
        first[cid] = g.number_of_nodes()
        cpu, onheap, offheap = _demand(items[cid], config, where)
        g.add_nodes_from(
            (
                first[cid] + k,
                {
                    "component": cid,
                    "index": k,
                    "cpu": cpu,
                    "memory": onheap + offheap,
                    "onheap": onheap,
                    "offheap": offheap,
                },
            )
            for k in range(par)
        )
    _add_streams(g, doc.get("streams") or [], comps, first, traffic, where)
    g.graph["storm_ras"] = ras_config(config, where)  # read by placement.storm_ras
    # read by placement.storm_assignment (Storm's task ids)
    g.graph["storm_tasks"] = component_tasks(items, config, where)
    g.graph["storm_system"] = system_components(config)
    g.graph["storm_ackers"] = ackers == "storm"  # the ackers Storm adds are in the graph
    if ackers is not None:
        count = (
            acker_count(config, where)
            if ackers == "storm"
            else check_int("ackers", ackers, low=0, high=10**6)
        )
        spouts = [first[d["id"]] + k for d in doc["spouts"] for k in range(comps[d["id"]])]
        bolts = sorted(set(g.nodes) - set(spouts))
        add_ackers(g, count, spouts, bolts, traffic, config, where)
    name = str(doc.get("name") or Path(path).stem)
    if slots == "executors" and executors_per_slot is None:
        return Topology(name, g, sources, workers)
    order = task_order(g)  # Storm numbers tasks component by component, in id order
    n = len(order)
    if executors_per_slot is not None:
        k = check_int("executors_per_slot", executors_per_slot, low=1)
        group = {v: i // k for i, v in enumerate(order)}
        label = f"{name} ({k} executors per slot)"
    else:
        w = min(workers, n)
        group = {v: i % w for i, v in enumerate(order)}
        label = f"{name} ({w} workers)"
    return Topology(label, _packed(g, group, traffic), sources)


def _add_streams(
    g: nx.Graph,
    streams: Any,
    comps: Mapping[str, int],
    first: Mapping[str, int],
    traffic: str,
    where: str,
) -> None:
    """Add each stream's executor edges (with their traffic, see the module rules)."""
    if not isinstance(streams, list):
        raise InputError(where, "'streams' must be a list")
    for s in streams:
        if not isinstance(s, Mapping):
            raise InputError(where, "every stream is a mapping with 'from', 'to' and 'grouping'")
        src, dst = str(s.get("from")), str(s.get("to"))
        for end in (src, dst):
            if end not in comps:
                raise InputError(where, f"stream refers to unknown component {end!r}")
        grouping = s.get("grouping") or {}
        kind = str(grouping.get("type", "")).upper() if isinstance(grouping, Mapping) else ""
        if not kind:
            raise InputError(where, f"the stream {src} -> {dst} needs a grouping type")
        if kind not in GROUPINGS:
            allowed = ", ".join(GROUPINGS)
            raise InputError(where, f"unknown grouping {kind} (allowed: {allowed})")
        a = range(first[src], first[src] + comps[src])
        b = range(first[dst], first[dst] + comps[dst])
        if kind == "GLOBAL":
            pairs, share = [(u, b[0]) for u in a if u != b[0]], 1.0
        else:
            pairs = [(u, v) for u in a for v in b if u != v]
            share = 1.0 if kind == "ALL" else 1.0 / len(b)
        for u, v in pairs:
            if traffic == "edges":
                g.add_edge(u, v, weight=1.0)
            else:
                g.add_edge(
                    u, v, weight=share + (g.edges[u, v]["weight"] if g.has_edge(u, v) else 0.0)
                )


def _packed(g: nx.Graph, group: Mapping[int, int], traffic: str) -> nx.Graph:
    """Build the graph of groups: summed demands, links of traffic 1 (``edges``) or summed."""
    packed = nx.Graph()
    packed.add_nodes_from((i, {"cpu": 0.0, "memory": 0.0}) for i in range(max(group.values()) + 1))
    for v, d in g.nodes(data=True):
        packed.nodes[group[v]]["cpu"] += d["cpu"]
        packed.nodes[group[v]]["memory"] += d["memory"]
    for u, v, d in g.edges(data=True):
        a, b = group[u], group[v]
        if a == b:
            continue
        if traffic == "edges" or not packed.has_edge(a, b):
            packed.add_edge(a, b, weight=1.0 if traffic == "edges" else d["weight"])
        else:
            packed.edges[a, b]["weight"] += d["weight"]
    return packed
