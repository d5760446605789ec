"""The named records the placement kernel works on, and the layout of their tables.

Shapes: J job types, S slots, L machines, T template rows (never more than
``S // min K_j`` templates exist), Kmax the largest graph.

``Model`` (fixed for a run)
    ``lam``, ``mu``, ``nu`` (float64, ``(J,)``): arrival, service and queue-clock rates.
    ``wpar`` (float64, ``(2, J)``): frozen weights (row 0) and the bias ``h_j`` (row 1).
    ``par`` (float64, ``(N_PAR,)``): algorithm parameters ``P_*``.
    ``knodes`` (int64, ``(J,)``); ``edges`` (int64, ``(E, 2)``) with ``edge_off``
    (``(J + 1,)``); ``node_off`` (``(J + 1,)``), ``bfs`` (breadth-first node order, by
    type: the greedy's and the local proposal's), ``adj_off`` / ``adj`` / ``adj_w``
    (neighbours of every node of every type, CSR, with each link's traffic).
    ``ew`` (float64, ``(E,)``): traffic of each edge, ``weighted`` (int64, ``(J,)``): 1 when
    some edge of the type carries other than 1; ``ndem`` (float64, ``(N, 2)``): CPU
    and memory of every node of every type (rows from ``node_off``); ``ras`` (int64, by
    type): the resource-aware executor order.
    ``rack`` (int64, ``(L,)``), ``slot_machine`` (int64, ``(S,)``), ``slot_first``
    (int64, ``(L + 1,)``: machine m holds slots ``slot_first[m]:slot_first[m + 1]``),
    ``dist`` (float64, ``(L, L)``), ``mcap`` (float64, ``(L, 2)``, inf: no limit): the
    cluster.
``State`` (the configuration and the queues)
    ``owner`` (int64, ``(S,)``): template holding each slot (-1: free); ``mslots`` (int64,
    ``(L, max slots)``), ``mfree`` (``(L,)``), ``spos`` (``(S,)``): each machine's free slots
    as a stack; ``mres`` (float64, ``(L, 2)``): each machine's free CPU and memory;
    ``rfree`` (int64, ``(racks,)``): free slots per rack, counted by the local proposal when
    it needs them (keeping them up to date would cost every placement).
    ``t_type``, ``t_state``, ``t_cost``, ``t_slots`` (``(T, Kmax)``), ``tfree``, ``tpos``:
    the template table; ``tlists`` (``(J, 2, T)``: actual, virtual) and ``ntl``
    (``(J, 2)``): the templates of each type.  ``qbuf`` (float64, ``(J, cap)``), ``qhead``,
    ``qlen``: the queues as ring buffers of entry times.  ``cur_cost`` (float64, ``(J,)``):
    cost of the actual templates.  ``fst`` / ``ist``: scalars ``F_*`` / ``I_*``.
    ``t_job`` (int64, ``(T,)``): the job number in each actual template.  ``frame_q`` (int64,
    ``(J,)``): jobs present per type at MaxWeight's last solved frame.
    ``scratch`` (int64, ``(Kmax,)``), ``iwork`` (int64, ``(6, max(L, racks, J, Kmax, 3))``),
    ``fwork`` (float64, ``(4, max(L, 3))``), ``favail`` and ``fkeys`` (float64,
    ``(L + racks, 3)``): work space.
``Log`` (placements, recorded when ``par[P_LOG]`` is set)
    ``t`` (float64, ``(cap,)``): time; ``ev`` (int64, ``(cap, 4)``): kind (``LOG_START``:
    a job took a template, ``LOG_END``: it left), template, type, job number; ``slots``
    (int64, ``(cap, Kmax)``): the template's slots at a start.  ``ist[I_LOG]`` rows are
    filled; a full log stops the kernel (``NEED_LOG``) so the engine can empty it.
``Meter`` (what the run measures)
    ``acc`` (float64, ``(J, N_ACC)``): time integrals and the sum of waits; ``cnt`` (int64,
    ``(J, N_CNT)``): counts; ``bounds`` (float64, ``(B,)``): ends of the micro-batches,
    where ``acc`` and ``cnt`` are copied to ``snap`` (``(B, J, N_ACC)``) and ``snap_cnt``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Log", "Meter", "Model", "State"]

# Status codes returned by ``run``.
DONE, CHUNK, STOP, NEED_QUEUE, NEED_LOG = range(5)
# ... and by a plug-in's loop for a placement its checks refuse (the state is untouched).
BAD_MACHINE, BAD_SLOTS, BAD_RESOURCES = 10, 11, 12
# Kinds of log rows.
LOG_START, LOG_END = 1, 2

# Template states; a type's template lists are indexed by ``2 - state`` (0: actual, 1: virtual).
UNUSED, VIRTUAL, ACTUAL = range(3)

# ``par`` (float64): algorithm parameters; P_RES: check CPU and memory; P_LOCAL: DGP's
# proposals are local (1) or uniform (0), with locality P_THETA; P_LOGS: log(total slots);
# P_LOG: record placements.
P_BETA, P_ALPHA, P_EPS, P_FCODE, P_VCLOCK, P_FROZEN, P_RES, P_LOCAL, P_THETA, P_LOGS, P_LOG = range(
    11
)
N_PAR = 11
# ``fst`` (float64 scalars): time, window start, end, next stop (a MaxWeight frame).
# F_FRAME: MaxWeight's frame length; F_KEEP: 1 when the configuration in place is the last
# frame's proven max-weight one, for the jobs present in ``frame_q``.
F_NOW, F_TWARM, F_TEND, F_TSTOP, F_FRAME, F_KEEP = range(6)
N_FST = 6
# ``ist`` (int64 scalars): free template rows, free slots, events, arrivals and departures
# since time 0, micro-batches recorded.
I_TFREE, I_FREE_SLOTS, I_EVENTS, I_ARR_ALL, I_DEP_ALL, I_BATCH, I_LOG, I_JOBS, I_KEPT = range(9)
N_IST = 9
# ``acc[j, :]`` (float64): time integrals over the window, and the sum of waits.
A_QUEUE, A_ACTUAL, A_VIRTUAL, A_COST, A_WAIT = range(5)
N_ACC = 5
# ``cnt[j, :]`` (int64): counts over the window.
C_ARRIVED, C_PLACED, C_DEPARTED, C_TRIED, C_FAILED, C_REJECTED, C_ADDED, C_REMOVED = range(8)
N_CNT = 8


class Model(NamedTuple):
    """The workload, the cluster and the algorithm's parameters (see the module notes)."""

    lam: np.ndarray
    mu: np.ndarray
    nu: np.ndarray
    wpar: np.ndarray
    par: np.ndarray
    knodes: np.ndarray
    edges: np.ndarray
    edge_off: np.ndarray
    node_off: np.ndarray
    bfs: np.ndarray
    adj_off: np.ndarray
    adj: np.ndarray
    adj_w: np.ndarray
    ew: np.ndarray
    weighted: np.ndarray
    ndem: np.ndarray
    ras: np.ndarray
    rack: np.ndarray
    slot_machine: np.ndarray
    slot_first: np.ndarray
    dist: np.ndarray
    mcap: np.ndarray


class State(NamedTuple):
    """The configuration of templates and the queues (see the module notes)."""

    owner: np.ndarray
    mslots: np.ndarray
    mfree: np.ndarray
    spos: np.ndarray
    mres: np.ndarray
    rfree: np.ndarray
    t_type: np.ndarray
    t_state: np.ndarray
    t_cost: np.ndarray
    t_slots: np.ndarray
    tfree: np.ndarray
    tlists: np.ndarray
    tpos: np.ndarray
    ntl: np.ndarray
    qbuf: np.ndarray
    qhead: np.ndarray
    qlen: np.ndarray
    cur_cost: np.ndarray
    t_job: np.ndarray
    frame_q: np.ndarray
    fst: np.ndarray
    ist: np.ndarray
    scratch: np.ndarray
    iwork: np.ndarray
    fwork: np.ndarray
    favail: np.ndarray
    fkeys: np.ndarray


class Log(NamedTuple):
    """Placement starts and ends (see the module notes)."""

    t: np.ndarray
    ev: np.ndarray
    slots: np.ndarray


class Meter(NamedTuple):
    """Time integrals, counts and their snapshots at micro-batch ends."""

    acc: np.ndarray
    cnt: np.ndarray
    bounds: np.ndarray
    snap: np.ndarray
    snap_cnt: np.ndarray
