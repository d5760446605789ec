"""Mean-field (large N, M with r = N/M fixed) predictions for task dispatch.

PolicyRow and closed forms: ``docs/explanation/design/dispatch-meanfield.md``.  In short, with load
``lam`` (arrival rate per server), ``d`` probes and ``r`` servers per dispatcher:

* tail ``s_1 = lam``, ``s_{i+1} = lam * p0 * s_i**d`` (``p0 = 1`` without I-queues);
* mean response time ``T = (1/lam) * sum_i s_i`` (Little's law);
* ``p0`` (fraction of empty I-queues) is the unique root in (0, 1) of
  ``p0 * S(p0) = 1`` with ``S = sum_j a**j / ((b+1)...(b+j))``,
  ``b = r / (p0 * kappa)``, ``a = b * (1 - p0 * lam**d)``, ``kappa = sum_{k<d} lam**k``.

``S`` is evaluated in log space as ``S = Gamma(b+1) a**-b e**a P(b, a)`` (``P`` the
regularised lower incomplete gamma function), with Stirling's series for
``log Gamma(b+1) - b log a + a`` when ``b`` is large (``a / b = 1 - p0 lam**d`` exactly,
so the cancellation is done analytically), and by direct summation of the series when
``P`` underflows or scipy's power series would be cut short.  The root is found by
Brent's method on ``log p0``, bracketed by ``[log(1e-4 / r), 0]``.

Choices where the note is silent (marked ``CHOICE`` below) are documented in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.errors import check_int, check_loads, check_real
from cloudsched.policy_table import TABLE, check_meanfield_policy

__all__ = [
    "R_MAX",
    "R_MIN",
    "MeanFieldPrediction",
    "check_prediction",
    "iqueue_distribution",
    "jiq_p0",
    "predict",
    "tail_probabilities",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Largest r accepted; the numerics are checked over [0.01, 1e4] and stay finite well beyond.
R_MAX = 1e8
#: Smallest servers-per-dispatcher ratio: below it the I-queue solve underflows (r = 1e-67
#: failed in the fluid model's root finding); 1e-6 is checked at loads 0.01-0.999, d 1-5.
R_MIN = 1e-6
#: Largest d accepted.
D_MAX = 4096


def _kappa(lam: np.ndarray, d: int) -> np.ndarray:
    """Return ``sum_{k<d} lam**k = (1 - lam**d) / (1 - lam)`` for ``lam`` in (0, 1)."""
    return -np.expm1(d * np.log(lam)) / (1.0 - lam)


def _stirling_correction(b: float) -> float:
    """``log Gamma(b+1) - (b + 1/2) log b + b - log(2 pi)/2`` for ``b >= 20`` (error < 1e-13)."""
    b2 = b * b
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * b2)) / b2) / b2) / b


def _log_series_direct(a: float, b: float) -> float:
    """``log sum_{j>=0} prod_{k=1..j} a/(b+k)`` by summation (used when ``P(b, a)`` underflows).

    All terms are at most 1 and decrease, so the partial sums never overflow.
    """
    total = 0.0
    log_term = 0.0
    j0 = 0
    chunk = 1024
    while True:
        k = np.arange(j0 + 1, j0 + chunk + 1, dtype=np.float64)
        logs = log_term + np.cumsum(np.log(a) - np.log(b + k))
        total += float(np.exp(logs).sum())
        log_term = float(logs[-1])
        j0 += chunk
        if log_term < np.log(total + 1.0) - 40.0:
            return float(np.log1p(total))


def _log_s(p0: float, lam: float, r: float, d: int) -> float:
    """``log S(p0)`` for one load.

    scipy's ``gammainc`` is accurate where it uses Temme's uniform expansion
    (``b > 200`` and ``eps < 4.5 / sqrt(b)``) or where its power series converges within
    its 2000-term cap; between the two (large ``b``, small ``eps``) the series is summed
    here directly instead.
    """
    kappa = float(_kappa(np.array(lam), d))
    eps = p0 * lam**d  # = 1 - a/b, in (0, 1)
    b = r / (p0 * kappa)
    a = b * (1.0 - eps)
    if b > 200.0 and 4.5 / np.sqrt(b) <= eps < 0.05:
        return _log_series_direct(a, b)
    from scipy import special  # here: scipy.special takes 0.15 s to import

    p = float(special.gammainc(b, a))
    if p < 1e-280:
        return _log_series_direct(a, b)
    if b >= 20.0:
        # log Gamma(b+1) - b log a + a, with the cancellation done analytically (a/b = 1 - eps)
        head = 0.5 * (_LOG_2PI + np.log(b)) + _stirling_correction(b) - b * (np.log1p(-eps) + eps)
        return float(head + np.log(p))
    return float(special.gammaln(b + 1.0) - b * np.log(a) + a + np.log(p))


def jiq_p0(loads: ArrayLike, r: float, d: int = 1) -> np.ndarray:
    """Mean-field fraction of empty I-queues, strictly inside (0, 1), for each load in (0, 1).

    ``r = N / M`` (> 0) servers per dispatcher; ``d`` servers probed by a dispatcher whose
    I-queue is empty (``d = 1``: JIQ, else JIQ-Pod(d)).
    """
    lam = check_loads("load", loads)
    r = check_real("r", r, low=R_MIN, high=R_MAX)
    d = check_int("d", d, low=1, high=D_MAX)
    out = np.empty_like(lam)
    for k, x in enumerate(lam):
        out[k] = _solve_p0(float(x), r, d)
    return out


def _solve_p0(lam: float, r: float, d: int) -> float:
    """Root of ``log p0 + log S(p0) = 0`` by Brent's method on ``log p0`` (a bracketing solver).

    ``p0 * S(p0) ~ sqrt(p0 * pi * r / (2 kappa))`` as ``p0 -> 0``, so ``p0 = 1e-4 / r`` lies
    below the root, and ``S(1) > 1`` puts ``p0 = 1`` above it.
    """
    lo = float(np.log(min(1e-12, 1e-4 / r)))
    from scipy.optimize import brentq

    x = brentq(lambda t: t + _log_s(float(np.exp(t)), lam, r, d), lo, 0.0, xtol=1e-15, rtol=1e-15)
    return float(np.clip(np.exp(x), np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0)))


def _log_tail(lam: float, p0: float, d: int, tol: float, max_len: int) -> np.ndarray:
    """``log s_i`` for i = 1, 2, ... while ``s_i >= tol`` (at least one entry, at most max_len)."""
    log_lam, log_p0 = np.log(lam), np.log(p0)
    log_tol = np.log(tol)
    if d == 1:
        n = int(min(max_len, max(1, np.floor((log_tol - log_lam) / (log_lam + log_p0)) + 1)))
        i = np.arange(n, dtype=np.float64)
        return log_lam + i * (log_lam + log_p0)
    out = [log_lam]
    while len(out) < max_len:
        nxt = log_lam + log_p0 + d * out[-1]
        if nxt < log_tol:
            break
        out.append(nxt)
    return np.asarray(out)


def tail_probabilities(
    policy: str, load: float, length: int, *, r: float = 10.0, d: int = 2
) -> np.ndarray:
    """Return ``[s_1, ..., s_length]``: fractions of servers with at least i tasks.

    Parameters
    ----------
    policy : str
        A policy with a mean-field model (``random``, ``pod``, ``jsq``, ``jiq``, ``jiq-pod``).
    load : float
        Arrival rate per server, in (0, 1).
    length : int
        Number of entries.
    r, d : float, int
        Servers per dispatcher and probes (ignored where they do not apply).

    Returns
    -------
    numpy.ndarray
        Shape ``(length,)``, float64; entries below 1e-300 are 0.
    """
    length = check_int("length", length, low=1)
    pred = predict(policy, [load], r=r, d=d, tail_tol=1e-300, max_tail=length)
    out = np.zeros(length)
    tail = pred.tails[0]
    out[: tail.size] = tail
    return out


def iqueue_distribution(p0: float, load: float, r: float, d: int, tol: float = 1e-15) -> np.ndarray:
    """I-queue size distribution ``[p_0, p_1, ...]`` until the remaining mass is below ``tol``.

    ``p_j = p0 * prod_{k=1..j} a / (k + b)``, evaluated in log space.
    """
    lam = np.array([load])
    kappa = float(_kappa(lam, d)[0])
    b = r / (p0 * kappa)
    a = b * (1.0 - p0 * load**d)
    chunks = [np.array([np.log(p0)])]
    log_last, j0, mass = np.log(p0), 0, p0
    while True:
        k = np.arange(j0 + 1, j0 + 4097, dtype=np.float64)
        logs = log_last + np.cumsum(np.log(a) - np.log(b + k))
        chunks.append(logs)
        mass += float(np.exp(logs).sum())
        log_last, j0 = float(logs[-1]), j0 + k.size
        # terms decrease with ratio at most a/(b+j) < 1: stop once the next chunk cannot matter
        if np.exp(log_last) * (b + j0) / max(b + j0 - a, 1e-300) < tol or mass >= 1.0 - tol / 10:
            break
    p = np.exp(np.concatenate(chunks))
    keep = np.flatnonzero(p >= tol * 1e-3)
    return p[: keep[-1] + 1] if keep.size else p[:1]


@dataclass(frozen=True)
class MeanFieldPrediction:
    """Mean-field prediction for one policy over a set of loads.

    Attributes
    ----------
    policy : str
        Policy name.
    r : float or None
        Servers per dispatcher (None for policies without I-queues).
    d : int or None
        Probes per decision (1 for ``random`` and ``jiq``; None for ``jsq``).
    loads : numpy.ndarray
        Arrival rate per server, shape ``(n,)``.
    p0 : numpy.ndarray
        Fraction of empty I-queues (1 without I-queues).
    mean_response_time : numpy.ndarray
        Expected response time (service time has mean 1).
    join_rate, delete_rate, probe_rate : numpy.ndarray
        Messages per server per unit time.
    tails : tuple of numpy.ndarray
        For each load, ``[s_1, s_2, ...]`` while ``s_i >= tail_tol``.
    """

    policy: str
    r: float | None
    d: int | None
    loads: np.ndarray
    p0: np.ndarray
    mean_response_time: np.ndarray
    join_rate: np.ndarray
    delete_rate: np.ndarray
    probe_rate: np.ndarray
    tails: tuple[np.ndarray, ...] = field(repr=False)

    def occupancy(self, index: int) -> np.ndarray:
        """``[q_0, q_1, ...]``: fraction of servers with exactly i tasks, at load ``index``."""
        s = np.concatenate([[1.0], self.tails[index], [0.0]])
        return s[:-1] - s[1:]

    def iqueue(self, index: int) -> np.ndarray:
        """I-queue size distribution ``[p_0, p_1, ...]`` at load ``index``.

        Policies without I-queues return ``[1.0]`` (every I-queue is empty).
        """
        model = TABLE.get(self.policy)
        if model is None or not (model.iqueues and model.closed_form):
            return np.array([1.0])
        assert self.r is not None and self.d is not None
        return iqueue_distribution(float(self.p0[index]), float(self.loads[index]), self.r, self.d)

    def to_rows(self, tail: int = 6) -> list[dict[str, Any]]:
        """One flat row per load for pandas or CSV: the scalars and ``s_1..s_tail``.

        Tail entries beyond the last one kept (below ``tail_tol``) are 0.
        """
        rows = []
        for k, doc in enumerate(self.to_dicts()):
            row = {"policy": self.policy, "r": self.r, "d": self.d}
            row.update({key: v for key, v in doc.items() if key != "tail"})
            t = self.tails[k]
            row.update({f"s_{i + 1}": float(t[i]) if i < t.size else 0.0 for i in range(tail)})
            rows.append(row)
        return rows

    def to_dicts(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per load (the ``points`` of ``cloudsched predict``)."""
        return [
            {
                "load": float(self.loads[k]),
                "p0": float(self.p0[k]),
                "mean_response_time": float(self.mean_response_time[k]),
                "tail": [float(x) for x in self.tails[k]],
                "join_rate": float(self.join_rate[k]),
                "delete_rate": float(self.delete_rate[k]),
                "probe_rate": float(self.probe_rate[k]),
            }
            for k in range(self.loads.size)
        ]


def check_prediction(
    policy: str,
    loads: ArrayLike,
    *,
    r: float = 10.0,
    d: int = 2,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
) -> tuple[np.ndarray, float, int, float, int]:
    """Check the arguments of :func:`predict` (same meaning); return loads, r, d, tol, tail."""
    check_meanfield_policy(policy)
    lam = check_loads("load", loads)
    r = check_real("r", r, low=R_MIN, high=R_MAX)
    d = check_int("d", d, low=1, high=D_MAX)
    tail_tol = check_real("tail_tol", tail_tol, low=0.0, high=1.0, low_open=True)
    max_tail = check_int("max_tail", max_tail, low=1)
    return lam, r, d, tail_tol, max_tail


def predict(
    policy: str,
    loads: ArrayLike,
    *,
    r: float = 10.0,
    d: int = 2,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
    z: int = 1,
) -> MeanFieldPrediction:
    """Predict the steady state of a dispatch policy in the mean-field limit.

    Parameters
    ----------
    policy : str
        ``random``, ``pod``, ``jsq``, ``jiq`` or ``jiq-pod`` (the closed forms; the variants
        are in :func:`cloudsched.dispatch.theory.prediction.predict`); others raise
        ``NoMeanFieldModelError``.
    loads : float or array_like
        Arrival rate per server (the load), each in (0, 1).
    r : float
        Servers per dispatcher ``N / M`` (> 0); used by ``jiq`` and ``jiq-pod``.
    d : int
        Servers probed per decision (>= 1); used by ``pod`` and ``jiq-pod``.
    tail_tol : float
        The reported tail stops before the first ``s_i < tail_tol``.
    max_tail : int
        At most this many tail entries are reported (the response time uses all terms).
    z : int
        Ignored (the threshold of ``jiq-threshold``, see the variants).

    Returns
    -------
    MeanFieldPrediction
        Vectorised prediction, one entry per load.

    Notes
    -----
    CHOICE: message rates follow the design note literally: probes are counted ``d`` per
    probing decision even for ``d = 1``; ``random`` and ``jiq`` (a uniform choice, no
    probe) and ``jsq`` (whose global state tracking is not modelled as messages) report 0.
    """
    lam, r, d, tail_tol, max_tail = check_prediction(
        policy, loads, r=r, d=d, tail_tol=tail_tol, max_tail=max_tail
    )

    model = TABLE[policy]
    has_iqueue = model.iqueues
    d_eff = model.effective_d(d)
    p0 = jiq_p0(lam, r, d_eff) if has_iqueue else np.ones_like(lam)
    zeros = np.zeros_like(lam)

    if model.probes == "all":
        # Large-N limit of JSQ: every task finds an idle server, s_1 = lam and s_2 = 0.
        tails = tuple(np.array([x]) for x in lam)
        return MeanFieldPrediction(
            policy, None, None, lam, p0, np.ones_like(lam), zeros, zeros, zeros, tails
        )

    tail_list: list[np.ndarray] = []
    mean_t = np.empty_like(lam)
    for k, (x, p) in enumerate(zip(lam, p0, strict=True)):
        if d_eff == 1:
            mean_t[k] = 1.0 / (1.0 - x * p)  # geometric tail, exact sum
            log_s = _log_tail(float(x), float(p), 1, tail_tol, max_tail)
        else:
            log_s = _log_tail(float(x), float(p), d_eff, 1e-300, 100_000)
            mean_t[k] = 1.0 + float(np.exp(log_s[1:] - log_s[0]).sum())  # 1 + sum_{i>=2} s_i/lam
            log_s = log_s[: max(1, min(max_tail, int(np.sum(log_s >= np.log(tail_tol)))))]
        tail_list.append(np.exp(log_s))

    lam_d = np.exp(d_eff * np.log(lam))
    if has_iqueue:
        join = lam * (1.0 - p0 * lam_d)
        delete = lam * p0 * (1.0 - lam_d)
        probe = d_eff * lam * p0 if model.probes == "d" else zeros
    else:
        join, delete = zeros, zeros
        probe = d_eff * lam if model.probes == "d" else zeros
    return MeanFieldPrediction(
        policy,
        r if has_iqueue else None,
        d_eff,
        lam,
        p0,
        mean_t,
        join,
        delete,
        probe,
        tuple(tail_list),
    )
