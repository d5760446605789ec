"""The model of the ``place`` commands: the cluster and the workload, from their options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudsched.errors import check_choice, check_int, check_seed

__all__ = ["load_model"]


def load_model(
    cluster: str,
    racks: int | None,
    cross_rack_cost: float | None,
    workload: Path,
    seed: int | None,
    flux_slots: str = "executors",
    executors_per_slot: int | None = None,
    flux_traffic: str = "edges",
) -> tuple[Any, Any]:
    """Return the cluster and job types of ``place`` commands (graphs checked to fit)."""
    from cloudsched.placement import load_workload
    from cloudsched.placement.cluster import cluster_from_text
    from cloudsched.placement.flux import TRAFFIC_MODELS

    if racks is not None:
        racks = check_int("--racks", racks, low=1)
    cl = cluster_from_text(cluster, racks, cross_rack_cost)
    seed = check_seed("--seed", seed)
    flux_slots = check_choice("--flux-slots", flux_slots, ("executors", "workers"))
    flux_traffic = check_choice("--flux-traffic", flux_traffic, TRAFFIC_MODELS)
    if executors_per_slot is not None:
        executors_per_slot = check_int("--executors-per-slot", executors_per_slot, low=1)
    flux = {"slots": flux_slots, "executors_per_slot": executors_per_slot, "traffic": flux_traffic}
    jobs = load_workload(workload, rng=seed, flux=flux)
    for jt in jobs:
        cl.check_fits(jt.topology, name="--workload")
    return cl, jobs
