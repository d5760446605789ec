"""The dispatch policies as density-dependent population processes (exact at every N).

With ``N`` servers and ``M = N / r`` dispatchers the counts ``N s_k`` (servers with at least
``k`` tasks) and, with I-queues, ``M u_j`` (dispatchers whose I-queue holds ``j`` idle
servers) form a Markov chain whose rates are ``N`` times functions of the fractions: a
dispatcher is uniform, a probe samples servers uniformly, an idle server hit by a dispatcher
with an empty I-queue is uniform among idle servers, so its I-queue is size-biased
(``j u_j / sum_i i u_i``).  With replacement these rates are exact at every ``N``; probing
``d`` distinct servers changes ``P(all d have >= k tasks)`` from ``s^d`` to
``s^d + d(d-1)/2 (s^d - s^(d-1)) / N + O(1/N^2)``, the rate correction of the refined
expansion.  Truncation: ``K`` levels and ``J`` I-queue sizes, chosen where the mean field's
fractions fall below ``1e-14`` (a jump beyond them is dropped).

Coordinates: Pod(d) and random use ``s_1..s_K``.  JIQ and JIQ-Pod(d) use ``s_2..s_K`` and
``U_1..U_J`` (``U_j = sum_{i>=j} u_i``); ``s_1 = 1 - sum_j U_j / r`` because every idle
server is listed once (``sum_j j u_j = r (1 - s_1)``), a conserved quantity that would make
the Jacobian singular if it were kept as a coordinate.
"""

from __future__ import annotations

import numpy as np

from cloudsched.dispatch.theory.meanfield import iqueue_distribution
from cloudsched.dispatch.theory.meanfield import predict as mf_predict
from cloudsched.dispatch.theory.population import PopulationModel
from cloudsched.policy_table import TABLE, with_capability

__all__ = ["REFINED_POLICIES", "population_model", "population_size"]

#: Policies with an exact population model (so a refined mean field).
REFINED_POLICIES = with_capability("refined")
_CUT = 1e-14


def _levels(policy: str, lam: float, r: float, d: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Return the truncation ``(K, J)`` and the mean field's ``s_1..s_K`` and ``u_0..u_J``."""
    iq = TABLE[policy].iqueues
    pred = mf_predict(policy, [lam], r=r, d=d, tail_tol=_CUT, max_tail=100_000)
    p0 = float(pred.p0[0])
    s = np.asarray(pred.tails[0], dtype=np.float64)
    u = iqueue_distribution(p0, lam, r, d, tol=_CUT) if iq else np.array([1.0])
    if s.size < 3:
        s = np.concatenate([s, np.full(3 - s.size, _CUT)])
    return s.size, u.size, s, u


def population_size(policy: str, lam: float, r: float, d: int) -> int:
    """Coordinates of ``policy``'s population model (its cost grows as their cube)."""
    k_levels, j_levels, _, _ = _levels(policy, lam, r, TABLE[policy].effective_d(d))
    return k_levels + (j_levels - 1 if TABLE[policy].iqueues else 0)


def _powers(s: np.ndarray, d: int, replace: bool, c: float) -> tuple[np.ndarray, np.ndarray]:
    """``P(min >= k)`` for each row of ``s``, and its 1/N correction (0 with replacement)."""
    p = s**d
    corr = np.zeros_like(p) if replace or d == 1 else c * (p - s ** (d - 1))
    return p, corr


def _pod(lam: float, d: int, k_levels: int, replace: bool) -> PopulationModel:
    n = k_levels
    jumps = np.concatenate([np.eye(n), -np.eye(n)], axis=1)
    c = d * (d - 1) / 2

    def full(x: np.ndarray) -> np.ndarray:
        one = np.ones((1, *x.shape[1:]), dtype=x.dtype)
        return np.concatenate([one, x, 0 * one], axis=0)  # s_0..s_{K+1}

    def rates(x: np.ndarray) -> np.ndarray:
        s = full(x)
        p, _ = _powers(s, d, True, c)
        return np.concatenate([lam * (p[:-2] - p[1:-1]), s[1:-1] - s[2:]], axis=0)

    def correction(x: np.ndarray) -> np.ndarray:
        s = full(x)
        _, g = _powers(s, d, False, c)
        return np.concatenate([lam * (g[:-2] - g[1:-1]), 0 * s[1:-1]], axis=0)

    return PopulationModel(jumps, rates, np.ones(n), 0.0, None if replace else correction)


def _jiq(
    lam: float, r: float, d: int, k_levels: int, j_levels: int, replace: bool
) -> PopulationModel:
    """Coordinates ``s_2..s_K`` then ``U_1..U_J``; see the module notes for the transitions."""
    nk, nj = k_levels - 1, j_levels
    n = nk + nj
    c = d * (d - 1) / 2
    cols: list[np.ndarray] = []

    def col(k_s: int | None = None, k_u: int | None = None, sign: float = 1.0) -> None:
        v = np.zeros(n)
        if k_s is not None:
            v[k_s - 2] = sign
        if k_u is not None:
            v[nk + k_u - 1] = sign * r
        cols.append(v)

    for j in range(nj):  # a) level-1 departure joins an I-queue of size j
        col(k_u=j + 1)
    for k in range(2, k_levels + 1):  # b) departure from level k >= 2
        col(k_s=k, sign=-1.0)
    for j in range(1, nj + 1):  # c) arrival at a dispatcher with j idle servers
        col(k_u=j, sign=-1.0)
    for k in range(2, k_levels + 1):  # d) empty dispatcher, a server at level k - 1 >= 1
        col(k_s=k)
    for j in range(1, nj + 1):  # e) empty dispatcher, an idle server listed in size j
        col(k_u=j, sign=-1.0)
    jumps = np.stack(cols, axis=1)

    def parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        one = np.ones((1, *x.shape[1:]), dtype=x.dtype)
        big_u = x[nk:]
        total = big_u.sum(axis=0, keepdims=True)
        s = np.concatenate([one, one - total / r, x[:nk], 0 * one], axis=0)  # s_0..s_{K+1}
        cum = np.concatenate([one, big_u, 0 * one], axis=0)  # U_0..U_{J+1}
        u = cum[:-1] - cum[1:]  # u_0..u_J
        return s, u, total, np.arange(1, nj + 1).reshape((-1,) + (1,) * (x.ndim - 1))

    def rates(x: np.ndarray) -> np.ndarray:
        s, u, total, js = parts(x)
        p, _ = _powers(s, d, True, c)
        return np.concatenate(
            [
                (s[1] - s[2]) * u[:-1],
                s[2:-1] - s[3:],
                lam * u[1:],
                lam * u[0] * (p[1:-2] - p[2:-1]),
                lam * u[0] * (1 - p[1]) * js * u[1:] / total,
            ],
            axis=0,
        )

    def correction(x: np.ndarray) -> np.ndarray:
        s, u, total, js = parts(x)
        _, g = _powers(s, d, False, c)
        zero = 0 * np.concatenate([u[:-1], s[2:-1], u[1:]], axis=0)
        return np.concatenate(
            [zero, lam * u[0] * (g[1:-2] - g[2:-1]), -lam * u[0] * g[1] * js * u[1:] / total],
            axis=0,
        )

    weights = np.concatenate([np.ones(nk), -np.ones(nj) / r])
    use_corr = not replace and d > 1
    return PopulationModel(jumps, rates, weights, 1.0, correction if use_corr else None)


def population_model(
    policy: str, lam: float, *, r: float = 10.0, d: int = 2, replace: bool = False
) -> tuple[PopulationModel, np.ndarray]:
    """Return the population model of ``policy`` at load ``lam`` and its mean-field fixed point.

    The closed-form mean field (:mod:`cloudsched.dispatch.theory.meanfield`) solves the truncated
    model's fixed-point equation up to the truncation; it is polished by Newton.
    """
    from cloudsched.dispatch.theory.population import fixed_point

    d_eff = TABLE[policy].effective_d(d)
    k_levels, j_levels, s, u = _levels(policy, lam, r, d_eff)
    if not TABLE[policy].iqueues:
        model = _pod(lam, d_eff, k_levels, replace)
        x0 = s
    else:
        model = _jiq(lam, r, d_eff, k_levels, j_levels - 1, replace)
        x0 = np.concatenate([s[1:], (u[::-1].cumsum()[::-1])[1:]])
    return model, fixed_point(model, x0)
