"""Exact steady state of small dispatch systems: the lumped continuous-time Markov chain.

Servers are exchangeable, so the chain of *counts* is Markov: ``c_k`` servers hold ``k``
tasks (``k = 0..cap``) and, for JIQ and JIQ-Pod(d), ``e_j`` of the ``M`` dispatchers have
``j`` idle servers listed (every idle server is listed exactly once: delete requests).  From
a state, with arrival rate ``lam * N`` and unit service rate:

* a departure from level ``k`` happens at rate ``c_k``; a server becoming idle joins a
  uniform dispatcher (size ``j`` with probability ``e_j / M``);
* an arrival goes to a uniform dispatcher; with ``j >= 1`` listed servers it takes one
  (``e_j -> e_{j-1}``, an idle server starts); otherwise the policy picks a level: uniform
  (``c_k / N``), the least loaded of ``d`` probes (``P(min >= k) = S_k^d`` with replacement,
  ``C(N S_k, d) / C(N, d)`` without, ``S_k`` the fraction with at least ``k`` tasks), or
  the least level (JSQ).  An idle server hit this way is deleted from its I-queue, which has
  size ``j`` with probability ``j e_j / (number idle)``.

The state space is found by breadth-first search from the empty system; an arrival that
would put more than ``cap`` tasks on a server is dropped, and the stationary probability
that an arrival is dropped is reported as the truncation error (the caller raises ``cap``
until it is below a tolerance).  The response time is Little's law with the admitted rate.
The chain is solved with ``pi_0 = 1`` in place of one balance equation, then normalised
(:func:`_stationary`).  An independent brute-force chain over
labelled servers (:mod:`cloudsched.testing.exact_chain`) checks it in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE, with_capability
from cloudsched.progress import Progress

__all__ = ["EXACT_POLICIES", "MAX_STATES", "ExactSolution", "solve_exact", "state_count"]

#: Policies the lumped chain covers (at any number of dispatchers: the model table).
EXACT_POLICIES = with_capability("exact")
#: Largest state space solved (about a minute on two cores).
MAX_STATES = 400_000
#: Chains up to this size are solved by sparse LU.
DIRECT_STATES = 12_000
#: Iterations GMRES gets on a larger chain (a chain of 4 servers at 91,390 states takes 339).
GMRES_ITERATIONS = 1_000
#: Short of GMRES's convergence, LU up to this size (its fill-in grows fast beyond).
LU_FALLBACK_STATES = 40_000


@dataclass(frozen=True)
class ExactSolution:
    """Mean response time, the probability an arrival was dropped (truncation), and sizes."""

    mean_response_time: float
    truncation: float
    cap: int
    states: int


def _choice(policy: str, c: tuple[int, ...], n: int, d: int, replace: bool) -> list[float]:
    """Probability that a non-I-queue choice lands on a server at each level."""
    probes = TABLE[policy].probes
    if probes == "one" or (probes == "d" and d == 1):
        return [ck / n for ck in c]
    if probes == "all":
        low = next(k for k, ck in enumerate(c) if ck > 0)
        return [1.0 if k == low else 0.0 for k in range(len(c))]
    at_least = np.cumsum(np.asarray(c[::-1], dtype=float))[::-1]  # servers with >= k tasks
    if replace:
        tail = (at_least / n) ** d
    else:
        tail = np.array([comb(int(a), d) for a in at_least], dtype=float) / comb(n, d)
    tail = np.append(tail, 0.0)
    return list(tail[:-1] - tail[1:])


def _partitions(total: int, parts: int) -> list[int]:
    """Partitions of ``0..total`` into at most ``parts`` parts (``p[t]``)."""
    p = [1] + [0] * total
    for size in range(1, parts + 1):  # parts of at most ``parts``: conjugate partitions
        for t in range(size, total + 1):
            p[t] += p[t - size]
    return p


def state_count(policy: str, n: int, m: int, cap: int) -> int:
    """Return the number of states of the lumped chain with ``cap`` tasks per server at most.

    Levels: ``c_0..c_cap`` summing to ``n``, ``C(n + cap, cap)`` of them.  JIQ and JIQ-Pod
    also hold the I-queue sizes, which list the ``c_0`` idle servers: ``e`` is a partition
    of ``c_0`` into at most ``m`` parts (a lower bound, the levels' count, is returned once
    it exceeds :data:`MAX_STATES`).
    """
    servers = comb(n + cap, cap)
    if not TABLE[policy].iqueues or servers > MAX_STATES:
        return servers
    p = _partitions(n, m)
    return sum(comb(n - idle + cap - 1, cap - 1) * p[idle] for idle in range(n + 1))


def _neighbours(
    policy: str, state: tuple[int, ...], n: int, m: int, lam: float, d: int, replace: bool, cap: int
) -> tuple[dict[tuple[int, ...], float], float]:
    """Rates to the next states, and the rate of dropped arrivals."""
    levels = cap + 1
    c, e = list(state[:levels]), list(state[levels:])
    iq = bool(e)
    out: dict[tuple[int, ...], float] = {}
    lost = 0.0

    def add(cc: list[int], ee: list[int], rate: float) -> None:
        if rate > 0:
            key = tuple(cc) + tuple(ee)
            out[key] = out.get(key, 0.0) + rate

    for k in range(1, levels):  # departures
        if c[k] == 0:
            continue
        cc = c.copy()
        cc[k] -= 1
        cc[k - 1] += 1
        if iq and k == 1:
            for j in range(n):
                if e[j]:
                    ee = e.copy()
                    ee[j] -= 1
                    ee[j + 1] += 1
                    add(cc, ee, c[k] * e[j] / m)
        else:
            add(cc, e, float(c[k]))
    arrive = lam * n
    empty = e[0] / m if iq else 1.0
    for j in range(1, len(e)):  # an I-queue with j listed servers
        if e[j]:
            cc, ee = c.copy(), e.copy()
            cc[0] -= 1
            cc[1] += 1
            ee[j] -= 1
            ee[j - 1] += 1
            add(cc, ee, arrive * e[j] / m)
    idle = c[0]
    for k, p in enumerate(_choice(policy, tuple(c), n, d, replace)):
        rate = arrive * empty * p
        if rate <= 0:
            continue
        if k + 1 >= levels:
            lost += rate
            continue
        cc = c.copy()
        cc[k] -= 1
        cc[k + 1] += 1
        if iq and k == 0:
            for j in range(1, len(e)):
                if e[j]:
                    ee = e.copy()
                    ee[j] -= 1
                    ee[j - 1] += 1
                    add(cc, ee, rate * j * e[j] / idle)
        else:
            add(cc, e, rate)
    return out, lost


def _stationary(a: Any) -> np.ndarray:
    """Solve ``a x = e_0`` and normalise: LU while small, else Jacobi-preconditioned GMRES.

    SuperLU's fill-in on these lattice-like chains grows fast (a 66,000-state chain took
    minutes); GMRES with a diagonal preconditioner solves the chains of a few servers (a
    long, thin lattice) in a few hundred iterations, but not those of many servers with few
    levels.  So GMRES gets :data:`GMRES_ITERATIONS` iterations; short of convergence, LU
    takes over up to :data:`LU_FALLBACK_STATES` states (8 servers, 12,870 states: 8 s),
    and a larger chain is refused (``ArithmeticError``).
    """
    from scipy.sparse import linalg as splinalg

    size = a.shape[0]
    b = np.zeros(size)
    b[0] = 1.0
    if size <= DIRECT_STATES:
        x = splinalg.spsolve(a, b)
    else:
        diag = a.diagonal()
        diag[diag == 0] = 1.0
        pre = splinalg.LinearOperator(a.shape, lambda v: v / diag)
        x, info = splinalg.gmres(
            a, b, M=pre, rtol=1e-12, atol=0.0, restart=200, maxiter=GMRES_ITERATIONS // 200
        )
        if info != 0:
            if size > LU_FALLBACK_STATES:
                raise ArithmeticError(
                    f"the exact chain's solve did not converge in "
                    f"{GMRES_ITERATIONS} iterations ({size:,} states)"
                )
            x = splinalg.spsolve(a, b)
    return np.asarray(x / x.sum())


def _solve_once(
    policy: str, n: int, m: int, lam: float, d: int, replace: bool, cap: int
) -> ExactSolution:
    from scipy import sparse

    iq = TABLE[policy].iqueues
    e0 = [0] * (n + 1)
    if iq:  # all servers idle, spread over the dispatchers as evenly as possible
        for k in range(m):
            e0[n // m + (1 if k < n % m else 0)] += 1
    start = tuple([n] + [0] * cap) + (tuple(e0) if iq else ())
    index = {start: 0}
    states = [start]
    rows, cols, vals, lost_rate = [], [], [], []
    k = 0
    while k < len(states):
        out, lost = _neighbours(policy, states[k], n, m, lam, d, replace, cap)
        lost_rate.append(lost)
        for nxt, rate in out.items():
            j = index.get(nxt)
            if j is None:
                j = index[nxt] = len(states)
                states.append(nxt)
            rows.append(k)
            cols.append(j)
            vals.append(rate)
        k += 1
    size = len(states)
    gen = sparse.csr_matrix((vals, (rows, cols)), shape=(size, size))
    gen = (gen - sparse.diags(np.asarray(gen.sum(axis=1)).ravel())).T.tolil()
    gen[0, :] = 0.0  # pi_0 = 1 replaces one balance equation (a sparse row, no fill-in)
    gen[0, 0] = 1.0
    pi = _stationary(gen.tocsc())
    levels = np.arange(cap + 1, dtype=float)
    tasks = np.array([levels @ np.asarray(s[: cap + 1], dtype=float) for s in states])
    dropped = float(pi @ np.asarray(lost_rate)) / (lam * n)
    t = float(pi @ tasks) / (lam * n * (1.0 - dropped))
    return ExactSolution(t, dropped, cap, size)


def solve_exact(
    policy: str,
    n: int,
    load: float,
    *,
    m: int = 1,
    d: int = 2,
    replace: bool = False,
    tol: float = 1e-9,
    cap: int | None = None,
    progress: Progress | None = None,
) -> ExactSolution:
    """Exact mean response time of ``policy`` on ``n`` servers and ``m`` dispatchers.

    ``random`` is independent M/M/1 queues (``1 / (1 - load)``, no chain).  Otherwise the
    truncation level starts at 8 tasks per server and grows (extrapolating the geometric
    decay of the dropped fraction) until that fraction is below ``tol``.  The states of the
    next level are counted before it is built (:func:`state_count`): more than
    :data:`MAX_STATES` is refused at once, naming ``servers`` and the count.  Give ``cap``
    to fix the level.  ``progress`` is told each level, its states and what it dropped.
    """
    if policy not in EXACT_POLICIES:
        raise ParameterError(
            "policy", policy, "one of " + ", ".join(EXACT_POLICIES) + " for the exact chain"
        )
    if not TABLE[policy].iqueues:
        m = 1
    if TABLE[policy].independent:  # random: independent M/M/1 queues at every N
        return ExactSolution(1.0 / (1.0 - load), 0.0, 0, 0)

    def say(text: str) -> None:
        if progress is not None:
            progress(-1.0, text)

    tried: list[tuple[int, float]] = []
    level = 8 if cap is None else cap
    while True:
        count = state_count(policy, n, m, level)
        if count > MAX_STATES:
            done = (
                (
                    f"; at {tried[-1][0]} tasks per server it dropped {tried[-1][1]:.2g} of "
                    f"the arrivals, above tol {tol:g}"
                )
                if tried
                else ""
            )
            raise ParameterError(
                "servers",
                n,
                (
                    f"a system whose exact chain fits {MAX_STATES:,} states: at {level} tasks per "
                    f"server it has {count:,}{done} (use --method refined or simulate)"
                ),
            )
        say(f"exact chain: {count:,} states at {level} tasks per server")
        try:
            sol = _solve_once(policy, n, m, load, d, replace, level)
        except ArithmeticError as exc:
            raise ParameterError(
                "servers",
                n,
                f"a system whose exact chain can be solved here: "
                f"{exc} (use --method refined or simulate)",
            ) from None
        if cap is not None or sol.truncation <= tol:
            return sol
        tried.append((level, sol.truncation))
        say(f"exact chain: {level} tasks per server dropped {sol.truncation:.2g} (tol {tol:g})")
        level = _next_cap(tried, tol)


def _next_cap(tried: list[tuple[int, float]], tol: float) -> int:
    """Return the next truncation level.

    The dropped fraction decays geometrically in the cap, so the last two tries are
    extrapolated to ``tol`` (plus one level of margin).
    """
    (c1, p1), (c2, p2) = [(0, 1.0), *tried][-2:]
    if len(tried) < 2 or not 0 < p2 < p1:
        return c2 + 4
    ratio = (p2 / p1) ** (1.0 / (c2 - c1))
    return c2 + max(2, int(np.ceil(np.log(tol / p2) / np.log(ratio))) + 1)
