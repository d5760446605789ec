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

from typing import Any

import numpy as np
import yaml

from cloudsched.placement import Cluster, JobType, parse_cluster, topology_from_spec

__all__ = ["DGP_PARAMS", "demo_instance", "demo_workload_yaml"]

DGP_PARAMS = {"alpha": 0.002, "f": "identity", "h": 0.0}


#: The demo's job types, in workload-file form (name, arrival rate, mean duration, topology).
DEMO_JOB_TYPES: tuple[dict[str, Any], ...] = (
    {
        "name": "chain3",
        "arrival_rate": 1.0,
        "mean_duration": 1.0,
        "topology": {"generator": "chain", "nodes": 3},
    },
    {
        "name": "star4",
        "arrival_rate": 0.5,
        "mean_duration": 1.0,
        "topology": {"generator": "star", "nodes": 4},
    },
)


def demo_instance() -> tuple[Cluster, list[JobType]]:
    """Return the demo's cluster and job types."""
    jobs = [
        JobType(
            j["name"],
            j["arrival_rate"],
            j["mean_duration"],
            topology_from_spec(j["topology"], ".", rng=np.random.default_rng(0)),
        )
        for j in DEMO_JOB_TYPES
    ]
    return parse_cluster("3x3"), jobs


def demo_workload_yaml() -> str:
    """Return the demo's job types as workload-file YAML (for sweeps and the CLI)."""
    return yaml.safe_dump({"job_types": list(DEMO_JOB_TYPES)}, sort_keys=False)
