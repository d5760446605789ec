"""Graph-job placement for stream processing (Storm topologies).

So far: job graphs (:mod:`cloudsched.placement.topology`): generators, inline graphs and
Apache Storm Flux files expanded to executors.
"""

from cloudsched.placement.topology import (
    GENERATORS,
    GROUPINGS,
    Topology,
    chain,
    complete,
    from_edges,
    load_flux,
    random_graph,
    star,
    topology_from_spec,
    tree,
)

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
