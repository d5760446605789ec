"""Mean field with servers of several speeds (classes), for random, pod, jiq and jiq-pod.

Class ``c`` is a fraction ``alpha_c`` of the servers and serves at rate ``mu_c``; the load is
relative to capacity, so the arrival rate per server is ``lam = load * sum_c alpha_c mu_c``
(as in ``simulate --speeds``).  State: ``q[c, k]``, the fraction of *all* servers that are of
class ``c`` and hold ``k`` tasks, and for the JIQ family ``u_j``, the fraction of I-queues
holding ``j`` idle servers.  Policies choose by queue length only:

* random: a server of class ``c`` at level ``k`` with probability ``q[c, k]``;
* pod(d): the least loaded of ``d`` probes is at level ``k`` with probability
  ``S_k^d - S_{k+1}^d`` (``S_k`` the fraction of all servers with at least ``k`` tasks), and
  of class ``c`` in proportion to ``q[c, k]`` among them;
* jiq / jiq-pod(d): a dispatcher with ``j >= 1`` listed servers takes one; its class is that
  of a uniform idle server.  This is exact in the limit: an entry leaves its I-queue at a rate
  that does not depend on its class (taken or deleted while idle), so the classes of an
  I-queue's entries are independent draws from the idle servers.  Otherwise as random / pod,
  and an idle server hit that way is deleted from its (size-biased) I-queue.

The fixed point is found as for the JIQ variants (:mod:`cloudsched.dispatch.theory.variants`): the
ODE, then Newton; the response time is accurate to about 1e-5 relative (the drift is driven
below 1e-9, and the slowest class relaxes slowly).  A class loaded beyond its capacity
makes the truncated state fill its top level; that is reported as instability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE, with_capability

__all__ = [
    "HETEROGENEOUS_POLICIES",
    "HeterogeneousPrediction",
    "predict_heterogeneous",
    "speed_classes",
]

#: Policies with a speed-classes mean field (the model table, :mod:`.models`).
HETEROGENEOUS_POLICIES = with_capability("speed_classes")


@dataclass(frozen=True)
class HeterogeneousPrediction:
    """Mean response time, and per class: speed, share of servers, utilisation, mean tasks."""

    policy: str
    load: float
    mean_response_time: float
    speeds: np.ndarray
    shares: np.ndarray
    utilisation: np.ndarray
    tasks: np.ndarray
    p0: float


def speed_classes(speeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct speeds and their shares (a per-server list, or a pattern, of speeds)."""
    values, counts = np.unique(np.asarray(speeds, dtype=np.float64), return_counts=True)
    if values.size == 0 or not np.all(np.isfinite(values)) or values[0] <= 0:
        shown = ",".join(f"{v:g}" for v in np.ravel(speeds))
        raise ParameterError("speeds", shown, "positive numbers")
    return values, counts / counts.sum()


def _drift(
    policy: str, lam: float, mu: np.ndarray, r: float, d: int, k_levels: int, j_levels: int
) -> Callable[[np.ndarray], np.ndarray]:
    nc, k1 = mu.size, k_levels + 1
    iq = TABLE[policy].iqueues
    d_eff = TABLE[policy].effective_d(d)
    js = np.arange(j_levels + 1, dtype=np.float64)

    def f(x: np.ndarray) -> np.ndarray:
        q = x[: nc * k1].reshape(nc, k1)
        u = x[nc * k1 :] if iq else np.array([1.0])
        level = q.sum(axis=0)  # all classes, by level
        tail = np.concatenate([np.cumsum(level[::-1])[::-1], [0.0]])
        land = tail[:-1] ** d_eff - tail[1:] ** d_eff  # least loaded probe at level k
        share = q / np.where(level > 0, level, 1.0)
        up = lam * u[0] * land * share  # (c, k) -> (c, k+1)
        if iq:
            idle = level[0]
            up[:, 0] += lam * (1.0 - u[0]) * q[:, 0] / idle  # taken from an I-queue
        up[:, -1] = 0.0
        down = mu[:, None] * q
        down[:, 0] = 0.0
        dq = -up - down
        dq[:, 1:] += up[:, :-1]
        dq[:, :-1] += down[:, 1:]
        if not iq:
            return dq.ravel()
        joins = float(down[:, 1].sum())
        deleted = lam * u[0] * land[0]
        flow_up = u * r * joins
        flow_up[-1] = 0.0
        flow_down = u * (lam * r + r * deleted * js / max(float(js @ u), 1e-300))
        flow_down[0] = 0.0
        du = -flow_up - flow_down
        du[1:] += flow_up[:-1]
        du[:-1] += flow_down[1:]
        return np.concatenate([dq.ravel(), du])

    return f


def predict_heterogeneous(
    policy: str, load: float, speeds: np.ndarray, *, r: float = 10.0, d: int = 2
) -> HeterogeneousPrediction:
    """Mean-field steady state with speed classes (see the module notes)."""
    from cloudsched.dispatch.theory.meanfield import iqueue_distribution
    from cloudsched.dispatch.theory.meanfield import predict as mf_predict
    from cloudsched.dispatch.theory.variants import steady_state

    if policy not in HETEROGENEOUS_POLICIES:
        raise ParameterError(
            "policy", policy, "one of " + ", ".join(HETEROGENEOUS_POLICIES) + " with --speeds"
        )
    mu, alpha = speed_classes(speeds)
    lam = load * float(alpha @ mu)
    iq = TABLE[policy].iqueues
    if TABLE[policy].independent and lam >= mu.min():
        raise ParameterError(
            "load",
            load,
            f"below {mu.min() / float(alpha @ mu):.4g} for "
            "random with these speeds (a uniform choice overloads the "
            "slowest class)",
        )
    worst = lam / mu.min() if TABLE[policy].independent else load
    k_levels = min(int(60 + np.log(1e-14) / np.log(worst)), 3000)
    j_levels = int(3 * r + 10 * np.sqrt(r) + 30) if iq else 0
    base = mf_predict(policy, [load], r=r, d=d, tail_tol=1e-300, max_tail=k_levels)
    s = np.zeros(k_levels + 2)
    s[0] = 1.0
    s[1 : 1 + base.tails[0][:k_levels].size] = base.tails[0][:k_levels]
    q = np.outer(alpha, s[:-1] - s[1:])
    x0 = q.ravel()
    if iq:
        u = np.zeros(j_levels + 1)
        p = iqueue_distribution(float(base.p0[0]), load, r, TABLE[policy].effective_d(d))
        u[: min(p.size, j_levels + 1)] = p[: j_levels + 1]
        x0 = np.concatenate([x0, u / u.sum()])
    f = _drift(policy, lam, mu, r, d, k_levels, j_levels)
    try:
        x = steady_state(f, x0, rate=float(mu.max()) + lam * d)
    except (ArithmeticError, np.linalg.LinAlgError):
        x = np.full_like(x0, np.nan)
    q = x[: mu.size * (k_levels + 1)].reshape(mu.size, -1)
    if not np.all(np.isfinite(q)) or float(q[:, -1].sum()) > 1e-9 or np.any(q < -1e-9):
        raise ParameterError(
            "load",
            load,
            "a load every class can carry under "
            + policy
            + " (the mean field is unstable: a class is overloaded)",
        )
    levels = np.arange(k_levels + 1, dtype=np.float64)
    tasks = q @ levels
    busy = q[:, 1:].sum(axis=1)
    p0 = float(x[mu.size * (k_levels + 1)]) if iq else 1.0
    return HeterogeneousPrediction(
        policy, load, float(tasks.sum() / lam), mu, alpha, busy / alpha, tasks / alpha, p0
    )
