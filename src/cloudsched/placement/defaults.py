"""DGP's parameters chosen from the cluster and the workload.

The paper names alpha, beta, h and epsilon but gives no values, and the weight
``w_A = alpha * f(Q_j + h_j) - b_A`` compares a queue length with a partition cost, so any fixed
number is right for one cost scale and wrong for another.  The rule below reads the scale off
the instance:

* ``c`` is the cost unit: the smallest positive distance between two machines (1 for an
  edge cut inside a rack with the default costs).
* ``f`` is the identity: with ``log`` a template of cost ``b`` is accepted only once about
  ``e^(b / alpha)`` jobs wait, so every extra unit of cost multiplies the queue.
* ``h_j = g_j + c / 2`` where ``g_j`` is the cost of the greedy packer's placement of one
  type-``j`` job on an empty cluster: a template at least as good as that is kept even when
  no job waits (its weight is at least ``alpha * c / 2`` above its cost).
* ``alpha = c / 50``: a template one cost unit worse than ``h_j`` is accepted once about 50
  jobs of its type wait.  This sets where DGP sits on its cost / queue trade-off.
* ``beta = c / 10``: keep decisions are sharp on the scale of one cost unit (a good template is
  dropped with probability about ``e^(-5)`` per decision).
* ``epsilon = 0.5`` (any value in (0, 1) is allowed by the paper).

Measured (README, "Default DGP"): stable (served >= 99%) on the shipped examples and on random
small instances; the cost stays above the greedy packer's on most of them, because proposals
come from the uniform random partition and a queue of hundreds is needed before a worse
template is ever refused in favour of waiting for a better one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cloudsched.placement.baselines import greedy
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.workload import JobType

__all__ = ["cost_unit", "dgp_defaults"]

ALPHA_UNITS = 1.0 / 50.0
BETA_UNITS = 1.0 / 10.0
H_MARGIN_UNITS = 0.5
EPSILON = 0.5


def cost_unit(cluster: Cluster) -> float:
    """Smallest positive machine-to-machine distance (1.0 on a one-machine cluster)."""
    d = np.asarray(cluster.distance, dtype=float)
    positive = d[d > 0]
    return float(positive.min()) if positive.size else 1.0


def dgp_defaults(cluster: Cluster, job_types: Sequence[JobType]) -> dict[str, Any]:
    """``alpha``, ``beta``, ``h`` (one per type), ``epsilon`` and ``f`` for this instance."""
    c = cost_unit(cluster)
    h = []
    for jt in job_types:
        where = greedy(jt.topology, np.asarray(cluster.slots, dtype=np.int64).copy(), cluster)
        g = cluster.cost(jt.topology, where) if where is not None else 0.0
        h.append(g + H_MARGIN_UNITS * c)
    return {
        "alpha": ALPHA_UNITS * c, "beta": BETA_UNITS * c, "h": tuple(h),
        "epsilon": EPSILON, "f": "identity",
    }  # fmt: skip
