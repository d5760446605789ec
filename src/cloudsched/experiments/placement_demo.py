"""The placement part of ``cloudsched demo``: DGP's cost/queue trade-off over beta.

Instance (built in; ``examples/demo-placement.yaml`` is the same workload for the CLI): 3
machines x 3 slots; a 3-node chain (arrival rate 1, mean duration 1) and a 4-node star
(0.5, 1), i.e. 55% of the slots on average.  A chain fits on one machine; a star cannot, so
the static optimum pays for the stars' broken edges (cost 0.5 per unit time).

DGP runs with ``f`` = identity and ``alpha`` = 0.002 over a sweep of beta; this choice gives a
clean monotone trade-off on this instance (see the closing notes of the placement issue for
the log form).  Storm default, greedy, frame-based MaxWeight (T = 1) and the static optimum
are the references.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from cloudsched.placement import JobType, chain, parse_cluster, star
from cloudsched.placement.optimize import static_optimum
from cloudsched.placement.simulation import simulate_placement

__all__ = ["DEMO_BETAS", "demo_instance", "tradeoff_data"]

DEMO_BETAS = (0.8, 0.4, 0.2, 0.1, 0.05)
DGP_PARAMS = {"alpha": 0.002, "f": "identity", "h": 0.0}


def demo_instance():
    """Return the demo's cluster and job types."""
    cluster = parse_cluster("3x3")
    jobs = [JobType("chain3", 1.0, 1.0, chain(3)), JobType("star4", 0.5, 1.0, star(4))]
    return cluster, jobs


def tradeoff_data(
    seed: int, betas: Sequence[float] = DEMO_BETAS, horizon: float = 200_000.0
) -> tuple[pd.DataFrame, float]:
    """One row per run (DGP per beta, then the baselines) and the static optimum's cost rate."""
    cluster, jobs = demo_instance()
    seeds = np.random.SeedSequence(seed).spawn(len(betas) + 3)
    rows = []
    runs: list[tuple[str, float | None, dict]] = [
        ("dgp", b, {**DGP_PARAMS, "beta": b, "horizon": horizon}) for b in betas
    ]
    runs += [
        ("storm-default", None, {"horizon": horizon / 10}),
        ("greedy", None, {"horizon": horizon / 10}),
        ("maxweight", None, {"horizon": 2000.0, "frame": 1.0}),
    ]
    for (policy, beta, kw), ss in zip(runs, seeds, strict=True):
        r = simulate_placement(cluster, jobs, policy, rng=np.random.default_rng(ss), **kw)
        rows.append({
            "policy": policy,
            "beta": beta,
            "cost_rate": r.cost_rate,
            "cost_rate_ci95": r.cost_rate_ci,
            "mean_queue_length": r.mean_queue_length,
            "mean_queue_length_ci95": r.mean_queue_length_ci,
            "mean_wait": r.mean_wait,
            "utilization": r.utilization,
            "proposal_success_rate": (
                1 - r.proposals_failed / r.proposals_tried if r.proposals_tried else np.nan
            ),
            "migrations_per_unit_time": r.migrations / (r.horizon - r.warmup),
            "horizon": r.horizon,
        })  # fmt: skip
    return pd.DataFrame(rows), static_optimum(cluster, jobs).cost_rate
