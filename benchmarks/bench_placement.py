"""Placement simulator: speed, exact-solver times, and DGP as graphs grow.

1. Job events per second of every policy on 50 machines x 12 slots with the word-count
   topology (25 executors) at 80% of the slots; the ratio is to the plain-Python mirror of
   DGP's chain (``cloudsched.testing.placement_mirror``) measured in the same run.  For
   MaxWeight, one frame is solved by the exact MILP (with a limit: it is too slow at this
   size) and by the fast packing (``benchmarks/bench_scale.py`` runs MaxWeight itself).
2. Solve time of the exact problems as the cluster grows: the max-weight configuration
   (HiGHS MILP) and the static optimum (column generation).
3. DGP (default parameters) as the graph grows from 3 to 25 nodes (chains, one type, 60%
   of the slots of a 10 x 8 cluster): the share of proposals that find free slots
   (``success``) and that are added (``added``), queue, utilisation against the offered
   load, and cost per job, next to Storm default, greedy and the static optimum.

Run: ``python benchmarks/bench_placement.py [--quick]``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

from cloudsched.placement import JobType, chain, load_flux, parse_cluster, star
from cloudsched.placement.optimize import max_weight_configuration, static_optimum
from cloudsched.placement.simulation import simulate_placement
from cloudsched.testing.placement_mirror import ReferencePlacement

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QUICK = "--quick" in sys.argv


def speed() -> None:
    cluster = parse_cluster("50x12")
    wc = load_flux(EXAMPLES / "wordcount.yaml")
    rho = 0.8 * cluster.total_slots / wc.nodes
    jobs = [JobType("wordcount", rho, 1.0, wc)]
    horizon = 2000.0 if QUICK else 20000.0
    print(f"== 1. speed: 50x12, word count ({wc.nodes} nodes), rho = {rho:.1f} (80% of slots)")
    simulate_placement("dgp", cluster, jobs, horizon=10.0, rng=0)  # compile
    # the plain-Python reference, same chain, for the ratio
    ref = ReferencePlacement(cluster, jobs, "dgp", np.random.default_rng(1))
    steps = 20_000 if QUICK else 100_000
    t0 = time.perf_counter()
    for _ in range(steps):
        ref.step()
    ref_rate = steps / (time.perf_counter() - t0)
    print(
        f"{'policy':15s} {'events/s':>12s} {'x ref. DGP':>12s} {'queue':>10s} "
        f"{'util':>6s} {'cost/job':>9s}"
    )
    for policy in ("dgp", "dgp-clock", "storm-default", "greedy", "resource-aware"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = simulate_placement(policy, cluster, jobs, rng=1, horizon=horizon)
        rate = r.events_per_second
        print(
            f"{policy:15s} {rate:12,.0f} {rate / ref_rate:12.0f} {r.mean_queue_length:10.1f} "
            f"{r.utilization:6.3f} {r.mean_partition_cost:9.2f}"
        )
    print(f"{'reference dgp':15s} {ref_rate:12,.0f} {1:12.0f}")
    # MaxWeight: one frame's exact problem with the load in the system (rho jobs present)
    limit = 20.0 if QUICK else 60.0
    mw = max_weight_configuration(
        cluster, [wc], [100.0], [round(rho)], time_limit=limit, solver="exact"
    )
    fast = max_weight_configuration(cluster, [wc], [100.0], [round(rho)], solver="fast")
    print(
        f"maxweight: one frame ({round(rho)} copies of word count on 50x12): exact MILP "
        f"{mw.solve_time:.1f} s, proven optimal: {mw.optimal}, templates found: "
        f"{len(mw.templates)}; fast packing {fast.solve_time:.2f} s, {len(fast.templates)} "
        f"templates, gap {fast.gap:.1%} (benchmarks/bench_scale.py runs MaxWeight at this "
        f"size)"
    )


def solve_times() -> None:
    print("\n== 2. exact solve times (HiGHS via scipy), chain-3 + star-4, load 55% of slots")
    shapes = ["3x3", "4x4", "6x4", "8x4", "10x4"] if not QUICK else ["3x3", "4x4", "6x4"]
    print(
        f"{'cluster':8s} {'max-weight s':>13s} {'optimal':>8s} {'static s':>9s} "
        f"{'columns':>8s} {'opt cost/job':>13s}"
    )
    for shape in shapes:
        cluster = parse_cluster(shape)
        scale = 0.55 * cluster.total_slots / (3 * 1.0 + 4 * 0.5)
        jobs = [
            JobType("chain3", scale, 1.0, chain(3)),
            JobType("star4", 0.5 * scale, 1.0, star(4)),
        ]
        caps = [int(cluster.total_slots // 3), int(cluster.total_slots // 4)]
        mw = max_weight_configuration(
            cluster, [j.topology for j in jobs], [2.0, 2.5], caps, time_limit=120.0, solver="exact"
        )
        st = static_optimum(cluster, jobs, solver="exact", time_limit=120.0)
        print(
            f"{shape:8s} {mw.solve_time:13.2f} {mw.optimal!s:>8s} {st.solve_time:9.2f} "
            f"{st.columns:8d} {st.cost_per_job:13.4f}"
        )
    wc = load_flux(EXAMPLES / "wordcount.yaml")
    for shape in ["3x10", "5x10"] if not QUICK else ["3x10"]:
        cluster = parse_cluster(shape)
        mw = max_weight_configuration(cluster, [wc], [100.0], [1], time_limit=120.0, solver="exact")
        print(
            f"word count, one template on {shape}: {mw.solve_time:.2f} s, "
            f"optimal={mw.optimal}, cost {mw.cost:g} of {wc.edges} edges"
        )


def graph_growth() -> None:
    print("\n== 3. DGP as the graph grows: chains on 10x8, one type, 60% of the slots")
    cluster = parse_cluster("10x8")
    horizon = 5000.0 if QUICK else 20000.0
    print(
        f"{'K':>3s} {'success':>9s} {'added':>9s} {'queue':>10s} {'final q':>8s} {'util':>6s}"
        f" {'offered':>8s} {'dgp cost':>9s} {'storm':>7s} {'greedy':>7s}"
        f" {'optimum':>8s}"
    )
    for k in (3, 5, 8, 12, 16, 20, 25):
        rho = 0.6 * cluster.total_slots / k
        jobs = [JobType(f"chain{k}", rho, 1.0, chain(k))]
        r = simulate_placement("dgp", cluster, jobs, horizon=horizon, rng=2)
        s = simulate_placement("storm-default", cluster, jobs, horizon=horizon, rng=2)
        g = simulate_placement("greedy", cluster, jobs, horizon=horizon, rng=2)
        opt = static_optimum(cluster, jobs, time_limit=30.0)
        success = 1 - r.proposals_failed / max(r.proposals_tried, 1)
        added = r.templates_added / max(r.proposals_tried, 1)
        print(
            f"{k:3d} {success:9.2e} {added:9.2e} {r.mean_queue_length:10.1f} "
            f"{r.final_queue_length:8d} {r.utilization:6.3f} {0.6:8.3f} "
            f"{r.mean_partition_cost:9.3f} "
            f"{s.mean_partition_cost:7.3f} {g.mean_partition_cost:7.3f} "
            f"{opt.cost_per_job:8.3f}{'' if opt.proven else ' (not proven)'}"
        )


if __name__ == "__main__":
    speed()
    solve_times()
    graph_growth()
