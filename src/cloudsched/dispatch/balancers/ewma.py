"""``ewma``: peak-EWMA latency x (in flight + 1) behind P2C (Linkerd, tower, Finagle)."""

from __future__ import annotations

import math
from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.balancers.slots import (
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
    two,
    xat,
)
from cloudsched.dispatch.plugin import hook

__all__: list[str] = []  # the policy is reached through the registry

_EW = option_index("ewma")
O_DECAY, O_DEFAULT_RTT = _EW["decay"], _EW["default-rtt"]

# -- ewma: Linkerd / tower peak EWMA -------------------------------------------------------
_EWMA_INTS, _EWMA_FLOATS = 1, 2  # in flight; estimate, its time stamp
F_EST, F_STAMP = range(2)


@kernel(nrt=False, inline=True)
def _ewma_cost(st, par, slot):
    """Peak-EWMA cost of ``slot``: the estimate decayed to now (stored), x (in flight + 1)."""
    now = v.now(st)
    i_est, i_stamp = fat(par, F_EST, slot), fat(par, F_STAMP, slot)
    w = math.exp(-(now - st.fmem[i_stamp]) / par.opt[O_DECAY])
    st.fmem[i_est] = st.fmem[i_est] * w  # tower decays toward 0 on every read
    st.fmem[i_stamp] = now
    return st.fmem[i_est] * (in_flight(st, par, _EWMA_INTS, slot) + 1)


@builtin("ewma", _EWMA_INTS, _EWMA_FLOATS)
class PeakEwma:
    """P2C on peak-EWMA latency x (in flight + 1) (Linkerd, Finagle, tower)."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        start_slots(st, par, rng, _EWMA_INTS)
        for slot in range(par.m * par.slots):
            st.fmem[fat(par, F_EST, slot)] = par.opt[O_DEFAULT_RTT]
            st.fmem[fat(par, F_STAMP, slot)] = 0.0

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        k = available(st, par, _EWMA_INTS, m)
        if k == 0:
            return fallback(st, par, rng, _EWMA_INTS, m)
        j = 0
        if k > 1:
            a, b = two(rng, k)
            cost_a = _ewma_cost(st, par, m * par.slots + a)
            cost_b = _ewma_cost(st, par, m * par.slots + b)
            j = a if cost_a <= cost_b else b
        st.mem[xat(par, _EWMA_INTS, m, X_CHOSEN)] = j
        return server(st, par, m, j)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        sent(st, par, _EWMA_INTS, s, m)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        slot = returned(st, par, _EWMA_INTS)
        if slot < 0:
            return
        rtt, now = v.last_response_time(st), v.now(st)
        i_est, i_stamp = fat(par, F_EST, slot), fat(par, F_STAMP, slot)
        if st.fmem[i_est] < rtt:  # the peak: a slower response is taken at once
            st.fmem[i_est] = rtt
        else:
            w = math.exp(-(now - st.fmem[i_stamp]) / par.opt[O_DECAY])
            st.fmem[i_est] = st.fmem[i_est] * w + rtt * (1.0 - w)
        st.fmem[i_stamp] = now
