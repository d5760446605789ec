"""Graph-job placement for stream processing (Storm topologies).

* Model: job graphs (:mod:`~cloudsched.placement.topology`: generators and inline graphs;
  :mod:`~cloudsched.placement.flux`: Apache Storm Flux files expanded to executors or
  packed into workers), clusters and partitioning cost
  (:mod:`~cloudsched.placement.cluster`), job types from a workload file
  (:mod:`~cloudsched.placement.workload`).
* Policies: Storm default and greedy (:mod:`~cloudsched.placement.baselines`), DGP and
  dgp-clock (the compiled kernel), frame-based MaxWeight
  (:mod:`~cloudsched.placement.maxweight`), simulated by :func:`simulate_placement`.
* Exact optimisation (:mod:`~cloudsched.placement.optimize`): the max-weight configuration
  and the static optimum.
* Plain references for tests live in :mod:`cloudsched.testing.placement_mirror`.
"""

from cloudsched.placement.baselines import greedy, storm_default
from cloudsched.placement.beside_bound import bound_is_cheap
from cloudsched.placement.cluster import Cluster, parse_cluster
from cloudsched.placement.configuration import MaxWeightSolution, max_weight_configuration
from cloudsched.placement.flux import GROUPINGS, load_flux
from cloudsched.placement.optimize import StaticOptimum, static_optimum
from cloudsched.placement.plugin import place_hook, register_placement
from cloudsched.placement.policies import PLACEMENT_POLICIES, PlacementPolicy, get_placement_policy
from cloudsched.placement.result import PlacementResult
from cloudsched.placement.simulation import DefaultsRefused, run_placement, simulate_placement
from cloudsched.placement.spec import PlacementSpec
from cloudsched.placement.topology import (
    GENERATORS,
    Topology,
    chain,
    complete,
    from_edges,
    random_graph,
    star,
    tree,
)
from cloudsched.placement.workload import JobType, load_workload, topology_from_spec

__all__ = [
    "GENERATORS",
    "GROUPINGS",
    "PLACEMENT_POLICIES",
    "Cluster",
    "DefaultsRefused",
    "JobType",
    "MaxWeightSolution",
    "PlacementPolicy",
    "PlacementResult",
    "PlacementSpec",
    "StaticOptimum",
    "Topology",
    "bound_is_cheap",
    "chain",
    "complete",
    "from_edges",
    "get_placement_policy",
    "greedy",
    "load_flux",
    "load_workload",
    "max_weight_configuration",
    "parse_cluster",
    "place_hook",
    "random_graph",
    "register_placement",
    "run_placement",
    "simulate_placement",
    "star",
    "static_optimum",
    "storm_default",
    "topology_from_spec",
    "tree",
]
