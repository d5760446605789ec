"""The small placement instance of ``cloudsched demo`` and ``cloudsched reproduce dgp``.

Instance (built in; ``examples/demo-placement.yaml`` is the same workload for the CLI): 3
machines x 3 slots; a 3-node chain (arrival rate 1, mean duration 1) and a 4-node star
(0.5, 1), i.e. 55% of the slots on average.  A chain fits on one machine; a star cannot, so
the static optimum pays for the stars' broken edges (cost 0.5 per unit time).

DGP runs with ``f`` = identity and ``alpha`` = 0.002 over a sweep of beta; this choice gives a
clean monotone trade-off on this instance (with the log form and a large ``alpha / beta`` the
configuration freezes at its random start).  Storm default, greedy, frame-based MaxWeight and
the static optimum are the references (:mod:`cloudsched.experiments.reproduce`).
"""

from __future__ import annotations

from cloudsched.placement import Cluster, JobType, chain, parse_cluster, star

__all__ = ["DGP_PARAMS", "demo_instance", "demo_workload_yaml"]

DGP_PARAMS = {"alpha": 0.002, "f": "identity", "h": 0.0}


def demo_instance() -> tuple[Cluster, list[JobType]]:
    """Return the demo's cluster and job types."""
    cluster = parse_cluster("3x3")
    jobs = [JobType("chain3", 1.0, 1.0, chain(3)), JobType("star4", 0.5, 1.0, star(4))]
    return cluster, jobs


def demo_workload_yaml() -> str:
    """Return the demo's job types as workload-file YAML (for sweeps and the CLI)."""
    _, jobs = demo_instance()
    lines = ["job_types:"]
    for jt in jobs:
        kind = "chain" if jt.name.startswith("chain") else "star"
        lines += [
            f"  - name: {jt.name}",
            f"    arrival_rate: {jt.arrival_rate}",
            f"    mean_duration: {jt.mean_duration}",
            f"    topology: {{generator: {kind}, nodes: {jt.topology.nodes}}}",
        ]
    return "\n".join(lines) + "\n"
