"""Peak EWMA behind power of two choices (tower, Linkerd, Finagle) on a log.

tower/src/load/peak_ewma.rs keeps one estimate per upstream, starting at the default RTT:
a response sets it to its time if that is larger (the peak), else blends its time in with
weight ``1 - exp(-elapsed / decay)`` since the estimate was last touched; reading it (at a
choice) decays it toward 0 by ``exp(-elapsed / decay)``.  The balancer
(tower/src/balance/p2c/service.rs) draws two distinct upstreams and keeps the one of less
cost, the estimate times its requests in flight plus one.  So, given the costs, the law is
:mod:`~cloudsched.experiments.checklb_laws`'s ``pod:2`` on the *ranks of the costs* in
place of the counts, and every test of a sampling law applies (the randomised transform,
the draws, the likelihood).

The log gives each response's time (its duration) and each choice's upstream, so the
estimates follow it, but for one thing: the upstream drawn beside the chosen one was read
too (its estimate decayed and its stamp moved), which the log does not show.  Decays
compose, so a read changes an estimate only through the stamp, the weight of the next
response's blend; the check draws each partner from its law given the costs and the
choice (a costlier upstream twice as likely as one of equal cost; over two upstreams it
is the other one, and the costs are exact).  Leaving the reads out instead biases the
slow upstreams' estimates, which a long log shows (a true log of decay 3 s, 24,000
requests: p = 1e-5).  A rotated log does not hold the estimates when it begins: arrivals
within three decay times of its first line are left out (the peak of an unknown past
decays to 5%).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from cloudsched._jit import kernel

__all__ = ["BURN_IN", "DECAYS", "ewma_fits", "ewma_levels", "ewma_options", "ewma_tested"]

#: Arrivals within this many decay times of a window's first line are left out.
BURN_IN = 3.0
#: Decay times (s) tried when the law is not given (Linkerd's default is 10 s).
DECAYS = (1.0, 3.0, 10.0, 30.0)


class _Log(NamedTuple):
    """Events in order (< n arrivals, else ends) and each request's fields."""

    order: np.ndarray
    upstream: np.ndarray
    sent: np.ndarray
    end: np.ndarray
    levels: np.ndarray


def ewma_options(options: Iterable[str] | None) -> tuple[float, float]:
    """Return ``ewma``'s decay and default RTT in seconds from its ``-o`` options."""
    from cloudsched.dispatch.options import options_by_name

    opts = options_by_name("ewma", list(options or ()))
    unit = opts["service-time"]
    return opts["decay"] * unit, opts["default-rtt"] * unit


def ewma_levels(
    log: Any, levels: np.ndarray, decay: float, default_rtt: float, whole_run: bool, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Return each arrival's upstreams ranked by peak-EWMA cost, and the arrivals settled.

    ``levels``: the counts at every arrival (rows in log order).  The ranks are dense
    (equal costs share one, 0 the least), in the shape of ``levels``; ``settled``: the
    arrivals whose estimates the log fixes (all for a whole run).  Each choice's partner
    is drawn from ``seed`` (see the module notes).
    """
    from cloudsched.experiments.checklb_counts import stop_times

    n, k = levels.shape
    stop = stop_times(log.sent, log.end, log.end_slack)
    times = np.concatenate([log.sent, stop])
    kinds = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    order = np.lexsort((kinds, times)).astype(np.int64)
    cost = np.empty((n, k))
    start = float(log.sent.min()) if n else 0.0
    run = _Log(
        order,
        np.ascontiguousarray(log.upstream, dtype=np.int64),
        np.ascontiguousarray(log.sent, dtype=np.float64),
        np.ascontiguousarray(log.end, dtype=np.float64),
        np.ascontiguousarray(levels, dtype=np.int64),
    )
    _costs(run, float(decay), float(default_rtt), start, cost, np.random.default_rng(seed))
    from scipy.stats import rankdata

    ranked = (rankdata(cost, method="dense", axis=1) - 1).astype(np.int32)
    settled = np.ones(n, dtype=bool)
    if not whole_run:
        settled = log.sent >= start + BURN_IN * decay
    return ranked, settled


@kernel(entry=True, label="check-lb's peak EWMA costs")
def _costs(run, decay, default_rtt, start, cost, rng):
    """Fill ``cost`` (arrivals x upstreams): each estimate decayed to the arrival x (c + 1)."""
    n, k = cost.shape
    est = np.full(k, default_rtt)
    stamp = np.full(k, start)
    for e in run.order:
        if e >= n:  # a response: the peak, else the blend
            r = e - n
            u = run.upstream[r]
            t = run.end[r]
            rtt = run.end[r] - run.sent[r]
            if est[u] < rtt:
                est[u] = rtt
            else:
                w = math.exp(-(t - stamp[u]) / decay)
                est[u] = est[u] * w + rtt * (1.0 - w)
            stamp[u] = t
            continue
        t = run.sent[e]
        for j in range(k):
            decayed = est[j] * math.exp(-(t - stamp[j]) / decay)
            cost[e, j] = decayed * (run.levels[e, j] + 1.0)
        u = run.upstream[e]  # the chosen one was read, and its partner: drawn from its law
        partner = _partner(cost[e], u, rng)
        for j in (u, partner):
            if j >= 0:
                est[j] = est[j] * math.exp(-(t - stamp[j]) / decay)
                stamp[j] = t


@kernel(nrt=False)
def _partner(cost, u, rng):
    """Draw the upstream drawn beside ``u``, given that ``u`` was kept (-1: none can be).

    Of the ordered pairs holding ``u``, it is kept with a costlier one either way round and
    with an equal one only when drawn first: a costlier partner is twice as likely.
    """
    total = 0.0
    for j in range(cost.size):
        if j != u:
            total += 2.0 if cost[j] > cost[u] else (1.0 if cost[j] == cost[u] else 0.0)
    if total <= 0.0:
        return -1
    v = rng.random() * total
    last = -1
    for j in range(cost.size):
        if j != u:
            w = 2.0 if cost[j] > cost[u] else (1.0 if cost[j] == cost[u] else 0.0)
            if w > 0.0:
                last = j
                v -= w
                if v < 0.0:
                    return j
    return last


def ewma_tested(
    log: Any,
    edges: np.ndarray,
    decay: float,
    default_rtt: float,
    whole_run: bool,
    seed: int = 0,
    levels: np.ndarray | None = None,
) -> tuple[Any, list[str]]:
    """Return the arrivals to test with their cost ranks as levels, and the notes.

    Left out as for the counts (the clock, ``edges``), and within :data:`BURN_IN` decay
    times of a window's first line.
    """
    from cloudsched.experiments.checklb_counts import (
        Tested,
        levels_at_arrivals,
        unresolved_arrivals,
    )

    n, k = int(log.upstream.size), len(log.names)
    if levels is None:
        levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    ranked, settled = ewma_levels(log, levels, decay, default_rtt, whole_run, seed)
    keep = ~unresolved_arrivals(log.sent, log.end, log.resolution) & ~edges & settled
    if int(keep.sum()) < 2:
        from cloudsched.errors import ParameterError

        raise ParameterError(
            "log",
            log.source,
            f"requests after its first {BURN_IN * decay:g} s ({BURN_IN:g} decay times, while "
            "the estimates carry an unknown past) whose counts it fixes: --whole-run if it "
            "holds the proxy's whole run",
        )
    chosen = ranked[np.arange(n), log.upstream][keep]
    tested = Tested(ranked[keep], chosen, log.upstream[keep], n - int(keep.sum()), edges)
    notes = [
        f"peak EWMA with decay {decay:g} s: the choices tested as power of two choices on "
        "the upstreams' costs (estimate x (in flight + 1)) rebuilt from the logged times; "
        "the upstream drawn beside each chosen one is not in the log: it is drawn from its "
        "law given the costs (--seed), and its read decays its estimate"
    ]
    if not whole_run:
        notes.append(
            f"{int((~settled).sum())} arrivals within {BURN_IN:g} decay times of the log's "
            "first line left out: the estimates then carry an unknown past"
        )
    return tested, notes


def ewma_fits(
    log: Any, edges: np.ndarray, whole_run: bool, laws: list[tuple[str, str, int, bool]]
) -> tuple[dict[str, float], dict[float, float], int]:
    """Return total log-likelihoods of ``laws`` and of peak EWMA by decay, and the arrivals.

    All on the same arrivals: ``laws`` named as
    :func:`~cloudsched.experiments.checklb_laws.candidates` names them, peak EWMA at each
    decay of :data:`DECAYS`.

    The decays tried are those whose burn-in fits in half the log's span (all of them for
    a whole run); the arrivals are those the clock and the edges fix, past the longest
    burn-in.  The default RTT is Linkerd's (30 ms): after the burn-in it does not matter.
    """
    from cloudsched.experiments.checklb_counts import levels_at_arrivals, unresolved_arrivals
    from cloudsched.experiments.checklb_laws import loglik, ranks

    k = len(log.names)
    span = float(log.sent.max() - log.sent.min()) if log.sent.size else 0.0
    decays = [d for d in DECAYS if whole_run or BURN_IN * d <= span / 2]
    if not decays:
        return {}, {}, 0
    levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    keep = ~unresolved_arrivals(log.sent, log.end, log.resolution) & ~edges
    if not whole_run:
        keep &= log.sent >= log.sent.min() + BURN_IN * max(decays)
    n = int(keep.sum())
    if n < 200:
        return {}, {}, n
    rows, up = np.flatnonzero(keep), log.upstream[keep]

    def total(law: tuple[str, int, bool], lv: np.ndarray) -> float:
        chosen = lv[rows, up]
        return n * loglik(law, ranks(lv[rows], chosen), k)

    counts = {name: total((kind, d, r), levels) for name, kind, d, r in laws}
    by_decay = {
        d: total(("pod", 2, False), ewma_levels(log, levels, d, 0.03, whole_run)[0]) for d in decays
    }
    return counts, by_decay, n
