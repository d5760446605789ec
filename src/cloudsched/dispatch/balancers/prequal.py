"""``prequal``: a pool of reused probes, hot-cold lexicographic choice (Google's Prequal).

Read from the paper (Wydrowski, Kleinberg, Rumble, Radunovic: "Load is not what you should
balance: Introducing Prequal", NSDI 2024); Google's implementation is not public, so the
rules below are our reading, and where the paper leaves room they are ``CHOICE``:

* A server answers a probe with its requests in flight (RIF: every client's, the tasks it
  holds) and the latency a new request would see there: (RIF + 1) x an EWMA (weight 1/16)
  of its own service times (CHOICE: the paper's servers estimate the latency at the
  current RIF from recent queries; an estimate from past response times alone lags, and
  herds every client onto a server whose queue has grown since).
* A query first chooses from its client's pool, then sends ``probe-rate`` probes (a whole
  number of that mean) to uniform servers of the client's subset; the answers join the pool
  for later queries (asynchronous probing; CHOICE: they arrive before the next query).
  A full pool drops its oldest probe.
* Hot-cold lexicographic choice: a probe is hot when its RIF exceeds the ``q-rif`` quantile
  of the RIFs of the client's last 64 probe answers (CHOICE: the window; RIFs of 1023 and
  more count as 1023 there); among the cold
  probes the lowest latency wins, else (all hot) the lowest RIF; ties to the first in the
  pool.  The chosen probe's RIF goes up by one (the client knows it sent one more) and it
  leaves after ``reuse`` queries; probes older than ``max-age`` leave before a choice.
* An empty pool: a uniform server of the subset.
"""

from __future__ import annotations

import math
from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.balancers.slots import (
    X_CHOSEN,
    available,
    builtin,
    dat,
    fallback,
    option_index,
    returned,
    sat,
    sent,
    server,
    start_slots,
    xat,
)
from cloudsched.dispatch.plugin import hook

__all__: list[str] = []  # the policy is reached through the registry

_PQ = option_index("prequal")
O_RATE, O_POOL, O_REUSE, O_MAX_AGE, O_Q = (
    _PQ["probe-rate"],
    _PQ["pool"],
    _PQ["reuse"],
    _PQ["max-age"],
    _PQ["q-rif"],
)
POOL_MAX, HISTORY, RIF_BINS = 64, 64, 1024
_INTS, _FLOATS, _PER_SERVER = 1, 0, 2
G_SERVICE, G_LAST_DONE = range(2)  # per server: EWMA of service times, last completion
# per client: the pool (slot, RIF, latency, time, uses per probe), the RIF history (a ring)
# and how many of its answers hold each RIF (the last bin: that RIF or more)
P_SLOT, P_RIF, P_LAT, P_TIME, P_USES = range(5)
PROBE_COLS = 5
_PER_CLIENT = POOL_MAX * PROBE_COLS + HISTORY + RIF_BINS
# scratch ints: probes in the pool, answers seen (the history's write position)
X_POOL, X_SEEN = 3, 4
LATENCY_WEIGHT = 1.0 / 16.0


@kernel(nrt=False, inline=True)
def _probe_at(par, m, i, col):
    """Index in ``st.fmem`` of column ``col`` of probe ``i`` of client ``m``'s pool."""
    return dat(par, _FLOATS, _PER_SERVER, _PER_CLIENT, m, i * PROBE_COLS + col)


@kernel(nrt=False, inline=True)
def _history_at(par, m, i):
    """Index in ``st.fmem`` of entry ``i`` of client ``m``'s RIF history."""
    return dat(par, _FLOATS, _PER_SERVER, _PER_CLIENT, m, POOL_MAX * PROBE_COLS + i)


@kernel(nrt=False, inline=True)
def _bin_at(par, m, rif):
    """Index in ``st.fmem`` of client ``m``'s count of answers with RIF ``rif``."""
    b = min(int(rif), RIF_BINS - 1)
    return dat(par, _FLOATS, _PER_SERVER, _PER_CLIENT, m, POOL_MAX * PROBE_COLS + HISTORY + b)


@kernel(nrt=False, inline=True)
def _drop(st, par, m, i):
    """Remove probe ``i`` from client ``m``'s pool (the last one takes its place)."""
    i_size = xat(par, _INTS, m, X_POOL)
    last = st.mem[i_size] - 1
    for col in range(PROBE_COLS):
        st.fmem[_probe_at(par, m, i, col)] = st.fmem[_probe_at(par, m, last, col)]
    st.mem[i_size] = last


@kernel(nrt=False, inline=True)
def _threshold(st, par, m):
    """Return the q-rif quantile of client ``m``'s recent probe answers (nearest rank).

    Read off the counts per RIF (CHOICE: RIFs of 1023 and more share the last bin).
    """
    seen = min(st.mem[xat(par, _INTS, m, X_SEEN)], HISTORY)
    if seen == 0:
        return math.inf
    rank = max(1, math.ceil(par.opt[O_Q] * seen))
    total = 0.0
    for b in range(RIF_BINS):
        total += st.fmem[_bin_at(par, m, b)]
        if total >= rank:
            return float(b) if b < RIF_BINS - 1 else math.inf
    return math.inf


@kernel(nrt=False, inline=True)
def _choose_from_pool(st, par, m):
    """Hot-cold lexicographic choice among the pool; -1 when it is empty."""
    size = st.mem[xat(par, _INTS, m, X_POOL)]
    if size == 0:
        return -1
    hot = _threshold(st, par, m)
    cold, hottest = -1, -1
    for i in range(size):
        rif = st.fmem[_probe_at(par, m, i, P_RIF)]
        if rif <= hot:
            lat = st.fmem[_probe_at(par, m, i, P_LAT)]
            if cold < 0 or lat < st.fmem[_probe_at(par, m, cold, P_LAT)]:
                cold = i
        elif hottest < 0 or rif < st.fmem[_probe_at(par, m, hottest, P_RIF)]:
            hottest = i
    return cold if cold >= 0 else hottest


@kernel(nrt=False, inline=True)
def _probe(st, par, rng, m, k):
    """Send one probe to a uniform server of client ``m``'s first ``k`` slots."""
    j = v.uniform(rng, k)
    s = server(st, par, m, j)
    i_size = xat(par, _INTS, m, X_POOL)
    size = st.mem[i_size]
    if size >= int(par.opt[O_POOL]):  # full: the oldest leaves
        oldest = 0
        for i in range(1, size):
            if st.fmem[_probe_at(par, m, i, P_TIME)] < st.fmem[_probe_at(par, m, oldest, P_TIME)]:
                oldest = i
        _drop(st, par, m, oldest)
        size -= 1
    rif = float(v.queue_length(st, s))
    st.fmem[_probe_at(par, m, size, P_SLOT)] = j
    st.fmem[_probe_at(par, m, size, P_RIF)] = rif
    service = st.fmem[sat(par, _FLOATS, G_SERVICE, s)]
    st.fmem[_probe_at(par, m, size, P_LAT)] = (rif + 1.0) * service
    st.fmem[_probe_at(par, m, size, P_TIME)] = v.now(st)
    st.fmem[_probe_at(par, m, size, P_USES)] = 0.0
    st.mem[i_size] = size + 1
    i_seen = xat(par, _INTS, m, X_SEEN)
    i_ring = _history_at(par, m, st.mem[i_seen] % HISTORY)
    if st.mem[i_seen] >= HISTORY:  # the oldest answer leaves the counts
        st.fmem[_bin_at(par, m, st.fmem[i_ring])] -= 1.0
    st.fmem[i_ring] = rif
    st.fmem[_bin_at(par, m, rif)] += 1.0
    st.mem[i_seen] += 1


@builtin("prequal", _INTS, _FLOATS, _PER_SERVER, _PER_CLIENT)
class Prequal:
    """A pool of reused probes; the coldest by latency, else the least in flight (Prequal)."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, _INTS)
        for s in range(par.n):
            st.fmem[sat(par, _FLOATS, G_SERVICE, s)] = 0.0
            st.fmem[sat(par, _FLOATS, G_LAST_DONE, s)] = 0.0
        for m in range(par.m):
            for b in range(RIF_BINS):
                st.fmem[_bin_at(par, m, b)] = 0.0

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, _INTS, m)
        if k == 0:
            return fallback(st, par, rng, _INTS, m)
        now = v.now(st)
        i = 0
        while i < st.mem[xat(par, _INTS, m, X_POOL)]:  # probes too old, or of absent slots
            stale = now - st.fmem[_probe_at(par, m, i, P_TIME)] > par.opt[O_MAX_AGE]
            if stale or st.fmem[_probe_at(par, m, i, P_SLOT)] >= k:
                _drop(st, par, m, i)
            else:
                i += 1
        i = _choose_from_pool(st, par, m)
        if i < 0:
            j = v.uniform(rng, k)
        else:
            j = int(st.fmem[_probe_at(par, m, i, P_SLOT)])
            st.fmem[_probe_at(par, m, i, P_RIF)] += 1.0
            st.fmem[_probe_at(par, m, i, P_USES)] += 1.0
            if st.fmem[_probe_at(par, m, i, P_USES)] >= par.opt[O_REUSE]:
                _drop(st, par, m, i)
        rate = par.opt[O_RATE]
        probes = int(rate)
        if rate > probes and rng.random() < rate - probes:
            probes += 1
        for _ in range(probes):
            _probe(st, par, rng, m, k)
        v.count(st, v.PROBE, probes)
        st.mem[xat(par, _INTS, m, X_CHOSEN)] = j
        return server(st, par, m, j)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, _INTS, s, m)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        returned(st, par, _INTS)
        now = v.now(st)
        i_done = sat(par, _FLOATS, G_LAST_DONE, s)
        # FIFO: the task started when it arrived or when the one before it left
        service = now - max(now - v.last_response_time(st), st.fmem[i_done])
        st.fmem[i_done] = now
        i_svc = sat(par, _FLOATS, G_SERVICE, s)  # the server's own estimate
        old = st.fmem[i_svc]
        st.fmem[i_svc] = service if old == 0.0 else old + LATENCY_WEIGHT * (service - old)
