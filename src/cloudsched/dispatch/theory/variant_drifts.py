"""The mean-field drifts of the JIQ variants (:mod:`.variants` solves them).

Each builder returns ``f(x)``, the time derivative of the state ``x`` of one model of the
notes in :mod:`cloudsched.dispatch.theory.variants`: levels ``q`` and I-queue sizes ``u`` for
``jiq-sq`` and ``jiq-threshold(0)``, the (level, I-queue size) pairs of listed servers for
``jiq-threshold`` and ``jiq-original``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Drift", "drift_iq", "drift_original", "drift_threshold", "shift_down", "shift_up"]

Drift = Callable[[np.ndarray], np.ndarray]


def shift_up(u: np.ndarray, rate: np.ndarray | float) -> np.ndarray:
    """Flow ``j -> j+1`` of fractions ``u`` at per-member rate ``rate`` (none out of the top)."""
    flow = u * rate
    flow[-1] = 0.0
    out = -flow
    out[1:] += flow[:-1]
    return out


def shift_down(u: np.ndarray, rate: np.ndarray | float) -> np.ndarray:
    """Flow ``j -> j-1`` (``j >= 1``) at per-member rate ``rate``."""
    flow = u * rate
    flow[0] = 0.0
    out = -flow
    out[:-1] += flow[1:]
    return out


def drift_iq(
    lam: float, r: float, d: int, z: int, k_levels: int, j_levels: int, shortest: bool
) -> Drift:
    """Drift of ``(q_0..q_K, u_0..u_J)`` for jiq-sq and jiq-threshold.

    ``shortest``: an idle server joins the shortest of ``d`` sampled I-queues (jiq-sq, whose
    servers are listed while idle: ``z`` is taken as 0), else a uniform one.
    """
    js = np.arange(j_levels + 1, dtype=np.float64)
    z_eff = 0 if shortest else z

    def f(x: np.ndarray) -> np.ndarray:
        q, u = x[: k_levels + 1], x[k_levels + 1 :]
        listed = q[: z_eff + 1].sum()
        pi = q[: z_eff + 1] / listed
        taken = lam * (1.0 - u[0])  # takes per server per unit time
        dq = shift_down(q, 1.0)
        up = lam * u[0] * q  # uniform choice from an empty I-queue
        up[: z_eff + 1] += taken * pi
        up[-1] = 0.0
        dq += -up
        dq[1:] += up[:-1]
        joins = q[z_eff + 1] + taken * pi[:-1].sum()  # from z+1 down, and re-joins
        delete = lam * u[0] * q[z_eff]
        if shortest:
            tail = np.cumsum(u[::-1])[::-1]
            land = tail**d - np.concatenate([tail[1:], [0.0]]) ** d
            du = r * joins * (np.concatenate([[0.0], land[:-1]]) - land)
            du[-1] += r * joins * land[-1]  # joins beyond J fold into J
        else:
            du = shift_up(u, r * joins)
        du += shift_down(u, lam * r)
        du += shift_down(u, r * delete * js / max(float(js @ u), 1e-300))
        return np.concatenate([dq, du])

    return f


def drift_threshold(lam: float, r: float, z: int, k_levels: int, j_levels: int) -> Drift:
    """Drift of ``(y[0..z, 1..J], q[z+1..K])``, the pair model of the module notes.

    ``y[k, j]``: servers at level ``k <= z`` listed in an I-queue of size ``j``; ``q``: the
    unlisted levels.
    """
    nz, nj = z + 1, j_levels
    js = np.arange(1, nj + 1, dtype=np.float64)

    def f(x: np.ndarray) -> np.ndarray:
        y = x[: nz * nj].reshape(nz, nj)
        q = np.concatenate([np.zeros(nz), x[nz * nj :]])  # q[k], k = 0..K (listed part 0)
        per_queue = y.sum(axis=0)  # servers listed in I-queues of size j
        u = r * per_queue / js
        u0 = 1.0 - u.sum()
        u_all = np.concatenate([[u0], u])  # sizes 0..J
        dy = np.zeros_like(y)
        dq = np.zeros_like(q)
        dy[:-1] += y[1:]  # own departures, level k -> k-1 (listed)
        dy[1:] -= y[1:]
        hit = lam * u0 * y  # uniform choice from an empty I-queue
        dy -= hit
        dy[1:] += hit[:-1]
        dq[nz] += hit[-1].sum()  # deleted at z -> unlisted z + 1
        take = lam * r * y / js  # taken by its own dispatcher
        dy -= take
        rejoin = take[:-1].sum(axis=1)  # level k < z -> k + 1, joins an I-queue again
        land = u_all[:-1].copy()  # joins an I-queue of size i -> i + 1 (i = 0..J-1)
        land[-1] += u_all[-1]  # (truncation: joins beyond J stay at J)
        for k in range(nz - 1):
            dy[k + 1] += rejoin[k] * land
        dq[nz] += take[-1].sum()
        joins = q[nz] + rejoin.sum()  # joins per server per unit time
        dy[-1] += q[nz] * land  # unlisted at z + 1 departs: listed at z
        dq[nz] -= q[nz]
        theta = y[-1] / np.where(per_queue > 0, per_queue, 1.0)
        shrink = (lam * r + (lam * u0 * theta) * js) * (js - 1) / js * y  # others leave
        dy -= shrink
        dy[:, :-1] += shrink[:, 1:]
        grow = r * joins * y  # another server joins the same I-queue
        grow[:, -1] = 0.0
        dy -= grow
        dy[:, 1:] += grow[:, :-1]
        down = q.copy()  # unlisted departures above z + 1
        down[: nz + 1] = 0.0
        dq -= down
        dq[:-1] += down[1:]
        up = lam * u0 * q
        up[-1] = 0.0
        dq -= up
        dq[1:] += up[:-1]
        return np.concatenate([dy.ravel(), dq[nz:]])

    return f


def drift_original(lam: float, r: float, k_listed: int, k_levels: int, j_levels: int) -> Drift:
    """Drift of ``(y[0..L, 1..J], w[1..K])``, jiq-original's pair model (module notes).

    ``y[k, j]``: servers at level ``k <= L`` listed in an I-queue of size ``j``; ``w[k]``:
    unlisted servers at level ``k`` (an unlisted server is busy: it joins when it empties).
    """
    nl, nj = k_listed + 1, j_levels
    js = np.arange(1, nj + 1, dtype=np.float64)

    def f(x: np.ndarray) -> np.ndarray:
        y = x[: nl * nj].reshape(nl, nj)
        w = np.concatenate([[0.0], x[nl * nj :]])  # w[0] = 0: an idle server is listed
        per_queue = y.sum(axis=0)
        u = r * per_queue / js
        u0 = 1.0 - u.sum()
        u_all = np.concatenate([[u0], u])
        dy, dw = np.zeros_like(y), np.zeros_like(w)
        dy[:-1] += y[1:]  # own departures of listed servers: stale entries become fresh
        dy[1:] -= y[1:]
        joins = w[1]  # an unlisted server that empties joins a uniform I-queue
        down = w.copy()
        down[:2] = 0.0
        dw -= down
        dw[:-1] += down[1:]
        dw[1] -= joins
        land = u_all[:-1].copy()  # joins an I-queue of size i -> i + 1 (i = 0..J-1)
        land[-1] += u_all[-1]  # (truncation: joins beyond J stay at J)
        dy[0] += joins * land
        grow = r * joins * y  # another server joins the same I-queue
        grow[:, -1] = 0.0
        dy -= grow
        dy[:, 1:] += grow[:, :-1]
        take = lam * r * y / js  # taken by its own dispatcher: unlisted one level up
        dy -= take
        dw[1 : nl + 1] += take.sum(axis=1)  # (k_levels > k_listed)
        shrink = lam * r * (js - 1) / js * y  # another entry of the same I-queue is taken
        dy -= shrink
        dy[:, :-1] += shrink[:, 1:]
        hit = lam * u0 * y  # a uniform choice from an empty I-queue
        hit[-1] = 0.0
        dy -= hit
        dy[1:] += hit[:-1]
        up = lam * u0 * w
        up[-1] = 0.0
        dw -= up
        dw[1:] += up[:-1]
        return np.concatenate([dy.ravel(), dw[1:]])

    return f
