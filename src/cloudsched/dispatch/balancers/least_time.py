"""``least-time``: NGINX least_time, every server's average time x (1 + connections).

NGINX scans every peer per request (ngx_http_upstream_get_least_time_peer) and breaks ties
by smooth weighted round robin among the tied.  With equal weights and without
``inflight`` (the defaults) the kernel gives the same choices in O(log S) per event: a
tournament tree per client over its slots orders them by (estimated time, round-robin
weight, slot); a tie's round-robin step adds one to every tied slot, which is one lazy
counter per estimated time (a slot's current weight is its stored value plus the counter
of its class); a second tree holds when each slot's estimate next halves (NGINX halves
the average of a peer unchecked for ``fail_timeout``).  Weighted servers, or ``inflight``
(which updates every busy peer's estimate on every request), take NGINX's scan.
"""

from __future__ import annotations

import math
from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.balancers.ngx_time import (
    F_AVG,
    F_CHECKED,
    F_CURRENT,
    F_ETA,
    F_IF_CHANGED,
    F_IF_LAST,
    F_IF_REQS,
    F_IF_TIME,
    LT_INTS,
    O_INFLIGHT,
    inflight_done,
    next_change,
    ngx_avg,
    ngx_msec,
    ngx_seconds,
)
from cloudsched.dispatch.balancers.ngx_time import eta as estimate
from cloudsched.dispatch.balancers.slots import (
    O_JOIN_N,
    O_WEIGHTS,
    X_CHOSEN,
    X_JOINED,
    X_PRESENT,
    available,
    builtin,
    dat,
    fallback,
    fat,
    joined,
    returned,
    sent,
    server,
    start_slots,
    weight,
    xat,
)
from cloudsched.dispatch.plugin import hook

__all__: list[str] = []  # the policy is reached through the registry

# the trees, two regions (2 S nodes) per field: estimate, stored current weight, slot, how
# many share the least estimate; when the estimate next changes (s), and its slot
T_KEY, T_STORED, T_SLOT, T_COUNT, T_NEXT, T_NSLOT = 8, 10, 12, 14, 16, 18
_LT_FLOATS = 20
# the lazy round-robin counters, one per estimate / 20 ms below CLASSES x 20 ms (a larger
# estimate's ties are stepped one by one)
CLASSES = 4096


# -- the trees (equal weights, no inflight) -------------------------------------------------
@kernel(nrt=False, inline=True)
def _tree(par):
    """Whether the kernel keeps the trees (else it scans as NGINX does)."""
    return par.opt[O_WEIGHTS] < 0.5 and par.opt[O_INFLIGHT] < 0.5


@kernel(nrt=False, inline=True)
def _node(par, field, m, i):
    """Index in ``st.fmem`` of ``field`` of node ``i`` (1 .. 2 S - 1) of client ``m``'s tree."""
    return fat(par, field, 0) + m * 2 * par.slots + i


@kernel(nrt=False, inline=True)
def _lazy(st, par, key, m):
    """Index of the lazy counter of estimate ``key`` (-1: stepped one by one, or none)."""
    c = key / 20.0
    if c < CLASSES:
        return dat(par, _LT_FLOATS, 0, CLASSES, m, int(c))
    return -1


@kernel(nrt=False, inline=True)
def _better(st, par, m, a, b):
    """Whether node ``a`` orders before ``b``: lower estimate, higher weight, lower slot."""
    ka, kb = st.fmem[_node(par, T_KEY, m, a)], st.fmem[_node(par, T_KEY, m, b)]
    if ka != kb:
        return ka < kb
    sa, sb = st.fmem[_node(par, T_STORED, m, a)], st.fmem[_node(par, T_STORED, m, b)]
    if sa != sb:
        return sa > sb
    return st.fmem[_node(par, T_SLOT, m, a)] < st.fmem[_node(par, T_SLOT, m, b)]


@kernel(nrt=False)
def _pull(st, par, m, i):
    """Recompute node ``i`` of the order tree from its children; whether it changed."""
    a, b = 2 * i, 2 * i + 1
    w, o = (a, b) if _better(st, par, m, a, b) else (b, a)
    i_key, i_stored = _node(par, T_KEY, m, i), _node(par, T_STORED, m, i)
    i_slot, i_count = _node(par, T_SLOT, m, i), _node(par, T_COUNT, m, i)
    key = st.fmem[_node(par, T_KEY, m, w)]
    stored = st.fmem[_node(par, T_STORED, m, w)]
    slot = st.fmem[_node(par, T_SLOT, m, w)]
    count = st.fmem[_node(par, T_COUNT, m, w)]
    if st.fmem[_node(par, T_KEY, m, o)] == key:
        count += st.fmem[_node(par, T_COUNT, m, o)]
    same = (
        st.fmem[i_key] == key
        and st.fmem[i_stored] == stored
        and st.fmem[i_slot] == slot
        and st.fmem[i_count] == count
    )
    st.fmem[i_key] = key
    st.fmem[i_stored] = stored
    st.fmem[i_slot] = slot
    st.fmem[i_count] = count
    return not same


@kernel(nrt=False)
def _pull_timer(st, par, m, i):
    """Recompute node ``i`` of the timer tree from its children; whether it changed."""
    a, b = 2 * i, 2 * i + 1
    na, nb = st.fmem[_node(par, T_NEXT, m, a)], st.fmem[_node(par, T_NEXT, m, b)]
    n = a if na <= nb else b
    i_next, i_nslot = _node(par, T_NEXT, m, i), _node(par, T_NSLOT, m, i)
    nxt, nslot = st.fmem[_node(par, T_NEXT, m, n)], st.fmem[_node(par, T_NSLOT, m, n)]
    same = st.fmem[i_next] == nxt and st.fmem[i_nslot] == nslot
    st.fmem[i_next] = nxt
    st.fmem[i_nslot] = nslot
    return not same


@kernel(nrt=False, inline=True)
def _pull_all(st, par, m):
    """Recompute every inner node of client ``m``'s trees, bottom up."""
    for i in range(par.slots - 1, 0, -1):
        _pull(st, par, m, i)
        _pull_timer(st, par, m, i)


@kernel(nrt=False, inline=True)
def _refresh(st, par, m, j, now_s, fail_s):
    """Recompute slot ``j``'s leaf and the path above it."""
    slot = m * par.slots + j
    leaf = par.slots + j
    i_key, i_stored = _node(par, T_KEY, m, leaf), _node(par, T_STORED, m, leaf)
    key = estimate(st, par, slot, now_s, fail_s)
    nxt = next_change(st, par, slot, now_s, fail_s)
    old = st.fmem[i_key]
    if key != old:  # the current weight moves from one lazy class to the other
        cur = st.fmem[i_stored]
        lz = _lazy(st, par, old, m) if old < math.inf else -1
        if lz >= 0:
            cur += st.fmem[lz]
        lz = _lazy(st, par, key, m) if key < math.inf else -1
        if lz >= 0:
            cur -= st.fmem[lz]
        st.fmem[i_stored] = cur
        st.fmem[i_key] = key
    i = leaf // 2  # up while the nodes change
    while i >= 1 and _pull(st, par, m, i):
        i //= 2
    i_next = _node(par, T_NEXT, m, leaf)
    if st.fmem[i_next] != nxt:
        st.fmem[i_next] = nxt
        i = leaf // 2
        while i >= 1 and _pull_timer(st, par, m, i):
            i //= 2


@kernel(nrt=False)
def _step_all(st, par, m, key):
    """Step a tie beyond the lazy counters: one more for each tied slot, then the tree."""
    for j in range(par.slots):
        leaf = par.slots + j
        if st.fmem[_node(par, T_KEY, m, leaf)] == key:
            st.fmem[_node(par, T_STORED, m, leaf)] += 1.0
    _pull_all(st, par, m)


@kernel(nrt=False)
def _build(st, par):
    """Every client's trees at the start: its servers there, the joining ones absent."""
    now_s, fail_s = ngx_seconds(par, v.now(st))
    for m in range(par.m):
        for c in range(CLASSES):
            st.fmem[dat(par, _LT_FLOATS, 0, CLASSES, m, c)] = 0.0
        present = st.mem[xat(par, LT_INTS, m, X_PRESENT)]
        for j in range(par.slots):
            leaf, slot = par.slots + j, m * par.slots + j
            there = j < present
            key = estimate(st, par, slot, now_s, fail_s) if there else math.inf
            nxt = next_change(st, par, slot, now_s, fail_s) if there else math.inf
            st.fmem[_node(par, T_KEY, m, leaf)] = key
            st.fmem[_node(par, T_STORED, m, leaf)] = 0.0
            st.fmem[_node(par, T_SLOT, m, leaf)] = j
            st.fmem[_node(par, T_COUNT, m, leaf)] = 1.0
            st.fmem[_node(par, T_NEXT, m, leaf)] = nxt
            st.fmem[_node(par, T_NSLOT, m, leaf)] = j
        _pull_all(st, par, m)


@kernel(nrt=False, inline=True)
def _choose_tree(st, par, m, now):
    """Return the slot NGINX's scan would choose, read off client ``m``'s tree."""
    now_s, fail_s = ngx_seconds(par, now)
    i_joined = xat(par, LT_INTS, m, X_JOINED)
    if st.mem[i_joined] == 0 and int(par.opt[O_JOIN_N]) > 0 and joined(st, par):
        st.mem[i_joined] = 1
        for j in range(st.mem[xat(par, LT_INTS, m, X_PRESENT)], par.slots):
            _refresh(st, par, m, j, now_s, fail_s)
    while st.fmem[_node(par, T_NEXT, m, 1)] <= now_s:  # averages that halve now
        j = int(st.fmem[_node(par, T_NSLOT, m, 1)])
        _refresh(st, par, m, j, now_s, fail_s)
    key = st.fmem[_node(par, T_KEY, m, 1)]
    best = int(st.fmem[_node(par, T_SLOT, m, 1)])
    count = st.fmem[_node(par, T_COUNT, m, 1)]
    if count > 1.0:  # round robin among the tied: each one more, the chosen minus them all
        lz = _lazy(st, par, key, m)
        if lz >= 0:
            st.fmem[lz] += 1.0
        else:
            _step_all(st, par, m, key)
        # the leaf only: the request's arrival recomputes the path (its estimate changes)
        st.fmem[_node(par, T_STORED, m, par.slots + best)] -= count
    return best, now_s, fail_s


@kernel(nrt=False)
def _choose_scan(st, par, m, k, now):
    """NGINX's scan over the first ``k`` slots of client ``m`` (weights, inflight)."""
    now_ms = ngx_msec(par, now)
    now_s, fail_s = ngx_seconds(par, now)
    inflight = par.opt[O_INFLIGHT] > 0.5
    base = m * par.slots
    best, best_eta, best_w, many = -1, 0.0, 1.0, False
    for j in range(k):
        slot = base + j
        reqs = st.fmem[fat(par, F_IF_REQS, slot)]
        if inflight and reqs > 0:
            ift = math.floor(st.fmem[fat(par, F_IF_LAST, slot)] / reqs) + (
                now_ms - st.fmem[fat(par, F_IF_CHANGED, slot)]
            )
            i_time = fat(par, F_IF_TIME, slot)
            st.fmem[i_time] = ngx_avg(st.fmem[i_time], ift)
        eta = estimate(st, par, slot, now_s, fail_s)
        st.fmem[fat(par, F_ETA, slot)] = eta  # kept for the round robin among the tied
        w = weight(st, par, server(st, par, m, j))
        if best < 0 or eta * best_w < best_eta * w:
            best, best_eta, best_w, many = j, eta, w, False
        elif eta * best_w == best_eta * w:
            many = True
    if many:  # smooth weighted round robin among the tied, from the first of them
        total = 0.0
        for j in range(best, k):
            slot = base + j
            w = weight(st, par, server(st, par, m, j))
            # NGINX compares with the weight of the best so far (best_eta stays)
            if st.fmem[fat(par, F_ETA, slot)] * best_w != best_eta * w:
                continue
            i_cur = fat(par, F_CURRENT, slot)
            st.fmem[i_cur] += w
            total += w
            if st.fmem[i_cur] > st.fmem[fat(par, F_CURRENT, base + best)]:
                best, best_w = j, w
        st.fmem[fat(par, F_CURRENT, base + best)] -= total
    slot = base + best
    if inflight:
        i_reqs, i_changed = fat(par, F_IF_REQS, slot), fat(par, F_IF_CHANGED, slot)
        if st.fmem[i_reqs] > 0:
            st.fmem[fat(par, F_IF_LAST, slot)] += (now_ms - st.fmem[i_changed]) * st.fmem[i_reqs]
        st.fmem[i_changed] = now_ms
        st.fmem[i_reqs] += 1.0
    return best, now_s, fail_s


@builtin("least-time", LT_INTS, _LT_FLOATS, 0, CLASSES)
class LeastTime:
    """The least average time x (1 + connections) (NGINX least_time)."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, LT_INTS)
        for k in range(_LT_FLOATS):
            for slot in range(par.m * par.slots):
                st.fmem[fat(par, k, slot)] = 0.0
        if _tree(par):
            _build(st, par)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, LT_INTS, m)
        if k == 0:
            return fallback(st, par, rng, LT_INTS, m)
        now = v.now(st)
        if _tree(par):
            best, now_s, fail_s = _choose_tree(st, par, m, now)
        else:
            best, now_s, fail_s = _choose_scan(st, par, m, k, now)
        i_checked = fat(par, F_CHECKED, m * par.slots + best)
        if now_s - st.fmem[i_checked] > fail_s:
            st.fmem[i_checked] = now_s
        st.mem[xat(par, LT_INTS, m, X_CHOSEN)] = best
        return server(st, par, m, best)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, LT_INTS, s, m)
        j = st.mem[xat(par, LT_INTS, m, X_CHOSEN)]
        if j >= 0 and _tree(par):
            now_s, fail_s = ngx_seconds(par, v.now(st))
            _refresh(st, par, m, j, now_s, fail_s)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        slot = returned(st, par, LT_INTS)
        if slot < 0:
            return
        now = v.now(st)
        now_ms = ngx_msec(par, now)
        last = now_ms - ngx_msec(par, now - v.last_response_time(st))  # whole ms, as NGINX logs
        if par.opt[O_INFLIGHT] > 0.5:
            inflight_done(st, par, slot, now_ms, last)
        i_avg = fat(par, F_AVG, slot)
        st.fmem[i_avg] = ngx_avg(st.fmem[i_avg], last)
        if _tree(par):
            now_s, fail_s = ngx_seconds(par, now)
            _refresh(st, par, slot // par.slots, slot % par.slots, now_s, fail_s)
