"""Random placement instances through every policy (run by test_placement_fuzz.py).

Mixed machines, CPU limits and demands, edge traffic, both DGP proposals, and the placement
log on a third of the runs.

Run as a script in a fresh process with ``NUMBA_BOUNDSCHECK=1`` and a private
``NUMBA_CACHE_DIR``, so that the kernels are compiled with bounds checks: an index out of
range raises ``IndexError`` instead of corrupting memory.  Argument: number of instances.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cloudsched.placement import (
    PLACEMENT_POLICIES,
    Cluster,
    JobType,
    Topology,
    chain,
    complete,
    random_graph,
    simulate_placement,
    star,
    tree,
)

GENERATORS = {"chain": chain, "star": star, "tree": tree, "complete": complete}


def _dressed(topo, draw, cpu):
    """The graph with random traffic on its edges and, with CPU limits, CPU demands."""
    g = topo.graph.copy()
    for u, v in g.edges:
        g.edges[u, v]["weight"] = draw(st.sampled_from([1.0, 0.5, 3.0]))
    for v in g.nodes:
        g.nodes[v]["cpu"] = draw(st.sampled_from([0.0, 1.0, 2.0])) if cpu else 0.0
    return Topology(topo.name, g)


@st.composite
def instances(draw):
    machines = draw(st.integers(1, 8))
    slots = draw(st.lists(st.integers(1, 5), min_size=machines, max_size=machines))
    racks = draw(st.integers(1, machines))
    cpu = draw(st.booleans())
    caps = [draw(st.sampled_from([4.0, 6.0, 100.0])) for _ in slots] if cpu else None
    cluster = Cluster(np.array(slots), racks=racks, cpu=caps)
    total = cluster.total_slots
    jobs = []
    for j in range(draw(st.integers(1, 4))):
        # graph sizes from 1 to every slot of the cluster: above and below the machine count
        k = draw(st.integers(1, min(total, 12)))
        kind = draw(st.sampled_from([*GENERATORS, "random"]))
        if kind == "random":
            topo = random_graph(k, draw(st.floats(0.1, 0.9)), rng=np.random.default_rng(j))
        else:
            topo = GENERATORS[kind](k)
        topo = _dressed(topo, draw, cpu)
        try:
            cluster.check_fits(topo)
        except ValueError:
            topo = topo.with_demands(0.0, 0.0)
        rate = draw(st.floats(0.05, 1.5))
        jobs.append(JobType(f"t{j}", rate, draw(st.floats(0.2, 3.0)), topo))
    policy = draw(st.sampled_from(PLACEMENT_POLICIES))
    proposal = draw(st.sampled_from(["uniform", "local"]))
    return cluster, jobs, policy, proposal, draw(st.integers(0, 2**31))


def check(n: int) -> None:
    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(instances())
    def run(instance):
        cluster, jobs, policy, proposal, seed = instance
        horizon = 20.0 * max(jt.mean_duration for jt in jobs)
        # MaxWeight solves a MILP per frame: a few short frames cover its code paths
        kw = {"frame": horizon / 4, "solver_time_limit": 0.2} if policy == "maxweight" else {}
        # no bound and no DGP calibration pilots: the kernels, not the solver, are under test
        res = simulate_placement(policy, cluster, jobs, horizon=horizon, rng=seed,
                                 compare_bound=False, proposal=proposal,
                                 record=seed % 3 == 0, **kw)  # fmt: skip
        assert 0.0 <= res.utilization <= res.reserved_fraction + 1e-9 <= 1.0 + 2e-9
        assert res.mean_queue_length >= 0 and res.mean_in_service >= 0
        json.dumps(res.to_dict(), allow_nan=False)  # strict JSON

    run()


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)  # overload warnings are expected here
    check(int(sys.argv[1]))
    print("ok")
