"""Job graphs (Storm topologies): generators, inline graphs, and the workload-file form.

A :class:`Topology` is an undirected simple graph on nodes ``0..K-1``; every node needs one
slot, and an edge whose two nodes sit on different machines is a broken edge (the
partitioning cost of ``docs/explanation/design/graph-placement.md``).  An edge carries a traffic
weight (networkx edge attribute ``weight``, 1 by default: the cost counts broken edges), and
a node a CPU and memory demand (node attributes ``cpu`` and ``memory``, 0 by default), which
must fit in the capacity of its machine (:class:`~cloudsched.placement.cluster.Cluster`).

Storm Flux files are read by :mod:`cloudsched.placement.flux`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from cloudsched.errors import ParameterError, check_int, check_real

__all__ = [
    "GENERATORS",
    "MAX_DEMAND",
    "MAX_TRAFFIC",
    "Topology",
    "chain",
    "check_size",
    "complete",
    "from_edges",
    "generate",
    "random_graph",
    "star",
    "tree",
]

GENERATORS = ("chain", "star", "tree", "complete", "random")

#: Largest traffic of one edge and demand of one node (costs enter LPs and DGP's weights).
MAX_TRAFFIC = 1e6
MAX_DEMAND = 1e12


@dataclass(frozen=True)
class Topology:
    """A job graph: ``graph`` has nodes ``0..K-1``; each node needs one slot.

    ``sources``: the files it was read from (a Flux file, then the files it includes);
    ``workers``: Storm's ``topology.workers`` for a Flux topology (None otherwise).
    """

    name: str
    graph: nx.Graph
    sources: tuple[str, ...] = ()
    workers: int | None = None

    def __post_init__(self) -> None:
        """Check the graph (nodes ``0..K-1``, no self-loops, weights and demands in range)."""
        if not isinstance(self.graph, nx.Graph) or self.graph.is_directed():
            raise ParameterError(
                f"{self.name}.graph", type(self.graph).__name__, "an undirected networkx Graph"
            )
        k = self.graph.number_of_nodes()
        if k == 0:
            raise ParameterError(f"{self.name}.graph", "0 nodes", "at least one node")
        if set(self.graph.nodes) != set(range(k)):
            raise ParameterError(
                f"{self.name}.graph", "other node labels", f"nodes labelled 0..{k - 1}"
            )
        if nx.number_of_selfloops(self.graph):
            raise ParameterError(
                f"{self.name}.graph", "a self-loop", "edges between two different nodes"
            )
        pairs = sorted((min(u, v), max(u, v), d) for u, v, d in self.graph.edges(data=True))
        edges = np.asarray([(u, v) for u, v, _ in pairs], dtype=np.int64).reshape(-1, 2)
        weights = np.array(
            [
                check_real(
                    f"{self.name}: traffic of edge {u}-{v}",
                    d.get("weight", 1.0),
                    low=0.0,
                    high=MAX_TRAFFIC,
                    low_open=True,
                )
                for u, v, d in pairs
            ]
        )
        demands = np.zeros((k, 2))
        for v, d in self.graph.nodes(data=True):
            for c, res in enumerate(("cpu", "memory")):
                demands[v, c] = check_real(
                    f"{self.name}: {res} of node {v}", d.get(res, 0.0), low=0.0, high=MAX_DEMAND
                )
        for name, arr in (("_edges", edges), ("_weights", weights), ("_demands", demands)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def nodes(self) -> int:
        """Number of nodes (slots needed)."""
        return int(self.graph.number_of_nodes())

    @property
    def edges(self) -> int:
        """Number of edges."""
        return int(self.graph.number_of_edges())

    def edge_array(self) -> np.ndarray:
        """Edges as an ``(E, 2)`` int64 array, each pair sorted, rows sorted (read-only)."""
        return self._edges  # type: ignore[attr-defined]

    def edge_weights(self) -> np.ndarray:
        """Traffic of each edge of :meth:`edge_array`, ``(E,)`` float64 (read-only)."""
        return self._weights  # type: ignore[attr-defined]

    def demands(self) -> np.ndarray:
        """CPU and memory demand of each node, ``(K, 2)`` float64 (read-only)."""
        return self._demands  # type: ignore[attr-defined]

    @property
    def weighted(self) -> bool:
        """Whether some edge carries a traffic other than 1."""
        return bool(np.any(self.edge_weights() != 1.0))

    @property
    def total_traffic(self) -> float:
        """Sum of the edges' traffic (the cost of a placement that breaks every edge)."""
        return float(self.edge_weights().sum())

    def with_demands(self, cpu: float, memory: float) -> Topology:
        """Return the same graph with every node demanding ``cpu`` and ``memory``."""
        g = self.graph.copy()
        for v in g.nodes:
            g.nodes[v]["cpu"], g.nodes[v]["memory"] = cpu, memory
        return Topology(self.name, g, self.sources, self.workers)


def _from_graph(name: str, g: nx.Graph) -> Topology:
    g = nx.convert_node_labels_to_integers(g, ordering="sorted")
    return Topology(name, g)


#: Memory of a graph while it is built (networkx dict-of-dicts), measured roughly.
BYTES_PER_EDGE = 400
BYTES_PER_NODE = 300


def check_size(name: str, value: Any, nodes: float, edges: float) -> None:
    """Refuse, before building it, a graph that could not fit in memory."""
    from cloudsched.resources import check_memory

    check_memory(
        name,
        value,
        nodes * BYTES_PER_NODE + edges * BYTES_PER_EDGE,
        f"a graph of {nodes:.3g} nodes and {edges:.3g} edges",
    )


def chain(k: int) -> Topology:
    """Path 0 - 1 - ... - (k-1)."""
    k = check_int("nodes", k, low=1)
    check_size("nodes", k, k, k - 1)
    return _from_graph(f"chain-{k}", nx.path_graph(k))


def star(k: int) -> Topology:
    """Node 0 joined to each of the other k - 1 nodes."""
    k = check_int("nodes", k, low=1)
    check_size("nodes", k, k, k - 1)
    return _from_graph(f"star-{k}", nx.star_graph(k - 1))


def tree(k: int, branching: int = 2) -> Topology:
    """Complete ``branching``-ary tree on k nodes (breadth-first numbering)."""
    k = check_int("nodes", k, low=1)
    branching = check_int("branching", branching, low=1)
    check_size("nodes", k, k, k - 1)
    g = nx.Graph()
    g.add_nodes_from(range(k))
    g.add_edges_from((i, (i - 1) // branching) for i in range(1, k))
    return _from_graph(f"tree-{k}", g)


def complete(k: int) -> Topology:
    """Complete graph on k nodes."""
    k = check_int("nodes", k, low=1)
    check_size("nodes", k, k, k * (k - 1) / 2)
    return _from_graph(f"complete-{k}", nx.complete_graph(k))


def random_graph(k: int, p: float, *, rng: np.random.Generator) -> Topology:
    """Erdos-Renyi G(k, p): each pair is an edge with probability p (no connectivity forced)."""
    k = check_int("nodes", k, low=1)
    p = check_real("p", p, low=0.0, high=1.0)
    # the pair indices (2 x 8 bytes per pair) exist whatever p is
    check_size("nodes", k, k, k * (k - 1) / 2 * max(p, 16 / BYTES_PER_EDGE))
    g = nx.Graph()
    g.add_nodes_from(range(k))
    i, j = np.triu_indices(k, 1)
    keep = rng.random(i.size) < p
    g.add_edges_from(zip(i[keep].tolist(), j[keep].tolist(), strict=True))
    return _from_graph(f"random-{k}", g)


def generate(spec: Mapping[str, Any], *, rng: np.random.Generator) -> Topology:
    """Build ``{generator: chain|star|tree|complete|random, nodes: K, [p: P], [branching: B]}``."""
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
        return random_graph(k, spec.get("p", 0.5), rng=rng)
    raise ParameterError("generator", kind, "one of " + ", ".join(GENERATORS))


def from_edges(
    nodes: int | Sequence[Any], edges: Sequence[Sequence[Any]], name: str = "inline"
) -> Topology:
    """Graph from a node count or node labels, and a list of ``[u, v]`` or ``[u, v, traffic]``.

    An edge listed twice carries the sum of its traffics.
    """
    allowed = "a positive count or a list of distinct labels (strings or integers)"
    if not isinstance(edges, Sequence) or isinstance(edges, str):
        raise ParameterError("edges", edges, "a list of pairs [u, v] of node labels")
    if isinstance(nodes, int) and not isinstance(nodes, bool):
        nodes = check_int("nodes", nodes, low=1)
        check_size("nodes", nodes, nodes, len(edges))
        labels: list[Any] = list(range(nodes))
    elif isinstance(nodes, Sequence) and not isinstance(nodes, str):
        labels = list(nodes)
    else:
        raise ParameterError("nodes", nodes, allowed)
    if any(isinstance(v, bool) or not isinstance(v, str | int) for v in labels):
        raise ParameterError("nodes", nodes, allowed)
    if not labels or len(set(labels)) != len(labels):
        raise ParameterError("nodes", nodes, allowed)
    index = {v: k for k, v in enumerate(labels)}
    g = nx.Graph()
    g.add_nodes_from(range(len(labels)))
    form = "pairs [u, v] of node labels, or [u, v, traffic] with traffic > 0"
    for edge in edges:
        if not isinstance(edge, Sequence) or isinstance(edge, str) or len(edge) not in (2, 3):
            raise ParameterError("edges", edge, form)
        u, v = edge[0], edge[1]
        if not all(isinstance(x, str | int) and not isinstance(x, bool) for x in (u, v)):
            raise ParameterError("edges", edge, "pairs of two different listed nodes")
        if u not in index or v not in index or u == v:
            raise ParameterError("edges", edge, "pairs of two different listed nodes")
        traffic = (
            1.0
            if len(edge) == 2
            else check_real("edges", edge[2], low=0.0, high=MAX_TRAFFIC, low_open=True)
        )
        if g.has_edge(index[u], index[v]):
            traffic += g.edges[index[u], index[v]]["weight"]
        g.add_edge(index[u], index[v], weight=traffic)
    return Topology(name, g)
