"""Random placement instances through every policy (run by test_placement_fuzz.py).

Tiny clusters with every combination of CPU and memory limits through every policy (the
kernels' work rows are shortest there), then random instances: mixed machines, CPU and
memory limits and demands, edge traffic, both DGP proposals, and the placement log on a
third of the runs.

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


def _dressed(topo, draw, cpu, memory):
    """The graph with random traffic on its edges and, with limits, CPU and memory demands."""
    g = topo.graph.copy()
    for u, v in g.edges:
        g.edges[u, v]["weight"] = draw(st.sampled_from([1.0, 0.5, 3.0]))
    for v in g.nodes:
        g.nodes[v]["cpu"] = draw(st.sampled_from([0.0, 1.0, 2.0])) if cpu else 0.0
        g.nodes[v]["memory"] = draw(st.sampled_from([0.0, 64.0, 256.0])) if memory else 0.0
    return Topology(topo.name, g)


@st.composite
def instances(draw):
    machines = draw(st.integers(1, 8))
    slots = draw(st.lists(st.integers(1, 5), min_size=machines, max_size=machines))
    racks = draw(st.integers(1, machines))
    cpu, memory = draw(st.booleans()), draw(st.booleans())
    caps = [draw(st.sampled_from([4.0, 6.0, 100.0])) for _ in slots] if cpu else None
    mems = [draw(st.sampled_from([512.0, 1024.0, 1e5])) for _ in slots] if memory else None
    cluster = Cluster(np.array(slots), racks=racks, cpu=caps, memory=mems)
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
        topo = _dressed(topo, draw, cpu, memory)
        try:
            cluster.check_fits(topo)
        except ValueError:
            topo = topo.with_demands(0.0, 0.0)
        rate = draw(st.floats(0.05, 1.5))
        jobs.append(JobType(f"t{j}", rate, draw(st.floats(0.2, 3.0)), topo))
    policy = draw(st.sampled_from(PLACEMENT_POLICIES))
    proposal = draw(st.sampled_from(["uniform", "local"]))
    return cluster, jobs, policy, proposal, draw(st.integers(0, 2**31))


def corners() -> list[tuple[Cluster, list[JobType]]]:
    """Tiny clusters whose work rows are narrowest, every combination of limits.

    One or two machines of one to three slots, one or two job types of one or two nodes:
    the kernels' work rows (sized by machines, racks, types and nodes) are shortest here,
    and with both CPU and memory limited Storm RAS sorts on three resources.
    """
    out = []
    for slots in ([1], [2], [3], [1, 1], [2, 2], [1, 3]):
        for cpu, memory in ((False, False), (True, False), (False, True), (True, True)):
            caps = [100.0 * s for s in slots] if cpu else None
            mems = [256.0 * s for s in slots] if memory else None
            cluster = Cluster(np.array(slots), racks=len(slots), cpu=caps, memory=mems)
            for k in {1, min(2, max(slots))}:
                top = chain(k).with_demands(50.0 if cpu else 0.0, 128.0 if memory else 0.0)
                jobs = [JobType("a", 0.4, 1.0, top)]
                if k == 1:
                    jobs.append(JobType("b", 0.3, 2.0, chain(1)))
                out.append((cluster, jobs))
    return out


def check_corners() -> None:
    for cluster, jobs in corners():
        for policy in PLACEMENT_POLICIES:
            for proposal in ("uniform", "local") if policy.startswith("dgp") else ("uniform",):
                kw = {"frame": 5.0, "solver_time_limit": 0.2} if policy == "maxweight" else {}
                res = simulate_placement(
                    policy,
                    cluster,
                    jobs,
                    horizon=40.0,
                    rng=1,
                    compare_bound=False,
                    proposal=proposal,
                    **kw,
                )
                assert 0.0 <= res.utilization <= 1.0 + 1e-9


def check(n: int) -> None:
    @settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(instances())
    def run(instance):
        cluster, jobs, policy, proposal, seed = instance
        horizon = 20.0 * max(jt.mean_duration for jt in jobs)
        # MaxWeight solves a MILP per frame: a few short frames cover its code paths
        kw = {"frame": horizon / 4, "solver_time_limit": 0.2} if policy == "maxweight" else {}
        # no bound and no DGP calibration pilots: the kernels, not the solver, are under test
        res = simulate_placement(
            policy,
            cluster,
            jobs,
            horizon=horizon,
            rng=seed,
            compare_bound=False,
            proposal=proposal,
            record=seed % 3 == 0,
            **kw,
        )
        assert 0.0 <= res.utilization <= res.reserved_fraction + 1e-9 <= 1.0 + 2e-9
        assert res.mean_queue_length >= 0 and res.mean_in_service >= 0
        json.dumps(res.to_dict(), allow_nan=False)  # strict JSON

    run()


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)  # overload warnings are expected here
    check_corners()
    check(int(sys.argv[1]))
    print("ok")
