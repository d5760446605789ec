"""How many worker processes balance a log that does not name them, by likelihood.

NGINX without a shared ``zone`` runs ``least_conn`` (or ``random two least_conn``) in each
worker process on that worker's own counts; a log with ``$pid`` names the worker of each
request (``--view worker``), one without it hides the counts each choice saw.  For ``K``
workers, each request going to a uniform worker (the kernel hands connections to the
workers; CHOICE: uniform, what NGINX's ``accept_mutex off`` and ``reuseport`` give on
average), the law of the log is a hidden-state model: the state is every worker's counts,
and the worker of each request in flight.  A particle filter (sequential Monte Carlo,
:data:`PARTICLES` particles; each arrival weighs every particle by the chance of the
choice made under it, summed over the workers, and draws the worker that made it) gives
the log-likelihood of the choices for each ``K``, and the largest names ``K`` (with the
difference to the next as evidence, as :mod:`~cloudsched.experiments.checklb_identify`).
``K = 1`` is the shared view: there the filter's likelihood is exact, and equals
:func:`~cloudsched.experiments.checklb_laws.loglik` (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from cloudsched._jit import kernel
from cloudsched.experiments.checklb_counts import stop_times, window_edges
from cloudsched.experiments.checklb_laws import SLIP, level_probs, parse_law

__all__ = ["MAX_UPSTREAMS", "PARTICLES", "WORKERS", "Workers", "infer_workers", "worker_loglik"]

#: Particles of the filter (CHOICE: the log-likelihood's spread over seeds is below 1 in
#: total on 20,000 requests at 8 upstreams and 8 workers, measured; evidence needs 10).
PARTICLES = 256
#: The worker counts tried.
WORKERS = (1, 2, 3, 4, 6, 8)
#: The most upstreams the filter takes (its cost per arrival is particles x workers x
#: upstreams: 12 runs of 20,000 arrivals over 64 upstreams take about a minute).
MAX_UPSTREAMS = 64
#: Arrivals scored (the first ones away from the window's edges).
SCORED = 20_000


@dataclass
class Workers:
    """The likeliest number of workers for a law, and the log-likelihood of each."""

    law: str
    best: int
    evidence: float  # total log-likelihood of the best over the next
    requests: int
    total: dict[int, float] = field(default_factory=dict)  # total log-likelihood by K

    @property
    def sentence(self) -> str:
        """One line for the report."""
        by = ", ".join(f"{k}: {v - self.total[1]:+.1f}" for k, v in self.total.items())
        return (
            f"{self.law} in each of {self.best} worker processes, each on its own counts "
            f"(inferred without $pid: log-likelihood against 1 worker, by workers, {by}; "
            f"over {self.requests} requests)"
        )


class _Events(NamedTuple):
    """The log for the filter: events in order (< n: arrivals, else ends), per request."""

    order: np.ndarray
    upstream: np.ndarray
    sent: np.ndarray
    scored: np.ndarray


class _Model(NamedTuple):
    """The law in each worker: the chance table, the workers, upstreams, particles, slip."""

    table: np.ndarray
    workers: int
    k: int
    particles: int
    slip: float


def _choice_table(law: tuple[str, int, bool], k: int) -> np.ndarray:
    """Chance that one given upstream is chosen, by (upstreams below it, upstreams at it)."""
    below = np.arange(k + 1)[:, None] * np.ones((1, k + 1), dtype=int)
    at = np.ones((k + 1, 1), dtype=int) * np.arange(k + 1)[None, :]
    ok = (at >= 1) & (below + at <= k)
    _, p_at = level_probs(law, np.where(ok, below, 0), np.where(ok, at, 1), np.zeros(1, bool), k)
    return np.where(ok, p_at / np.maximum(at, 1), 0.0)


def worker_loglik(
    log: Any, law: str, workers: int, *, whole_run: bool = False, seed: int = 0
) -> tuple[float, int]:
    """Return the total log-likelihood of ``log``'s choices and the requests scored.

    Under ``law`` in each of ``workers`` processes (see the module notes).
    """
    kind, d, replace = parse_law(law)
    k = len(log.names)
    stop = stop_times(log.sent, log.end, log.end_slack)
    n = log.sent.size
    times = np.concatenate([log.sent, stop])
    kinds = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    order = np.lexsort((kinds, times))  # by time, ends first at one instant
    scored = np.ones(n, dtype=bool)
    if not whole_run:
        scored &= ~window_edges(log.sent, log.end, log.resolution, log.end_slack)
    cut = np.flatnonzero(scored)
    if cut.size > SCORED:
        scored[cut[SCORED] :] = False
    step = np.where(kinds == 1, 1, -1)[order]
    slots = int(np.cumsum(step).max()) + 1  # the most requests in flight at once
    rng = np.random.default_rng([seed, workers, k])
    events = _Events(
        order.astype(np.int64),
        np.ascontiguousarray(log.upstream, dtype=np.int64),
        np.ascontiguousarray(log.sent, dtype=np.float64),
        scored,
    )
    model = _Model(_choice_table((kind, d, replace), k), workers, k, PARTICLES, SLIP)
    total = _filter(events, model, slots, rng)
    return float(total), int(min(cut.size, SCORED))


@kernel(entry=True, label="check-lb's worker count filter")
def _filter(events, model, slots, rng):
    """Run the particle filter; return the total log-likelihood of the scored arrivals."""
    order, up, sent, scored = events.order, events.upstream, events.sent, events.scored
    npart = model.particles
    n = sent.size
    slot = np.full(n, -1, dtype=np.int64)
    free = np.arange(slots)[::-1].copy()  # a stack of free slots
    top = slots
    cnt = np.zeros((npart, model.workers, model.k), dtype=np.int32)
    who = np.zeros((npart, slots), dtype=np.int8)  # the worker of the request in each slot
    weight = np.full(npart, 1.0 / npart)
    lik = np.empty(npart)
    total = 0.0
    last_sent = np.nan
    pending = np.empty(n, dtype=np.int64)  # sends of one instant, counted together after
    npend = 0
    horizon = -1  # the last scored arrival: nothing after it matters
    for i in range(n):
        if scored[i]:
            horizon = i if horizon < 0 or sent[i] > sent[horizon] else horizon
    for e in order:
        r = e if e < n else e - n
        if horizon >= 0 and sent[r] > sent[horizon] and e < n:
            break
        if e >= n or sent[r] != last_sent:  # the instant's sends now count
            for q in range(npend):
                s = pending[q]
                for p in range(npart):
                    cnt[p, who[p, slot[s]], up[s]] += 1
            npend = 0
        if e >= n:  # an end
            if slot[r] >= 0:
                for p in range(npart):
                    cnt[p, who[p, slot[r]], up[r]] -= 1
                top += 1
                free[top - 1] = slot[r]
                slot[r] = -1
            continue
        last_sent = sent[r]
        u = up[r]
        top -= 1
        slot[r] = free[top]
        pending[npend] = r
        npend += 1
        norm = _arrive(cnt, who, slot[r], u, model, weight, lik, rng)
        if scored[r]:
            total += np.log(norm)
            ess_inv = 0.0
            for p in range(npart):
                weight[p] = weight[p] * lik[p] / norm
                ess_inv += weight[p] * weight[p]
            if ess_inv * npart > 2.0:  # effective size under half: resample
                _resample(weight, cnt, who, rng)
    return total


@kernel
def _arrive(cnt, who, s, u, model, weight, lik, rng):
    """Weigh each particle by the choice of ``u`` and draw the worker that made it.

    The worker goes into slot ``s``; returns the chance of the choice (the particles'
    weighted mean).
    """
    table, nw, k, slip = model.table, model.workers, model.k, model.slip
    prob = np.empty(nw)
    norm = 0.0
    for p in range(weight.size):
        tot = 0.0
        for w in range(nw):
            c = cnt[p, w, u]
            below = 0
            at = 0
            for j in range(k):
                x = cnt[p, w, j]
                if x < c:
                    below += 1
                elif x == c:
                    at += 1
            prob[w] = table[below, at]
            tot += prob[w]
        lik[p] = (1.0 - slip) * tot / nw + slip / k
        pick = nw - 1  # the worker that sent it, given the choice (uniform when none would)
        if tot > 0.0:
            v = rng.random() * tot
            acc = 0.0
            for w in range(nw):
                acc += prob[w]
                if v < acc:
                    pick = w
                    break
        else:
            pick = min(int(rng.random() * nw), nw - 1)
        who[p, s] = pick
        norm += weight[p] * lik[p]
    return norm


@kernel
def _resample(weight, cnt, who, rng):
    """Systematic resampling: particles copied in proportion to their weights."""
    npart = weight.size
    pick = np.empty(npart, dtype=np.int64)
    step = 1.0 / npart
    v = rng.random() * step
    acc = weight[0]
    j = 0
    for p in range(npart):
        while v > acc and j < npart - 1:
            j += 1
            acc += weight[j]
        pick[p] = j
        v += step
    cnt[:] = cnt[pick].copy()
    who[:] = who[pick].copy()
    weight[:] = step


def infer_workers(
    log: Any,
    laws: tuple[str, ...] = ("least-request", "pod:2"),
    *,
    whole_run: bool = False,
    seed: int = 0,
) -> Workers:
    """Return the likeliest (law, number of workers) of ``laws`` x :data:`WORKERS`."""
    best: Workers | None = None
    for law in laws:
        totals, scored = {}, 0
        for nw in WORKERS:
            totals[nw], scored = worker_loglik(log, law, nw, whole_run=whole_run, seed=seed)
        ranked = sorted(totals, key=lambda w: -totals[w])
        found = Workers(law, ranked[0], totals[ranked[0]] - totals[ranked[1]], scored, totals)
        if best is None or totals[found.best] > best.total[best.best]:
            best = found
    assert best is not None
    return best
