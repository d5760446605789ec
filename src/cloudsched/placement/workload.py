"""Job types and the workload file of ``cloudsched place``.

YAML form::

    job_types:
      - name: wordcount
        arrival_rate: 0.5        # jobs per unit time (Poisson)
        mean_duration: 10        # mean holding time (exponential)
        topology: {flux: wordcount.yaml}          # relative to the workload file
      - name: pipeline
        arrival_rate: 1.0
        mean_duration: 2
        topology: {generator: chain, nodes: 4}    # chain|star|tree|complete|random
      - name: triangle
        arrival_rate: 0.2
        mean_duration: 5
        topology: {nodes: [a, b, c], edges: [[a, b], [b, c], [c, a]]}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.errors import InputError, ParameterError, check_real
from cloudsched.io import read_yaml
from cloudsched.placement.topology import Topology, topology_from_spec

__all__ = ["JobType", "load_workload"]


@dataclass(frozen=True)
class JobType:
    """A job type: its graph, Poisson arrival rate and mean (exponential) holding time."""

    name: str
    arrival_rate: float
    mean_duration: float
    topology: Topology

    @property
    def load(self) -> float:
        """Rho = arrival rate x mean duration (mean number of jobs in service if never queued)."""
        return self.arrival_rate * self.mean_duration


def load_workload(
    path: str | Path,
    rng: np.random.Generator | None = None,
    *,
    flux: Mapping[str, Any] | None = None,
) -> list[JobType]:
    """Read a workload YAML file (see the module docstring); ``rng`` seeds random graphs.

    ``flux`` gives defaults (``slots``, ``executors_per_slot``) for every Flux topology that
    does not set its own.
    """
    where = str(path)
    rng = np.random.default_rng(rng)
    doc = read_yaml(path)
    items = doc.get("job_types") if isinstance(doc, Mapping) else None
    if not isinstance(items, list) or not items:
        raise InputError(where, "needs a non-empty list 'job_types'")
    jobs: list[JobType] = []
    for k, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(where, f"job_types[{k}] must be a mapping")
        jobs.append(_job_type(item, k, Path(path).parent, rng, where, flux or {}))
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise InputError(where, "job type names must be distinct")
    return jobs


def _job_type(
    item: Mapping[str, Any], k: int, base: Path, rng: np.random.Generator, where: str,
    flux: Mapping[str, Any],
) -> JobType:  # fmt: skip
    name = str(item.get("name", f"type{k}"))
    try:
        rate = check_real(f"{name}.arrival_rate", item.get("arrival_rate"), low=0.0, low_open=True)
        duration = check_real(
            f"{name}.mean_duration", item.get("mean_duration"), low=0.0, low_open=True
        )
        spec = item.get("topology")
        if isinstance(spec, Mapping) and "flux" in spec and flux:
            own = {"slots", "executors_per_slot"} & set(spec)
            spec = {**spec} if own else {**spec, **{k: v for k, v in flux.items() if v is not None}}
        topology = topology_from_spec(spec, base, rng)
    except InputError:
        raise
    except ParameterError as exc:
        raise InputError(where, f"job type {name!r}: {exc}") from None
    return JobType(name, rate, duration, topology)
