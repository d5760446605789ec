"""Clusters of machines with slots (and optionally CPU and memory), and the cost of a placement.

A placement of a job maps each graph node to a machine (slots on one machine are
interchangeable, so a machine per node is all that matters for cost).  Its partitioning cost
is the sum over broken edges of the edge's traffic times the machine distance ``c(l, l')``:
1 within a rack and ``cross_rack_cost`` (default 2) across racks (``graph-placement.md``).

Machines may differ: ``--cluster 10x4,5x8`` is ten 4-slot machines then five 8-slot ones, and
a cluster file (:func:`load_cluster`) gives each group of machines its slots, CPU and memory
capacity (Storm's ``supervisor.cpu.capacity``, in percent of a core, and
``supervisor.memory.capacity.mb``) and its rack.  A machine without a CPU or memory capacity
has no limit on it; every node needs one slot, and its CPU and memory demand
(:attr:`~cloudsched.placement.topology.Topology.demands`) must fit beside the other nodes of
the machine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.errors import InputError, ParameterError, check_int, check_real
from cloudsched.placement.hosts import group_hosts
from cloudsched.placement.topology import Topology

__all__ = ["RESOURCES", "Cluster", "cluster_from_text", "load_cluster", "parse_cluster"]

#: Largest cost of an edge broken across racks: costs enter the LPs and the DGP weights, which
#: overflow beyond this (1e308 made the bound's costs infinite).
MAX_CROSS_RACK_COST = 1e6
#: The resources besides slots, in the order of :attr:`Cluster.capacity`.
RESOURCES = ("cpu", "memory")
#: Largest capacity or demand of one resource (percent of a core, MB).
MAX_RESOURCE = 1e12


def _capacity(name: str, value: Any, n: int) -> np.ndarray:
    """One capacity per machine (inf: no limit), each in [0, MAX_RESOURCE]."""
    if value is None:
        return np.full(n, np.inf)
    arr = np.asarray(value, dtype=float).reshape(-1)
    if arr.size != n:
        raise ParameterError(name, value, f"one number per machine ({n})")
    for x in arr[np.isfinite(arr)]:
        check_real(name, float(x), low=0.0, high=MAX_RESOURCE)
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise ParameterError(name, value, f"numbers in [0, {MAX_RESOURCE:g}] (or no limit)")
    return arr


@dataclass(frozen=True)
class Cluster:
    """Machines with slot counts, racks, and optional CPU and memory capacities.

    Attributes
    ----------
    slots : numpy.ndarray
        Slots of each machine, shape ``(L,)``, int64, all >= 1.
    racks : int
        Number of racks.  Without ``rack``, machine ``l`` is in rack ``l * racks // L``
        (contiguous, even split).
    cross_rack_cost : float
        Cost of an edge broken across racks (an edge broken within a rack costs 1).
    rack : numpy.ndarray, optional
        Rack of each machine, ids ``0..racks-1`` (each used); derived from ``racks`` when
        not given (it is always an array once the cluster is built).
    cpu, memory : numpy.ndarray, optional
        Capacity of each machine (inf: unlimited); None: no machine has a limit.
    hosts : tuple of str, optional
        Each machine's host name (a Storm supervisor's ``getHost()``), from a cluster file.
    """

    slots: np.ndarray
    racks: int = 1
    cross_rack_cost: float = 2.0
    rack: Any = field(default=None, repr=False, compare=False)  # given: None or ids; then array
    cpu: np.ndarray | None = field(default=None, repr=False, compare=False)
    memory: np.ndarray | None = field(default=None, repr=False, compare=False)
    hosts: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    distance: np.ndarray = field(init=False, repr=False, compare=False)
    capacity: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        s = np.asarray(self.slots, dtype=np.int64).reshape(-1) if np.ndim(self.slots) else None
        if s is None or s.size == 0 or np.any(s < 1):
            raise ParameterError("cluster", self.slots, "at least one machine, each with >= 1 slot")
        n = int(s.size)
        if self.rack is None:
            racks = check_int("racks", self.racks, low=1, high=n)
            rack = np.arange(n) * racks // n
        else:
            rack = np.asarray(self.rack, dtype=np.int64).reshape(-1)
            if (
                rack.size != n
                or rack.min() < 0
                or set(rack.tolist()) != set(range(int(rack.max()) + 1))
            ):
                raise ParameterError(
                    "rack", self.rack, f"one rack id per machine ({n}), ids 0..R-1 all used"
                )
            racks = int(rack.max()) + 1
        cost = check_real(
            "cross_rack_cost", self.cross_rack_cost, low=1.0, high=MAX_CROSS_RACK_COST
        )
        dist = np.where(rack[:, None] == rack[None, :], 1.0, cost)
        np.fill_diagonal(dist, 0.0)
        cap = np.column_stack([_capacity(r, getattr(self, r), n) for r in RESOURCES])
        for name, value in (
            ("slots", s),
            ("racks", racks),
            ("cross_rack_cost", cost),
            ("rack", rack),
            ("distance", dist),
            ("capacity", cap),
        ):
            object.__setattr__(self, name, value)
        for k, r in enumerate(RESOURCES):
            object.__setattr__(self, r, None if np.all(np.isinf(cap[:, k])) else cap[:, k])

    @property
    def unit(self) -> float:
        """Smallest positive distance between two machines (1.0 on a one-machine cluster)."""
        counts = np.bincount(self.rack)
        present = ([1.0] if counts.max() > 1 else []) + (
            [float(self.cross_rack_cost)] if counts.size > 1 else []
        )
        return min(present, default=1.0)

    @property
    def machines(self) -> int:
        """Number of machines L."""
        return int(self.slots.size)

    @property
    def total_slots(self) -> int:
        """Slots in the whole cluster."""
        return int(self.slots.sum())

    @property
    def has_resources(self) -> bool:
        """Whether some machine limits CPU or memory."""
        return bool(np.isfinite(self.capacity).any())

    def rack_of(self, machine: int) -> int:
        """Rack of a machine."""
        return int(self.rack[machine])

    def describe(self) -> str:
        """Short text: ``10x4,5x8`` (runs of equal machines), racks and limits."""
        runs: list[str] = []
        for m in range(self.machines):
            key = f"{self.slots[m]}"
            if runs and runs[-1].split("x", 1)[1] == key:
                count, _ = runs[-1].split("x", 1)
                runs[-1] = f"{int(count) + 1}x{key}"
            else:
                runs.append(f"1x{key}")
        text = ",".join(runs)
        if self.racks > 1:
            text += f", {self.racks} racks"
        if self.has_resources:
            text += ", CPU/memory limits"
        return text

    def cost(self, topology: Topology, machines: np.ndarray) -> float:
        """Partitioning cost of placing node ``v`` of ``topology`` on ``machines[v]``."""
        edges = topology.edge_array()
        if edges.size == 0:
            return 0.0
        m = np.asarray(machines, dtype=np.int64)
        return float(
            (self.distance[m[edges[:, 0]], m[edges[:, 1]]] * topology.edge_weights()).sum()
        )

    def fits_on_machines(self, topology: Topology, machines: np.ndarray) -> bool:
        """Whether node ``v`` on ``machines[v]`` respects every machine's slots and limits."""
        m = np.asarray(machines, dtype=np.int64)
        if np.any(np.bincount(m, minlength=self.machines) > self.slots):
            return False
        dem = topology.demands()
        for k in range(len(RESOURCES)):
            used = np.bincount(m, weights=dem[:, k], minlength=self.machines)
            if np.any(used > self.capacity[:, k] + 1e-9):
                return False
        return True

    def would_hold(self, need: int) -> str:
        """Say which clusters like this one have ``need`` slots.

        As many machines, larger; or as large machines, more (``--cluster 4x7 or 7x4 would
        hold 28``).
        """
        machines, most = self.machines, int(self.slots.max())
        wider = f"{machines}x{-(-need // machines)}"
        more = f"{-(-need // most)}x{most}"
        both = wider if wider == more else f"{wider} or {more}"
        return f"--cluster {both} would hold {need}"

    def check_fits(self, topology: Topology, name: str = "topology") -> None:
        """Raise if the job cannot fit in the whole (empty) cluster.

        It needs a slot per node and, for each resource, no node may need more than the
        largest machine has, and all of them no more than the cluster has.
        """
        if topology.nodes > self.total_slots:
            raise ParameterError(
                name,
                f"{topology.name} ({topology.nodes} nodes)",
                f"at most the cluster's {self.total_slots} slots (a slot per node; "
                f"{self.would_hold(topology.nodes)})",
            )
        dem = topology.demands()
        for k, res in enumerate(RESOURCES):
            cap = self.capacity[:, k]
            if dem[:, k].max(initial=0.0) > cap.max() or dem[:, k].sum() > cap.sum():
                raise ParameterError(
                    name,
                    f"{topology.name} (needs {dem[:, k].sum():g} {res}, "
                    f"{dem[:, k].max():g} for one node)",
                    f"a job whose {res} fits in the cluster ({cap.sum():g}, at most "
                    f"{cap.max():g} on one machine)",
                )


_GROUP = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_FORM = "MACHINESxSLOTS, or groups of them separated by commas (e.g. 50x12 or 10x4,5x8)"


def _check_size(spec: str, machines: int, slots: int) -> None:
    from cloudsched.resources import check_memory

    # per slot: owner, position and machine (int64), plus a template row; per machine pair:
    # the distance matrix (float64), the rack comparison it is built from (bool), and what
    # the bound and the policies build beside it (measured: 6,000 one-slot machines in 2,000
    # groups peaked 450 MB above 3,000 of them, 17 bytes per extra pair; 24 kept as margin)
    need = 64.0 * machines * slots + 24.0 * machines * machines
    shown = spec if len(spec) <= 60 else f"{spec[:40]}... ({machines:,} machines)"
    check_memory("cluster", shown, need, f"the cluster state of {machines:,} machines")


def parse_cluster(spec: str, racks: int = 1, cross_rack_cost: float = 2.0) -> Cluster:
    """Parse ``MACHINESxSLOTS`` (e.g. ``50x12``), or groups such as ``10x4,5x8``.

    Groups are machines in the order given; ``racks`` splits them evenly (contiguously).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError("cluster", spec, _FORM)
    counts: list[tuple[int, int]] = []
    for part in spec.split(","):
        match = _GROUP.match(part)
        if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
            raise ParameterError("cluster", spec, _FORM + ", all numbers >= 1")
        counts.append((int(match.group(1)), int(match.group(2))))
    machines = sum(c for c, _ in counts)
    _check_size(spec, machines, max(s for _, s in counts))
    slots = np.concatenate([np.full(c, s, dtype=np.int64) for c, s in counts])
    return Cluster(slots, racks, cross_rack_cost)


_GROUP_KEYS = {"count", "slots", "cpu", "memory", "rack", "hosts"}


def load_cluster(path: str | Path) -> Cluster:
    """Read a cluster file (YAML).

    Form::

        cross_rack_cost: 2          # optional (default 2)
        racks: 2                    # optional: even split, when no group names its rack
        machines:
          - {count: 10, slots: 4, cpu: 400, memory: 8192, rack: 0}
          - {count: 5, slots: 8, cpu: 800, memory: 16384, rack: 1}

    ``cpu`` (percent of a core, as Storm's ``supervisor.cpu.capacity``) and ``memory`` (MB,
    ``supervisor.memory.capacity.mb``) are optional: a group without one has no limit on it.
    ``rack`` is given for every group or for none; so is ``hosts`` (a list of ``count``
    host names, what Storm's supervisors report, for ``place static --assignment``).
    """
    from cloudsched.io import read_yaml

    where = str(path)
    doc = read_yaml(path)
    if (
        not isinstance(doc, Mapping)
        or not isinstance(doc.get("machines"), list)
        or not doc["machines"]
    ):
        raise InputError(
            where,
            "a cluster file needs a non-empty list 'machines' of groups "
            "{count, slots, [cpu], [memory], [rack], [hosts]}",
        )
    unknown = set(doc) - {"machines", "racks", "cross_rack_cost"}
    if unknown:
        raise InputError(
            where, f"unknown keys {sorted(unknown)} (allowed: machines, racks, cross_rack_cost)"
        )
    cols: dict[str, list[Any]] = {k: [] for k in ("slots", "cpu", "memory", "rack")}
    racked = [isinstance(g, Mapping) and "rack" in g for g in doc["machines"]]
    if any(racked) and not all(racked):
        raise InputError(where, "give 'rack' for every group of machines or for none")
    if any(racked) and doc.get("racks") is not None:
        raise InputError(where, "give either 'racks' (an even split) or a 'rack' per group")
    try:
        for k, g in enumerate(doc["machines"]):
            if not isinstance(g, Mapping) or set(g) - _GROUP_KEYS:
                raise InputError(
                    where, f"machines[{k}] must be a mapping with keys from {sorted(_GROUP_KEYS)}"
                )
            count = check_int(f"machines[{k}].count", g.get("count", 1), low=1, high=10**6)
            cols["slots"] += [
                check_int(f"machines[{k}].slots", g.get("slots"), low=1, high=10**6)
            ] * count
            for res in RESOURCES:
                value = g.get(res)
                cols[res] += [
                    np.inf
                    if value is None
                    else check_real(f"machines[{k}].{res}", value, low=0.0, high=MAX_RESOURCE)
                ] * count
            if racked[k]:
                cols["rack"] += [
                    check_int(f"machines[{k}].rack", g["rack"], low=0, high=10**6)
                ] * count
        _check_size(where, len(cols["slots"]), max(cols["slots"]))
        hosts = group_hosts(doc["machines"], where)
        return Cluster(
            np.asarray(cols["slots"], dtype=np.int64),
            racks=check_int("racks", doc.get("racks", 1), low=1, high=len(cols["slots"])),
            cross_rack_cost=doc.get("cross_rack_cost", 2.0),
            rack=np.asarray(cols["rack"]) if any(racked) else None,
            cpu=np.asarray(cols["cpu"], dtype=float),
            memory=np.asarray(cols["memory"], dtype=float),
            hosts=hosts,
        )
    except InputError:
        raise
    except ParameterError as exc:
        raise InputError(where, str(exc)) from None


def cluster_from_text(
    spec: str, racks: int | None = None, cross_rack_cost: float | None = None
) -> Cluster:
    """Build the cluster of ``--cluster``: a cluster file (``.yaml``/``.yml``) or ``10x4,5x8``.

    ``racks`` and ``cross_rack_cost`` apply to the ``AxB`` form; a cluster file sets its own
    (giving them as well is refused, so that a value is never silently ignored).
    """
    if isinstance(spec, str) and spec.lower().endswith((".yaml", ".yml")):
        if racks is not None or cross_rack_cost is not None:
            which = "--racks" if racks is not None else "--cross-rack-cost"
            raise ParameterError(
                which,
                racks if racks is not None else cross_rack_cost,
                "not given with a cluster file (set it in the file)",
            )
        return load_cluster(spec)
    cl = parse_cluster(spec, 1, 2.0 if cross_rack_cost is None else cross_rack_cost)
    r = 1 if racks is None else check_int("racks", racks, low=1)
    if r > cl.machines:
        raise ParameterError("racks", r, f"an integer in [1, {cl.machines}] (the machines)")
    return Cluster(cl.slots, r, cl.cross_rack_cost)
