"""DGP's parameters chosen from the cluster and the workload.

The paper names alpha, beta, h and epsilon but gives no values, and the weight
``w_A = alpha * f(Q_j + h_j) - b_A`` compares a queue length with a partition cost, so any fixed
number is right for one cost scale and wrong for another.  The rule below reads the scale off
the instance:

* ``c`` is the cost unit: the smallest positive distance between two machines (1 for an
  edge cut inside a rack with the default costs).
* ``f`` is the identity: with ``log`` a template of cost ``b`` is accepted only once about
  ``e^(b / alpha)`` jobs wait, so every extra unit of cost multiplies the queue.
* ``h_j = g_j / c + 1/2`` waiting jobs, where ``g_j`` is the cost of the greedy packer's
  placement of one type-``j`` job on an empty cluster (with the uniform proposals of the
  paper): the weight ``alpha (Q_j + h_j) - b`` of a template of cost ``b`` turns positive
  once ``Q_j`` exceeds ``b / alpha - h_j`` jobs, so a costlier type, which starts from a
  larger ``h_j``, needs proportionally fewer extra jobs.  (So ``h_j`` is counted in jobs, not
  in cost: with ``alpha = c / 50`` a template as good as the greedy packer's is kept once
  about ``49 g_j / c`` jobs wait.)
* With local proposals, ``h_j = H_j / alpha`` with ``H_j = b_j + m + beta (K_j log S +
  log q_j)`` in cost units, where ``b_j`` and ``q_j`` are the cost and the proposal
  probability of the local proposal's likeliest template on the empty cluster (nodes in
  breadth-first order filling machine after machine, the largest first) and ``m`` a margin.
  The keep rule of local proposals weighs a template by ``R = e^(w / beta) S^-K / q``
  (:mod:`cloudsched.placement._kernel_propose`), so with no job waiting this bias puts such
  a template at ``R = e^(m / beta)``.  ``m = c/2`` (``R = e^5``: an empty template is kept,
  so the next job of its type finds it) is the default; on a cluster small enough for
  calibration it is tried first, and ``m = 0`` (even odds) when its pilots show a type
  starved: there empty templates of one type can hold every machine another type needs
  (3-node chains on 3 x 3 kept 4-node stars out for good).
* ``alpha = c / 50``: a template one cost unit dearer needs about 50 more jobs of its type
  waiting.  This sets where DGP sits on its cost / queue trade-off.
* ``beta = c / 10``: keep decisions are sharp on the scale of one cost unit (a good template is
  dropped with probability about ``e^(-5)`` per decision).
* ``epsilon = 0.5`` (any value in (0, 1) is allowed by the paper).

Measured (``docs/explanation/placement.md``, "Default DGP"): stable (served >= 99%) on the
shipped examples and on random small instances; the cost stays above the greedy packer's on
most of them, because proposals come from the uniform random partition and a queue of
hundreds is needed before a worse template is ever refused in favour of waiting for a better
one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cloudsched.placement.baselines import bfs_order, greedy
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology
from cloudsched.placement.workload import JobType

__all__ = ["LOCAL_MARGINS_UNITS", "cost_unit", "dgp_defaults", "local_log_q", "maxweight_defaults"]

ALPHA_UNITS = 1.0 / 50.0
BETA_UNITS = 1.0 / 10.0
H_MARGIN_UNITS = 0.5
#: Local proposals: the likeliest empty template's keep odds with no job waiting are
#: ``e^(margin / beta)``, ``e^5`` by default; calibration also tries the second (even odds).
LOCAL_MARGINS_UNITS = (0.5, 0.0)
EPSILON = 0.5


def cost_unit(cluster: Cluster) -> float:
    """Smallest positive machine-to-machine distance (1.0 on a one-machine cluster)."""
    return cluster.unit


def dgp_defaults(
    cluster: Cluster, job_types: Sequence[JobType], proposal: str = "local", locality: float = 0.9
) -> dict[str, Any]:
    """``alpha``, ``beta``, ``h`` (one per type), ``epsilon`` and ``f`` for this instance.

    With local proposals ``bias`` holds each type's ``H_j`` (cost units, with the default
    margin), ``bias_base`` the same without a margin, ``margin`` that margin, and ``h`` is
    ``H_j / alpha`` for the default ``alpha`` (another ``alpha`` divides ``bias`` anew).
    """
    c = cost_unit(cluster)
    beta = BETA_UNITS * c
    h, base = [], []
    margin = LOCAL_MARGINS_UNITS[0] * c
    for jt in job_types:
        where = greedy(jt.topology, np.asarray(cluster.slots, dtype=np.int64).copy(), cluster)
        g = cluster.cost(jt.topology, where) if where is not None else 0.0
        h.append(g + H_MARGIN_UNITS * c)
        if proposal == "local":
            likely = _likeliest(cluster, jt.topology)
            entropy = jt.topology.nodes * math.log(cluster.total_slots) + local_log_q(
                cluster, jt.topology, likely, locality
            )
            base.append(cluster.cost(jt.topology, likely) + beta * max(entropy, 0.0))
    out: dict[str, Any] = {
        "alpha": ALPHA_UNITS * c,
        "beta": beta,
        "h": tuple(h),
        "epsilon": EPSILON,
        "f": "identity",
    }
    if proposal == "local":
        out["bias_base"] = tuple(base)
        out["margin"] = margin
        out["bias"] = tuple(b + margin for b in base)
        out["h"] = tuple(b / out["alpha"] for b in out["bias"])
    return out


def _likeliest(cluster: Cluster, topology: Topology) -> np.ndarray:
    """Return the local proposal's likeliest template on the empty cluster.

    Nodes fill machine after machine, by decreasing slots, those of the first one's rack
    first.
    """
    first = int(np.argmax(cluster.slots))
    machines = np.lexsort(
        (np.arange(cluster.machines), -cluster.slots, cluster.rack != cluster.rack[first])
    )
    where = np.zeros(topology.nodes, dtype=np.int64)
    m, used = 0, 0
    for v in bfs_order(topology):
        if used == cluster.slots[machines[m]]:
            m, used = m + 1, 0
        where[v] = machines[m]
        used += 1
    return where


def local_log_q(cluster: Cluster, topology: Topology, machines: np.ndarray, theta: float) -> float:
    """``log q`` of the local proposal drawing node ``v`` on ``machines[v]``, empty cluster."""
    order = bfs_order(topology)
    total = cluster.total_slots
    rack = cluster.rack
    used = np.zeros(cluster.machines, dtype=np.int64)
    rack_slots = np.bincount(rack, weights=cluster.slots, minlength=cluster.racks)
    rack_used = np.zeros(cluster.racks)
    out = -math.log(total)
    for i in range(1, len(order)):
        prev, now = int(machines[order[i - 1]]), int(machines[order[i]])
        used[prev] += 1
        rack_used[rack[prev]] += 1
        here = int(cluster.slots[prev]) - int(used[prev])
        near = float(rack_slots[rack[prev]] - rack_used[rack[prev]])
        p = 1.0 / (total - i)
        if near > 0:
            p = (1.0 - theta) * p + (theta / near if rack[now] == rack[prev] else 0.0)
        if here > 0:
            p = (1.0 - theta) * p + (theta / here if now == prev else 0.0)
        out += math.log(p)
    return out


def maxweight_defaults(cluster: Cluster, job_types: Sequence[JobType]) -> dict[str, Any]:
    """MaxWeight's ``alpha`` and ``f``: every job present is worth its least-cost template.

    ``f`` is the identity and ``alpha = max_j c_j + c / 2``, with ``c_j`` the cost of type
    j's least-cost template on the empty cluster
    (:func:`~cloudsched.placement.shapes.least_cost_template`) and ``c`` the cost unit: a
    single job present already has a positive weight ``alpha - c_j`` for its best template, so
    frames place every job when there is room, and a template dearer than ``alpha * Q_j``
    waits for a longer queue.  (The paper's ``alpha`` and ``f`` are free parameters; with
    ``f = log`` and ``alpha = 1``, a template of cost ``b`` needs about ``e^b`` jobs present.)
    """
    from cloudsched.placement.shapes import least_cost_template

    costs = [least_cost_template(cluster, jt.topology).cost for jt in job_types]
    top = max((c for c in costs if np.isfinite(c)), default=0.0)
    return {"alpha": top + H_MARGIN_UNITS * cost_unit(cluster), "f": "identity"}
