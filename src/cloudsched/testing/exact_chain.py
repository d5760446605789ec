"""Exact stationary mean response time of tiny dispatch systems, for oracle tests.

Brute force, written from the policy descriptions (``cloudsched/dispatch/simulation.py``)
and independent of the simulator's code: the continuous-time Markov chain of the whole
system (queue lengths, the I-queue listing each server, round-robin pointers or the server
each dispatcher remembers for ``pod-memory``, the plug-in of ``examples/plugins``) is built by
breadth-first search from the empty state, truncated at ``cap`` tasks per server (arrivals
that would exceed it are dropped), and solved with a sparse linear solve.  The response time
follows from Little's law with the admitted arrival rate; ``blocked`` is the probability that
an arrival is dropped (the truncation error), which callers keep negligible.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
from scipy import sparse
from scipy.sparse import linalg as splinalg

State = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # queues, listed-in, rr
NONE = -1


def _arrival(
    policy: str, state: State, n: int, m: int, d: int, z: int, replace: bool
) -> Iterator[tuple[float, State]]:
    """Yield (probability, next state) of an arrival."""
    q, listed, rr = state
    iq = policy.startswith("jiq")
    thresh = z if policy == "jiq-threshold" else 0
    for disp in range(m):
        p_disp = 1.0 / m
        if policy == "random":
            for s in range(n):
                yield p_disp / n, _give(state, s, policy, thresh, m, None)
        elif policy == "round-robin":
            s = rr[disp]
            new_rr = list(rr)
            new_rr[disp] = (s + 1) % n
            qq = list(q)
            qq[s] += 1
            yield p_disp, (tuple(qq), listed, tuple(new_rr))
        elif policy == "jsq":
            best = min(q)
            ties = [s for s in range(n) if q[s] == best]
            for s in ties:
                yield p_disp / len(ties), _give(state, s, policy, thresh, m, None)
        elif policy == "pod":
            for prob, s in _probe(q, n, d, replace):
                yield p_disp * prob, _give(state, s, policy, thresh, m, None)
        elif policy == "pod-memory":
            for prob, sample in _samples(n, d, replace):
                best, keep = _with_memory(q, rr[disp], sample)
                qq = list(q)
                qq[best] += 1
                mem = list(rr)
                mem[disp] = keep
                yield p_disp * prob, (tuple(qq), listed, tuple(mem))
        elif iq:
            members = [s for s in range(n) if listed[s] == disp]
            if members:
                for s in members:
                    yield from _take(state, s, policy, thresh, m, p_disp / len(members))
            elif policy == "jiq-pod":
                for prob, s in _probe(q, n, d, replace):
                    yield p_disp * prob, _give(state, s, policy, thresh, m, None)
            else:
                for s in range(n):
                    yield p_disp / n, _give(state, s, policy, thresh, m, None)


def _samples(n: int, d: int, replace: bool) -> Iterator[tuple[float, tuple[int, ...]]]:
    """Every ordered sample of d servers (with or without replacement), equally likely."""
    samples = (
        list(itertools.product(range(n), repeat=d))
        if replace
        else list(itertools.permutations(range(n), d))
    )
    for sample in samples:
        yield 1.0 / len(samples), sample


def _probe(q: tuple[int, ...], n: int, d: int, replace: bool) -> Iterator[tuple[float, int]]:
    """Pod(d): ordered samples, the first least loaded of each sample."""
    for prob, sample in _samples(n, d, replace):
        best = sample[0]
        for s in sample[1:]:
            if q[s] < q[best]:
                best = s
        yield prob, best


def _with_memory(q: tuple[int, ...], remembered: int, sample: tuple[int, ...]) -> tuple[int, int]:
    """Pod(d) with memory: (server chosen, server remembered next).

    The task goes to the least loaded of the remembered server (preferred on ties) and the
    sample (the first in sample order among tied sampled ones); the least loaded of all
    of them after the task joins is remembered (the chosen server on ties, then sample
    order).
    """
    seen = ([remembered] if remembered != NONE else []) + list(sample)
    best = seen[0]
    for s in seen[1:]:
        if q[s] < q[best]:
            best = s
    after = list(q)
    after[best] += 1
    keep = best
    for s in sample:
        if after[s] < after[keep]:
            keep = s
    return best, keep


def _give(state: State, s: int, policy: str, thresh: int, m: int, _unused: None) -> State:
    """Task sent to server ``s`` by a uniform or probing choice (not from an I-queue)."""
    q, listed, rr = state
    qq = list(q)
    qq[s] += 1
    ll = list(listed)
    deletes = policy.startswith("jiq") and policy != "jiq-original"
    if deletes and ll[s] != NONE and qq[s] > thresh:
        ll[s] = NONE  # delete request
    return tuple(qq), tuple(ll), rr


def _take(
    state: State, s: int, policy: str, thresh: int, m: int, prob: float
) -> Iterator[tuple[float, State]]:
    """Task sent to server ``s`` taken from an I-queue (the entry is consumed)."""
    q, listed, rr = state
    qq = list(q)
    qq[s] += 1
    ll = list(listed)
    ll[s] = NONE
    if policy != "jiq-original" and qq[s] <= thresh:  # JIQ-Threshold: it joins again
        for prob_join, target in _join_targets(q, ll, policy, m):
            l2 = list(ll)
            l2[s] = target
            yield prob * prob_join, (tuple(qq), tuple(l2), rr)
    else:
        yield prob, (tuple(qq), tuple(ll), rr)


def _join_targets(
    q: tuple[int, ...], listed: list[int], policy: str, m: int, d: int = 2
) -> Iterator[tuple[float, int]]:
    """I-queue joined by a server: uniform, or the first shortest of d sampled (JIQ-SQ)."""
    if policy != "jiq-sq":
        for target in range(m):
            yield 1.0 / m, target
        return
    sizes = [sum(1 for x in listed if x == k) for k in range(m)]
    samples = list(itertools.permutations(range(m), _JOIN_D[0]))
    for sample in samples:
        best = sample[0]
        for k in sample[1:]:
            if sizes[k] < sizes[best]:
                best = k
        yield 1.0 / len(samples), best


_JOIN_D = [2]  # d of JIQ-SQ (set by solve)


def _departures(policy: str, state: State, n: int, m: int, z: int) -> Iterator[tuple[float, State]]:
    """Yield the next state of a departure at each busy server (rate 1 each)."""
    q, listed, rr = state
    thresh = z if policy == "jiq-threshold" else 0
    for s in range(n):
        if q[s] == 0:
            continue
        qq = list(q)
        qq[s] -= 1
        if policy.startswith("jiq") and listed[s] == NONE and qq[s] <= thresh:
            for prob, target in _join_targets(q, list(listed), policy, m):
                ll = list(listed)
                ll[s] = target
                yield prob, (tuple(qq), tuple(ll), rr)
        else:
            yield 1.0, (tuple(qq), listed, rr)


def solve(
    policy: str,
    n: int,
    load: float,
    *,
    m: int = 1,
    d: int = 2,
    z: int = 1,
    replace: bool = False,
    cap: int = 14,
) -> tuple[float, float]:
    """Return (exact mean response time, blocking probability of the truncation)."""
    _JOIN_D[0] = d
    lam = load * n
    start: State = (
        (0,) * n,
        tuple(k % m for k in range(n)) if policy.startswith("jiq") else (NONE,) * n,
        (0,) * m if policy == "round-robin" else (NONE,) * m if policy == "pod-memory" else (),
    )
    index = {start: 0}
    states = [start]
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    blocked_states: list[tuple[int, float]] = []
    k = 0
    while k < len(states):
        state = states[k]
        out: dict[State, float] = {}
        lost = 0.0
        for prob, nxt in _arrival(policy, state, n, m, d, z, replace):
            if max(nxt[0]) > cap:
                lost += prob
                continue
            out[nxt] = out.get(nxt, 0.0) + lam * prob
        for prob, nxt in _departures(policy, state, n, m, z):
            out[nxt] = out.get(nxt, 0.0) + prob
        if lost > 0:
            blocked_states.append((k, lost))
        for nxt, rate in out.items():
            if nxt == state:
                continue
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
    gen = gen - sparse.diags(np.asarray(gen.sum(axis=1)).ravel())
    # pi Q = 0 with pi_0 = 1 (a sparse constraint row, no fill-in), then normalised
    a = gen.T.tolil()
    a[0, :] = 0.0
    a[0, 0] = 1.0
    b = np.zeros(size)
    b[0] = 1.0
    pi = splinalg.spsolve(a.tocsc(), b)
    pi /= pi.sum()
    tasks = np.array([sum(s[0]) for s in states], dtype=float)
    blocked = sum(pi[i] * p for i, p in blocked_states)
    return float(pi @ tasks / (lam * (1.0 - blocked))), float(blocked)
