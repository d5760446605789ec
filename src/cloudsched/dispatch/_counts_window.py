"""The measurement window of the occupancy-count kernels (equal speeds and speed classes).

Both kernels measure as the per-server kernel does (:mod:`cloudsched.dispatch._kernel`):
the window opens at arrival ``ctl[C_ARR_WARM]`` (or time ``t_warm``) and closes at arrival
``ctl[C_ARR_END]`` (or time ``t_end``); row ``b`` of the snapshots holds the running
integrals when micro-batch ``b`` opens.  :func:`window_step` is the one place that decides,
event by event, when the window opens and closes.
"""

from __future__ import annotations

from cloudsched._jit import kernel
from cloudsched.dispatch import state as S

__all__ = ["close_window", "open_window", "snapshot", "window_step"]


@kernel(nrt=False)
def snapshot(cnt, iq, fst, msg, area, last, snap, snap_area, row, t):
    """Record the running integrals at time ``t`` in row ``row`` of the snapshot tables."""
    snap[row, S.SN_T] = t
    snap[row, S.SN_P0] = fst[S.F_AREA_P0] + iq[0] * (t - fst[S.F_LAST_P0])
    for k in range(4):
        snap[row, S.SN_MSG + k] = msg[k]
    for i in range(snap_area.shape[1]):
        snap_area[row, i] = area[i] + cnt[i] * (t - last[i])


@kernel(nrt=False)
def open_window(cnt, iq, ist, fst, msg, area, last, snap, snap_area, ctl, arrivals, tw):
    """Open the measurement window at time ``tw``: measured ordinals count from here."""
    fst[S.F_TWARM] = tw
    fst[S.F_AREA_P0] = 0.0
    fst[S.F_LAST_P0] = tw
    for i in range(area.shape[0]):
        area[i] = 0.0
        last[i] = tw
    for k in range(4):
        msg[k] = 0
    snapshot(cnt, iq, fst, msg, area, last, snap, snap_area, 0, tw)
    ctl[S.C_ARR_WARM] = arrivals
    ist[S.I_PHASE] = S.MEASURE


@kernel(nrt=False)
def close_window(cnt, iq, ist, fst, area, last, arrivals, te):
    """Close the measurement window at time ``te`` (the run is then done)."""
    for i in range(area.shape[0]):
        area[i] += cnt[i] * (te - last[i])
        last[i] = te
    fst[S.F_AREA_P0] += iq[0] * (te - fst[S.F_LAST_P0])
    fst[S.F_LAST_P0] = te
    fst[S.F_TEND] = te
    ist[S.I_ARR_CLOSE] = arrivals


@kernel(nrt=False, inline=True)
def window_step(
    cnt,
    iq,
    ist,
    fst,
    msg,
    area,
    last,
    snap,
    snap_area,
    ctl,
    arrivals,
    arr_warm,
    arr_end,
    phase,
    now,
    is_arrival,
    t_warm,
    t_end,
):
    """Open or close the measurement window at the event just drawn (time ``now``).

    The window opens at arrival ``arr_warm`` (or time ``t_warm``) and closes at arrival
    ``arr_end`` (or time ``t_end``; ``arr_end < 0``: a run in time).  Returns the phase
    (``DRAIN`` once closed: the event is not applied), the warm-up arrival and the time.
    """
    if phase == S.WARMUP:
        if arr_end < 0 and now >= t_warm:
            phase = S.MEASURE
            open_window(cnt, iq, ist, fst, msg, area, last, snap, snap_area, ctl, arrivals, t_warm)
            arr_warm = arrivals
        elif arr_end >= 0 and is_arrival and arrivals == arr_warm:
            phase = S.MEASURE
            open_window(cnt, iq, ist, fst, msg, area, last, snap, snap_area, ctl, arrivals, now)
    if phase == S.MEASURE:
        te = -1.0
        if arr_end < 0 and now >= t_end:
            te = t_end
        elif arr_end >= 0 and is_arrival and arrivals == arr_end:
            te = now
        if te >= 0.0:
            close_window(cnt, iq, ist, fst, area, last, arrivals, te)
            phase = S.DRAIN
            now = te if arr_end < 0 else now
    return phase, arr_warm, now
