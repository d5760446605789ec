"""Graph-job placement for stream processing (Storm topologies).

So far: job graphs (:mod:`cloudsched.placement.topology`: generators, inline graphs and
Apache Storm Flux files expanded to executors), clusters and partitioning cost
(:mod:`cloudsched.placement.cluster`), and the Storm default and greedy placements
(:mod:`cloudsched.placement.baselines`), and job types read from a workload file
(:mod:`cloudsched.placement.workload`).
"""

from cloudsched.placement.baselines import greedy, storm_default
from cloudsched.placement.cluster import Cluster, parse_cluster
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
from cloudsched.placement.workload import JobType, load_workload

__all__ = [
    "GENERATORS",
    "GROUPINGS",
    "Cluster",
    "JobType",
    "Topology",
    "chain",
    "complete",
    "from_edges",
    "greedy",
    "load_flux",
    "load_workload",
    "parse_cluster",
    "random_graph",
    "star",
    "storm_default",
    "topology_from_spec",
    "tree",
]
