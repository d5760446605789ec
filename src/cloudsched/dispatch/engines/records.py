"""The records every engine's kernel shares: its scalars, its controls, what it measures.

Each engine's kernel takes named records and a random stream, never loose arrays: its own
state record (``st``: :mod:`.servers.records`, :mod:`.counts.records`,
:mod:`.classes.records`, :mod:`.delay.records`), its parameters (``par``), and the two
records here, which every engine lays out the same way:

``Meter`` (what the run measures)
    ``area``, ``last`` (float64, ``(L,)``): integral of ``cnt[i]`` (the servers holding at
    least ``i`` tasks) and its last update.
    ``bsum`` (float64), ``bcnt`` (int64), shape ``(B,)``: per micro-batch sums and counts.
    ``hist``: per histogram segment, what the response times are read from: the per-server
    engine's response-time bins (int64, ``(H_SEGMENTS, H_BINS)``), the count engines'
    levels joined (float64, ``(H_SEGMENTS, L)``; classes: ``(H_SEGMENTS, K, L)``).
    ``snap`` (float64, ``(B + 1, N_SNAP)``), ``snap_area`` (float64, ``(B + 1, L)``): the
    running integrals at every micro-batch boundary.
    ``buf`` (float32): per-task records (the per-server engine's record mode): ``buf[k]`` is
    the response time of the k-th measured arrival (NaN while it is in the system).
    ``scratch`` (float64, ``(1,)``): room for reading a float's bits.

``ctl`` (int64, ``(N_CTL,)``): the values the caller changes between calls (``C_*``).

Every state record also holds ``ist`` (int64, ``(N_IST,)``) and ``fst`` (float64,
``(N_FST,)``), the scalars ``I_*`` and ``F_*`` (an engine uses those it needs), ``msg``
(int64, ``(4,)``), the message counters ``M_*`` of the measurement window, and ``cnt``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Meter", "new_control", "new_meter"]

# Status codes a run returns.
(
    DONE,
    CHUNK,
    NEED_POOL,
    NEED_ARENA,
    NEED_LEVELS,
    BUFFER_FULL,
    NEED_TASKS,
    NEED_MERGE,
    CHECKPOINT,
    BAD_SERVER,
) = range(10)

# Scalars ``ist``: busy servers, head of the pool's free list, arena top and largest
# I-queue capacity, arrivals, events, measured tasks in the system, empty I-queues, the
# JSQ minimum, phase, longest queue, task pointer (event list), heap size, arrivals when the
# window closed, and the value of a bad server choice.
(
    I_NBUSY,
    I_POOL_FREE,
    I_ARENA_TOP,
    I_MAXCAP,
    I_ARRIVALS,
    I_EVENTS,
    I_MEAS_IN_SYS,
    I_NEMPTY,
    I_JSQ_MIN,
    I_PHASE,
    I_MAXLEN,
    I_TASK_PTR,
    I_HEAP_N,
    I_ARR_CLOSE,
    I_BAD,
) = range(15)
N_IST = 15
# Scalars ``fst``: time, window start and end, integral of the empty I-queues and its last
# update, smallest and largest measured response time; the response time and the policy's
# mark of the task that left last (measured or not: what a latency-aware balancer observes).
(F_NOW, F_TWARM, F_TEND, F_AREA_P0, F_LAST_P0, F_RT_MIN, F_RT_MAX, F_LAST_RT, F_LAST_MARK) = range(
    9
)
N_FST = 9
# Values the caller sets between calls ``ctl``: event budget, arrivals before the window,
# the arrival that closes it, micro-batch width (a power of two), last chunk of tasks, next
# checkpoint (measured arrivals).
C_BUDGET, C_ARR_WARM, C_ARR_END, C_WIDTH, C_LAST_CHUNK, C_NEXT_CHECK = range(6)
N_CTL = 6
#: ``ctl[C_ARR_END]`` of an open-ended run (the caller lowers it to close the window).
OPEN_END = 1 << 62

# Message counters ``msg``.
M_JOIN, M_DELETE, M_PROBE, M_STALE = range(4)
# Phases.
WARMUP, MEASURE, DRAIN = range(3)

# Columns of the snapshot table: time, integral of the empty I-queues, four message counts.
SN_T, SN_P0, SN_MSG = 0, 1, 2
N_SNAP = 6

# Response-time histogram: bins of relative width 2**-9 (512 per octave) from 2**-32 to
# 2**40; values outside are counted in the first or last bin.
H_SUB = 512
H_EMIN = -31  # frexp exponent of 2**-32
H_EMAX = 41
H_BINS = (H_EMAX - H_EMIN) * H_SUB
#: (biased exponent, top 9 mantissa bits) of bin 0.
BITS_OFFSET = (H_EMIN - 1 + 1023) << 9
#: Number of histogram segments (each covers an equal share of the micro-batches).
H_SEGMENTS = 16


class Meter(NamedTuple):
    """What a run measures (see the module notes)."""

    area: np.ndarray
    last: np.ndarray
    bsum: np.ndarray
    bcnt: np.ndarray
    hist: np.ndarray
    snap: np.ndarray
    snap_area: np.ndarray
    buf: np.ndarray
    scratch: np.ndarray


def new_meter(micro: int, levels: int, hist: np.ndarray, buf: int = 0) -> Meter:
    """Allocate a meter of ``micro`` micro-batches and ``levels`` levels around ``hist``.

    ``buf``: room for that many per-task records (float32, NaN).
    """
    if micro < H_SEGMENTS or micro & (micro - 1):
        raise ValueError(f"micro must be a power of two, at least {H_SEGMENTS}")
    return Meter(
        area=np.zeros(levels),
        last=np.zeros(levels),
        bsum=np.zeros(micro),
        bcnt=np.zeros(micro, np.int64),
        hist=hist,
        snap=np.zeros((micro + 1, N_SNAP)),
        snap_area=np.zeros((micro + 1, levels)),
        buf=np.full(buf, np.nan, np.float32),
        scratch=np.zeros(1),
    )


def new_control(warm_tasks: int, end_tasks: int, open_end: bool, width: int) -> np.ndarray:
    """Return the control values of a new run (``ctl``): its window and batch width."""
    ctl = np.zeros(N_CTL, np.int64)
    ctl[C_ARR_WARM] = warm_tasks
    ctl[C_ARR_END] = OPEN_END if open_end else end_tasks
    ctl[C_WIDTH] = width
    ctl[C_LAST_CHUNK] = 0
    ctl[C_NEXT_CHECK] = OPEN_END
    return ctl
