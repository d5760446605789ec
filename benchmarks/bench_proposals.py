"""DGP's proposals as the graph grows: the paper's uniform partitions against local ones.

One job type, a chain of K nodes (K = 2 ... 300), at 60% of the slots of a 50 x 12 cluster in
5 racks, mean holding time 1, DGP with its default parameters (read off the instance; local
proposals get the bias of ``cloudsched.placement.defaults``), a fixed horizon.  For each K
and proposal: the share of proposals that find a feasible template (``success``), jobs
placed per job arrived (``placed``), slot utilisation against the 0.6 offered, the mean
and final queue, and the cost per job in service against the least cost of one template
(the static optimum per job when the cluster is large beside the job).

Run: ``python benchmarks/bench_proposals.py [--quick]`` (quick: K up to 64, shorter runs).
"""

from __future__ import annotations

import sys
import time
import warnings

from cloudsched.placement import JobType, chain, parse_cluster, simulate_placement
from cloudsched.placement.shapes import least_cost_template

QUICK = "--quick" in sys.argv


def main() -> None:
    cluster = parse_cluster("50x12", racks=5)
    sizes = (2, 4, 8, 16, 32, 64) if QUICK else (2, 4, 8, 16, 32, 64, 128, 300)
    horizon = 50.0 if QUICK else 200.0
    print(
        f"== DGP proposals on 50x12 (5 racks), one chain type at 60% of the slots, "
        f"{horizon:g} mean holding times"
    )
    print(
        f"{'K':>4s} {'proposal':>8s} {'success':>9s} {'placed':>7s} {'util':>6s} "
        f"{'queue':>9s} {'final q':>8s} {'cost/job':>9s} {'least':>6s} {'wall s':>7s}"
    )
    for k in sizes:
        top = chain(k)
        jobs = [JobType(f"chain{k}", 0.6 * cluster.total_slots / k, 1.0, top)]
        least = least_cost_template(cluster, top).cost
        for proposal in ("uniform", "local"):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = simulate_placement(
                    "dgp",
                    cluster,
                    jobs,
                    horizon=horizon,
                    rng=2,
                    proposal=proposal,
                    compare_bound=False,
                )
            wall = time.perf_counter() - t0
            success = 1 - r.proposals_failed / max(r.proposals_tried, 1)
            placed = r.placed / max(r.arrived, 1)
            print(
                f"{k:4d} {proposal:>8s} {success:9.2e} {placed:7.3f} {r.utilization:6.3f} "
                f"{r.mean_queue_length:9.1f} {r.final_queue_length:8d} "
                f"{r.mean_partition_cost:9.2f} {least:6.0f} {wall:7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
