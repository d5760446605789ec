"""The view of the simulated system that dispatch policies are written against.

A policy (:mod:`cloudsched.dispatch.policies`) is a few compiled hooks that receive the
state record ``st`` (:class:`~cloudsched.dispatch.engines.servers.records.State`), the
parameters ``par`` (:class:`~cloudsched.dispatch.engines.servers.records.Params`: ``par.n``,
``par.m``, ``par.d``, ``par.z``, ``par.replace``) and the run's random stream ``rng`` (a
``numpy.random.Generator``; every draw a policy makes must come from it).  The functions
here read and change that state the way the simulator expects; they are compiled, and calls
to them are inlined into the kernel, so a policy written with them runs as fast as the
simulator's own code.

Servers are numbered ``0 .. N-1`` and dispatchers ``0 .. M-1``.  Reading:
:func:`servers`, :func:`dispatchers`, :func:`queue_length`, :func:`now`, :func:`measuring`,
and in ``on_departure`` what a balancer observes of the task that just left:
:func:`last_response_time` and the mark it was given at dispatch (:func:`mark_task`,
:func:`last_mark`).
Polled information (``refresh``): :func:`polled`, :func:`reported_length` (what a
probe reads), :func:`board_shortest`.  Randomness: :func:`uniform`, :func:`least_loaded`
(probe ``d`` servers, reading reported lengths), and
:func:`sample_servers` (the sample itself, in ``st.sample``).  Shortest queue:
:func:`shortest_queue`, kept up to date by :func:`buckets_up` / :func:`buckets_down`.
I-queues (each dispatcher's list of idle servers): :func:`iqueue_size`, :func:`listed`,
:func:`iqueue_take`, :func:`iqueue_join`, :func:`iqueue_leave`, :func:`random_iqueue`,
:func:`shortest_iqueue`.  Messages: :func:`count` with ``JOIN``, ``DELETE``, ``PROBE`` or
``STALE`` (counted only inside the measurement window).  A policy's own memory is
``st.mem`` (int64, of the size declared with the policy).

Draws: ``uniform(rng, n)`` is ``floor(rng.random() * n)``; :func:`least_loaded` and
:func:`sample_servers` make ``d`` such draws, distinct servers by a partial Fisher-Yates
shuffle of ``st.perm`` unless ``replace``.
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.servers import records as S

__all__ = [
    "DELETE",
    "JOIN",
    "PROBE",
    "STALE",
    "board_shortest",
    "buckets_down",
    "buckets_up",
    "count",
    "dispatchers",
    "iqueue_join",
    "iqueue_leave",
    "iqueue_size",
    "iqueue_take",
    "last_mark",
    "last_response_time",
    "least_loaded",
    "listed",
    "mark_task",
    "measuring",
    "now",
    "polled",
    "queue_length",
    "random_iqueue",
    "reported_length",
    "sample_servers",
    "servers",
    "shortest_iqueue",
    "shortest_queue",
    "uniform",
]

#: Message kinds for :func:`count`.
JOIN, DELETE, PROBE, STALE = R.M_JOIN, R.M_DELETE, R.M_PROBE, R.M_STALE


@kernel(nrt=False, inline=True)
def _check_server(st, s):
    """Raise an IndexError unless ``s`` is a server."""
    if s < 0 or s >= st.srv.shape[0]:
        raise IndexError("server index outside [0, N)")


@kernel(nrt=False, inline=True)
def _check_dispatcher(st, m):
    """Raise an IndexError unless ``m`` is a dispatcher (an I-queue)."""
    if m < 0 or m >= st.dsp.shape[0]:
        raise IndexError("dispatcher (I-queue) index outside [0, M)")


@kernel(nrt=False, inline=True)
def servers(st):
    """Return the number of servers N."""
    return st.srv.shape[0]


@kernel(nrt=False, inline=True)
def dispatchers(st):
    """Return the number of dispatchers M."""
    return st.dsp.shape[0]


@kernel(nrt=False, inline=True)
def queue_length(st, s):
    """Return the tasks at server ``s`` (waiting or in service)."""
    _check_server(st, s)
    return st.srv[s, S.S_QLEN]


@kernel(nrt=False, inline=True)
def now(st):
    """Return the simulated time of the current event."""
    return st.fst[R.F_NOW]


@kernel(nrt=False, inline=True)
def last_response_time(st):
    """Response time of the task that left last (in ``on_departure``: the one leaving now)."""
    return st.fst[R.F_LAST_RT]


@kernel(nrt=False, inline=True)
def mark_task(st, s, mark):
    """Give the task that joined server ``s`` last (in ``on_arrival``: this one) a mark >= 0.

    The mark comes back through :func:`last_mark` when the task leaves: which client sent
    it, through which of its connections.
    """
    _check_server(st, s)
    st.pool[st.srv[s, S.S_TAIL], S.P_MARK] = mark


@kernel(nrt=False, inline=True)
def last_mark(st):
    """Mark of the task that left last (-1: none; see :func:`mark_task`)."""
    return st.fst[R.F_LAST_MARK]


@kernel(nrt=False, inline=True)
def measuring(st):
    """Whether the current event is inside the measurement window."""
    return st.ist[R.I_PHASE] == R.MEASURE


@kernel(nrt=False, inline=True)
def count(st, kind, k):
    """Count ``k`` messages of ``kind`` (``JOIN``, ``DELETE``, ``PROBE``, ``STALE``)."""
    if kind < 0 or kind >= 4:
        raise IndexError("count: kind must be JOIN, DELETE, PROBE or STALE")
    if st.ist[R.I_PHASE] == R.MEASURE:
        st.msg[kind] += k


@kernel(nrt=False, inline=True)
def uniform(rng, n):
    """Draw a uniform integer in ``[0, n)``: ``floor(rng.random() * n)`` (one draw)."""
    k = int(rng.random() * n)
    return k if k < n else n - 1


@kernel(nrt=False, inline=True)
def _draw(perm, rng, n, k, replace):
    """Draw the ``k``-th server of a sample (one draw).

    Uniform with ``replace``, else distinct: a partial Fisher-Yates shuffle of ``perm``,
    whose first ``k`` entries are the sample so far.
    """
    if replace:
        return uniform(rng, n)
    j = k + uniform(rng, n - k)
    s = perm[j]
    perm[j] = perm[k]
    perm[k] = s
    return s


@kernel(nrt=False, inline=True)
def least_loaded(st, rng, d, replace):
    """Probe ``d`` servers (distinct unless ``replace``); return the first least loaded.

    The sample order is uniformly random, so the first minimum is a uniform choice among
    tied servers.  Distinct samples use a partial Fisher-Yates shuffle of ``st.perm``.
    """
    n = st.srv.shape[0]
    if d < 1 or d > n:
        raise IndexError("least_loaded: d must be in [1, N]")
    best = -1
    best_len = 0
    for k in range(d):
        s = _draw(st.perm, rng, n, k, replace)
        q = reported_length(st, s)
        if best < 0 or q < best_len:
            best = s
            best_len = q
    return best


@kernel(nrt=False, inline=True)
def sample_servers(st, rng, d, replace):
    """Draw ``d`` servers into ``st.sample[:d]`` with the draws of :func:`least_loaded`."""
    n = st.srv.shape[0]
    if d < 0 or d > st.sample.shape[0] or (d > n and not replace):
        raise IndexError("sample_servers: d must be in [0, the run's d] (and at most N)")
    for k in range(d):
        st.sample[k] = _draw(st.perm, rng, n, k, replace)


@kernel(nrt=False, inline=True)
def polled(st):
    """Whether dispatchers read published lengths (a board refreshed every period)."""
    return st.pub[0] > 0.0


@kernel(nrt=False, inline=True)
def reported_length(st, s):
    """Queue length of server ``s`` as a dispatcher reads it: published, or live."""
    if st.pub[0] > 0.0:
        return st.board[s]
    return st.srv[s, S.S_QLEN]


@kernel(nrt=False, inline=True)
def board_shortest(st, rng):
    """Return a uniform server among the shortest on the board (in server order: one draw)."""
    return st.board_min[uniform(rng, int(st.pub[2]))]


@kernel(nrt=False, inline=True)
def shortest_queue(st, rng):
    """Return a uniform server among the shortest queues (see :func:`buckets_up`)."""
    low = st.ist[R.I_JSQ_MIN]
    first = st.bstart[low]
    return st.jperm[first + uniform(rng, st.bstart[low + 1] - first)]


@kernel(nrt=False, inline=True)
def _bucket_swap(st, s, j):
    """Swap server ``s`` with the server at place ``j`` of the bucket order ``st.jperm``."""
    other = st.jperm[j]
    p = st.srv[s, S.S_JPOS]
    st.jperm[p] = other
    st.srv[other, S.S_JPOS] = p
    st.jperm[j] = s
    st.srv[s, S.S_JPOS] = j


@kernel(nrt=False, inline=True)
def buckets_up(st, s, old):
    """Server ``s`` went from ``old`` to ``old + 1`` tasks: move it up a bucket."""
    bstart = st.bstart
    new = old + 1
    _bucket_swap(st, s, bstart[new] - 1)  # the last place of bucket `old`
    bstart[new] -= 1
    if old == st.ist[R.I_JSQ_MIN] and bstart[old] == bstart[new]:
        st.ist[R.I_JSQ_MIN] = new


@kernel(nrt=False, inline=True)
def buckets_down(st, s, old):
    """Server ``s`` went from ``old`` to ``old - 1`` tasks: move it down a bucket."""
    _bucket_swap(st, s, st.bstart[old])  # the first place of bucket `old`
    st.bstart[old] += 1
    if old - 1 < st.ist[R.I_JSQ_MIN]:
        st.ist[R.I_JSQ_MIN] = old - 1


@kernel(nrt=False, inline=True)
def iqueue_size(st, m):
    """Return the number of servers listed in I-queue ``m``."""
    _check_dispatcher(st, m)
    return st.dsp[m, S.D_SIZE]


@kernel(nrt=False, inline=True)
def listed(st, s):
    """Return the I-queue listing server ``s``, or -1."""
    _check_server(st, s)
    return st.srv[s, S.S_IQ]


@kernel(nrt=False, inline=True)
def _touch_p0(st):
    """Bring the integral of the number of empty I-queues up to the current time."""
    if st.ist[R.I_PHASE] == R.MEASURE:
        t = st.fst[R.F_NOW]
        st.fst[R.F_AREA_P0] += st.ist[R.I_NEMPTY] * (t - st.fst[R.F_LAST_P0])
        st.fst[R.F_LAST_P0] = t


@kernel(nrt=False)
def _double_block(st, m):
    """Move the full I-queue ``m`` to a free block twice its size (the arena has room)."""
    dsp, arena, ist = st.dsp, st.arena, st.ist
    size = dsp[m, S.D_SIZE]
    new_cap = 2 * dsp[m, S.D_CAP]
    cls = 0
    while (1 << cls) < new_cap:
        cls += 1
    if st.free_head[cls] >= 0:
        start = st.free_head[cls]
        st.free_head[cls] = arena[start]
    else:
        start = ist[R.I_ARENA_TOP]
        if start + new_cap > arena.shape[0]:
            raise IndexError("iqueue_join: more than two servers listed in one event")
        ist[R.I_ARENA_TOP] += new_cap
    old = dsp[m, S.D_START]
    for k in range(size):
        arena[start + k] = arena[old + k]
    arena[old] = st.free_head[cls - 1]
    st.free_head[cls - 1] = old
    dsp[m, S.D_START] = start
    dsp[m, S.D_CAP] = new_cap
    if new_cap > ist[R.I_MAXCAP]:
        ist[R.I_MAXCAP] = new_cap


@kernel(nrt=False, inline=True)
def iqueue_join(st, m, s):
    """List server ``s`` (listed nowhere) at the end of I-queue ``m``.

    A full I-queue moves to a block twice its size in ``st.arena``; the simulator keeps room
    for two such moves per event, so a policy may list at most two servers per event.
    """
    _check_server(st, s)
    _check_dispatcher(st, m)
    if st.srv[s, S.S_IQ] >= 0:
        raise ValueError("iqueue_join: the server is already listed in an I-queue")
    dsp = st.dsp
    size = dsp[m, S.D_SIZE]
    if size == dsp[m, S.D_CAP]:
        _double_block(st, np.int64(m))  # not a literal m: one compiled copy
    if size == 0:
        _touch_p0(st)
        st.ist[R.I_NEMPTY] -= 1
    st.arena[dsp[m, S.D_START] + size] = s
    st.srv[s, S.S_IQPOS] = size
    st.srv[s, S.S_IQ] = m
    dsp[m, S.D_SIZE] = size + 1


@kernel(nrt=False, inline=True)
def iqueue_leave(st, s):
    """Remove server ``s`` from the I-queue listing it (the last entry takes its place)."""
    _check_server(st, s)
    srv, dsp, arena = st.srv, st.dsp, st.arena
    m = srv[s, S.S_IQ]
    if m < 0:
        raise ValueError("iqueue_leave: the server is not listed in an I-queue")
    p = srv[s, S.S_IQPOS]
    start = dsp[m, S.D_START]
    last_idx = dsp[m, S.D_SIZE] - 1
    moved = arena[start + last_idx]
    arena[start + p] = moved
    srv[moved, S.S_IQPOS] = p
    dsp[m, S.D_SIZE] = last_idx
    srv[s, S.S_IQ] = -1
    srv[s, S.S_IQPOS] = -1
    if last_idx == 0:
        _touch_p0(st)
        st.ist[R.I_NEMPTY] += 1


@kernel(nrt=False, inline=True)
def iqueue_take(st, rng, m):
    """Remove a uniform entry of the non-empty I-queue ``m`` and return its server."""
    if iqueue_size(st, m) == 0:
        raise ValueError("iqueue_take: the I-queue is empty")
    s = st.arena[st.dsp[m, S.D_START] + uniform(rng, st.dsp[m, S.D_SIZE])]
    iqueue_leave(st, s)
    return s


@kernel(nrt=False, inline=True)
def random_iqueue(st, rng):
    """Draw a uniform I-queue (one draw)."""
    return uniform(rng, st.dsp.shape[0])


@kernel(nrt=False, inline=True)
def shortest_iqueue(st, rng, d):
    """Return the shortest of ``d`` distinct uniform I-queues (first in sample order on ties)."""
    dperm, dsp = st.dperm, st.dsp
    m_count = dsp.shape[0]
    if d < 1 or d > m_count:
        raise IndexError("shortest_iqueue: d must be in [1, M]")
    best = -1
    for k in range(d):
        j = k + uniform(rng, m_count - k)
        m = dperm[j]
        dperm[j] = dperm[k]
        dperm[k] = m
        if best < 0 or dsp[m, S.D_SIZE] < dsp[best, S.D_SIZE]:
            best = m
    return best
