"""Compiled event loop of the delay engine: messages that take time, views that are stale.

The farm of :mod:`cloudsched.dispatch._kernel_counts` (Poisson arrivals at rate ``lam N``,
exp(1) service at equal speeds, ``random``, ``pod(d)``, ``jsq``, ``jiq``, ``jiq-pod`` with
delete requests), but with each server kept apart, because a late message names its server:

* ``q[s]``: tasks at server ``s``; ``blist[:nbusy]`` the busy servers (``bpos[s]`` where);
  ``cnt[i]`` the servers holding at least ``i`` tasks, as in the counts engine, for the
  measurements (:mod:`cloudsched.dispatch._counts_window`).
* The published view (``board``, an ordered view of :mod:`._delay_ops`): what ``pod``,
  ``jsq`` and ``jiq-pod`` read.  Every change of ``q[s]`` sends an update (length and
  sequence number ``useq[s]``) that lands after the ``info`` delay (at once without one);
  a dispatcher keeps the newest update delivered (``bseq[s]``).
* ``view="own"``: dispatcher ``k`` reads ``own[k, s]``, the tasks it sent to ``s`` that
  have not finished (an ordered view per dispatcher); each server's tasks are a FIFO list
  in the task pool (``thead``, ``ttail``, ``tnext``; ``tdisp``: the dispatcher that sent
  it) so that a departure knows whose count to lower.
* I-queues (``jiq``, ``jiq-pod``): a server that empties starts idle period ``sseq[s]``
  and sends a join to a uniform dispatcher; the join lists it when it lands.  A dispatcher
  with entries takes the last of its list (entries are appended; a removal moves the last
  into the gap: the newest unless a delete intervened); a task that reaches an idle server
  otherwise (random, pod, or through an older entry) makes the server send a delete for its
  current period, which removes that entry if it is still listed when the delete lands.
  A task handed out by an entry whose server is busy is counted as ``stale``.  Joins and
  deletes of one server share a channel: each lands at its own delay or just after the
  previous one (``chan[s]``), whichever is later.

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
discarded.  :func:`cloudsched.testing.delay_mirror.mirror_delay` makes the same draws in
plain Python.
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch import state as S
from cloudsched.dispatch._counts_window import snapshot, window_step
from cloudsched.dispatch._delay_ops import (
    MSG_DELETE,
    MSG_INFO,
    MSG_JOIN,
    heap_pop,
    heap_push,
    iq_add,
    iq_remove,
    view_down,
    view_least,
    view_set,
    view_up,
)
from cloudsched.dispatch._kernel_counts import JIQ, JIQ_POD, JSQ, POD, RANDOM, erlang_time

__all__ = ["D_FREE", "D_NBUSY", "D_NFREE", "N_DST", "run_delay"]

#: Scalars of the delay engine ``dst``: busy servers, head and size of the task pool's free
#: list.
D_NBUSY, D_FREE, D_NFREE = range(3)
N_DST = 3


@kernel(nrt=False, inline=True)
def _send(htime, hmsg, hn, chan, rng, now, dmean, dexp, kind, s, value, seq):
    """Send a message; return True if it lands now (no delay, nothing ahead on its channel).

    ``dmean[kind]`` / ``dexp[kind]``: its delay; joins and deletes share the server's channel.
    """
    t = now
    mean = dmean[kind]
    if mean > 0.0:
        t = now + (mean * rng.standard_exponential() if dexp[kind] else mean)
    if kind != MSG_INFO:  # strictly after the message ahead: the heap keeps no order in ties
        if chan[s] >= t and chan[s] > now:
            t = np.nextafter(chan[s], np.inf)
        chan[s] = t
    if t <= now:
        return True
    heap_push(htime, hmsg, hn, t, kind, s, value, seq)
    return False


@kernel(nrt=False, inline=True)
def _pick(q, board, bperm, bstart, own, operm, ostart, samp, rng, n, code, d, replace, mine, k):
    """Return the server an arrival at dispatcher ``k`` joins when no I-queue serves it."""
    if code in (RANDOM, JIQ):
        return int(rng.random() * n)
    if code == JSQ:
        if mine:
            return view_least(own[k], operm[k], ostart[k], rng.random())
        return view_least(board, bperm, bstart, rng.random())
    best = -1
    low = 1 << 62
    for i in range(d):
        if replace:
            t = int(rng.random() * n)
        else:
            j = i + int(rng.random() * (n - i))
            t = samp[j]
            samp[j] = samp[i]
            samp[i] = t
        v = own[k, t] if mine else board[t]
        if v < low:
            low = v
            best = t
    return best


@kernel(nrt=False)
def run_delay(
    q,
    blist,
    bpos,
    cnt,
    iq,
    board,
    bperm,
    bidx,
    bstart,
    bseq,
    useq,
    own,
    operm,
    opos,
    ostart,
    thead,
    ttail,
    tnext,
    tdisp,
    iqe,
    iqn,
    epos,
    edisp,
    eseq,
    sseq,
    chan,
    htime,
    hmsg,
    hn,
    samp,
    dst,
    ist,
    fst,
    msg,
    area,
    last,
    bsum,
    bcnt,
    joins,
    snap,
    snap_area,
    ctl,
    lam_n,
    n,
    m,
    code,
    d,
    replace,
    mine,
    dmean,
    dexp,
    t_warm,
    t_end,
    rng,
):
    """Advance the farm until done or until the caller must act (a status of ``state``).

    Arrays as in the module notes and :func:`cloudsched.dispatch._kernel_counts.run_counts`;
    ``dmean`` / ``dexp``: the info, join and delete delays (mean, exponential or fixed);
    ``mine``: dispatchers read their own active requests.  Statuses beyond the counts
    kernel's: ``NEED_POOL`` (the task pool is nearly empty), ``NEED_TASKS`` (the message
    heap is nearly full).
    """
    wshift = 0
    while (1 << wshift) < ctl[S.C_WIDTH]:
        wshift += 1
    nmicro = bsum.shape[0]
    segshift = 0
    while (S.H_SEGMENTS << segshift) < nmicro:
        segshift += 1
    levels = cnt.shape[0]
    arr_end, arr_warm, width = ctl[S.C_ARR_END], ctl[S.C_ARR_WARM], ctl[S.C_WIDTH]
    budget = ctl[S.C_BUDGET]
    now = fst[S.F_NOW]
    arrivals, phase = ist[S.I_ARRIVALS], ist[S.I_PHASE]
    maxlen, jmax = ist[S.I_MAXLEN], ist[S.I_MAXCAP]
    nbusy = dst[D_NBUSY]
    iqueues = code in (JIQ, JIQ_POD)
    reads = code in (POD, JSQ, JIQ_POD)
    probes = d if code in (POD, JIQ_POD) else 0
    room = min(iq.shape[0], iqe.shape[1])
    got = hmsg[hmsg.shape[0] - 1]  # the heap's last row is heap_pop's scratch
    done = 0
    status = S.CHUNK
    while True:
        if phase == S.DRAIN:
            status = S.DONE
            break
        if done >= budget:
            break
        if maxlen + 2 >= levels:
            status = S.NEED_LEVELS
            break
        if jmax + 2 >= room:
            status = S.NEED_ARENA
            break
        if hn[0] + 8 >= htime.shape[0] - 1:
            status = S.NEED_TASKS
            break
        if mine and dst[D_NFREE] < 2:
            status = S.NEED_POOL
            break
        if phase == S.MEASURE and arrivals - arr_warm >= width * nmicro:
            status = S.NEED_MERGE
            break
        rate = lam_n + nbusy
        step = rng.standard_exponential() / rate
        message = hn[0] > 0 and htime[0] <= now + step
        now = htime[0] if message else now + step
        u = 0.0 if message else rng.random() * rate
        is_arrival = not message and u < lam_n
        phase, arr_warm, now = window_step(
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
        )
        done += 1
        if phase == S.DRAIN:  # the window closed at this event
            continue
        measuring = phase == S.MEASURE
        checkpoint = False
        if message:
            heap_pop(htime, hmsg, hn, got)
            kind, s, value, seq = got[0], got[1], got[2], got[3]
            if kind == MSG_INFO:
                if seq > bseq[s]:
                    bseq[s] = seq
                    view_set(board, bperm, bidx, bstart, s, value)
            elif kind == MSG_JOIN:
                size = iq_add(iqe, iqn, epos, iq, fst, now, measuring, value, s)
                edisp[s] = value
                eseq[s] = seq
                if size > jmax:
                    jmax = size
            elif epos[s] >= 0 and eseq[s] == seq:
                iq_remove(iqe, iqn, epos, iq, fst, now, measuring, edisp[s], s)
            continue
        s = -1
        if is_arrival:
            k = min(int(u / lam_n * m), m - 1)  # the dispatcher (u / lam_n is uniform)
            taken = -1
            if iqueues and iqn[k] > 0:  # the last entry of its list
                s = iqe[k, iqn[k] - 1]
                taken = eseq[s]
                iq_remove(iqe, iqn, epos, iq, fst, now, measuring, k, s)
                if q[s] > 0 and measuring:
                    msg[S.M_STALE] += 1
            else:
                s = _pick(
                    q,
                    board,
                    bperm,
                    bstart,
                    own,
                    operm,
                    ostart,
                    samp,
                    rng,
                    n,
                    code,
                    d,
                    replace,
                    mine,
                    k,
                )
                if measuring:
                    msg[S.M_PROBE] += probes
            j0 = q[s]
            if iqueues and j0 == 0 and taken != sseq[s]:  # listed, or its join on the way
                if measuring:
                    msg[S.M_DELETE] += 1
                seq = sseq[s]
                landed = _send(htime, hmsg, hn, chan, rng, now, dmean, dexp, MSG_DELETE, s, 0, seq)
                if landed and epos[s] >= 0 and eseq[s] == seq:
                    iq_remove(iqe, iqn, epos, iq, fst, now, measuring, edisp[s], s)
            j = j0 + 1
            if measuring:
                order = arrivals - arr_warm
                if order > 0 and order & (width - 1) == 0:
                    snapshot(cnt, iq, fst, msg, area, last, snap, snap_area, order >> wshift, now)
                b = order >> wshift
                bsum[b] += erlang_time(rng, j)
                bcnt[b] += 1
                joins[b >> segshift, j0] += 1.0
                checkpoint = order + 1 == ctl[S.C_NEXT_CHECK]
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
                view_up(own[k], operm[k], opos[k], ostart[k], s)
                t = dst[D_FREE]
                dst[D_FREE] = tnext[t]
                dst[D_NFREE] -= 1
                tdisp[t] = k
                tnext[t] = -1
                if ttail[s] >= 0:
                    tnext[ttail[s]] = t
                else:
                    thead[s] = t
                ttail[s] = t
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
                t = thead[s]
                thead[s] = tnext[t]
                if thead[s] < 0:
                    ttail[s] = -1
                kd = tdisp[t]
                tnext[t] = dst[D_FREE]
                dst[D_FREE] = t
                dst[D_NFREE] += 1
                view_down(own[kd], operm[kd], opos[kd], ostart[kd], s)
            if kk == 1:
                last_busy = blist[nbusy - 1]
                blist[bpos[s]] = last_busy
                bpos[last_busy] = bpos[s]
                bpos[s] = -1
                nbusy -= 1
                if iqueues:  # idle: a join to a uniform dispatcher
                    sseq[s] += 1
                    kd = min(int(rng.random() * m), m - 1)
                    if measuring:
                        msg[S.M_JOIN] += 1
                    seq = sseq[s]
                    if _send(htime, hmsg, hn, chan, rng, now, dmean, dexp, MSG_JOIN, s, kd, seq):
                        size = iq_add(iqe, iqn, epos, iq, fst, now, measuring, kd, s)
                        edisp[s] = kd
                        eseq[s] = sseq[s]
                        if size > jmax:
                            jmax = size
        if reads and not mine:  # publish the new length
            useq[s] += 1
            seq = useq[s]
            if _send(htime, hmsg, hn, chan, rng, now, dmean, dexp, MSG_INFO, s, q[s], seq):
                bseq[s] = useq[s]
                view_set(board, bperm, bidx, bstart, s, q[s])
        if checkpoint:
            status = S.CHECKPOINT
            break
    fst[S.F_NOW] = now
    ist[S.I_ARRIVALS] = arrivals
    ist[S.I_PHASE] = phase
    ist[S.I_MAXLEN] = maxlen
    ist[S.I_MAXCAP] = jmax
    ist[S.I_EVENTS] += done
    dst[D_NBUSY] = nbusy
    return status
