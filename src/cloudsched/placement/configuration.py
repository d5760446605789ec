"""The max-weight configuration: the templates of each type that one frame should run.

Given a value per job type, the best configuration (a set of non-overlapping templates) of
the cluster, by one of two solvers: ``exact``, HiGHS's MILP of
:mod:`cloudsched.placement.milp`, which proves optimality but only at small sizes, and
``fast``, the packing of :mod:`cloudsched.placement.fastpack` over each type's least-cost
template, with an upper bound on the best weight; ``auto`` picks ``exact`` on clusters of
at most 32 slots with graphs of at most 8 nodes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cloudsched.errors import check_choice
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.fastpack import Library, fast_max_weight
from cloudsched.placement.milp import exact_max_weight
from cloudsched.placement.patterns import applies, pattern_max_weight
from cloudsched.placement.topology import Topology

__all__ = [
    "EXACT_MAX_NODES",
    "EXACT_MAX_SLOTS",
    "SOLVERS",
    "MaxWeightSolution",
    "exact_is_cheap",
    "max_weight_configuration",
    "pick_solver",
]

#: The solvers of the max-weight configuration and the static optimum.
SOLVERS = ("auto", "exact", "fast")
#: ``auto`` uses the exact MILP up to this many slots ...
EXACT_MAX_SLOTS = 32
#: ... and graphs of at most this many nodes.
EXACT_MAX_NODES = 8


def exact_is_cheap(cluster: Cluster, topologies: Sequence[Topology]) -> bool:
    """Say whether the exact MILP is quick here (small cluster, small graphs)."""
    return cluster.total_slots <= EXACT_MAX_SLOTS and all(
        t.nodes <= EXACT_MAX_NODES for t in topologies
    )


def pick_solver(solver: str, cluster: Cluster, topologies: Sequence[Topology]) -> str:
    """Return the solver ``solver`` means here: ``auto`` is ``exact`` where it is cheap."""
    solver = check_choice("solver", solver, SOLVERS)
    if solver == "auto":
        return "exact" if exact_is_cheap(cluster, topologies) else "fast"
    return solver


@dataclass(frozen=True)
class MaxWeightSolution:
    """A configuration: ``templates`` is a list of ``(type index, machine of each node)``.

    ``weight`` is its ``sum (value - cost)``, ``upper_bound`` a bound on the best weight
    (equal to ``weight`` when ``optimal``), ``solver`` the solver used (``exact`` or
    ``fast``).  An exact solve stopped by its time limit is not ``optimal``.
    """

    templates: list[tuple[int, np.ndarray]]
    weight: float
    cost: float
    optimal: bool
    solve_time: float
    upper_bound: float = math.nan
    solver: str = "exact"

    @property
    def gap(self) -> float:
        """``(upper_bound - weight) / upper_bound`` (0 when proven or nothing is worth it)."""
        if self.optimal or not self.upper_bound > 1e-12:
            return 0.0
        return max(self.upper_bound - self.weight, 0.0) / self.upper_bound

    def counts(self, types: int) -> np.ndarray:
        """Templates of each type, shape ``(types,)``."""
        out = np.zeros(types, dtype=np.int64)
        for j, _ in self.templates:
            out[j] += 1
        return out


def max_weight_configuration(
    cluster: Cluster,
    topologies: Sequence[Topology],
    values: Sequence[float] | np.ndarray,
    caps: Sequence[int] | np.ndarray | None = None,
    *,
    time_limit: float | None = None,
    solver: str = "auto",
    library: Library | None = None,
    keep: Sequence[tuple[int, np.ndarray, float]] = (),
    bound: float | None = None,
) -> MaxWeightSolution:
    """Find a configuration maximising ``sum over templates (values[j] - cost)``.

    Parameters
    ----------
    cluster : Cluster
        Machines, slots, limits and distance cost.
    topologies : sequence of Topology
        The graph of each type.
    values : sequence of float
        Value of one type-j template (``alpha * f(Q_j)`` for MaxWeight, a dual price for
        column generation); types with a value <= 0 get no template.
    caps : sequence of int, optional
        At most ``caps[j]`` type-j templates (default: as many as fit).
    time_limit : float, optional
        Seconds for HiGHS (exact solver); past it the best configuration found is returned
        with ``optimal=False``.
    solver : {"auto", "exact", "fast"}
        See the module notes.
    library : Library, optional
        The fast solver's least-cost templates, if already built for these graphs.
    keep : sequence of (int, numpy.ndarray, float), optional
        Fast solver: templates in place (type, machine of each node, cost) to keep first
        when they are least-cost (:func:`~cloudsched.placement.fastpack.fast_max_weight`).
    bound : float, optional
        Fast solver: the upper bound, if already known for these values and caps.

    Returns
    -------
    MaxWeightSolution
    """
    t0 = time.perf_counter()
    kind = pick_solver(solver, cluster, topologies)
    if kind == "exact" and applies(cluster, topologies):
        templates, optimal, bound = pattern_max_weight(
            cluster, topologies, values, caps, time_limit=time_limit
        )
    elif kind == "exact":
        templates, optimal, bound = exact_max_weight(
            cluster, topologies, values, caps, time_limit=time_limit
        )
    else:
        lib = library if library is not None else Library.build(cluster, topologies)
        templates, bound = fast_max_weight(lib, values, caps, keep=keep, bound=bound)
    cost = sum(cluster.cost(topologies[j], m) for j, m in templates)
    weight = sum(float(values[j]) for j, _ in templates) - cost
    if kind == "fast":
        optimal = weight >= bound - 1e-9 * max(1.0, abs(bound))
    return MaxWeightSolution(
        templates,
        weight,
        cost,
        optimal,
        time.perf_counter() - t0,
        weight if optimal else max(bound, weight),
        kind,
    )
