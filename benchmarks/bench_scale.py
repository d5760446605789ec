"""Placement optimisation at the size of a real Storm cluster.

1. The static bound (``place bound``) on 50 machines x 12 slots in 5 racks: the shipped
   workloads, word count alone at 30% and 80% of the slots, and the mixed cluster of
   ``examples/cluster.yaml``: value, lower bound, gap, proven, seconds.
2. One max-weight frame, fast packing against the exact MILP on the same problem (the
   baseline, measured in the same run): seconds, weight, the fast solver's bound and gap.
3. MaxWeight with the fast solver on 50 x 12 with ``examples/workload.yaml`` for 1,000 mean
   holding times of the longest type: wall time, frames, largest gap, migrations, cost
   against the bound.

Run: ``python benchmarks/bench_scale.py [--quick]``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

from cloudsched.placement import JobType, load_flux, load_workload, parse_cluster
from cloudsched.placement.cluster import load_cluster
from cloudsched.placement.optimize import max_weight_configuration, static_optimum
from cloudsched.placement.simulation import simulate_placement

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QUICK = "--quick" in sys.argv


def bounds() -> None:
    print("== 1. static bound on 50x12, 5 racks (fast solver)")
    big = parse_cluster("50x12", racks=5)
    wc = load_flux(EXAMPLES / "wordcount.yaml")
    cases = [
        ("workload.yaml", big, load_workload(EXAMPLES / "workload.yaml")),
        ("storm-cluster.yaml", big, load_workload(EXAMPLES / "storm-cluster.yaml")),
        ("word count, 30% of slots", big, [JobType("wc", 0.3 * 600 / 25 / 20, 20.0, wc)]),
        ("word count, 80% of slots", big, [JobType("wc", 0.8 * 600 / 25 / 20, 20.0, wc)]),
        (
            "storm-cluster.yaml on cluster.yaml",
            load_cluster(EXAMPLES / "cluster.yaml"),
            load_workload(EXAMPLES / "storm-cluster.yaml"),
        ),
    ]
    print(f"{'instance':36s} {'value':>9s} {'lower':>9s} {'gap':>7s} {'proven':>7s} {'s':>6s}")
    for name, cluster, jobs in cases:
        opt = static_optimum(cluster, jobs, time_limit=60.0)
        print(
            f"{name:36s} {opt.value:9.4g} {opt.lower_bound:9.4g} {opt.gap:7.2%} "
            f"{opt.proven!s:>7s} {opt.solve_time:6.2f}"
        )


def frame() -> None:
    print("\n== 2. one max-weight frame: fast packing vs the exact MILP (baseline)")
    tops = [load_flux(EXAMPLES / f) for f in ("exclamation.yaml", "rolling-top-words.yaml")]
    print(
        f"{'cluster':8s} {'jobs':>5s} {'exact s':>8s} {'exact w':>8s} {'proven':>7s} "
        f"{'fast s':>7s} {'fast w':>8s} {'bound':>8s} {'gap':>6s} {'speed-up':>9s}"
    )
    for shape, present in (("3x12", 1), ("4x12", 2), ("6x12", 2)):
        cluster = parse_cluster(shape)
        values, caps = [20.0, 20.0], [present, present]
        t0 = time.perf_counter()
        ex = max_weight_configuration(
            cluster, tops, values, caps, solver="exact", time_limit=30.0 if QUICK else 120.0
        )
        t_ex = time.perf_counter() - t0
        t0 = time.perf_counter()
        fa = max_weight_configuration(cluster, tops, values, caps, solver="fast")
        t_fa = time.perf_counter() - t0
        print(
            f"{shape:8s} {2 * present:5d} {t_ex:8.2f} {ex.weight:8.3g} {ex.optimal!s:>7s} "
            f"{t_fa:7.3f} {fa.weight:8.3g} {fa.upper_bound:8.3g} {fa.gap:6.1%} "
            f"{t_ex / t_fa:9.0f}"
        )


def maxweight() -> None:
    print("\n== 3. MaxWeight (fast solver) on 50x12, 5 racks, examples/workload.yaml")
    cluster = parse_cluster("50x12", racks=5)
    jobs = load_workload(EXAMPLES / "workload.yaml", rng=1)
    horizon = 2000.0 if QUICK else 20_000.0  # 1,000 mean holding times of the longest type
    simulate_placement("maxweight", cluster, jobs, horizon=100.0, rng=0)  # compile
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = simulate_placement("maxweight", cluster, jobs, horizon=horizon, rng=1)
    wall = time.perf_counter() - t0
    print(
        f"horizon {horizon:g}: {wall:.1f} s wall, {r.frames} frames in the window, largest "
        f"gap {r.frame_gap_max:.3g}, {r.migrations} migrations, cost {r.cost_rate:.4g} "
        f"{r.cost_rate_ci95}, bound {r.bound} (proven {r.bound_proven}), queue "
        f"{r.mean_queue_length:.3g}"
    )


if __name__ == "__main__":
    bounds()
    frame()
    maxweight()
