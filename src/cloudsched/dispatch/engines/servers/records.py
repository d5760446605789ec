"""The per-server engine's records: every server, task and I-queue entry kept apart.

Its kernel (:mod:`.kernel`) takes four records and a random stream: the ``State`` and
``Params`` here, the shared :class:`~cloudsched.dispatch.engines.records.Meter` and
``ctl`` (the layout of both, and of the scalars ``ist`` / ``fst`` and the counters ``msg``:
:mod:`cloudsched.dispatch.engines.records`), and, for the event list, ``Tasks``.

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
    ``mem`` (int64), ``fmem`` (float64): the policy's own memory (sizes declared with the
    policy).
    ``heap`` (int64, ``(N,)``), ``hkey`` (float64, ``(N,)``), ``speed`` (float64, ``(N,)``):
    completion times of the event-list clock; ``slow`` (float64, ``(N,)``) and ``slow_t``
    (float64, ``(3,)``): each server's speed factor during ``[slow_t[0], slow_t[1])``,
    again every ``slow_t[2]`` if > 0 (a slowdown; a service keeps the speed it started at).
    ``board`` (int64, ``(N,)``), ``board_min`` (int64, ``(N,)``), ``pub`` (float64,
    ``(3,)``): polled information (a bulletin board): the queue lengths published at the
    last multiple of the period ``pub[0]`` (0: read live), the servers at its minimum
    (the first ``pub[2]``), the next publication ``pub[1]``.
    ``ist``, ``fst``, ``msg``: the shared scalars and message counters.
``Tasks`` (the event list's next chunk of tasks)
    ``arr``, ``svc`` (float64): arrival times and service sizes.
``Params`` (fixed for a run; scalars)
    ``n``, ``m``, ``d``, ``z``, ``replace``, ``lam_n`` (arrival rate of the farm),
    ``slots`` (servers each dispatcher balances over: its subset's size, else N),
    ``t_warm``, ``t_end`` (window in time; -1 in task mode), ``record`` (the clock is fixed
    when the kernel is compiled), ``opt`` (float64): the policy's options in the order of
    its table row, durations in mean service times
    (:func:`cloudsched.dispatch.options.resolve_options`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Params", "State", "Tasks"]

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
# ordinal + 1 (0: not measured), arrival time, service size, the policy's mark (-1: none;
# :func:`cloudsched.dispatch.view.mark_task`).
P_NEXT, P_ORD, P_ARR, P_SVC, P_MARK = range(5)
POOL_COLS = 5


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
    fmem: np.ndarray
    heap: np.ndarray
    hkey: np.ndarray
    speed: np.ndarray
    slow: np.ndarray
    slow_t: np.ndarray
    board: np.ndarray
    board_min: np.ndarray
    pub: np.ndarray
    ist: np.ndarray
    fst: np.ndarray
    msg: np.ndarray


class Tasks(NamedTuple):
    """The event-list engine's current chunk of tasks."""

    arr: np.ndarray
    svc: np.ndarray


class Params(NamedTuple):
    """Parameters fixed for a run.

    ``n`` servers, ``m`` dispatchers, ``d`` probes (or I-queues sampled), ``z`` threshold,
    ``replace``: probes with replacement, ``slots``: servers per dispatcher (its subset),
    ``lam_n``: arrival rate of the whole farm,
    ``t_warm`` / ``t_end``: measurement window in time (-1 when it is set in arrivals),
    ``record``: keep every response time; ``opt``: the policy's options.
    """

    n: int
    m: int
    d: int
    z: int
    replace: bool
    slots: int
    lam_n: float
    t_warm: float
    t_end: float
    record: bool
    opt: np.ndarray
