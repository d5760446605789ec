"""The measurement window every engine's kernel shares, event by event.

The window opens at arrival ``ctl[C_ARR_WARM]`` (or time ``par.t_warm``) and closes at
arrival ``ctl[C_ARR_END]`` (or time ``par.t_end``; ``ctl[C_ARR_END] < 0``: a run in time).
While it is open, the integrals of ``st.cnt`` (in the :class:`~.records.Meter`) and of the
empty I-queues (``st.fst``) run, and row ``b`` of the snapshots holds them when micro-batch
``b`` opens.  :func:`window_step` is the one place that decides when the window opens and
closes; the kernels differ only in what they do after it closes (the per-server engine
follows the measured tasks until they leave, the count engines are done).

``st`` is any engine's state record (it holds ``cnt``, ``ist``, ``fst`` and ``msg``), ``mt``
its :class:`~.records.Meter`, ``par`` its parameters (``t_warm``, ``t_end``); ``empty`` is
the number of empty I-queues at the event.
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch.engines import records as R

__all__ = [
    "after_chunk",
    "batch_shifts",
    "before_event",
    "close_window",
    "measured_order",
    "open_window",
    "snapshot",
    "window_moves",
    "window_step",
]


@kernel(nrt=False)
def snapshot(st, mt, empty, row, t):
    """Record the running integrals at time ``t`` in row ``row`` of the snapshot tables."""
    mt.snap[row, R.SN_T] = t
    mt.snap[row, R.SN_P0] = st.fst[R.F_AREA_P0] + empty * (t - st.fst[R.F_LAST_P0])
    for k in range(4):
        mt.snap[row, R.SN_MSG + k] = st.msg[k]
    for i in range(mt.snap_area.shape[1]):
        mt.snap_area[row, i] = mt.area[i] + st.cnt[i] * (t - mt.last[i])


@kernel(nrt=False)
def open_window(st, mt, ctl, arrivals, empty, tw):
    """Open the measurement window at time ``tw``: measured ordinals count from here."""
    st.ist[R.I_PHASE] = R.MEASURE
    st.fst[R.F_TWARM] = tw
    st.fst[R.F_AREA_P0] = 0.0
    st.fst[R.F_LAST_P0] = tw
    for i in range(mt.area.shape[0]):
        mt.area[i] = 0.0
        mt.last[i] = tw
    for k in range(4):
        st.msg[k] = 0
    snapshot(st, mt, empty, np.int64(0), tw)  # an int64: a literal 0 compiles apart
    ctl[R.C_ARR_WARM] = arrivals


@kernel(nrt=False)
def close_window(st, mt, arrivals, empty, te):
    """Close the measurement window at time ``te``."""
    for i in range(mt.area.shape[0]):
        mt.area[i] += st.cnt[i] * (te - mt.last[i])
        mt.last[i] = te
    st.fst[R.F_AREA_P0] += empty * (te - st.fst[R.F_LAST_P0])
    st.fst[R.F_LAST_P0] = te
    st.fst[R.F_TEND] = te
    st.ist[R.I_ARR_CLOSE] = arrivals
    st.ist[R.I_PHASE] = R.DRAIN


@kernel(nrt=False, inline=True)
def window_moves(phase, arr_end, t_end, arrivals, now, is_arrival):
    """Whether :func:`window_step` may open or close the window at this event.

    A kernel asks first, so that the common event (inside the window, not its last) costs
    a few comparisons of its own scalars (``arr_end``: ``ctl[C_ARR_END]`` at the call;
    ``t_end``: the window's end in time, which counts when ``arr_end < 0``).
    """
    if phase == R.WARMUP:
        return True
    if phase != R.MEASURE:
        return False
    return (arr_end < 0 and now >= t_end) or (is_arrival and arrivals == arr_end)


@kernel(nrt=False, inline=True)
def window_step(st, mt, ctl, par, arrivals, now, is_arrival, empty):
    """Open or close the measurement window at the event just drawn (time ``now``).

    ``arrivals``: the arrivals before this event.  Returns the phase (``DRAIN`` once closed)
    and the time of the event, which is ``t_end`` when a run in time closes at it.
    """
    phase = st.ist[R.I_PHASE]
    arr_end = ctl[R.C_ARR_END]
    if phase == R.WARMUP:
        if arr_end < 0 and now >= par.t_warm:
            phase = R.MEASURE
            open_window(st, mt, ctl, arrivals, empty, par.t_warm)
        elif arr_end >= 0 and is_arrival and arrivals == ctl[R.C_ARR_WARM]:
            phase = R.MEASURE
            open_window(st, mt, ctl, arrivals, empty, now)
    if phase == R.MEASURE:
        te = -1.0
        if arr_end < 0 and now >= par.t_end:
            te = par.t_end
        elif arr_end >= 0 and is_arrival and arrivals == arr_end:
            te = now
        if te >= 0.0:
            close_window(st, mt, arrivals, empty, te)
            phase = R.DRAIN
            now = te
    return phase, now


@kernel(nrt=False, inline=True)
def before_event(mt, ctl, phase, done, maxlen, levels, arrivals):
    """Check what a count kernel must before its next event: ``CHUNK`` to go on, or a status.

    ``DONE`` once the window has closed; ``CHUNK`` (with ``done`` events at the budget: stop
    here) when the budget is spent; ``NEED_LEVELS`` when the longest queue nears the
    ``levels`` kept; ``NEED_MERGE`` when the measured arrivals fill the micro-batches.
    Returns the status and whether to stop.
    """
    if phase == R.DRAIN:
        return R.DONE, True
    if done >= ctl[R.C_BUDGET]:
        return R.CHUNK, True
    if maxlen + 2 >= levels:
        return R.NEED_LEVELS, True
    if phase == R.MEASURE and arrivals - ctl[R.C_ARR_WARM] >= ctl[R.C_WIDTH] * mt.bsum.shape[0]:
        return R.NEED_MERGE, True
    return R.CHUNK, False


@kernel(nrt=False, inline=True)
def measured_order(st, mt, ctl, arrivals, now, empty, wshift):
    """Return a measured arrival's order in the window (micro-batch ``order >> wshift``).

    The first arrival of each micro-batch but the first snapshots the running integrals.
    """
    order = arrivals - ctl[R.C_ARR_WARM]
    if order > 0 and order & (ctl[R.C_WIDTH] - 1) == 0:
        snapshot(st, mt, empty, order >> wshift, now)
    return order


@kernel(nrt=False, inline=True)
def after_chunk(fst, ist, now, arrivals, phase, maxlen, done):
    """Write a count kernel's loop variables back to its records at the end of a chunk."""
    fst[R.F_NOW] = now
    ist[R.I_ARRIVALS] = arrivals
    ist[R.I_PHASE] = phase
    ist[R.I_MAXLEN] = maxlen
    ist[R.I_EVENTS] += done


@kernel(nrt=False, inline=True)
def batch_shifts(mt, ctl):
    """Return log2 of the micro-batch width and of the micro-batches per histogram segment."""
    wshift = 0
    while (1 << wshift) < ctl[R.C_WIDTH]:
        wshift += 1
    segshift = 0
    while (R.H_SEGMENTS << segshift) < mt.bsum.shape[0]:
        segshift += 1
    return wshift, segshift
