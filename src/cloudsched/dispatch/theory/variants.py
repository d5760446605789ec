"""Mean-field fixed points of the JIQ variants, and round-robin's exact model.

No closed form is known for ``jiq-sq``, ``jiq-threshold`` and ``jiq-original``; their mean
fields are written as drifts on server levels and I-queue sizes and solved numerically (an
ODE run to near-stationarity, then Newton with least-squares steps, which respect the
conserved quantities).  Notation: ``lam`` arrival rate per server, ``r = N / M``, ``u_j``
fraction of I-queues holding ``j`` servers, ``q_k`` fraction of servers with ``k`` tasks.
Per dispatcher, tasks arrive at rate ``lam r``.

* ``jiq-sq(d)`` (JIQ with delete requests; a server that becomes idle joins the shortest of
  ``d`` sampled I-queues): a join lands on an I-queue of size ``j`` with probability
  ``U_j^d - U_{j+1}^d`` (``U_j = sum_{i>=j} u_i``; sampling with replacement in the limit).
  Exact in the mean-field limit (every listed server is idle).
* ``jiq-threshold(z)``: every server with at most ``z`` tasks is listed once.  A dispatcher
  with a non-empty I-queue takes a uniform entry; that server gains a task and joins a
  uniform I-queue again if it still holds at most ``z``.  A server that reaches ``z + 1``
  by a uniform choice (from a dispatcher with an empty I-queue) is deleted from its
  I-queue.  The state is a *pair* per listed server, its level ``k <= z`` and the size ``j``
  of its I-queue (``y[k, j]``), as the design note's ``(0, j)`` states for JIQ; the one
  closure is that another entry of a size-``j`` I-queue is at level ``z`` (so deletable)
  with probability ``y[z, j] / sum_k y[k, j]``.  For ``z = 0`` this is JIQ exactly.  (A
  simpler closure, entry levels independent of the I-queue size, was 4-7% off simulation:
  young entries, in short I-queues, are taken most and are the busier ones.)
* ``jiq-original`` (no delete requests): a listed server keeps its entry while it is busy
  (stale); unlisted idle servers do not exist (a server that becomes idle and is not listed
  joins at once).  A pair model as for ``jiq-threshold``: ``y[k, j]``, servers at level
  ``k`` listed in an I-queue of size ``j``, and ``w[k]``, unlisted servers at level ``k``.
  A dispatcher takes a uniform entry of its own I-queue (that server goes up a level,
  unlisted; the queue's other entries move to size ``j - 1``), a join lands on a uniform
  I-queue (every entry of it moves to ``j + 1``), and a dispatcher with an empty I-queue
  sends to a uniform server, listed or not.  The one closure: the state of the other
  entries of an I-queue is that of all entries of I-queues of its size.  (The simpler
  closure, a taken entry's level drawn from all listed servers whatever its I-queue's size,
  was 0.5-0.8% above simulation at N = 10,000: a busy, stale entry sits mostly in a long
  I-queue, where it is less likely to be taken.)

``round-robin``: with one dispatcher each server receives every N-th arrival, so it is an
``E_N/M/1`` queue (Erlang-N inter-arrivals of mean ``1/lam``), solved exactly
(:func:`round_robin_one_dispatcher`).  With ``M`` dispatchers (``r = N / M`` fixed, ``N``
large) a server sees the superposition of ``M`` independent sparse streams, which tends to a
Poisson stream (Palm-Khintchine): the mean-field limit is ``M/M/1``, ``1 / (1 - lam)``.
Between the two, at finite ``M > 1``, there is no exact model here (simulate it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cloudsched.dispatch.theory.variant_drifts import (
    Drift,
    drift_iq,
    drift_original,
    drift_threshold,
)
from cloudsched.policy_table import TABLE

__all__ = [
    "VARIANT_POLICIES",
    "VariantState",
    "check_variant",
    "predict_variant",
    "round_robin_one_dispatcher",
    "solve_variant",
    "steady_state",
]

#: Policies solved here: those with a numerical fixed point in the policy table (round-robin's
#: mean-field limit is random's).
VARIANT_POLICIES = tuple(p for p, row in TABLE.items() if row.meanfield == "fixed-point")


class VariantState:
    """The fixed point: mean tasks per server, message rates, tail, empty-I-queue fraction."""

    def __init__(
        self,
        tasks: float,
        p0: float,
        tail: np.ndarray,
        join: float,
        delete: float,
        probe: float,
        stale: float,
    ) -> None:
        self.tasks, self.p0, self.tail = tasks, p0, tail
        self.join, self.delete, self.probe, self.stale = join, delete, probe, stale


def round_robin_one_dispatcher(lam: float, n: int) -> float:
    """Mean response time of the ``E_N/M/1`` queue (unit service rate, arrival rate ``lam``).

    GI/M/1: ``T = 1 / (1 - sigma)`` with ``sigma`` the root in (0, 1) of
    ``sigma = (n lam / (n lam + 1 - sigma))^n`` (solved for ``1 - sigma``).  ``n = 1`` is
    M/M/1 and ``n -> infinity`` D/M/1.
    """
    from scipy.optimize import brentq

    def g(gap: float) -> float:  # gap = 1 - sigma; negative near 0, positive at 1
        return float(np.expm1(-n * np.log1p(gap / (n * lam)))) + gap

    gap = brentq(g, 1e-9 * (1.0 - lam), 1.0, xtol=1e-300, rtol=1e-15)
    return 1.0 / gap


def _jacobian(f: Drift, x: np.ndarray) -> np.ndarray:
    """Central-difference Jacobian (the drifts are polynomial and rational)."""
    h = 1e-7
    cols = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=1)


def steady_state(
    f: Drift,
    x0: np.ndarray,
    rate: float = 1.0,
    settle: float = 1e-9,
    conserved: np.ndarray | None = None,
) -> np.ndarray:
    """Run the ODE to near-stationarity, then Newton with least-squares steps.

    The ODE is stepped by forward Euler with ``dt = 0.02 / rate`` (``rate`` bounds the
    fastest per-server rate in units of 20; an explicit method is stable there, and
    scipy's LSODA stalled on the pair model's tiny tail states) until the drift is below
    ``settle`` or stops falling (a slowly relaxing tail: Newton finishes it), for at most
    2 x 10^5 steps.  Newton must then bring the drift below 1e-9; ``conserved``, a vector
    whose product with the state the ODE keeps (the mass), holds Newton's steps to the same
    value (the fixed points form a family along it).
    """
    x = np.asarray(x0, dtype=np.float64).copy()
    dt = 0.02 / max(rate, 1.0)
    last = np.inf
    for _ in range(400):
        for _ in range(500):
            x += dt * f(x)
        if not np.all(np.isfinite(x)):
            raise ArithmeticError("the mean-field ODE diverged")
        res = float(np.abs(f(x)).max())
        if res < settle or res > 0.98 * last:
            break
        last = res
    res = float(np.abs(f(x)).max())
    for _ in range(30):  # Newton, keeping only steps that reduce the drift
        if res < 1e-14:
            break
        jac, rhs = _jacobian(f, x), -f(x)
        if conserved is None:
            step = np.linalg.lstsq(jac, rhs, rcond=None)[0]
        else:  # c'f = 0, so one equation is redundant: replace it by c'dx = 0
            i = int(np.argmax(np.abs(conserved)))
            jac[i], rhs[i] = conserved, 0.0
            try:
                step = np.linalg.solve(jac, rhs)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(jac, rhs, rcond=None)[0]
        trial = x + step
        new = float(np.abs(f(trial)).max())
        if not new < res:
            break
        x, res = trial, new
    if res > 1e-9:
        raise ArithmeticError(f"the mean field did not converge (drift {res:.1e})")
    return x


def _start(lam: float, r: float, k_levels: int, j_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """JIQ's mean field (a close start for every variant): ``q_0..q_K`` and ``u_0..u_J``."""
    from cloudsched.dispatch.theory.meanfield import iqueue_distribution
    from cloudsched.dispatch.theory.meanfield import predict as mf_predict

    pred = mf_predict("jiq", [lam], r=r, tail_tol=1e-300, max_tail=k_levels)
    s = np.zeros(k_levels + 2)
    s[0] = 1.0
    tail = pred.tails[0][:k_levels]
    s[1 : 1 + tail.size] = tail
    q = s[:-1] - s[1:]
    u = np.zeros(j_levels + 1)
    p = iqueue_distribution(float(pred.p0[0]), lam, r, 1)[: j_levels + 1]
    u[: p.size] = p
    return q, u / u.sum()


def _solve_original(
    lam: float, r: float, q: np.ndarray, u: np.ndarray, k_levels: int, j_levels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """jiq-original's pair model at its fixed point: ``y[k, j]``, ``w[0..K]`` and ``u_0..u_J``.

    Starts from JIQ's mean field (``q``, ``u``: every idle server listed, in I-queues of
    JIQ's sizes); the listed levels ``L`` double (up to ``K - 1``) until level ``L`` holds
    less than 1e-11 of the servers.
    """
    js = np.arange(1, j_levels + 1, dtype=np.float64)
    k_listed = 12
    while True:
        listed = js * u[1:] / r
        y = np.zeros((k_listed + 1, j_levels))
        y[0] = listed * (q[0] / max(listed.sum(), 1e-300))
        w = q.copy()
        w[0] = 0.0
        f = drift_original(lam, r, k_listed, k_levels, j_levels)
        x0 = np.concatenate([y.ravel(), w[1:]])
        x = steady_state(f, x0, rate=lam * r + r, settle=1e-3, conserved=np.ones(x0.size))
        y = x[: (k_listed + 1) * j_levels].reshape(k_listed + 1, j_levels)
        w = np.concatenate([[0.0], x[(k_listed + 1) * j_levels :]])
        if y[-1].sum() < 1e-11 or 2 * k_listed >= k_levels:
            break
        k_listed *= 2
    u_pos = r * y.sum(axis=0) / js
    return y, w, np.concatenate([[1.0 - u_pos.sum()], u_pos])


def _poisson(mean: float, j_levels: int) -> np.ndarray:
    """Poisson probabilities ``0..J`` (the top one holds the rest of the mass)."""
    from scipy.stats import poisson

    p = poisson.pmf(np.arange(j_levels + 1), mean)
    p[-1] += max(0.0, 1.0 - p.sum())
    return p


def solve_variant(
    policy: str, lam: float, *, r: float = 10.0, d: int = 2, z: int = 1
) -> VariantState:
    """Return the mean-field fixed point of a JIQ variant at load ``lam`` (see the module notes).

    Truncation levels double until the top level and the largest I-queue carry less than
    1e-11 of the mass.
    """
    try:
        return _solve_variant(policy, lam, r, d, z)
    except (ArithmeticError, np.linalg.LinAlgError) as exc:
        from cloudsched.errors import ParameterError

        raise ParameterError(
            "load",
            lam,
            f"a load where the {policy} mean field converges ({exc}); simulate it instead",
        ) from None


def _solve_variant(policy: str, lam: float, r: float, d: int, z: int) -> VariantState:
    k_levels = int(40 + 10 * z + np.log(1e-14) / np.log(lam) / 4)
    j_levels = int(3 * r + 10 * np.sqrt(r) + 30)
    row = TABLE[policy]
    for _ in range(4):
        q, u = _start(lam, r, k_levels, j_levels)
        if not row.deletes:  # stale entries (jiq-original)
            y, w, u = _solve_original(lam, r, q, u, k_levels, j_levels)
            q = np.concatenate([y.sum(axis=1), np.zeros(k_levels + 1 - y.shape[0])]) + w
        elif row.threshold and z > 0:
            listed = float(q[: z + 1].sum())
            u = _poisson(r * listed, j_levels)
            js = np.arange(1, j_levels + 1)
            y = np.outer(q[: z + 1] / listed, js * u[1:] / r)
            x = steady_state(
                drift_threshold(lam, r, z, k_levels, j_levels),
                np.concatenate([y.ravel(), q[z + 1 :]]),
            )
            y = x[: (z + 1) * j_levels].reshape(z + 1, j_levels)
            q = np.concatenate([y.sum(axis=1), x[(z + 1) * j_levels :]])
            u_pos = r * y.sum(axis=0) / js
            u = np.concatenate([[1.0 - u_pos.sum()], u_pos])
            rejoin = float((lam * r * y[:-1] / js).sum())  # taken below z: listed again
        else:
            f = drift_iq(lam, r, d, z, k_levels, j_levels, row.join == "shortest of d")
            x = steady_state(f, np.concatenate([q, u]))
            q, u = x[: k_levels + 1], x[k_levels + 1 :]
        if max(q[-1], u[-1]) < 1e-11:
            break
        k_levels, j_levels = 2 * k_levels, 2 * j_levels
    else:
        raise ArithmeticError("mass stays at the truncation after 3 doublings")
    levels = np.arange(q.size, dtype=np.float64)
    tail = np.cumsum(q[::-1])[::-1][1:]
    tail = tail[: max(1, int(np.sum(tail >= 1e-9)))]
    if not row.deletes:
        stale = float((lam * r * y[1:] / np.arange(1, y.shape[1] + 1)).sum())
        return VariantState(float(levels @ q), float(u[0]), tail, float(w[1]), 0.0, 0.0, stale)
    if row.join == "shortest of d":
        return VariantState(
            float(levels @ q),
            float(u[0]),
            tail,
            float(q[1]),
            float(lam * u[0] * q[0]),
            float(d * q[1]),
            0.0,
        )
    if z == 0:
        rejoin = 0.0
    return VariantState(
        float(levels @ q),
        float(u[0]),
        tail,
        float(q[z + 1] + rejoin),
        float(lam * u[0] * q[z]),
        0.0,
        0.0,
    )


def check_variant(loads: Any, *, r: float, d: int, z: int) -> tuple[np.ndarray, float, int, int]:
    """Check the arguments of :func:`predict_variant`; return loads, r, d and z."""
    from cloudsched.errors import check_int, check_loads, check_real

    return (
        check_loads("load", loads),
        check_real("r", r, low=1e-3, high=1e6),
        check_int("d", d, low=1, high=4096),
        check_int("threshold", z, low=0, high=50),
    )


def predict_variant(
    policy: str,
    loads: Any,
    *,
    r: float = 10.0,
    d: int = 2,
    z: int = 1,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
) -> Any:
    """:func:`cloudsched.dispatch.theory.meanfield.predict` for the variants and round-robin."""
    from cloudsched.dispatch.theory.meanfield import MeanFieldPrediction

    lam, r, d, z = check_variant(loads, r=r, d=d, z=z)
    if TABLE[policy].pick == "cycle":  # many dispatchers: Poisson arrivals at each server
        from cloudsched.dispatch.theory.meanfield import predict

        pred = predict("random", lam, tail_tol=tail_tol, max_tail=max_tail)
        return MeanFieldPrediction("round-robin", r, None, *list(pred.__dict__.values())[3:])
    states = [solve_variant(policy, float(x), r=r, d=d, z=z) for x in lam]
    tails = tuple(
        s.tail[s.tail >= tail_tol][:max_tail] if (s.tail >= tail_tol).any() else s.tail[:1]
        for s in states
    )

    def col(name: str) -> np.ndarray:
        return np.array([getattr(s, name) for s in states])

    return MeanFieldPrediction(
        policy,
        r,
        d if TABLE[policy].d is not None else 1,
        lam,
        col("p0"),
        col("tasks") / lam,
        col("join"),
        col("delete"),
        col("probe"),
        tails,
    )
