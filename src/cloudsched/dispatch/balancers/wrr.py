"""``wrr``: gRPC weighted round robin, weights from the servers' load reports (gRPC A58).

A server measures, over complete windows of ``server-window`` (CHOICE: ORCA leaves the
measurement to the application), its completions per second and its utilisation (the
share of the window it was busy); every response carries the last window's values (A58's
default: per-call reports, no out-of-band stream).  A client's weight for that server is
qps / utilisation (no errors here, so no error penalty): the server's speed as its own
measurements see it, whatever its queue.  It is used once the server has reported for
``blackout-period`` and forgotten when not refreshed for ``weight-expiration-period``.
Every ``weight-update-period`` (CHOICE: on that period's grid from time 0, and when the
candidate set changes) the client rebuilds gRPC's static stride schedule
(``static_stride_scheduler.cc``: weights scaled so the largest is 65535, capped at 10x their
mean and floored at 1% of it, unknown weights at the mean; fewer than two servers or no
known weight: round robin).  Picks walk one 32-bit sequence per client, started at a
uniform value.
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
    fat,
    iat,
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

_WR = option_index("wrr")
O_PERIOD, O_BLACKOUT, O_EXPIRY, O_WINDOW = (
    _WR["weight-update-period"],
    _WR["blackout-period"],
    _WR["weight-expiration-period"],
    _WR["server-window"],
)
MAX_WEIGHT, OFFSET = 65535, 32767
MAX_RATIO, MIN_RATIO = 10.0, 0.01
_INTS, _FLOATS, _PER_SERVER = 2, 3, 9
I_SCALED = 1  # per slot int: the schedule's weight
F_WEIGHT, F_SINCE, F_UPDATED = range(3)  # per slot: weight, reporting since, last report
# per server: busy time and completions up to the last event there, its time, busy then,
# the window it is in, busy time and completions when that window opened, and those of
# the last complete window
G_BUSY, G_DONE, G_CHANGED, G_IS_BUSY, G_WIN, G_WIN_BUSY, G_WIN_DONE, G_LAST_BUSY, G_LAST_DONE = (
    range(9)
)
X_SEQUENCE, X_BUILT, X_SCHEDULE = 3, 4, 5  # sequence; slots built for; 1: stride, 0: rr
Y_NEXT = 0  # scratch float: when the schedule is rebuilt next


@kernel(nrt=False, inline=True)
def _g(st, par, g, s):
    """Return server ``s``'s float ``g``."""
    return st.fmem[sat(par, _FLOATS, g, s)]


@kernel(nrt=False, inline=True)
def _set_g(st, par, g, s, value):
    """Set server ``s``'s float ``g``."""
    st.fmem[sat(par, _FLOATS, g, s)] = value


@kernel(nrt=False, inline=True)
def _server_event(st, par, s, completed):
    """Bring server ``s``'s load report up to now, before an arrival or a completion there."""
    now, width = v.now(st), par.opt[O_WINDOW]
    window = math.floor(now / width)
    busy = _g(st, par, G_IS_BUSY, s)
    changed = _g(st, par, G_CHANGED, s)
    if window > _g(st, par, G_WIN, s):
        t1 = window * width  # the latest window boundary
        if window == _g(st, par, G_WIN, s) + 1:  # the window this server was in closed at t1
            at_t1 = _g(st, par, G_BUSY, s) + busy * (t1 - changed)
            _set_g(st, par, G_LAST_BUSY, s, at_t1 - _g(st, par, G_WIN_BUSY, s))
            _set_g(st, par, G_LAST_DONE, s, _g(st, par, G_DONE, s) - _g(st, par, G_WIN_DONE, s))
        else:  # no event in [t1 - width, t1]: busy all of it or none, no completion
            _set_g(st, par, G_LAST_BUSY, s, busy * width)
            _set_g(st, par, G_LAST_DONE, s, 0.0)
        _set_g(st, par, G_WIN, s, window)
        _set_g(st, par, G_WIN_BUSY, s, _g(st, par, G_BUSY, s) + busy * (t1 - changed))
        _set_g(st, par, G_WIN_DONE, s, _g(st, par, G_DONE, s))
    _set_g(st, par, G_BUSY, s, _g(st, par, G_BUSY, s) + busy * (now - changed))
    _set_g(st, par, G_CHANGED, s, now)
    _set_g(st, par, G_DONE, s, _g(st, par, G_DONE, s) + completed)
    _set_g(st, par, G_IS_BUSY, s, 1.0 if v.queue_length(st, s) > 0 else 0.0)


@kernel(nrt=False, inline=True)
def _usable(st, par, slot, now):
    """Return the weight of ``slot`` the schedule may use now (0: unknown, as gRPC's GetWeight)."""
    since = st.fmem[fat(par, F_SINCE, slot)]
    if since < 0.0:
        return 0.0
    if now - st.fmem[fat(par, F_UPDATED, slot)] >= par.opt[O_EXPIRY]:
        st.fmem[fat(par, F_SINCE, slot)] = -1.0  # expired: the blackout starts again
        return 0.0
    if now - since < par.opt[O_BLACKOUT]:
        return 0.0
    return st.fmem[fat(par, F_WEIGHT, slot)]


@kernel(nrt=False, inline=True)
def _lround(x):
    """C's lround for x >= 0: halves away from zero."""
    return math.floor(x + 0.5)


@kernel(nrt=False, inline=True)
def _build(st, par, m, k, now):
    """StaticStrideScheduler::Make over client ``m``'s first ``k`` slots (0: round robin)."""
    base = m * par.slots
    total, largest, known = 0.0, 0.0, 0
    for j in range(k):
        w = _usable(st, par, base + j, now)
        total += w
        largest = max(largest, w)
        if w > 0.0:
            known += 1
    if k < 2 or known == 0:
        return 0
    mean = total / known
    largest = min(largest, MAX_RATIO * mean)
    scale = MAX_WEIGHT / largest
    scaled_mean = _lround(scale * mean)
    floor = max(1, _lround(scaled_mean * MIN_RATIO))
    for j in range(k):
        w = _usable(st, par, base + j, now)
        scaled = scaled_mean if w == 0.0 else max(_lround(min(w, largest) * scale), floor)
        st.mem[iat(par, _INTS, I_SCALED, base + j)] = scaled
    return 1


@kernel(nrt=False, inline=True)
def _next(st, par, m):
    """Return the client's next sequence number (a 32-bit counter, as gRPC's)."""
    i_seq = xat(par, _INTS, m, X_SEQUENCE)
    seq = st.mem[i_seq]
    st.mem[i_seq] = (seq + 1) & 0xFFFFFFFF
    return seq


@builtin("wrr", _INTS, _FLOATS, _PER_SERVER)
class WeightedRoundRobin:
    """gRPC weighted round robin: a static stride schedule of reported qps / utilisation."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, _INTS)
        for slot in range(par.m * par.slots):
            st.fmem[fat(par, F_WEIGHT, slot)] = 0.0
            st.fmem[fat(par, F_SINCE, slot)] = -1.0
            st.fmem[fat(par, F_UPDATED, slot)] = 0.0
        for s in range(par.n):
            for g in range(_PER_SERVER):
                _set_g(st, par, g, s, 0.0)
            _set_g(st, par, G_IS_BUSY, s, 1.0 if v.queue_length(st, s) > 0 else 0.0)
        for m in range(par.m):
            st.mem[xat(par, _INTS, m, X_SEQUENCE)] = int(rng.random() * 4294967296.0)
            st.fmem[dat(par, _FLOATS, _PER_SERVER, 0, m, Y_NEXT)] = 0.0

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, _INTS, m)
        if k == 0:
            return fallback(st, par, rng, _INTS, m)
        now = v.now(st)
        i_next = dat(par, _FLOATS, _PER_SERVER, 0, m, Y_NEXT)
        if now >= st.fmem[i_next] or st.mem[xat(par, _INTS, m, X_BUILT)] != k:
            st.mem[xat(par, _INTS, m, X_SCHEDULE)] = _build(st, par, m, k, now)
            st.mem[xat(par, _INTS, m, X_BUILT)] = k
            period = par.opt[O_PERIOD]
            st.fmem[i_next] = (math.floor(now / period) + 1.0) * period
        if st.mem[xat(par, _INTS, m, X_SCHEDULE)] == 0:
            j = _next(st, par, m) % k
        else:
            while True:  # StaticStrideScheduler::Pick
                seq = _next(st, par, m)
                j = seq % k
                w = st.mem[iat(par, _INTS, I_SCALED, m * par.slots + j)]
                if (w * (seq // k) + j * OFFSET) % MAX_WEIGHT >= MAX_WEIGHT - w:
                    break
        st.mem[xat(par, _INTS, m, X_CHOSEN)] = j
        return server(st, par, m, j)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, _INTS, s, m)
        _server_event(st, par, s, 0.0)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        _server_event(st, par, s, 1.0)
        slot = returned(st, par, _INTS)
        if slot < 0:
            return
        width = par.opt[O_WINDOW]
        busy = _g(st, par, G_LAST_BUSY, s) / width
        qps = _g(st, par, G_LAST_DONE, s) / width
        if busy <= 0.0 or qps <= 0.0:  # an empty report changes nothing
            return
        now = v.now(st)
        if st.fmem[fat(par, F_SINCE, slot)] < 0.0:
            st.fmem[fat(par, F_SINCE, slot)] = now
        st.fmem[fat(par, F_UPDATED, slot)] = now
        st.fmem[fat(par, F_WEIGHT, slot)] = qps / busy
