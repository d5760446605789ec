"""The named records a dispatch kernel works on, and the layout of their tables.

A compiled run takes four records and a random stream, never loose arrays:

``State`` (what a policy sees, see :mod:`cloudsched.dispatch.view`)
    ``srv`` (int64, ``(N, SRV_COLS)``): one row per server, columns ``S_*``.
    ``dsp`` (int64, ``(M, DSP_COLS)``): one row per dispatcher, columns ``D_*`` (its I-queue).
    ``arena`` (int64) and ``free_head`` (int64, ``(64,)``): the I-queues' storage.
    ``pool`` (float64, ``(P, POOL_COLS)``): tasks in the system, columns ``P_*``.
    ``busy`` (int64, ``(N,)``): the busy servers (the first ``ist[I_NBUSY]``).
    ``cnt`` (float64, ``(L,)``): ``cnt[i]`` servers hold at least ``i`` tasks.
    ``bstart`` (int64, ``(L + 1,)``), ``jperm`` (int64, ``(N,)``): servers bucketed by queue
    length (kept by policies that use :func:`~cloudsched.dispatch.view.shortest_queue`).
    ``perm`` (int64, ``(N,)``), ``dperm`` (int64, ``(M,)``): permutations for sampling
    distinct servers or dispatchers.
    ``sample`` (int64, ``(max(d, 1),)``): the servers of the last sample.
    ``mem`` (int64): the policy's own memory (its size is declared with the policy).
    ``heap`` (int64, ``(N,)``), ``hkey`` (float64, ``(N,)``), ``speed`` (float64, ``(N,)``):
    completion times of the event-list engine.
    ``ist`` (int64, ``(N_IST,)``), ``fst`` (float64, ``(N_FST,)``): scalars ``I_*``, ``F_*``.
    ``msg`` (int64, ``(4,)``): message counters ``M_*`` of the measurement window.
``Meter`` (what the run measures)
    ``area``, ``last`` (float64, ``(L,)``): integral of ``cnt[i]`` and its last update.
    ``bsum`` (float64), ``bcnt`` (int64), shape ``(B,)``: per micro-batch sums and counts.
    ``hist`` (int64, ``(H_SEGMENTS, H_BINS)``): response-time histogram per segment.
    ``snap`` (float64, ``(B + 1, N_SNAP)``), ``snap_area`` (float64, ``(B + 1, L)``): the
    running integrals at every micro-batch boundary.
    ``buf`` (float32): per-task records (record mode): ``buf[k]`` is the response time of
    the k-th measured arrival (NaN while it is in the system).
``Tasks`` (the event-list engine's next chunk of tasks)
    ``arr``, ``svc`` (float64): arrival times and service sizes.
``Params`` (fixed for a run; scalars)
    ``n``, ``m``, ``d``, ``z``, ``replace``, ``lam_n`` (arrival rate of the farm),
    ``t_warm``, ``t_end`` (window in time; -1 in task mode), ``record`` (the engine is
    fixed when the kernel is compiled).

and ``ctl`` (int64, ``(N_CTL,)``), the values the caller changes between calls (``C_*``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Meter", "Params", "State", "Tasks"]

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

# Columns of the per-server table ``srv``: queue length, FIFO head and tail (pool rows),
# position in ``busy``, I-queue listing the server (-1: none) and the position there,
# position in ``jperm``, position in the completion heap.
S_QLEN, S_HEAD, S_TAIL, S_BUSY, S_IQ, S_IQPOS, S_JPOS, S_HPOS = range(8)
SRV_COLS = 8
# Columns of the per-dispatcher table ``dsp``: its I-queue's start in the arena, size and
# capacity (column 3 pads a row to 32 bytes).
D_START, D_SIZE, D_CAP = range(3)
DSP_COLS = 4
# Columns of the task pool: next row in the server's FIFO (-1: none), measured-arrival
# ordinal + 1 (0: not measured), arrival time, service size.
P_NEXT, P_ORD, P_ARR, P_SVC = range(4)
POOL_COLS = 4

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
# update, smallest and largest measured response time.
F_NOW, F_TWARM, F_TEND, F_AREA_P0, F_LAST_P0, F_RT_MIN, F_RT_MAX = range(7)
N_FST = 7
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


class State(NamedTuple):
    """The simulated system (see the module notes for shapes and columns)."""

    srv: np.ndarray
    dsp: np.ndarray
    arena: np.ndarray
    free_head: np.ndarray
    pool: np.ndarray
    busy: np.ndarray
    cnt: np.ndarray
    bstart: np.ndarray
    jperm: np.ndarray
    perm: np.ndarray
    dperm: np.ndarray
    sample: np.ndarray
    mem: np.ndarray
    heap: np.ndarray
    hkey: np.ndarray
    speed: np.ndarray
    ist: np.ndarray
    fst: np.ndarray
    msg: np.ndarray


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


class Tasks(NamedTuple):
    """The event-list engine's current chunk of tasks."""

    arr: np.ndarray
    svc: np.ndarray


class Params(NamedTuple):
    """Parameters fixed for a run.

    ``n`` servers, ``m`` dispatchers, ``d`` probes (or I-queues sampled), ``z`` threshold,
    ``replace``: probes with replacement, ``lam_n``: arrival rate of the whole farm,
    ``t_warm`` / ``t_end``: measurement window in time (-1 when it is set in arrivals),
    ``record``: keep every response time.
    """

    n: int
    m: int
    d: int
    z: int
    replace: bool
    lam_n: float
    t_warm: float
    t_end: float
    record: bool
