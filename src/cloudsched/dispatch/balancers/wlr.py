"""``wlr``: Envoy's least request, P2C on active requests or a weighted EDF schedule."""

from __future__ import annotations

from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.balancers.slots import (
    O_JOIN_N,
    O_JOIN_T,
    O_UNIT,
    X_CHOSEN,
    X_EDF,
    X_HEAP,
    X_JOINED,
    Y_ORDER,
    Y_TIME,
    available,
    builtin,
    fallback,
    fat,
    iat,
    in_flight,
    joined,
    joining,
    option_index,
    returned,
    sent,
    server,
    start_slots,
    weight,
    xat,
    yat,
)
from cloudsched.dispatch.plugin import hook

__all__: list[str] = []  # the policy is reached through the registry

_WL = option_index("wlr")
O_CHOICES, O_BIAS = _WL["choice-count"], _WL["active-request-bias"]
O_WINDOW, O_AGGRESSION, O_MIN_PCT = (
    _WL["slow-start-window"],
    _WL["aggression"],
    _WL["min-weight-percent"],
)

# -- wlr: Envoy's least request ------------------------------------------------------------
_WLR_INTS, _WLR_FLOATS = 2, 2  # in flight, heap entry; EDF deadline, order
I_HEAP = 1
F_DEADLINE, F_ORDER = range(2)


@kernel(nrt=False, inline=True)
def _slow_start(st, par, s):
    """Envoy's applySlowStartFactor for server ``s`` (1 outside a joining host's window)."""
    window = par.opt[O_WINDOW]
    if window <= 0.0 or not joining(par, s):
        return 1.0
    age = v.now(st) - par.opt[O_JOIN_T]
    if age >= window:
        return 1.0
    one_ms = 0.001 / par.opt[O_UNIT]
    factor = max(one_ms, age) / window
    aggression = par.opt[O_AGGRESSION]
    if aggression != 1.0 and factor != 1.0:
        factor = factor ** (1.0 / aggression)
    return max(factor, par.opt[O_MIN_PCT] / 100.0)


@kernel(nrt=False, inline=True)
def _wlr_weight(st, par, m, j):
    """LeastRequestLoadBalancer::hostWeight: weight / (active + 1)^bias, then slow start."""
    s = server(st, par, m, j)
    w = weight(st, par, s)
    active = in_flight(st, par, _WLR_INTS, m * par.slots + j) + 1.0
    bias = par.opt[O_BIAS]
    if bias == 1.0:
        w = w / active
    elif bias != 0.0:
        w = w / active**bias
    return w * _slow_start(st, par, s)


@kernel(nrt=False, inline=True)
def _before(st, par, a, b):
    """EDF order: slot ``a``'s entry comes before ``b``'s (deadline, then order)."""
    da, db = st.fmem[fat(par, F_DEADLINE, a)], st.fmem[fat(par, F_DEADLINE, b)]
    if da != db:
        return da < db
    return st.fmem[fat(par, F_ORDER, a)] < st.fmem[fat(par, F_ORDER, b)]


@kernel(nrt=False, inline=True)
def _heap_up(st, par, m, i):
    """Sift heap entry ``i`` of dispatcher ``m`` up (entries are slots)."""
    base = iat(par, _WLR_INTS, I_HEAP, m * par.slots)
    item = st.mem[base + i]
    while i > 0:
        p = (i - 1) // 2
        if not _before(st, par, item, st.mem[base + p]):
            break
        st.mem[base + i] = st.mem[base + p]
        i = p
    st.mem[base + i] = item


@kernel(nrt=False, inline=True)
def _heap_down(st, par, m, size):
    """Sift the root of dispatcher ``m``'s heap of ``size`` entries down."""
    base = iat(par, _WLR_INTS, I_HEAP, m * par.slots)
    item = st.mem[base]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _before(st, par, st.mem[base + c + 1], st.mem[base + c]):
            c += 1
        if not _before(st, par, st.mem[base + c], item):
            break
        st.mem[base + i] = st.mem[base + c]
        i = c
    st.mem[base + i] = item


@kernel(nrt=False, inline=True)
def _edf_add(st, par, m, j, weight):
    """EdfScheduler::add: deadline = current time + 1 / weight, then the next order number."""
    slot = m * par.slots + j
    i_time = yat(par, _WLR_FLOATS, m, Y_TIME)
    i_order = yat(par, _WLR_FLOATS, m, Y_ORDER)
    st.fmem[fat(par, F_DEADLINE, slot)] = st.fmem[i_time] + 1.0 / weight
    st.fmem[fat(par, F_ORDER, slot)] = st.fmem[i_order]
    st.fmem[i_order] += 1.0
    size = st.mem[xat(par, _WLR_INTS, m, X_HEAP)]
    st.mem[iat(par, _WLR_INTS, I_HEAP, m * par.slots) + size] = slot
    st.mem[xat(par, _WLR_INTS, m, X_HEAP)] = size + 1
    _heap_up(st, par, m, size)


@kernel(nrt=False, inline=True)
def _edf_pick_and_add(st, par, m):
    """EdfScheduler::pickAndAdd: the earliest deadline, added back at its weight now."""
    size = st.mem[xat(par, _WLR_INTS, m, X_HEAP)]
    base = iat(par, _WLR_INTS, I_HEAP, m * par.slots)
    slot = st.mem[base]
    st.fmem[yat(par, _WLR_FLOATS, m, Y_TIME)] = st.fmem[fat(par, F_DEADLINE, slot)]
    st.mem[base] = st.mem[base + size - 1]
    st.mem[xat(par, _WLR_INTS, m, X_HEAP)] = size - 1
    _heap_down(st, par, m, size - 1)
    j = slot - m * par.slots
    _edf_add(st, par, m, j, _wlr_weight(st, par, m, j))
    return j


@kernel(nrt=False, inline=True)
def _edf_build(st, par, rng, m, k):
    """Build a schedule of ``k`` slots (a host-set change), desynchronised by uniform picks."""
    st.mem[xat(par, _WLR_INTS, m, X_HEAP)] = 0
    st.fmem[yat(par, _WLR_FLOATS, m, Y_TIME)] = 0.0
    for j in range(k):
        _edf_add(st, par, m, j, _wlr_weight(st, par, m, j))
    for _ in range(v.uniform(rng, k)):  # CHOICE: Envoy's seed % hosts picks, seed uniform
        _edf_pick_and_add(st, par, m)


@kernel(nrt=False, inline=True)
def _weights_differ(st, par, m, k):
    """Whether the configured weights of dispatcher ``m``'s first ``k`` slots differ."""
    w0 = weight(st, par, server(st, par, m, 0))
    differ = False
    for j in range(1, k):
        differ = differ or weight(st, par, server(st, par, m, j)) != w0
    return differ


@builtin("wlr", _WLR_INTS, _WLR_FLOATS)
class WeightedLeastRequest:
    """Envoy's least request: P2C on active requests, or EDF of weight / (active + 1)^bias."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, _WLR_INTS)
        for m in range(par.m):
            st.fmem[yat(par, _WLR_FLOATS, m, Y_ORDER)] = 0.0
            k = available(st, par, _WLR_INTS, m)
            if k > 0 and _weights_differ(st, par, m, k):
                st.mem[xat(par, _WLR_INTS, m, X_EDF)] = 1
                _edf_build(st, par, rng, m, k)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, _WLR_INTS, m)
        if k == 0:
            return fallback(st, par, rng, _WLR_INTS, m)
        i_joined = xat(par, _WLR_INTS, m, X_JOINED)
        if int(par.opt[O_JOIN_N]) > 0 and st.mem[i_joined] == 0 and joined(st, par):
            st.mem[i_joined] = 1  # the host set changed: a new schedule
            slow = par.opt[O_WINDOW] > 0.0
            if slow or _weights_differ(st, par, m, k):
                st.mem[xat(par, _WLR_INTS, m, X_EDF)] = 1
                _edf_build(st, par, rng, m, k)
            else:
                st.mem[xat(par, _WLR_INTS, m, X_EDF)] = 0
        if st.mem[xat(par, _WLR_INTS, m, X_EDF)] == 1:
            j = _edf_pick_and_add(st, par, m)
        else:  # unweightedHostPick, N_CHOICES: with replacement, the first of the least
            j = -1
            base = m * par.slots
            for _ in range(int(par.opt[O_CHOICES])):
                c = v.uniform(rng, k)
                if j < 0 or in_flight(st, par, _WLR_INTS, base + c) < in_flight(
                    st, par, _WLR_INTS, base + j
                ):
                    j = c
        st.mem[xat(par, _WLR_INTS, m, X_CHOSEN)] = j
        return server(st, par, m, j)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, _WLR_INTS, s, m)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        returned(st, par, _WLR_INTS)
