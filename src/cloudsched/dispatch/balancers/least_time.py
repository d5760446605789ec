"""``least-time``: NGINX least_time, every server's average time x (1 + connections)."""

from __future__ import annotations

import math
from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.balancers.slots import (
    O_UNIT,
    X_CHOSEN,
    available,
    builtin,
    fallback,
    fat,
    in_flight,
    option_index,
    returned,
    sent,
    server,
    start_slots,
    weight,
    xat,
)
from cloudsched.dispatch.plugin import hook

__all__: list[str] = []  # the policy is reached through the registry

_LT = option_index("least-time")
O_INFLIGHT, O_FAIL_TIMEOUT = _LT["inflight"], _LT["fail-timeout"]

# -- least-time: NGINX ---------------------------------------------------------------------
_LT_INTS, _LT_FLOATS = 1, 8
# average time (ms), last check (s), inflight: accumulated time, last change (ms), requests,
# average inflight time (ms); smooth weighted round robin's current weight; the estimated
# time of the last choice
F_AVG, F_CHECKED, F_IF_LAST, F_IF_CHANGED, F_IF_REQS, F_IF_TIME, F_CURRENT, F_ETA = range(8)


@kernel(nrt=False, inline=True)
def _ngx_avg(old, value):
    """NGINX's ngx_http_upstream_response_time_avg: an EWMA of weight 0.05, whole ms."""
    if old == 0.0:
        return value
    return math.floor(0.5 + value * 0.05 + old * 0.95)


@kernel(nrt=False, inline=True)
def _ms(par, t):
    """NGINX's millisecond clock (ngx_current_msec) at simulated time ``t``."""
    return math.floor(t * par.opt[O_UNIT] * 1000.0)


@kernel(nrt=False, inline=True)
def _eta(st, par, slot, now_s, fail_s):
    """ngx_http_upstream_least_time_eta: the estimated time to finish what ``slot`` holds."""
    rt = st.fmem[fat(par, F_AVG, slot)]
    elapsed = now_s - st.fmem[fat(par, F_CHECKED, slot)]
    if elapsed > fail_s:  # halved once per fail_timeout unchosen
        shift = math.floor(elapsed / (fail_s + 1.0))
        rt = math.floor(rt / 2.0**shift) if shift < 64 else 0.0
    if st.fmem[fat(par, F_IF_REQS, slot)] > 0:
        rt = max(rt, st.fmem[fat(par, F_IF_TIME, slot)])
    if rt > 5000.0:  # equally bad: least connections among them
        rt = 5000.0
    else:  # 20 ms clusters
        rt += 20.0 - rt % 20.0
    return rt * (1.0 + in_flight(st, par, _LT_INTS, slot))


@kernel(nrt=False, inline=True)
def _inflight_done(st, par, slot, now_ms, last):
    """ngx_http_upstream_least_time_inflight_done for a request of ``last`` ms."""
    i_reqs, i_last = fat(par, F_IF_REQS, slot), fat(par, F_IF_LAST, slot)
    i_changed = fat(par, F_IF_CHANGED, slot)
    if st.fmem[i_reqs] == 1.0:
        st.fmem[i_last] = 0.0
    else:  # CHOICE: kept >= 0 (NGINX's unsigned sum would wrap)
        acc = st.fmem[i_last] + (now_ms - st.fmem[i_changed]) * st.fmem[i_reqs] - last
        st.fmem[i_last] = max(0.0, acc)
        st.fmem[i_changed] = now_ms
    st.fmem[i_reqs] -= 1.0


@builtin("least-time", _LT_INTS, _LT_FLOATS)
class LeastTime:
    """The least average time x (1 + connections) (NGINX least_time)."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, _LT_INTS)
        for k in range(_LT_FLOATS):
            for slot in range(par.m * par.slots):
                st.fmem[fat(par, k, slot)] = 0.0

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, _LT_INTS, m)
        if k == 0:
            return fallback(st, par, rng, _LT_INTS, m)
        now = v.now(st)
        now_ms = _ms(par, now)
        now_s = math.floor(now * par.opt[O_UNIT])
        fail_s = math.floor(par.opt[O_FAIL_TIMEOUT] * par.opt[O_UNIT])
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
                st.fmem[i_time] = _ngx_avg(st.fmem[i_time], ift)
            eta = _eta(st, par, slot, now_s, fail_s)
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
                st.fmem[fat(par, F_IF_LAST, slot)] += (now_ms - st.fmem[i_changed]) * st.fmem[
                    i_reqs
                ]
            st.fmem[i_changed] = now_ms
            st.fmem[i_reqs] += 1.0
        i_checked = fat(par, F_CHECKED, slot)
        if now_s - st.fmem[i_checked] > fail_s:
            st.fmem[i_checked] = now_s
        st.mem[xat(par, _LT_INTS, m, X_CHOSEN)] = best
        return server(st, par, m, best)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, _LT_INTS, s, m)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        slot = returned(st, par, _LT_INTS)
        if slot < 0:
            return
        now = v.now(st)
        now_ms = _ms(par, now)
        last = now_ms - _ms(par, now - v.last_response_time(st))  # whole ms, as NGINX logs
        if par.opt[O_INFLIGHT] > 0.5:
            _inflight_done(st, par, slot, now_ms, last)
        i_avg = fat(par, F_AVG, slot)
        st.fmem[i_avg] = _ngx_avg(st.fmem[i_avg], last)
