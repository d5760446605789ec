"""The model of the ``place`` commands: the cluster and the workload, from their options."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cloudsched.cli.common import check_not_input
from cloudsched.cli.console import warn
from cloudsched.errors import check_choice, check_int, check_seed

__all__ = ["check_not_read", "load_model"]


def load_model(args: Mapping[str, Any]) -> tuple[Any, Any]:
    """Return the cluster and job types of a ``place`` command (graphs checked to fit).

    ``args`` are the command's arguments by name (its ``locals()``): ``cluster``, ``racks``,
    ``cross_rack_cost``, ``workload``, ``seed`` and, where it has them, ``flux_slots``,
    ``executors_per_slot``, ``flux_traffic`` and ``properties``.  An output among them
    (``out``, ``plot``, ``assignments``, ``frames``) that is a file a topology is read from
    is refused.
    """
    from cloudsched.placement import load_workload
    from cloudsched.placement.cluster import cluster_from_text
    from cloudsched.placement.flux import TRAFFIC_MODELS

    racks, executors_per_slot = args["racks"], args.get("executors_per_slot")
    if racks is not None:
        racks = check_int("--racks", racks, low=1)
    cl = cluster_from_text(args["cluster"], racks, args["cross_rack_cost"])
    seed = check_seed("--seed", args["seed"])
    flux_slots = args.get("flux_slots", "executors")
    flux_slots = check_choice("--flux-slots", flux_slots, ("executors", "workers"))
    flux_traffic = check_choice("--flux-traffic", args.get("flux_traffic", "edges"), TRAFFIC_MODELS)
    if executors_per_slot is not None:
        executors_per_slot = check_int("--executors-per-slot", executors_per_slot, low=1)
    flux = {"slots": flux_slots, "executors_per_slot": executors_per_slot, "traffic": flux_traffic}
    if args.get("properties") is not None:  # read relative to here, not to the workload
        flux["properties"] = str(Path(args["properties"]).resolve())
    with warnings.catch_warnings(record=True) as caught:  # a Flux file's notes, said once
        warnings.simplefilter("always", UserWarning)
        jobs = load_workload(args["workload"], rng=seed, flux=flux)
    for w in caught:
        warn(str(w.message), "note")
    outputs = {f"--{k}": args.get(k) for k in ("out", "plot", "assignments", "frames")}
    check_not_read(outputs, [jt.topology for jt in jobs])  # a workload's Flux file or include
    for jt in jobs:
        cl.check_fits(jt.topology, name="--workload")
        if len(jt.topology.sources) > 1:  # what a Flux include brought in is said, once
            main, *extra = jt.topology.sources
            warn(f"{jt.name}: {main} includes {', '.join(extra)}", "note")
    return cl, jobs


def check_not_read(outputs: Mapping[str, Any], topologies: Iterable[Any]) -> None:
    """Refuse an output that is a file a topology was read from (a Flux file or an include).

    Called once the model is read, before anything runs or is written.
    """
    sources = [src for top in topologies for src in top.sources]
    for option, path in outputs.items():
        check_not_input(option, path, sources)
