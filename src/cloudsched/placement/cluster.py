"""Clusters of machines with slots, and the partitioning cost of a placement.

A placement of a job maps each graph node to a machine (slots on one machine are
interchangeable, so a machine per node is all that matters for cost).  Its partitioning cost
is the sum over broken edges of the machine distance ``c(l, l')``: 1 by default; with racks,
1 within a rack and ``cross_rack_cost`` (default 2) across racks (``graph-placement.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.placement.topology import Topology

__all__ = ["Cluster", "parse_cluster"]


#: Largest cost of an edge broken across racks: costs enter the LPs and the DGP weights, which
#: overflow beyond this (1e308 made the bound's costs infinite).
MAX_CROSS_RACK_COST = 1e6


@dataclass(frozen=True)
class Cluster:
    """Machines with slot counts, optionally grouped into racks.

    Attributes
    ----------
    slots : numpy.ndarray
        Slots of each machine, shape ``(L,)``, int64, all >= 1.
    racks : int
        Number of racks; machine ``l`` is in rack ``l * racks // L`` (contiguous, even split).
    cross_rack_cost : float
        Cost of an edge broken across racks (an edge broken within a rack costs 1).
    """

    slots: np.ndarray
    racks: int = 1
    cross_rack_cost: float = 2.0
    distance: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        s = np.asarray(self.slots, dtype=np.int64)
        if s.ndim != 1 or s.size == 0 or np.any(s < 1):
            raise ParameterError("cluster", self.slots, "at least one machine, each with >= 1 slot")
        racks = check_int("racks", self.racks, low=1, high=int(s.size))
        cost = check_real("cross_rack_cost", self.cross_rack_cost, low=1.0,
                          high=MAX_CROSS_RACK_COST)
        rack = np.arange(s.size) * racks // s.size
        dist = np.where(rack[:, None] == rack[None, :], 1.0, cost)
        np.fill_diagonal(dist, 0.0)
        object.__setattr__(self, "slots", s)
        object.__setattr__(self, "racks", racks)
        object.__setattr__(self, "cross_rack_cost", cost)
        object.__setattr__(self, "distance", dist)

    @property
    def machines(self) -> int:
        """Number of machines L."""
        return int(self.slots.size)

    @property
    def total_slots(self) -> int:
        """Slots in the whole cluster."""
        return int(self.slots.sum())

    def rack_of(self, machine: int) -> int:
        """Rack of a machine."""
        return machine * self.racks // self.machines

    def cost(self, topology: Topology, machines: np.ndarray) -> float:
        """Partitioning cost of placing node ``v`` of ``topology`` on ``machines[v]``."""
        edges = topology.edge_array()
        if edges.size == 0:
            return 0.0
        m = np.asarray(machines, dtype=np.int64)
        return float(self.distance[m[edges[:, 0]], m[edges[:, 1]]].sum())

    def check_fits(self, topology: Topology, name: str = "topology") -> None:
        """Raise if the job needs more slots than the whole cluster has."""
        if topology.nodes > self.total_slots:
            raise ParameterError(
                name,
                f"{topology.name} ({topology.nodes} nodes)",
                f"at most the cluster's {self.total_slots} slots",
            )


_CLUSTER = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_cluster(spec: str, racks: int = 1, cross_rack_cost: float = 2.0) -> Cluster:
    """Parse ``MACHINESxSLOTS`` (e.g. ``50x12``) into a homogeneous :class:`Cluster`."""
    match = _CLUSTER.match(spec)
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ParameterError("cluster", spec, "MACHINESxSLOTS with both numbers >= 1, e.g. 50x12")
    machines, slots = int(match.group(1)), int(match.group(2))
    from cloudsched.resources import check_memory

    # per slot: owner, position and machine (int64), plus a template row; per machine pair:
    # the distance matrix
    need = 64.0 * machines * slots + 8.0 * machines * machines
    check_memory("cluster", spec, need, "the cluster state")
    return Cluster(np.full(machines, slots, dtype=np.int64), racks, cross_rack_cost)
