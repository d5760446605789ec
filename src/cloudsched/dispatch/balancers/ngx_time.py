"""NGINX's least_time arithmetic: clocks, average, a peer's estimate, inflight bookkeeping.

As ngx_http_upstream_least_time_module computes them.

Shared by the kernel's scan and its tree (:mod:`cloudsched.dispatch.balancers.least_time`).
Per-slot floats ``F_*`` are the first regions of the policy's slot memory.
"""

from __future__ import annotations

import math

from cloudsched._jit import kernel
from cloudsched.dispatch.balancers.slots import O_UNIT, fat, in_flight, option_index

__all__ = [
    "F_AVG",
    "F_CHECKED",
    "F_CURRENT",
    "F_ETA",
    "F_IF_CHANGED",
    "F_IF_LAST",
    "F_IF_REQS",
    "F_IF_TIME",
    "LT_INTS",
    "O_FAIL_TIMEOUT",
    "O_INFLIGHT",
    "eta",
    "halvings",
    "inflight_done",
    "next_change",
    "ngx_avg",
    "ngx_cluster",
    "ngx_halvings",
    "ngx_msec",
    "ngx_seconds",
]

LT_INTS = 1  # ints per slot: requests in flight
_LT = option_index("least-time")
O_INFLIGHT, O_FAIL_TIMEOUT = _LT["inflight"], _LT["fail-timeout"]

# average time (ms), last check (s), inflight: accumulated time, last change (ms), requests,
# average inflight time (ms); smooth weighted round robin's current weight; the estimated
# time of the last choice
F_AVG, F_CHECKED, F_IF_LAST, F_IF_CHANGED, F_IF_REQS, F_IF_TIME, F_CURRENT, F_ETA = range(8)


@kernel(nrt=False, inline=True)
def ngx_avg(old, value):
    """NGINX's ngx_http_upstream_response_time_avg: an EWMA of weight 0.05, whole ms."""
    if old == 0.0:
        return value
    return math.floor(0.5 + value * 0.05 + old * 0.95)


@kernel(nrt=False, inline=True)
def ngx_msec(par, t):
    """NGINX's millisecond clock (ngx_current_msec) at simulated time ``t``."""
    return math.floor(t * par.opt[O_UNIT] * 1000.0)


@kernel(nrt=False, inline=True)
def ngx_seconds(par, t):
    """NGINX's second clock (ngx_time) at ``t``, and fail_timeout in whole seconds."""
    return math.floor(t * par.opt[O_UNIT]), math.floor(par.opt[O_FAIL_TIMEOUT] * par.opt[O_UNIT])


@kernel(nrt=False, inline=True)
def ngx_halvings(elapsed, fail_s):
    """Halvings after ``elapsed`` seconds unchecked: one per fail_timeout, after the first."""
    return math.floor(elapsed / (fail_s + 1.0)) if elapsed > fail_s else 0.0


@kernel(nrt=False, inline=True)
def ngx_cluster(rt):
    """ngx_http_upstream_least_time_eta's rounding: the next 20 ms, 5000 ms at most."""
    return 5000.0 if rt > 5000.0 else rt + 20.0 - rt % 20.0


@kernel(nrt=False, inline=True)
def halvings(st, par, slot, now_s, fail_s):
    """Halvings of ``slot``'s average: one per fail_timeout unchecked, after the first."""
    return ngx_halvings(now_s - st.fmem[fat(par, F_CHECKED, slot)], fail_s)


@kernel(nrt=False, inline=True)
def eta(st, par, slot, now_s, fail_s):
    """ngx_http_upstream_least_time_eta: the estimated time to finish what ``slot`` holds."""
    rt = st.fmem[fat(par, F_AVG, slot)]
    shift = halvings(st, par, slot, now_s, fail_s)
    if shift > 0.0:  # halved once per fail_timeout unchosen
        rt = math.floor(rt / 2.0**shift) if shift < 64 else 0.0
    if st.fmem[fat(par, F_IF_REQS, slot)] > 0:
        rt = max(rt, st.fmem[fat(par, F_IF_TIME, slot)])
    # 20 ms clusters; past 5000 ms equally bad: least connections among them
    return ngx_cluster(rt) * (1.0 + in_flight(st, par, LT_INTS, slot))


@kernel(nrt=False, inline=True)
def inflight_done(st, par, slot, now_ms, last):
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


@kernel(nrt=False, inline=True)
def next_change(st, par, slot, now_s, fail_s):
    """NGINX second at which ``slot``'s estimate may next change by itself (inf: never)."""
    avg = st.fmem[fat(par, F_AVG, slot)]
    if avg == 0.0:
        return math.inf
    shift = halvings(st, par, slot, now_s, fail_s)
    if shift > 0.0 and (shift >= 64 or math.floor(avg / 2.0**shift) == 0.0):
        return math.inf
    return st.fmem[fat(par, F_CHECKED, slot)] + (shift + 1.0) * (fail_s + 1.0)
