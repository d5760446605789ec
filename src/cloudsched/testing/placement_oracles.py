"""Exhaustive oracles for the placement code: the max-weight configuration and DGP's law.

* :func:`brute_force_max_weight`: the max-weight configuration by exhaustive search.
* :func:`brute_force_static`: running topologies placed once at least cost, likewise.
* :func:`product_form`: the stationary law of DGP with frozen weights, by enumeration.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

import numpy as np

from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology
from cloudsched.placement.workload import JobType

__all__ = ["brute_force_max_weight", "brute_force_static", "product_form"]


def brute_force_static(cluster: Cluster, topologies: Sequence[Topology]) -> float:
    """Least cost of placing every topology once, over every assignment within the slots."""
    sizes = [t.nodes for t in topologies]
    best = np.inf
    for where in itertools.product(range(cluster.machines), repeat=sum(sizes)):
        if np.any(np.bincount(where, minlength=cluster.machines) > cluster.slots):
            continue
        parts = np.split(np.array(where), np.cumsum(sizes)[:-1])
        best = min(best, sum(cluster.cost(t, m) for t, m in zip(topologies, parts, strict=True)))
    return float(best)


def brute_force_max_weight(
    cluster: Cluster, topologies: Sequence[Topology], values: Sequence[float], caps: Sequence[int]
) -> float:
    """Best ``sum (values[j] - cost)`` over all configurations, by exhaustive search.

    Templates respect every machine's slots, CPU and memory.
    """
    nm = cluster.machines

    def best(j: int, left: np.ndarray, room: np.ndarray, cap_left: int) -> float:
        if j == len(topologies):
            return 0.0
        out = best(j + 1, left, room, caps[j + 1] if j + 1 < len(caps) else 0)
        if cap_left <= 0 or values[j] <= 0:
            return out
        top = topologies[j]
        for machines in itertools.product(range(nm), repeat=top.nodes):
            use = np.bincount(machines, minlength=nm)
            need = np.zeros((nm, 2))
            np.add.at(need, list(machines), top.demands())
            if np.all(use <= left) and np.all(need <= room + 1e-9):
                gain = values[j] - cluster.cost(top, np.asarray(machines))
                out = max(out, gain + best(j, left - use, room - need, cap_left - 1))
        return out

    return best(0, cluster.slots.copy(), cluster.capacity.copy(), int(caps[0]))


def _configurations(
    nslots: int, tops: Sequence[Topology]
) -> Iterator[list[tuple[int, tuple[int, ...]]]]:
    """Every set of slot-disjoint templates, each once (templates in increasing order)."""
    templates = [
        (j, slots)
        for j, top in enumerate(tops)
        for slots in itertools.permutations(range(nslots), top.nodes)
    ]

    def extend(start: int, used: frozenset[int], chosen: list[tuple[int, tuple[int, ...]]]):
        yield list(chosen)
        for i in range(start, len(templates)):
            _j, slots = templates[i]
            if used.isdisjoint(slots):
                chosen.append(templates[i])
                yield from extend(i + 1, used | set(slots), chosen)
                chosen.pop()

    yield from extend(0, frozenset(), [])


def product_form(
    cluster: Cluster,
    job_types: Sequence[JobType],
    weights: Sequence[float],
    beta: float,
    clock_rates: Sequence[float] | None = None,
) -> dict[tuple[tuple[int, tuple[int, ...]], ...], float]:
    """Stationary law of DGP with frozen weights: configuration -> probability.

    ``pi(C)`` is proportional to the product over templates ``A`` of type j of
    ``(nu_j / mu_j) * S**(-K_j) * exp((weights[j] - b_A) / beta)``, with ``nu_j`` the rate of
    proposals (the arrival rate for ``dgp``, the clock rate for ``dgp-clock``), over the
    configurations whose templates fit every machine's CPU and memory.  It does not depend
    on the proposal (uniform or local).
    """
    tops = [j.topology for j in job_types]
    machine = np.repeat(np.arange(cluster.machines), cluster.slots)
    s = cluster.total_slots
    nu = clock_rates if clock_rates is not None else [j.arrival_rate for j in job_types]
    out: dict[tuple[tuple[int, tuple[int, ...]], ...], float] = {}
    for conf in _configurations(s, tops):
        used = np.zeros_like(cluster.capacity)
        for j, slots in conf:
            np.add.at(used, machine[list(slots)], tops[j].demands())
        if np.any(used > cluster.capacity):
            continue
        p = 1.0
        for j, slots in conf:
            b = cluster.cost(tops[j], machine[list(slots)])
            p *= (
                nu[j]
                * job_types[j].mean_duration
                * s ** (-tops[j].nodes)
                * math.exp((weights[j] - b) / beta)
            )
        out[tuple(sorted(conf))] = p
    z = sum(out.values())
    return {c: p / z for c, p in out.items()}
