"""Mean field with polled information: the bulletin-board model of pod(d) and JSQ.

The farm of ``simulate --refresh T`` in the limit of many servers: every ``T`` mean service
times the queue lengths are published on a board, and until the next publication every
dispatcher chooses by the board, not by the live lengths (Mitzenmacher, "How useful is old
information?", IEEE TPDS 11(1), 2000: the *periodic update* model).  Between two
publications a server's board value ``b`` does not change, so the servers published at
``b`` (a fraction ``x_b``) receive a constant arrival rate

* ``pod(d)``: ``lam_b = lam (S_b^d - S_{b+1}^d) / x_b``, ``S_b`` the fraction published at
  ``b`` or more (the least of ``d`` probes on the board; ties to a uniform one of them);
* ``jsq``: ``lam_b = lam / x_b`` for the least ``b`` on the board, 0 for every other: all
  the traffic of a period goes to the servers that were shortest at its start (the herd);

and each of them is a birth-death chain (births ``lam_b``, deaths 1) started at ``b``.  The
*period map* takes the distribution ``x`` of lengths at one publication to the next one,
``x'_k = sum_b x_b P_b(T)[k]`` with ``P_b(T)`` the transient law of that chain after
``T``; the steady state is its fixed point.  For a given board the map is linear (the
period's transition matrix, all classes in one ``expm_multiply`` of a block-diagonal
generator), so each step takes the board to that matrix's stationary law, and Anderson's
acceleration (:mod:`._accelerate`) mixes the steps: iterating the map itself would take
thousands of periods when ``T`` is short or the load high.  The law averaged over a period
comes from the same generator augmented with an accumulator block.  The mean response
time is the time-average of the mean length over a period divided by ``lam`` (Little).
This is the limit of the simulated model (no closure); ``T -> 0`` gives the live mean
field (:mod:`.meanfield`).

The chain is truncated at a level that holds less than ``1e-13`` of the board's law
(doubled until it does, at most :data:`MAX_LEVELS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import expm_multiply

from cloudsched.dispatch.theory._accelerate import anderson
from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE, with_capability

__all__ = ["BOARD_POLICIES", "MAX_LEVELS", "BoardPrediction", "board_meanfield"]

#: Policies with a bulletin-board mean field (the table's ``polled``).
BOARD_POLICIES = with_capability("polled")
#: Largest truncation level of a server's chain.
MAX_LEVELS = 4000
_MASS_FLOOR = 1e-14  # a board class lighter than this receives nothing (JSQ's least class)


@dataclass(frozen=True)
class BoardPrediction:
    """The periodic steady state of one policy with a board refreshed every ``period``.

    ``published``: the law of the lengths at a publication (the board); ``lengths``: their
    law averaged over a period; ``converged``: the period map's fixed point was reached to
    ``tol`` (L1) within the iterations allowed.
    """

    policy: str
    load: float
    period: float
    d: int
    mean_response_time: float
    mean_tasks: float
    published: np.ndarray
    lengths: np.ndarray
    iterations: int
    converged: bool


def _rates(policy: str, lam: float, x: np.ndarray, d: int) -> np.ndarray:
    """Arrival rate per server of each board class (0 for an empty class)."""
    rates = np.zeros_like(x)
    heavy = x > _MASS_FLOOR
    if TABLE[policy].probes == "all":  # jsq: the least on the board
        least = int(np.argmax(heavy))
        rates[least] = lam / x[least]
        return rates
    tail = np.clip(np.cumsum(x[::-1])[::-1], 0.0, 1.0)  # S_b
    share = tail**d - np.append(tail[1:], 0.0) ** d
    rates[heavy] = lam * share[heavy] / x[heavy]
    # a class (nearly) empty now would be hit at the limit of that ratio, lam d S_b^(d-1)
    rates[~heavy] = lam * d * tail[~heavy] ** (d - 1)
    return rates


def _period_map(lam_b: np.ndarray, x: np.ndarray, period: float) -> tuple[np.ndarray, np.ndarray]:
    """One period from the board ``x``: the lengths' law at its end and averaged over it.

    The classes ``b`` with ``x_b > 0`` evolve side by side (:func:`_generator`); an
    accumulator block integrates them, so one exponential gives both the law at ``T`` and
    its time integral.
    """
    k1 = x.size
    classes = np.flatnonzero(x > _MASS_FLOOR)
    size = classes.size * k1
    q = _generator(lam_b[classes], k1)
    # augmented generator [[Q, I], [0, 0]] on row vectors: transposed for expm_multiply
    aug = sparse.bmat([[q, sparse.identity(size)], [None, sparse.csr_matrix((size, size))]])
    start = np.zeros(2 * size)
    start[np.arange(classes.size) * k1 + classes] = x[classes]
    end = expm_multiply(aug.T.tocsc() * period, start)
    at_t = np.clip(end[:size].reshape(-1, k1).sum(axis=0), 0.0, None)
    average = np.clip(end[size:].reshape(-1, k1).sum(axis=0), 0.0, None) / period
    return at_t, average


def check_board(policy: str, load: float, period: float, d: int) -> tuple[float, float, int]:
    """Validate a bulletin-board setting; return ``(load, period, d)``."""
    if policy not in BOARD_POLICIES:
        raise ParameterError("policy", policy, "one of " + ", ".join(BOARD_POLICIES))
    lam = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    t = check_real("refresh", period, low=0.0, high=1e4, low_open=True)
    dd = check_int("d", d, low=1, high=1000) if TABLE[policy].probes == "d" else 1
    return lam, t, dd


def board_meanfield(
    policy: str,
    load: float,
    period: float,
    *,
    d: int = 2,
    tol: float = 1e-10,
    max_iterations: int = 5000,
) -> BoardPrediction:
    """Mean field of ``policy`` (``pod`` or ``jsq``) reading a board refreshed every ``period``.

    ``load`` is the arrival rate per server (exp(1) service, equal speeds), ``period`` in
    mean service times, ``d`` the probes of ``pod`` (with replacement, as in the limit).
    """
    lam, t, dd = check_board(policy, load, period, d)
    levels = max(64, int(4 * (1 + lam * t)) + 32)
    x = (1.0 - lam) * lam ** np.arange(levels)  # start: M/M/1 lengths
    x /= x.sum()
    done, it = False, 0
    hist: list[tuple[np.ndarray, np.ndarray]] = []
    while not done:
        new_x = _stationary(_transitions(_rates(policy, lam, x, dd), t))
        it += 1
        if new_x[-1] > 1e-13:  # the truncation shows: more levels
            if 2 * levels > MAX_LEVELS:
                raise ParameterError(
                    "refresh", t, f"short enough that queues stay below {MAX_LEVELS} tasks"
                )
            levels *= 2
            x = np.append(x, np.zeros(levels - x.size))
            hist.clear()
            continue
        done = float(np.abs(new_x - x).sum()) < tol or it >= max_iterations
        if not done:
            x = anderson(hist, x, new_x)
    lam_b = _rates(policy, lam, x, dd)
    _, average = _period_map(lam_b, x, t)
    mean_len = float((average * np.arange(average.size)).sum())
    return BoardPrediction(
        policy, lam, t, dd, mean_len / lam, mean_len, x, average, it, it < max_iterations
    )


def _generator(lam_b: np.ndarray, k1: int) -> sparse.csr_matrix:
    """Block-diagonal generator: block ``i`` the chain with births ``lam_b[i]``, deaths 1."""
    size = lam_b.size * k1
    idx = np.arange(size)
    level = idx % k1
    birth = np.repeat(lam_b, k1)
    up, down = level < k1 - 1, level > 0
    out_rate = birth * up + down.astype(np.float64)
    rows = np.concatenate([idx[up], idx[down], idx])
    cols = np.concatenate([idx[up] + 1, idx[down] - 1, idx])
    vals = np.concatenate([birth[up], np.ones(int(down.sum())), -out_rate])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(size, size))


def _transitions(lam_b: np.ndarray, period: float) -> np.ndarray:
    """Return the period's transitions: row ``b`` the law at ``T`` of a server published at ``b``.

    All rows at once: block ``b`` of the block-diagonal generator starts at level ``b``.
    """
    k1 = lam_b.size
    start = np.zeros(k1 * k1)
    start[np.arange(k1) * k1 + np.arange(k1)] = 1.0
    end = expm_multiply(_generator(lam_b, k1).T.tocsc() * period, start)
    return np.clip(end.reshape(k1, k1), 0.0, None)


def _stationary(m: np.ndarray) -> np.ndarray:
    """Return the stationary law of the stochastic matrix ``m`` (rows renormalised)."""
    m = m / m.sum(axis=1, keepdims=True)
    k1 = m.shape[0]
    a = (m - np.eye(k1)).T
    a[-1] = 1.0
    rhs = np.zeros(k1)
    rhs[-1] = 1.0
    x = np.clip(np.linalg.solve(a, rhs), 0.0, None)
    return x / x.sum()
