"""Compiled event loop of the per-server engine, specialised for one policy at compile time.

Two clocks share the loop.  The Markov clock (Poisson arrivals, exponential service): with
``B`` busy servers the next event comes after an ``Exp(lam*N + B)`` time; with probability
``lam*N / (lam*N + B)`` it is an arrival, otherwise the departure of the task in service at
a busy server chosen uniformly (memorylessness makes this exact).  The event list (given
tasks, any laws, server speeds): the next event is the earlier of the next arrival and the
earliest completion (a binary heap; an arrival comes first on a tie).  Every task is tracked
individually (FIFO per server, one shared pool), so response times are exact. Once the
measurement window has closed (the drain), tasks stop arriving and only departures are
simulated until the last measured task has left: a later arrival joins a queue behind every
task already there, so it cannot change a measured response time (on the Markov clock the
drain is the same chain with arrival rate 0).

:func:`build` compiles ``init`` and ``run`` for a policy's hooks
(:mod:`cloudsched.dispatch.policies`) and an engine: hooks are compile-time constants, so a
policy costs what its own code costs.  Work per event is O(1) plus the policy's.  When the
pool, the I-queue arena or the per-level arrays run short, ``run`` returns a status asking
the caller to enlarge them, then resumes: no event is ever half applied.

Random draws, in order, per event: Markov clock: ``standard_exponential`` (time step),
``random`` (event type; it also picks the busy server of a departure and the dispatcher of an
arrival); event list: ``random`` for the dispatcher, only for policies that use dispatchers;
then the policy's draws.  The mirror in :mod:`cloudsched.dispatch.engines.servers.mirror`
makes the same draws in the same order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cloudsched._jit import kernel, specialised
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.servers import records as S
from cloudsched.dispatch.engines.window import (
    batch_shifts,
    close_window,
    open_window,
    snapshot,
    window_moves,
    window_step,
)
from cloudsched.dispatch.view import iqueue_join, uniform

__all__ = ["build", "hist_bin"]


@kernel(nrt=False, inline=True)
def hist_bin(x, scratch):
    """Histogram bin of a response time ``x``: 512 bins per octave (relative width 2**-9).

    The bin is read off the bits of the float64 (exponent and the top 9 mantissa bits),
    through ``scratch`` (float64, shape ``(1,)``): ``x = 2**e * (1 + j / 512 + ...)`` falls in
    bin ``(e + 1 - R.H_EMIN) * 512 + j``, the same as ``frexp`` would give.
    """
    scratch[0] = x
    k = (scratch.view(np.int64)[0] >> (52 - 9)) - R.BITS_OFFSET
    if k < 0:
        return 0
    if k >= R.H_BINS:
        return R.H_BINS - 1
    return k


@kernel(nrt=False, inline=True)
def _speed(st, s, now):
    """Speed of server ``s`` for a service that starts at ``now`` (a slowdown's factor)."""
    t0, t1, period = st.slow_t[0], st.slow_t[1], st.slow_t[2]
    if now >= t0 and ((now - t0) % period < t1 - t0 if period > 0 else now < t1):
        return st.speed[s] * st.slow[s]
    return st.speed[s]


@kernel(nrt=False)
def _publish(st, now):
    """Publish the queue lengths (the state since the last event: the one at k x period)."""
    n = st.srv.shape[0]
    low = st.srv[0, S.S_QLEN]
    for s in range(n):
        q = st.srv[s, S.S_QLEN]
        st.board[s] = q
        low = min(low, q)
    count = 0
    for s in range(n):
        if st.board[s] == low:
            st.board_min[count] = s
            count += 1
    st.pub[2] = count
    period = st.pub[0]
    st.pub[1] = (np.floor(now / period) + 1.0) * period


@kernel(nrt=False, inline=True)
def _heap_put(st, i, s, key):
    """Put server ``s`` with completion time ``key`` at entry ``i`` of the heap."""
    st.heap[i] = s
    st.hkey[i] = key
    st.srv[s, S.S_HPOS] = i


@kernel(nrt=False, inline=True)
def _sift_up(st, i):
    """Move entry ``i`` of the completion-time heap up to its place."""
    heap, hkey = st.heap, st.hkey
    s = heap[i]
    key = hkey[i]
    while i > 0:
        p = (i - 1) // 2
        if hkey[p] <= key:
            break
        _heap_put(st, i, heap[p], hkey[p])
        i = p
    _heap_put(st, i, s, key)


@kernel(nrt=False, inline=True)
def _sift_down(st, i, size):
    """Move entry ``i`` of the completion-time heap down to its place."""
    heap, hkey = st.heap, st.hkey
    s = heap[i]
    key = hkey[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and hkey[c + 1] < hkey[c]:
            c += 1
        if hkey[c] >= key:
            break
        _heap_put(st, i, heap[c], hkey[c])
        i = c
    _heap_put(st, i, s, key)


@kernel(nrt=False, inline=True)
def _add_task(st, mt, s, now, size, tag, measuring, general):
    """Append a task (arrival time ``now``, ``size``, ordinal tag) to server ``s``'s FIFO."""
    srv, pool, ist = st.srv, st.pool, st.ist
    idx = ist[R.I_POOL_FREE]
    ist[R.I_POOL_FREE] = int(pool[idx, S.P_NEXT])
    pool[idx, S.P_NEXT] = -1.0
    pool[idx, S.P_ARR] = now
    pool[idx, S.P_SVC] = size
    pool[idx, S.P_ORD] = tag
    pool[idx, S.P_MARK] = -1.0
    if srv[s, S.S_HEAD] < 0:
        srv[s, S.S_HEAD] = idx
    else:
        pool[srv[s, S.S_TAIL], S.P_NEXT] = idx
    srv[s, S.S_TAIL] = idx
    old = srv[s, S.S_QLEN]
    new = old + 1
    srv[s, S.S_QLEN] = new
    if measuring:
        mt.area[new] += st.cnt[new] * (now - mt.last[new])
        mt.last[new] = now
    st.cnt[new] += 1
    if new > ist[R.I_MAXLEN]:
        ist[R.I_MAXLEN] = new
    if old == 0:
        nbusy = ist[R.I_NBUSY]
        srv[s, S.S_BUSY] = nbusy
        st.busy[nbusy] = s
        ist[R.I_NBUSY] = nbusy + 1
        if general:
            h = ist[R.I_HEAP_N]
            st.heap[h] = s
            st.hkey[h] = now + size / _speed(st, s, now)
            _sift_up(st, h)
            ist[R.I_HEAP_N] = h + 1
    return old


@kernel(nrt=False, inline=True)
def _record(st, mt, idx, now, shifts, record):
    """Measure the response time of the departing task in pool row ``idx`` (if tagged)."""
    tag = int(st.pool[idx, S.P_ORD])
    if tag == 0:
        return
    rt = now - st.pool[idx, S.P_ARR]
    b = (tag - 1) >> shifts[0]
    mt.bsum[b] += rt
    mt.bcnt[b] += 1
    mt.hist[b >> shifts[1], hist_bin(rt, mt.scratch)] += 1
    if rt < st.fst[R.F_RT_MIN]:
        st.fst[R.F_RT_MIN] = rt
    if rt > st.fst[R.F_RT_MAX]:
        st.fst[R.F_RT_MAX] = rt
    if record:
        mt.buf[tag - 1] = rt
    st.ist[R.I_MEAS_IN_SYS] -= 1


@kernel(nrt=False, inline=True)
def _remove_task(st, mt, s, now, measuring, general, shifts, record):
    """Remove the task in service at server ``s``; the next one (if any) starts."""
    srv, pool, ist = st.srv, st.pool, st.ist
    idx = srv[s, S.S_HEAD]
    nxt = int(pool[idx, S.P_NEXT])
    srv[s, S.S_HEAD] = nxt
    if nxt < 0:
        srv[s, S.S_TAIL] = -1
    st.fst[R.F_LAST_RT] = now - pool[idx, S.P_ARR]
    st.fst[R.F_LAST_MARK] = pool[idx, S.P_MARK]
    _record(st, mt, idx, now, shifts, record)
    pool[idx, S.P_NEXT] = ist[R.I_POOL_FREE]
    ist[R.I_POOL_FREE] = idx
    old = srv[s, S.S_QLEN]
    new = old - 1
    if measuring:
        mt.area[old] += st.cnt[old] * (now - mt.last[old])
        mt.last[old] = now
    st.cnt[old] -= 1
    srv[s, S.S_QLEN] = new
    if general:
        h = ist[R.I_HEAP_N]
        if new > 0:  # the next task starts service at once
            st.hkey[0] = now + pool[srv[s, S.S_HEAD], S.P_SVC] / _speed(st, s, now)
            _sift_down(st, 0, h)
        else:
            h -= 1
            ist[R.I_HEAP_N] = h
            srv[s, S.S_HPOS] = -1
            if h > 0:
                st.heap[0] = st.heap[h]
                st.hkey[0] = st.hkey[h]
                _sift_down(st, 0, h)
    if new == 0:
        p = srv[s, S.S_BUSY]
        nbusy = ist[R.I_NBUSY] - 1
        moved = st.busy[nbusy]
        st.busy[p] = moved
        srv[moved, S.S_BUSY] = p
        srv[s, S.S_BUSY] = -1
        ist[R.I_NBUSY] = nbusy


@kernel(nrt=False, inline=True)
def _blocked(st, mt, ctl, iqueues, nmicro, record):
    """Status asking the caller to act before the next event, or R.CHUNK to go on."""
    ist = st.ist
    if ist[R.I_POOL_FREE] < 0:
        return R.NEED_POOL
    if iqueues and ist[R.I_ARENA_TOP] + 4 * ist[R.I_MAXCAP] > st.arena.shape[0]:
        return R.NEED_ARENA
    if ist[R.I_MAXLEN] + 2 >= st.cnt.shape[0]:
        return R.NEED_LEVELS
    measured = ist[R.I_ARRIVALS] - ctl[R.C_ARR_WARM]
    if ist[R.I_PHASE] == R.MEASURE:
        if measured >= ctl[R.C_WIDTH] * nmicro:
            return R.NEED_MERGE
        if record and measured >= mt.buf.shape[0]:
            return R.BUFFER_FULL
    return R.CHUNK


@kernel(nrt=False)
def _place_initial(st, par, init_q, init_svc, general):
    """Put ``init_q[s]`` unmeasured tasks at each server (sizes ``init_svc``, in order)."""
    srv, pool = st.srv, st.pool
    free, k_svc = 0, 0
    for s in range(par.n):
        for _ in range(init_q[s]):
            idx = free
            free += 1
            pool[idx, S.P_NEXT] = -1.0
            pool[idx, S.P_MARK] = -1.0
            if general:
                pool[idx, S.P_SVC] = init_svc[k_svc]
                k_svc += 1
            if srv[s, S.S_HEAD] < 0:
                srv[s, S.S_HEAD] = idx
            else:
                pool[srv[s, S.S_TAIL], S.P_NEXT] = idx
            srv[s, S.S_TAIL] = idx
            srv[s, S.S_QLEN] += 1
            st.cnt[srv[s, S.S_QLEN]] += 1
            st.ist[R.I_MAXLEN] = max(st.ist[R.I_MAXLEN], srv[s, S.S_QLEN])
        if init_q[s] > 0:
            h = st.ist[R.I_NBUSY]
            srv[s, S.S_BUSY] = h
            st.busy[h] = s
            st.ist[R.I_NBUSY] = h + 1
            if general:
                h = st.ist[R.I_HEAP_N]
                st.heap[h] = s
                st.hkey[h] = pool[srv[s, S.S_HEAD], S.P_SVC] / _speed(st, s, 0.0)
                _sift_up(st, h)
                st.ist[R.I_HEAP_N] = h + 1
    st.ist[R.I_POOL_FREE] = free if free < pool.shape[0] else -1


@kernel(nrt=False)
def _reset(st, mt):
    """Empty system at time 0 (I-queue blocks of capacity ``dsp[0, S.D_CAP]``)."""
    n, size = st.srv.shape[0], st.pool.shape[0]
    for s in range(n):
        for c in range(st.srv.shape[1]):
            st.srv[s, c] = -1
        st.srv[s, S.S_QLEN] = 0
        st.srv[s, S.S_JPOS] = s
        st.jperm[s] = s
        st.perm[s] = s
    for k in range(size):
        st.pool[k, S.P_NEXT] = k + 1 if k + 1 < size else -1
        st.pool[k, S.P_ORD] = 0.0
        st.pool[k, S.P_ARR] = 0.0
        st.pool[k, S.P_SVC] = 0.0
        st.pool[k, S.P_MARK] = -1.0
    st.cnt[:] = 0.0
    st.cnt[0] = n
    st.bstart[:] = n
    st.bstart[0] = 0
    st.free_head[:] = -1
    st.ist[:] = 0
    st.fst[:] = 0.0
    st.fst[R.F_RT_MIN] = np.inf
    m_count = st.dsp.shape[0]
    st.ist[R.I_NEMPTY] = m_count
    cap0 = st.dsp[0, S.D_CAP]
    for m in range(m_count):
        st.dperm[m] = m
        st.dsp[m, S.D_START] = m * cap0
        st.dsp[m, S.D_SIZE] = 0
        st.dsp[m, S.D_CAP] = cap0
    st.ist[R.I_ARENA_TOP] = m_count * cap0
    st.ist[R.I_MAXCAP] = cap0
    mt.area[:] = 0.0
    mt.last[:] = 0.0


def build(
    choose: Callable[..., int],
    on_arrival: Callable[..., None],
    on_departure: Callable[..., None],
    on_start: Callable[..., None],
    *,
    iqueues: bool,
    per_dispatcher: bool,
    general: bool,
    fingerprint: str,
    name: str = "a policy",
    checked: bool = False,
) -> tuple[Callable[..., None], Callable[..., int]]:
    """Compile ``init`` and ``run`` for a policy's hooks and one engine.

    ``general`` (a compile-time constant, as the hooks are): the event-list engine, else the
    Markov-chain one.  ``checked``: compile with numba's bounds checking (the hooks are
    inlined, so their indexing is checked too): an index outside an array raises
    ``IndexError`` instead of reading or writing memory it does not own.

    ``init(st, mt, par, rng, init_q, init_iq, init_svc, event_list)`` sets up time 0: an
    empty system, then ``init_q[s]`` tasks at server ``s`` (int64, ``(N,)`` or empty; they
    arrived before time 0 and are not measured, sizes ``init_svc`` in server order when
    ``event_list``), then the I-queue of each server from ``init_iq`` (int64, ``(N,)``, -1: not
    listed, members joining in server order) when it is given, and then the policy's
    ``on_start(st, par, rng, given)`` (``given``: whether ``init_iq`` was).  It runs once a
    replication, so the engine is an argument: one ``init`` a policy serves both engines
    (compiled once, not once per engine).

    ``run(st, mt, tasks, par, ctl, rng)`` advances until done or until the caller must act
    (a status code of :mod:`cloudsched.dispatch.engines.records`).  Measurement: the k-th measured
    arrival (k = 0, 1, ...) carries ``k + 1`` in its pool row and belongs to micro-batch
    ``k // width``; at its departure its response time is added to ``bsum`` / ``bcnt`` and
    the histogram segment of its micro-batch, and in record mode to ``buf[k]`` (R.BUFFER_FULL
    asks for a longer ``buf`` before an arrival would have no row there).
    When micro-batch ``B`` would open, ``run`` returns R.NEED_MERGE (the caller merges pairs
    and doubles the width); row ``b`` of the snapshots holds the running integrals when
    micro-batch ``b`` opens.  After the measured arrival that brings the count to
    ``ctl[R.C_NEXT_CHECK]`` it returns R.CHECKPOINT; a choice outside ``[0, N)`` returns
    R.BAD_SERVER (the value in ``ist[R.I_BAD]``).  Event-list engine: ``tasks`` holds a chunk
    consumed from ``ist[R.I_TASK_PTR]``; ``ctl[R.C_LAST_CHUNK] = 1`` marks the last one
    (otherwise ``run`` returns R.NEED_TASKS at its end).  ``fingerprint`` identifies the hooks
    in the on-disk cache; ``name``, the policy in the line a long compile writes.
    """

    def init(st, mt, par, rng, init_q, init_iq, init_svc, event_list):
        _reset(st, mt)
        if init_q.shape[0] == par.n:
            _place_initial(st, par, init_q, init_svc, event_list)
        given = init_iq.shape[0] == par.n
        if iqueues and given:
            for s in range(par.n):
                if init_iq[s] >= 0:
                    iqueue_join(st, init_iq[s], s)
        on_start(st, par, rng, given)

    def run(st, mt, tasks, par, ctl, rng):
        ist, fst = st.ist, st.fst
        shifts = batch_shifts(mt, ctl)
        nmicro = mt.bsum.shape[0]  # a power of two, a multiple of R.H_SEGMENTS
        lam_n, arr_end = par.lam_n, ctl[R.C_ARR_END]
        now = fst[R.F_NOW]
        done = 0
        status = R.CHUNK
        while True:
            if ist[R.I_PHASE] == R.DRAIN and ist[R.I_MEAS_IN_SYS] == 0:
                status = R.DONE
                break
            if done >= ctl[R.C_BUDGET]:
                break
            status = _blocked(st, mt, ctl, iqueues, nmicro, par.record)
            if status != R.CHUNK:
                break
            u = 0.0
            # In the drain no task arrives any more: a later arrival queues behind every
            # measured task (FIFO), so it cannot change a measured response time.
            draining = ist[R.I_PHASE] == R.DRAIN
            lam = 0.0 if draining else lam_n
            if general:
                ptr = ist[R.I_TASK_PTR]
                if draining:
                    na = np.inf
                elif ptr >= tasks.arr.shape[0] and ctl[R.C_LAST_CHUNK] == 0:
                    status = R.NEED_TASKS
                    break
                else:
                    na = tasks.arr[ptr] if ptr < tasks.arr.shape[0] else np.inf
                nd = st.hkey[0] if ist[R.I_HEAP_N] > 0 else np.inf
                if na == np.inf and nd == np.inf:  # no task left anywhere
                    if ist[R.I_PHASE] == R.WARMUP:
                        open_window(st, mt, ctl, ist[R.I_ARRIVALS], ist[R.I_NEMPTY], now)
                    if ist[R.I_PHASE] == R.MEASURE:
                        close_window(st, mt, ist[R.I_ARRIVALS], ist[R.I_NEMPTY], now)
                    status = R.DONE
                    break
                is_arrival = na <= nd
                now = na if is_arrival else nd
            else:
                rate = lam + ist[R.I_NBUSY]
                now = now + rng.standard_exponential() / rate
                u = rng.random() * rate
                is_arrival = u < lam
            fst[R.F_NOW] = now
            if st.pub[0] > 0.0 and now >= st.pub[1]:  # polled information: a new board
                _publish(st, now)
            arrivals = ist[R.I_ARRIVALS]
            # the measured tasks are followed after the window closes (the drain)
            phase = ist[R.I_PHASE]
            if window_moves(phase, arr_end, par.t_end, arrivals, now, is_arrival):
                empty = ist[R.I_NEMPTY]
                phase, _ = window_step(st, mt, ctl, par, arrivals, now, is_arrival, empty)
            measuring = phase == R.MEASURE
            done += 1
            checkpoint = False
            if is_arrival:
                tag = 0
                if measuring:
                    order = arrivals - ctl[R.C_ARR_WARM]
                    if order > 0 and order & (ctl[R.C_WIDTH] - 1) == 0:
                        snapshot(st, mt, ist[R.I_NEMPTY], order >> shifts[0], now)
                    checkpoint = order + 1 == ctl[R.C_NEXT_CHECK]
                    tag = order + 1
                    ist[R.I_MEAS_IN_SYS] += 1
                ist[R.I_ARRIVALS] = arrivals + 1
                size = 0.0
                m = 0
                if general:
                    ptr = ist[R.I_TASK_PTR]
                    size = tasks.svc[ptr]
                    ist[R.I_TASK_PTR] = ptr + 1
                    if per_dispatcher:
                        m = uniform(rng, par.m)
                else:
                    # Given an arrival, u / lam_n is uniform on [0, 1): it picks the dispatcher.
                    m = int(u / lam_n * par.m)
                    if m >= par.m:
                        m = par.m - 1
                s = choose(st, par, rng, m)
                if s < 0 or s >= par.n:
                    ist[R.I_BAD] = s
                    status = R.BAD_SERVER
                    break
                _add_task(st, mt, s, now, size, tag, measuring, general)
                on_arrival(st, par, rng, s, m)
            else:
                if general:
                    s = st.heap[0]
                else:
                    k = int(u - lam)
                    if k >= ist[R.I_NBUSY]:
                        k = ist[R.I_NBUSY] - 1
                    s = st.busy[k]
                _remove_task(st, mt, s, now, measuring, general, shifts, par.record)
                on_departure(st, par, rng, s)
            if checkpoint:
                status = R.CHECKPOINT
                break
        ist[R.I_EVENTS] += done
        return status

    check = "checked" if checked else ""
    key = f"{fingerprint}:{'general' if general else 'markov'}:{check}"
    clock = "event list" if general else "Markov clock"
    checks = ", bounds-checked" if checked else ""
    return (
        specialised(
            init, f"{fingerprint}:init:{check}", f"{name}'s start{checks}", boundscheck=checked
        ),
        specialised(
            run, key, f"{name}'s simulator ({clock}{checks})", _nrt=False, boundscheck=checked
        ),
    )
