"""Compiled event loop of the delay engine: messages that take time, views that are stale.

The farm of :mod:`cloudsched.dispatch.engines.counts.kernel` (Poisson arrivals at rate ``lam N``,
exp(1) service at equal speeds, ``random``, ``pod(d)``, ``jsq``, ``jiq``, ``jiq-pod`` with
delete requests), but with each server kept apart, because a late message names its server:

* ``q[s]``: tasks at server ``s``; ``blist[:nbusy]`` the busy servers (``bpos[s]`` where);
  ``cnt[i]`` the servers holding at least ``i`` tasks, as in the counts engine, for the
  measurements (:mod:`cloudsched.dispatch.engines.window`); the records: :mod:`.records`.
* The published view (``board``, an ordered view of :mod:`.ops`): what the policies that
  pick by queue length read (``pod``, ``jsq`` and ``jiq-pod``).  Every change of ``q[s]``
  sends an update (length and sequence number ``useq[s]``) that lands after the ``info``
  delay (at once without one); a dispatcher keeps the newest update delivered
  (``bseq[s]``).
* ``view="own"``: dispatcher ``k`` reads ``own[k, s]``, the tasks it sent to ``s`` that
  have not finished (an ordered view per dispatcher); each server's tasks are a FIFO list
  in the task pool (``tasks``: the dispatcher that sent each) so that a departure knows
  whose count to lower.
* I-queues (``jiq``, ``jiq-pod``): a server that empties starts idle period ``sseq[s]``
  and sends a join to a uniform dispatcher; the join lists it when it lands (``lists``).  A
  dispatcher with entries takes the last of its list (entries are appended; a removal moves
  the last into the gap: the newest unless a delete intervened); a task that reaches an idle server
  otherwise (random, pod, or through an older entry) makes the server send a delete for its
  current period, which removes that entry if it is still listed when the delete lands.
  A task handed out by an entry whose server is busy is counted as ``stale``.  Joins and
  deletes of one server share a channel: each lands at its own delay or just after the
  previous one (``msgs.chan[s]``), whichever is later.

Events: after an ``Exp(lam N + nbusy)`` time comes an arrival (probability ``lam N / rate``)
or the departure at a uniform busy server, unless the earliest message in the heap lands
first: then that message is delivered and the exponential time is discarded (memoryless).

Random draws, in order: per exogenous event ``standard_exponential`` and ``random``
(event type; for an arrival its dispatcher, for a departure its server); an arrival not
served from an I-queue draws one ``random`` (``random``, ``jiq``: the server) or one per
probe (``pod``, ``jiq-pod``; with replacement a uniform server, without one step of a
partial Fisher-Yates shuffle of ``samp``) or one (``jsq``: a uniform server among the least);
a measured arrival its Erlang(``k + 1``) response time (:func:`erlang_time`); a server that
empties (I-queues) one ``random`` for its dispatcher; a message with an exponential delay
one ``standard_exponential``.  A message event draws only the exponential that was
discarded.  :func:`cloudsched.dispatch.engines.delay.mirror.mirror_delay` makes the same draws
in plain Python.
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines import window as W
from cloudsched.dispatch.engines.counts.kernel import erlang_time
from cloudsched.dispatch.engines.counts.records import LEAST, UNIFORM
from cloudsched.dispatch.engines.delay.ops import (
    MSG_DELETE,
    MSG_INFO,
    MSG_JOIN,
    heap_pop,
    heap_push,
    iq_add,
    iq_remove,
    own_view,
    view_down,
    view_least,
    view_set,
    view_up,
)
from cloudsched.dispatch.engines.delay.records import D_FREE, D_NBUSY, D_NFREE

__all__ = ["run_delay"]


@kernel(nrt=False, inline=True)
def _send(msgs, par, rng, now, kind, s, value, seq):
    """Send a message; return True if it lands now (no delay, nothing ahead on its channel).

    ``par.dmean[kind]`` / ``par.dexp[kind]``: its delay; joins and deletes share the server's
    channel.
    """
    chan = msgs.chan
    t = now
    mean = par.dmean[kind]
    if mean > 0.0:
        t = now + (mean * rng.standard_exponential() if par.dexp[kind] else mean)
    if kind != MSG_INFO:  # strictly after the message ahead: the heap keeps no order in ties
        if chan[s] >= t and chan[s] > now:
            t = np.nextafter(chan[s], np.inf)
        chan[s] = t
    if t <= now:
        return True
    heap_push(msgs, t, kind, s, value, seq)
    return False


@kernel(nrt=False, inline=True)
def _pick(st, par, rng, k):
    """Return the server an arrival at dispatcher ``k`` joins when no I-queue serves it."""
    base = par.base
    n = base.n
    if base.pick == UNIFORM:
        return int(rng.random() * n)
    if base.pick == LEAST:
        if par.mine:
            return view_least(own_view(st.own, k), rng.random())
        return view_least(st.board, rng.random())
    samp = st.samp
    best = -1
    low = 1 << 62
    for i in range(base.d):
        if base.replace:
            t = int(rng.random() * n)
        else:
            j = i + int(rng.random() * (n - i))
            t = samp[j]
            samp[j] = samp[i]
            samp[i] = t
        v = st.own.val[k, t] if par.mine else st.board.val[t]
        if v < low:
            low = v
            best = t
    return best


@kernel(nrt=False, inline=True)
def _deliver(st, now, measuring, got):
    """Apply the message just taken off the heap (``got``: kind, server, value, sequence).

    Returns the size of the I-queue a join lands in (0 for other messages).
    """
    kind, s, value, seq = got[0], got[1], got[2], got[3]
    lists = st.lists
    if kind == MSG_INFO:
        if seq > st.bseq[s]:
            st.bseq[s] = seq
            view_set(st.board, s, value)
    elif kind == MSG_JOIN:
        size = iq_add(lists, st.iq, st.fst, now, measuring, value, s)
        lists.owner[s] = value
        lists.seq[s] = seq
        return size
    elif lists.pos[s] >= 0 and lists.seq[s] == seq:
        iq_remove(lists, st.iq, st.fst, now, measuring, lists.owner[s], s)
    return 0


@kernel(nrt=False, inline=True)
def _own_arrival(st, s, k):
    """Dispatcher ``k`` sent a task to ``s``: its count rises, the task joins ``s``'s list."""
    tasks, dst = st.tasks, st.dst
    view_up(own_view(st.own, k), s)
    t = dst[D_FREE]
    dst[D_FREE] = tasks.next[t]
    dst[D_NFREE] -= 1
    tasks.sender[t] = k
    tasks.next[t] = -1
    if tasks.tail[s] >= 0:
        tasks.next[tasks.tail[s]] = t
    else:
        tasks.head[s] = t
    tasks.tail[s] = t


@kernel(nrt=False, inline=True)
def _own_departure(st, s):
    """Take the task at the head of ``s``'s list off: its sender's count falls."""
    tasks, dst = st.tasks, st.dst
    t = tasks.head[s]
    tasks.head[s] = tasks.next[t]
    if tasks.head[s] < 0:
        tasks.tail[s] = -1
    kd = tasks.sender[t]
    tasks.next[t] = dst[D_FREE]
    dst[D_FREE] = t
    dst[D_NFREE] += 1
    view_down(own_view(st.own, kd), s)


@kernel(nrt=False, entry=True, label="the delay engine's simulator")
def run_delay(st, mt, ctl, par, rng):
    """Advance the farm until done or until the caller must act (a status of ``records``).

    ``st``, ``par``: :mod:`.records`; ``mt``: the shared meter (``hist``: the levels joined).
    Statuses beyond the counts kernel's: ``NEED_POOL`` (the task pool is nearly empty),
    ``NEED_TASKS`` (the message heap is nearly full).
    """
    q, blist, bpos, cnt, iq = st.q, st.blist, st.bpos, st.cnt, st.iq
    lists, msgs, dst, ist, fst, msg = st.lists, st.msgs, st.dst, st.ist, st.fst, st.msg
    area, last, bsum, bcnt, joins = mt.area, mt.last, mt.bsum, mt.bcnt, mt.hist
    wshift, segshift = W.batch_shifts(mt, ctl)
    arr_end, t_end = ctl[R.C_ARR_END], par.base.t_end
    levels = cnt.shape[0]
    base = par.base  # the counts engine's parameters
    lam_n, m, mine = base.lam_n, base.m, par.mine
    now = fst[R.F_NOW]
    arrivals, phase = ist[R.I_ARRIVALS], ist[R.I_PHASE]
    maxlen, jmax = ist[R.I_MAXLEN], ist[R.I_MAXCAP]
    nbusy = dst[D_NBUSY]
    iqueues = base.iqueues
    reads = base.pick != UNIFORM
    probes = base.probes
    room = min(iq.shape[0], lists.entries.shape[1])
    got = msgs.body[msgs.body.shape[0] - 1]  # the heap's last row is heap_pop's scratch
    done = 0
    status = R.CHUNK
    while True:
        status, stop = W.before_event(mt, ctl, phase, done, maxlen, levels, arrivals)
        if stop:
            break
        if jmax + 2 >= room:
            status = R.NEED_ARENA
            break
        if msgs.size[0] + 8 >= msgs.time.shape[0] - 1:
            status = R.NEED_TASKS
            break
        if mine and dst[D_NFREE] < 2:
            status = R.NEED_POOL
            break
        rate = lam_n + nbusy
        step = rng.standard_exponential() / rate
        message = msgs.size[0] > 0 and msgs.time[0] <= now + step
        now = msgs.time[0] if message else now + step
        u = 0.0 if message else rng.random() * rate
        is_arrival = not message and u < lam_n
        if W.window_moves(phase, arr_end, t_end, arrivals, now, is_arrival):
            phase, now = W.window_step(st, mt, ctl, base, arrivals, now, is_arrival, iq[0])
        done += 1
        if phase == R.DRAIN:  # the window closed at this event
            continue
        measuring = phase == R.MEASURE
        checkpoint = False
        if message:
            heap_pop(msgs, got)
            size = _deliver(st, now, measuring, got)
            if size > jmax:
                jmax = size
            continue
        s = -1
        if is_arrival:
            k = min(int(u / lam_n * m), m - 1)  # the dispatcher (u / lam_n is uniform)
            taken = -1
            if iqueues and lists.size[k] > 0:  # the last entry of its list
                s = lists.entries[k, lists.size[k] - 1]
                taken = lists.seq[s]
                iq_remove(lists, iq, fst, now, measuring, k, s)
                if q[s] > 0 and measuring:
                    msg[R.M_STALE] += 1
            else:
                s = _pick(st, par, rng, k)
                if measuring:
                    msg[R.M_PROBE] += probes
            j0 = q[s]
            if iqueues and j0 == 0 and taken != lists.period[s]:  # listed, or its join on the way
                if measuring:
                    msg[R.M_DELETE] += 1
                seq = lists.period[s]
                landed = _send(msgs, par, rng, now, MSG_DELETE, s, 0, seq)
                if landed and lists.pos[s] >= 0 and lists.seq[s] == seq:
                    iq_remove(lists, iq, fst, now, measuring, lists.owner[s], s)
            j = j0 + 1
            if measuring:
                order = W.measured_order(st, mt, ctl, arrivals, now, iq[0], wshift)
                b = order >> wshift
                bsum[b] += erlang_time(rng, j)
                bcnt[b] += 1
                joins[b >> segshift, j0] += 1.0
                checkpoint = order + 1 == ctl[R.C_NEXT_CHECK]
                area[j] += cnt[j] * (now - last[j])
                last[j] = now
            cnt[j] += 1.0
            q[s] = j
            if j > maxlen:
                maxlen = j
            if j0 == 0:
                blist[nbusy] = s
                bpos[s] = nbusy
                nbusy += 1
            if mine:
                _own_arrival(st, s, k)
            arrivals += 1
        else:
            s = blist[min(int(u - lam_n), nbusy - 1)]
            kk = q[s]
            if measuring:
                area[kk] += cnt[kk] * (now - last[kk])
                last[kk] = now
            cnt[kk] -= 1.0
            q[s] = kk - 1
            if mine:
                _own_departure(st, s)
            if kk == 1:
                last_busy = blist[nbusy - 1]
                blist[bpos[s]] = last_busy
                bpos[last_busy] = bpos[s]
                bpos[s] = -1
                nbusy -= 1
                if iqueues:  # idle: a join to a uniform dispatcher
                    lists.period[s] += 1
                    kd = min(int(rng.random() * m), m - 1)
                    if measuring:
                        msg[R.M_JOIN] += 1
                    seq = lists.period[s]
                    if _send(msgs, par, rng, now, MSG_JOIN, s, kd, seq):
                        size = iq_add(lists, iq, fst, now, measuring, kd, s)
                        lists.owner[s] = kd
                        lists.seq[s] = lists.period[s]
                        if size > jmax:
                            jmax = size
        if reads and not mine:  # publish the new length
            st.useq[s] += 1
            seq = st.useq[s]
            if _send(msgs, par, rng, now, MSG_INFO, s, q[s], seq):
                st.bseq[s] = st.useq[s]
                view_set(st.board, s, q[s])
        if checkpoint:
            status = R.CHECKPOINT
            break
    W.after_chunk(fst, ist, now, arrivals, phase, maxlen, done)
    ist[R.I_MAXCAP] = jmax
    dst[D_NBUSY] = nbusy
    return status
