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
        topology: {nodes: [a, b, c], edges: [[a, b, 2.5], [b, c], [c, a]]}
        resources: {cpu: 50, memory: 512}        # per node, for clusters with limits

An edge ``[u, v, traffic]`` carries that traffic (1 when omitted); a Flux topology takes
``traffic: grouping`` to derive it from its streams' groupings, and its executors' CPU and
memory from the Flux file (:mod:`cloudsched.placement.flux`).  ``resources`` gives every
node of a generated or inline graph the same CPU (percent of a core) and memory (MB).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.errors import InputError, ParameterError, check_real
from cloudsched.io import read_yaml
from cloudsched.placement.flux import load_flux, read_properties
from cloudsched.placement.topology import MAX_DEMAND, Topology, from_edges, generate
from cloudsched.randomness import Seed

__all__ = ["RATE_RANGE", "JobType", "load_workload", "topology_from_spec"]

#: Allowed arrival rates and mean durations of a job type (time units of the simulation):
#: outside it the static optimum's LP is badly scaled (HiGHS refuses a duration of 1e300).
RATE_RANGE = (1e-6, 1e6)


@dataclass(frozen=True)
class JobType:
    """A job type: its graph, Poisson arrival rate and mean (exponential) holding time."""

    name: str
    arrival_rate: float
    mean_duration: float
    topology: Topology

    def __post_init__(self) -> None:
        """Check the fields (a bad rate would otherwise fail later, inside the kernel)."""
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError("name", self.name, "a non-empty string")
        for field, value in (
            ("arrival_rate", self.arrival_rate),
            ("mean_duration", self.mean_duration),
        ):
            checked = check_real(
                f"{self.name}.{field}", value, low=RATE_RANGE[0], high=RATE_RANGE[1]
            )
            object.__setattr__(self, field, checked)
        if not isinstance(self.topology, Topology):
            raise ParameterError(f"{self.name}.topology", self.topology, "a Topology")

    @property
    def load(self) -> float:
        """Rho = arrival rate x mean duration (mean number of jobs in service if never queued)."""
        return self.arrival_rate * self.mean_duration


def load_workload(
    path: str | Path, *, rng: Seed = None, flux: Mapping[str, Any] | None = None
) -> list[JobType]:
    """Read a workload YAML file (see the module docstring); ``rng`` seeds random graphs.

    ``flux`` gives defaults (``slots``, ``executors_per_slot``, ``traffic``) for every Flux
    topology that does not set its own.
    """
    where = str(path)
    rng = np.random.default_rng(rng)
    doc = read_yaml(path)
    items = doc.get("job_types") if isinstance(doc, Mapping) else None
    if not isinstance(items, list) or not items:
        hint = ""
        if isinstance(doc, Mapping) and ("spouts" in doc or "bolts" in doc):
            hint = (
                " (this is a Storm Flux file: name it in a workload's job type, "
                "topology: {flux: FILE})"
            )
        raise InputError(where, "needs a non-empty list 'job_types'" + hint)
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
    item: Mapping[str, Any],
    k: int,
    base: Path,
    rng: np.random.Generator,
    where: str,
    flux: Mapping[str, Any],
) -> JobType:
    name = str(item.get("name", f"type{k}"))
    try:
        rate = check_real(
            f"{name}.arrival_rate", item.get("arrival_rate"), low=RATE_RANGE[0], high=RATE_RANGE[1]
        )
        duration = check_real(
            f"{name}.mean_duration",
            item.get("mean_duration"),
            low=RATE_RANGE[0],
            high=RATE_RANGE[1],
        )
        spec = item.get("topology")
        if isinstance(spec, Mapping) and "flux" in spec and flux:
            given = {k: v for k, v in flux.items() if v is not None}
            if {"slots", "executors_per_slot"} & set(spec):  # the file's own packing wins
                given = {k: v for k, v in given.items() if k in ("traffic", "properties")}
            spec = {**given, **spec}
        topology = topology_from_spec(spec, base, rng=rng)
        res = item.get("resources")
        if res is not None:
            if isinstance(spec, Mapping) and "flux" in spec:
                raise ParameterError(
                    "resources",
                    res,
                    "absent for a Flux topology (set cpuLoad "
                    "and onHeapMemoryLoad on its spouts and bolts)",
                )
            if not isinstance(res, Mapping) or set(res) - {"cpu", "memory"}:
                raise ParameterError("resources", res, "a mapping {cpu: X, memory: Y}")
            topology = topology.with_demands(
                check_real("resources.cpu", res.get("cpu", 0.0), low=0.0, high=MAX_DEMAND),
                check_real("resources.memory", res.get("memory", 0.0), low=0.0, high=MAX_DEMAND),
            )
        return JobType(name, rate, duration, topology)
    except InputError:
        raise
    except ParameterError as exc:
        raise InputError(where, f"job type {name!r}: {exc}") from None


def topology_from_spec(spec: Any, base_dir: str | Path, *, rng: np.random.Generator) -> Topology:
    """Build a topology from its workload-file form.

    ``{generator: chain|star|tree|complete|random, nodes: K, [p: P], [branching: B]}``,
    ``{nodes: [...] or K, edges: [[u, v] or [u, v, traffic], ...]}`` or ``{flux: PATH,
    [traffic: edges|grouping], [slots: ...], [executors_per_slot: K], [properties: FILE]}``
    (paths relative to ``base_dir``).
    """
    if not isinstance(spec, Mapping):
        raise ParameterError(
            "topology", spec, "a mapping with 'generator', 'nodes'/'edges' or 'flux'"
        )
    if "flux" in spec:
        path = Path(base_dir) / str(spec["flux"])
        props = None
        if spec.get("properties") is not None:
            props = read_properties(Path(base_dir) / str(spec["properties"]))
        return load_flux(
            path,
            slots=spec.get("slots", "executors"),
            executors_per_slot=spec.get("executors_per_slot"),
            properties=props,
            traffic=spec.get("traffic", "edges"),
        )
    if "generator" in spec:
        return generate(spec, rng=rng)
    if "edges" in spec:
        return from_edges(spec.get("nodes", []), spec["edges"])
    raise ParameterError(
        "topology", dict(spec), "a mapping with 'generator', 'nodes'/'edges' or 'flux'"
    )
