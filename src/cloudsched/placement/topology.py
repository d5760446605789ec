"""Job graphs (Storm topologies): generators, inline graphs and Apache Storm Flux files.

A :class:`Topology` is an undirected simple graph on nodes ``0..K-1``; every node needs one
slot, and an edge whose two nodes sit on different machines is a broken edge (the
partitioning cost of ``shared/design/graph-placement.md``).

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from cloudsched.errors import InputError, ParameterError, check_int, check_real
from cloudsched.io import read_yaml

__all__ = [
    "GENERATORS",
    "GROUPINGS",
    "Topology",
    "chain",
    "complete",
    "from_edges",
    "load_flux",
    "random_graph",
    "star",
    "topology_from_spec",
    "tree",
]

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
GENERATORS = ("chain", "star", "tree", "complete", "random")


@dataclass(frozen=True)
class Topology:
    """A job graph: ``graph`` has nodes ``0..K-1``; each node needs one slot."""

    name: str
    graph: nx.Graph

    @property
    def nodes(self) -> int:
        """Number of nodes (slots needed)."""
        return int(self.graph.number_of_nodes())

    @property
    def edges(self) -> int:
        """Number of edges."""
        return int(self.graph.number_of_edges())

    def edge_array(self) -> np.ndarray:
        """Edges as an ``(E, 2)`` int64 array, each pair sorted, rows sorted."""
        pairs = sorted(tuple(sorted(e)) for e in self.graph.edges())
        return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _from_graph(name: str, g: nx.Graph) -> Topology:
    g = nx.convert_node_labels_to_integers(g, ordering="sorted")
    return Topology(name, g)


def chain(k: int) -> Topology:
    """Path 0 - 1 - ... - (k-1)."""
    k = check_int("nodes", k, low=1)
    return _from_graph(f"chain-{k}", nx.path_graph(k))


def star(k: int) -> Topology:
    """Node 0 joined to each of the other k - 1 nodes."""
    k = check_int("nodes", k, low=1)
    return _from_graph(f"star-{k}", nx.star_graph(k - 1))


def tree(k: int, branching: int = 2) -> Topology:
    """Complete ``branching``-ary tree on k nodes (breadth-first numbering)."""
    k = check_int("nodes", k, low=1)
    branching = check_int("branching", branching, low=1)
    g = nx.Graph()
    g.add_nodes_from(range(k))
    g.add_edges_from((i, (i - 1) // branching) for i in range(1, k))
    return _from_graph(f"tree-{k}", g)


def complete(k: int) -> Topology:
    """Complete graph on k nodes."""
    k = check_int("nodes", k, low=1)
    return _from_graph(f"complete-{k}", nx.complete_graph(k))


def random_graph(k: int, p: float, rng: np.random.Generator) -> Topology:
    """Erdos-Renyi G(k, p): each pair is an edge with probability p (no connectivity forced)."""
    k = check_int("nodes", k, low=1)
    p = check_real("p", p, low=0.0, high=1.0)
    g = nx.Graph()
    g.add_nodes_from(range(k))
    i, j = np.triu_indices(k, 1)
    keep = rng.random(i.size) < p
    g.add_edges_from(zip(i[keep].tolist(), j[keep].tolist(), strict=True))
    return _from_graph(f"random-{k}", g)


def from_edges(
    nodes: int | Sequence[Any], edges: Sequence[Sequence[Any]], name: str = "inline"
) -> Topology:
    """Graph from a node count or node labels, and a list of ``[u, v]`` pairs."""
    labels = list(range(nodes)) if isinstance(nodes, int) else list(nodes)
    if not labels or len(set(labels)) != len(labels):
        raise ParameterError("nodes", nodes, "a positive count or a list of distinct labels")
    index = {v: k for k, v in enumerate(labels)}
    g = nx.Graph()
    g.add_nodes_from(range(len(labels)))
    for edge in edges:
        if not isinstance(edge, Sequence) or isinstance(edge, str) or len(edge) != 2:
            raise ParameterError("edges", edge, "pairs [u, v] of node labels")
        u, v = edge
        if u not in index or v not in index or u == v:
            raise ParameterError("edges", edge, "pairs of two different listed nodes")
        g.add_edge(index[u], index[v])
    return Topology(name, g)


def _components(doc: Mapping[str, Any], where: str) -> dict[str, int]:
    comps: dict[str, int] = {}
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


def load_flux(path: str | Path) -> Topology:
    """Read an Apache Storm Flux YAML file and expand it to executors (see module rules)."""
    where = str(path)
    doc = read_yaml(path)
    if not isinstance(doc, Mapping):
        raise InputError(where, "a Flux file is a mapping with 'spouts', 'bolts' and 'streams'")
    comps = _components(doc, where)
    first: dict[str, int] = {}
    g = nx.Graph()
    for cid, par in comps.items():
        first[cid] = g.number_of_nodes()
        g.add_nodes_from((first[cid] + k, {"component": cid, "index": k}) for k in range(par))
    streams = doc.get("streams") or []
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
            g.add_edges_from((u, b[0]) for u in a if u != b[0])
        else:
            g.add_edges_from((u, v) for u in a for v in b if u != v)
    return Topology(str(doc.get("name") or Path(path).stem), g)


def topology_from_spec(spec: Any, base_dir: str | Path, rng: np.random.Generator) -> Topology:
    """Build a topology from its workload-file form.

    ``{generator: chain|star|tree|complete|random, nodes: K, [p: P], [branching: B]}``,
    ``{nodes: [...] or K, edges: [[u, v], ...]}`` or ``{flux: PATH}`` (relative to
    ``base_dir``).
    """
    if not isinstance(spec, Mapping):
        raise ParameterError(
            "topology", spec, "a mapping with 'generator', 'nodes'/'edges' or 'flux'"
        )
    if "flux" in spec:
        path = Path(base_dir) / str(spec["flux"])
        return load_flux(path)
    if "generator" in spec:
        kind = spec["generator"]
        k: Any = spec.get("nodes")
        if kind == "chain":
            return chain(k)
        if kind == "star":
            return star(k)
        if kind == "tree":
            return tree(k, spec.get("branching", 2))
        if kind == "complete":
            return complete(k)
        if kind == "random":
            return random_graph(k, spec.get("p", 0.5), rng)
        raise ParameterError("generator", kind, "one of " + ", ".join(GENERATORS))
    if "edges" in spec:
        return from_edges(spec.get("nodes", []), spec["edges"])
    raise ParameterError(
        "topology", dict(spec), "a mapping with 'generator', 'nodes'/'edges' or 'flux'"
    )
