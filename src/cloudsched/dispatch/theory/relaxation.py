"""How long a dispatch system takes to forget its past: relaxation-time estimates.

The simulator uses them to decide how long a run must be (batches of several relaxation
times) and to start the micro-batches at a useful width.  Estimates, in mean service times:

* ``pod``, ``jiq``, ``jiq-pod``: ``1 / gap`` where ``gap`` is the smallest decay rate of the
  fluid ODE (:mod:`cloudsched.dispatch.theory.fluid`) linearised at its fixed point (Jacobian by
  central differences, the mass-conservation direction removed).  Checked against the
  integrated autocorrelation time of long simulations at N = 10,000 (JIQ, load 0.9: 12.9
  against about 14; JIQ-Pod(2): 6.2 against 6).
* ``random``: each server is an M/M/1 queue, whose relaxation time is ``1 / (1 - sqrt(rho))^2``.
* ``jsq``: the value of an M/M/N queue of the same farm, ``max(1, 1 / (N (1 - sqrt(rho))^2))``
  (exact for N = 1), as an estimate only: JSQ never moves a waiting task, so its total queue
  is not an M/M/N queue's (its mean is larger: at N = 2, load 0.9, 5.4745 against 5.2632).
* Policies without a model of their own use a conservative proxy, documented as such:
  ``round-robin`` the value of ``random``; ``jiq-original``, ``jiq-threshold`` and ``jiq-sq``
  the value of ``jiq``.

Every value is at least the M/M/N value of the same farm (a floor, which keeps small N safe
where the mean field is not accurate).  Laws
other than Poisson/exponential scale it by ``(c_a^2 + c_s^2) / 2`` (the variability factor of
heavy-traffic diffusion approximations) and by the mean service time.  The simulator takes
the larger of this value and the integrated autocorrelation time measured in the run
(:mod:`cloudsched.steadystate`), so a poor estimate costs run time, not correctness.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from cloudsched.dispatch.theory import fluid as F
from cloudsched.policy_table import TABLE

__all__ = ["relaxation_time"]

#: Largest linearised system solved densely (larger ones are truncated more coarsely).
_MAX_DIM = 1500


def _mmn(load: float, servers: int) -> float:
    return max(1.0, 1.0 / (servers * (1.0 - math.sqrt(load)) ** 2))


@lru_cache(maxsize=256)
def _fluid_relaxation(policy: str, load: float, r: float, d: int) -> float:
    lam, r, d = F._validate(policy, load, r, d)
    k_levels, j_levels = F._sizes(policy, lam, r, d)
    if k_levels + j_levels > _MAX_DIM:  # keep the levels that carry the mass
        k_levels = min(k_levels, _MAX_DIM // 2)
        j_levels = min(j_levels, _MAX_DIM // 2) if j_levels else 0
    x0 = F._initial_state(policy, r, d, k_levels, j_levels, 0, lam)
    rhs = F._rhs_iqueue(lam, r, d, k_levels, j_levels) if j_levels else F._rhs_plain(lam, d)
    n = x0.size
    jac = np.empty((n, n))
    h = 1e-7
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        jac[:, i] = (rhs(0.0, x0 + e) - rhs(0.0, x0 - e)) / (2 * h)
    # total mass is conserved: eliminate the last coordinate (x_n = 1 - sum of the others)
    reduced = jac[:-1, :-1] - jac[:-1, -1:]
    rates = -np.linalg.eigvals(reduced).real
    rates = rates[rates > 0]
    return float(1.0 / rates.min()) if rates.size else 1.0


def relaxation_time(
    policy: str,
    load: float,
    *,
    servers: int,
    r: float = 10.0,
    d: int = 2,
    variability: float = 1.0,
    time_unit: float = 1.0,
) -> float:
    """Estimate the relaxation time of a dispatch system, in the time unit of the run.

    Parameters
    ----------
    policy : str
        A dispatch policy.
    load : float
        Offered load per unit of capacity; ``inf`` is returned at load >= 1.
    servers : int
        Number of servers N.
    r : float
        Servers per dispatcher (I-queue policies).
    d : int
        Probes (``pod``, ``jiq-pod``).
    variability : float
        ``(c_a^2 + c_s^2) / 2`` of the inter-arrival and service laws (1 for Poisson/exp).
    time_unit : float
        Mean service time (1 by default).

    Returns
    -------
    float
        The estimate, ``>= time_unit``.
    """
    if load >= 1.0:
        return math.inf
    base = TABLE[TABLE[policy].relaxation]  # its own model, or the proxy the table names
    floor = _mmn(load, servers)
    if base.independent:  # random: independent M/M/1 queues
        value = 1.0 / (1.0 - math.sqrt(load)) ** 2
    elif base.fluid:
        rr = r if base.iqueues else 1.0  # without I-queues r means nothing to it
        value = _fluid_relaxation(
            base.policy, round(load, 12), round(float(rr), 12), base.effective_d(d)
        )
    else:  # jsq
        value = floor
    return max(value, floor) * max(variability, 1e-3) * time_unit
