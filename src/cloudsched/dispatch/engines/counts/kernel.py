"""Compiled event loop of the occupancy-count engine: servers that are exchangeable.

For a policy that chooses by queue length alone (its row of :mod:`cloudsched.policy_table`
picks ``uniform``, ``least of d`` or ``least``, and its idle servers, if it lists them, join
a ``uniform`` I-queue or the ``shortest of d``, with delete requests: ``random``, ``pod(d)``
with or without replacement, ``jsq``, ``jiq``, ``jiq-pod``, ``jiq-sq``) with Poisson arrivals
and exp(1) service at equal speeds, which server holds which tasks, and which dispatcher
holds which I-queue, does not matter: the numbers
``cnt[i]`` of servers holding at least ``i`` tasks (``cnt[0] = N``) and ``iq[j]`` of I-queues
holding ``j`` entries are a Markov chain of their own, and the state is O(longest queue +
longest I-queue), not O(N).  (With delete requests the listed servers are exactly the idle
ones, ``N - cnt[1] = sum_j j iq[j]``.)

* After an ``Exp(lam N + cnt[1])`` time comes an arrival with probability
  ``lam N / (lam N + cnt[1])``, else the departure of the task in service at a uniform busy
  server: level ``k >= 1`` with probability ``(cnt[k] - cnt[k+1]) / cnt[1]``, read off the
  same uniform (``w = u - lam N`` in ``[0, cnt[1])``: the largest ``k`` with
  ``cnt[k] > w``).
* An arrival's server is chosen by its queue length alone: ``pod(d)`` with replacement
  joins a server of at least ``k`` tasks with probability ``(cnt[k] / N)^d`` (one uniform
  ``v``: the largest ``k`` with ``cnt[k] >= N v^(1/d)``), without replacement
  ``prod_{i<d} (cnt[k] - i) / (N - i)``; ``random`` is ``d = 1``; ``jsq`` joins the lowest
  level that has a server.
* ``jiq`` / ``jiq-pod``: the arrival's dispatcher is read off the same uniform as the event
  type (``u / (lam N)`` is uniform given an arrival), as the size class of its I-queue
  (``iq`` in increasing size).  A non-empty I-queue gives the task to one of its idle
  servers; an empty one sends it to a uniform server (``jiq``) or by pod(d) (``jiq-pod``),
  and if that server was idle a delete request removes it from its I-queue, whose size class
  is drawn in proportion to ``j iq[j]`` (one ``random``).  A server that empties joins a
  uniform I-queue (one ``random``); ``jiq-sq``'s joins the shortest of d sampled ones
  (one ``random``, and d probe messages).
* A task that joins a server holding ``k`` tasks leaves after an Erlang(``k + 1``) time
  (FCFS, exponential service).  That time is drawn at its arrival and enters the
  micro-batch sums there (the batch is complete when its last task has arrived; the
  conditional mean ``k + 1`` instead would hide the service times' own variance from the
  intervals), and ``joins[segment, k]`` counts the levels joined, from which the whole
  response-time distribution follows exactly (:mod:`cloudsched.dispatch.engines.counts.engine`).
  No task is stored: memory does not grow with the run.

Random draws, in order, per event: ``standard_exponential`` (time step), ``random`` (event
type and, for a departure, the level; for the jiq family also the dispatcher); for an
arrival not served from an I-queue, one ``random`` (the level joined; none for ``jsq``), one
more for a delete request; for a measured arrival its response time (``k + 1``
``standard_exponential``, or one ``standard_gamma`` when ``k + 1 > 8``); for a departure
that leaves a jiq server idle, one ``random`` (the I-queue it joins).
:func:`cloudsched.dispatch.engines.counts.mirror.mirror_counts` makes the same draws in plain
Python.

Measurement is every engine's (:mod:`cloudsched.dispatch.engines.window`): the window opens
at arrival ``ctl[C_ARR_WARM]`` (or time ``t_warm``) and closes at arrival ``ctl[C_ARR_END]``
(or time ``t_end``); row ``b`` of the snapshots holds the running integrals when micro-batch
``b`` opens.  With no task to follow after the close, the run is done there (no drain).
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines import window as W
from cloudsched.dispatch.engines.counts.records import JOIN_SHORTEST, LEAST, LEAST_OF_D

__all__ = [
    "erlang_time",
    "iq_move",
    "join_level",
    "run_counts",
    "shortest_class",
    "shortest_sizes",
    "uniform_sizes",
]


@kernel(nrt=False, entry=True, label="the count engine's start")
def uniform_sizes(balls, bins, out, rng):
    """Add to ``out[j]`` the bins holding j of ``balls`` thrown uniformly into ``bins``.

    Bin by bin, each takes a binomial share of the balls left (the multinomial law, in
    O(1) memory beside ``out``); returns the largest size, or -1 if ``out`` is too short.
    """
    left = balls
    top = 0
    for i in range(bins):
        k = left if i == bins - 1 else rng.binomial(left, 1.0 / (bins - i))
        if k >= out.shape[0]:
            return -1
        out[k] += 1.0
        left -= k
        if k > top:
            top = k
    return top


@kernel(nrt=False, inline=True)
def _all_among(count, total, d):
    """Return the chance that d distinct draws from ``total`` all fall among ``count``."""
    p = 1.0
    for i in range(d):
        p *= (count - i) / (total - i)
        if p <= 0.0:
            return 0.0
    return p


@kernel(nrt=False, inline=True)
def _level_pod(cnt, n, d, replace, v):
    """Return the level pod(d) joins: the largest k with P(min >= k) >= v (v in (0, 1])."""
    k = 0
    if replace or d == 1:
        if d == 1:
            w = n * v
        elif d == 2:
            w = n * np.sqrt(v)
        else:
            w = n * v ** (1.0 / d)
        while cnt[k + 1] >= w:
            k += 1
        return k
    if d == 2:  # (c / n) ((c - 1) / (n - 1))
        scale = 1.0 / (n * (n - 1.0))
        while cnt[k + 1] * (cnt[k + 1] - 1.0) * scale >= v:
            k += 1
        return k
    while True:
        p = _all_among(cnt[k + 1], n, d)
        if p < v or p <= 0.0:
            return k
        k += 1


@kernel(nrt=False, inline=True)
def join_level(cnt, par, rng):
    """Return the level an arrival joins by ``par.pick`` (``least``: the lowest with a server)."""
    if par.pick == LEAST:
        k = 0
        while cnt[k + 1] >= par.n:
            k += 1
        return k
    if par.pick == LEAST_OF_D:
        return _level_pod(cnt, par.n, par.d, par.replace, 1.0 - rng.random())
    return _level_pod(cnt, par.n, 1, par.replace, 1.0 - rng.random())  # uniform


@kernel(nrt=False, inline=True)
def shortest_class(iq, m, d, v):
    """Return the size of the shortest of d distinct uniform I-queues (v uniform in (0, 1]).

    The largest c with ``P(min >= c) = prod_{i<d} (V_c - i) / (M - i) >= v``, ``V_c`` the
    I-queues holding at least c entries.
    """
    c = 0
    at_least = m
    while True:
        above = at_least - iq[c]
        p = _all_among(above, m, d)
        if p < v or p <= 0.0:
            return c
        at_least = above
        c += 1


@kernel(nrt=False, entry=True, label="the count engine's start (shortest I-queues)")
def shortest_sizes(servers, m, d, out, rng):
    """List ``servers`` idle servers one by one, each in the shortest of d sampled I-queues.

    ``out`` (``out[0] = M`` on entry) counts the I-queues by size; returns the largest size,
    or -1 if ``out`` is too short.
    """
    top = 0
    for _ in range(servers):
        c = shortest_class(out, m, d, 1.0 - rng.random())
        if c + 1 >= out.shape[0]:
            return -1
        out[c] -= 1.0
        out[c + 1] += 1.0
        if c + 1 > top:
            top = c + 1
    return top


@kernel(nrt=False, inline=True)
def _size_class(weights, scale, x):
    """Return the smallest j with ``sum_{i <= j} scale(i) weights[i] > x`` (scale 1 or i)."""
    j = 0
    c = weights[0] if scale == 0 else 0.0
    while c <= x:
        j += 1
        c += weights[j] if scale == 0 else j * weights[j]
    return j


@kernel(nrt=False, inline=True)
def iq_move(iq, fst, now, measuring, j, to):
    """One I-queue goes from ``j`` to ``to`` entries (the empty ones are integrated)."""
    if measuring and (j == 0 or to == 0):
        fst[R.F_AREA_P0] += iq[0] * (now - fst[R.F_LAST_P0])
        fst[R.F_LAST_P0] = now
    iq[j] -= 1.0
    iq[to] += 1.0


@kernel(nrt=False, inline=True)
def erlang_time(rng, j):
    """Draw an Erlang(j) time: a sum of j exponentials, or one gamma draw when j > 8."""
    if j > 8:
        return rng.standard_gamma(j)
    rt = 0.0
    for _ in range(j):
        rt += rng.standard_exponential()
    return rt


@kernel(nrt=False, entry=True, label="the count engine's simulator")
def run_counts(st, mt, ctl, par, rng):
    """Advance the chain until done or until the caller must act (a status of ``records``).

    ``st``, ``par``: :mod:`.records`; ``mt``: the shared meter, whose ``hist`` (float64,
    ``(H_SEGMENTS, L)``) counts the levels joined per histogram segment.
    """
    cnt, iq, ist, fst, msg = st.cnt, st.iq, st.ist, st.fst, st.msg
    area, last, bsum, bcnt, joins = mt.area, mt.last, mt.bsum, mt.bcnt, mt.hist
    wshift, segshift = W.batch_shifts(mt, ctl)
    arr_end, t_end = ctl[R.C_ARR_END], par.t_end
    levels = cnt.shape[0]
    lam_n, n, m, d = par.lam_n, par.n, par.m, par.d
    now = fst[R.F_NOW]
    arrivals = ist[R.I_ARRIVALS]
    phase = ist[R.I_PHASE]
    maxlen = ist[R.I_MAXLEN]
    jmax = ist[R.I_MAXCAP]
    iqueues = par.iqueues
    shortest = par.join == JOIN_SHORTEST
    probes = par.probes
    done = 0
    status = R.CHUNK
    while True:
        status, stop = W.before_event(mt, ctl, phase, done, maxlen, levels, arrivals)
        if stop:
            break
        if jmax + 2 >= iq.shape[0]:
            status = R.NEED_ARENA
            break
        busy = cnt[1]
        rate = lam_n + busy
        now = now + rng.standard_exponential() / rate
        u = rng.random() * rate
        is_arrival = u < lam_n
        if W.window_moves(phase, arr_end, t_end, arrivals, now, is_arrival):
            phase, now = W.window_step(st, mt, ctl, par, arrivals, now, is_arrival, iq[0])
        if phase == R.DRAIN:  # the window closed at this event
            done += 1
            continue
        measuring = phase == R.MEASURE
        done += 1
        checkpoint = False
        if is_arrival:
            if measuring:
                order = W.measured_order(st, mt, ctl, arrivals, now, iq[0], wshift)
            took = False
            if iqueues:  # the dispatcher (u / lam_n uniform): its I-queue's size class
                x = u / lam_n * m
                if x >= iq[0]:  # it takes one of its idle servers
                    c = _size_class(iq, 0, x)
                    iq_move(iq, fst, now, measuring, c, c - 1)
                    took = True
            k = 0 if took else join_level(cnt, par, rng)
            if iqueues and not took:
                if measuring:
                    msg[R.M_PROBE] += probes
                if k == 0:  # an idle server, listed elsewhere: a delete request
                    c = _size_class(iq, 1, rng.random() * (n - cnt[1]))
                    iq_move(iq, fst, now, measuring, c, c - 1)
                    if measuring:
                        msg[R.M_DELETE] += 1
            j = k + 1
            if measuring:
                b = order >> wshift
                bsum[b] += erlang_time(rng, j)
                bcnt[b] += 1
                joins[b >> segshift, k] += 1.0
                if not iqueues:
                    msg[R.M_PROBE] += probes
                checkpoint = order + 1 == ctl[R.C_NEXT_CHECK]
                area[j] += cnt[j] * (now - last[j])
                last[j] = now
            cnt[j] += 1.0
            if j > maxlen:
                maxlen = j
            arrivals += 1
        else:
            w = u - lam_n
            k = 1
            while cnt[k + 1] > w:
                k += 1
            if measuring:
                area[k] += cnt[k] * (now - last[k])
                last[k] = now
            cnt[k] -= 1.0
            if iqueues and k == 1:  # idle: it joins an I-queue (or the shortest of d sampled)
                if shortest:
                    c = shortest_class(iq, m, d, 1.0 - rng.random())
                else:
                    c = _size_class(iq, 0, rng.random() * m)
                iq_move(iq, fst, now, measuring, c, c + 1)
                if c + 1 > jmax:
                    jmax = c + 1
                if measuring:
                    msg[R.M_JOIN] += 1
                    if shortest:
                        msg[R.M_PROBE] += d
        if checkpoint:
            status = R.CHECKPOINT
            break
    W.after_chunk(fst, ist, now, arrivals, phase, maxlen, done)
    ist[R.I_MAXCAP] = jmax
    return status
