"""Compiled event loop of the occupancy-count engine with speed classes (random, pod, jsq).

Servers of the same speed are exchangeable: with K speed classes (``speed[c]``), the numbers
``ccnt[c, i]`` of class-``c`` servers holding at least ``i`` tasks are a Markov chain of their
own, and ``cnt[i] = sum_c ccnt[c, i]`` is kept beside them (the policies and the
measurements read it).  The policies here choose by queue length alone (``random``,
``pod(d)`` with or without replacement, ``jsq``), so:

* After an ``Exp(lam N + sum_c speed[c] ccnt[c, 1])`` time comes an arrival with probability
  ``lam N / rate``, else a departure.  A departure's class and level are read off the same
  uniform ``w = u - lam N``: the first class ``c`` whose running sum of
  ``speed[c] ccnt[c, 1]`` exceeds ``w``, then ``w' = (w - sum before c) / speed[c]`` in
  ``[0, ccnt[c, 1])`` gives the level as in the equal-speed kernel (the largest ``k`` with
  ``ccnt[c, k] > w'``): a uniform busy server of that class, picked with rate proportional
  to its speed.
* An arrival joins level ``k`` exactly as in :mod:`cloudsched.dispatch.engines.counts.kernel`
  (read off ``cnt``); the server is then of class ``c`` with probability
  ``(ccnt[c, k] - ccnt[c, k + 1]) / (cnt[k] - cnt[k + 1])``: the policies break ties
  uniformly, so the server chosen is uniform among the sampled ones at level ``k``, which
  are uniform among all servers at level ``k`` (one more ``random`` when K > 1).
* Its response time is Erlang(``k + 1``) / ``speed[c]`` (FCFS, exponential work of mean 1),
  drawn at joining; ``joins[segment, c, k]`` counts the (class, level) pairs joined, from
  which :func:`cloudsched.dispatch.engines.erlang.erlang_histogram` gives the exact distribution.

Random draws, in order, per event: ``standard_exponential`` (time step), ``random`` (event
type, and for a departure its class and level); for an arrival one ``random`` for the level
(none for ``jsq``), then one for the class when K > 1, then its response time (as in the
equal-speed kernel).  :func:`cloudsched.dispatch.engines.counts.mirror.mirror_counts` (``speeds=``)
makes the same draws in plain Python.
"""

from __future__ import annotations

from cloudsched._jit import kernel
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines import window as W
from cloudsched.dispatch.engines.counts.kernel import erlang_time, join_level

__all__ = ["run_classes"]


@kernel(nrt=False, inline=True)
def _busy_rate(ccnt, speed):
    """Total service rate of the busy servers: ``sum_c speed[c] ccnt[c, 1]`` (class order)."""
    total = 0.0
    for c in range(speed.shape[0]):
        total += speed[c] * ccnt[c, 1]
    return total


@kernel(nrt=False, inline=True)
def _departure(ccnt, speed, w):
    """Return (class, level) of the departure read off ``w`` in ``[0, busy rate)``."""
    last = speed.shape[0] - 1
    c = 0
    before = 0.0
    while c < last:
        upto = before + speed[c] * ccnt[c, 1]
        if w < upto and ccnt[c, 1] > 0.0:
            break
        before = upto
        c += 1
    while ccnt[c, 1] <= 0.0:  # rounding past the last busy class: the last busy one
        c -= 1
    x = (w - before) / speed[c]
    k = 1
    while ccnt[c, k + 1] > x:
        k += 1
    return c, k


@kernel(nrt=False, inline=True)
def _arrival_class(ccnt, cnt, k, rng):
    """Return the class of the server an arrival joins at level ``k`` (one ``random``)."""
    last = ccnt.shape[0] - 1
    x = rng.random() * (cnt[k] - cnt[k + 1])
    c = 0
    acc = 0.0
    while c < last:
        acc += ccnt[c, k] - ccnt[c, k + 1]
        if x < acc:
            break
        c += 1
    while ccnt[c, k] - ccnt[c, k + 1] <= 0.0:  # rounding past the last class at level k
        c -= 1
    return c


@kernel(nrt=False, entry=True, label="the speed-class engine's simulator")
def run_classes(st, mt, ctl, par, rng):
    """Advance the chain until done or until the caller must act (a status of ``records``).

    As :func:`cloudsched.dispatch.engines.counts.kernel.run_counts`, with the state of
    :mod:`.records` and ``mt.hist`` of shape ``(H_SEGMENTS, K, L)``.
    """
    cnt, ccnt, speed, ist, fst, msg = st.cnt, st.ccnt, st.speed, st.ist, st.fst, st.msg
    area, last, bsum, bcnt, joins = mt.area, mt.last, mt.bsum, mt.bcnt, mt.hist
    wshift, segshift = W.batch_shifts(mt, ctl)
    arr_end, t_end = ctl[R.C_ARR_END], par.t_end
    levels = cnt.shape[0]
    classes = speed.shape[0]
    lam_n = par.lam_n
    now = fst[R.F_NOW]
    arrivals, phase, maxlen = ist[R.I_ARRIVALS], ist[R.I_PHASE], ist[R.I_MAXLEN]
    probes = par.probes
    empty = st.iq[0]
    done = 0
    status = R.CHUNK
    while True:
        status, stop = W.before_event(mt, ctl, phase, done, maxlen, levels, arrivals)
        if stop:
            break
        rate = lam_n + _busy_rate(ccnt, speed)
        now = now + rng.standard_exponential() / rate
        u = rng.random() * rate
        is_arrival = u < lam_n
        if W.window_moves(phase, arr_end, t_end, arrivals, now, is_arrival):
            phase, now = W.window_step(st, mt, ctl, par, arrivals, now, is_arrival, empty)
        if phase == R.DRAIN:  # the window closed at this event
            done += 1
            continue
        measuring = phase == R.MEASURE
        done += 1
        checkpoint = False
        if is_arrival:
            k = join_level(cnt, par, rng)
            c = _arrival_class(ccnt, cnt, k, rng) if classes > 1 else 0
            j = k + 1
            if measuring:
                order = W.measured_order(st, mt, ctl, arrivals, now, empty, wshift)
                b = order >> wshift
                bsum[b] += erlang_time(rng, j) / speed[c]
                bcnt[b] += 1
                joins[b >> segshift, c, k] += 1.0
                msg[R.M_PROBE] += probes
                checkpoint = order + 1 == ctl[R.C_NEXT_CHECK]
                area[j] += cnt[j] * (now - last[j])
                last[j] = now
            cnt[j] += 1.0
            ccnt[c, j] += 1.0
            if j > maxlen:
                maxlen = j
            arrivals += 1
        else:
            c, k = _departure(ccnt, speed, u - lam_n)
            if measuring:
                area[k] += cnt[k] * (now - last[k])
                last[k] = now
            cnt[k] -= 1.0
            ccnt[c, k] -= 1.0
        if checkpoint:
            status = R.CHECKPOINT
            break
    W.after_chunk(fst, ist, now, arrivals, phase, maxlen, done)
    return status
