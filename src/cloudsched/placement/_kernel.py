"""Compiled event loop of the graph-placement simulator.

The system is a continuous-time Markov chain.  Its events, with their rates, are:

* arrival of a type-j job: ``lam[j]``;
* departure of the job in one actual type-j template: ``mu[j]`` per actual template (the
  template is chosen uniformly: exact by memorylessness);
* the own clock of an empty (virtual) type-j template, when virtual clocks are on:
  ``mu[j]`` per virtual template (``graph-placement.md``: this makes the product form exact);
* a tick of the dedicated Poisson clock of queue j (``dgp-clock`` only): ``nu[j]``.

Random draws, in order, per event: ``standard_exponential`` (time step), ``random`` (event
type, and the template it concerns); then the policy's draws: the proposal's
(:mod:`cloudsched.placement._kernel_propose`; it stops at the first conflict) and one
``random`` for the add/keep coin.  Uniform integers in ``[0, n)`` are
``floor(random() * n)``.  The mirror in :mod:`cloudsched.testing.placement_mirror` makes the
same draws in the same order.

The kernel works on four records (:mod:`cloudsched.placement.state`): ``mo`` (the model),
``st`` (templates and queues), ``mt`` (what is measured) and ``lg`` (the placement log);
the policy is a code of :mod:`cloudsched.placement.policies`; the baselines' slot choices
live in :mod:`cloudsched.placement._kernel_slots`.  Nothing here allocates, so the kernels
are compiled without reference counting (records pass through calls for free).
"""

from __future__ import annotations

import math

from cloudsched._jit import kernel
from cloudsched.placement import state as S
from cloudsched.placement._kernel_propose import local_partition, log_q, uniform_partition
from cloudsched.placement._kernel_slots import greedy_slots, ras_slots, storm_slots
from cloudsched.placement.policies import DGP, DGP_CLOCK, FRAME, GREEDY, STORM_DEFAULT

__all__ = [
    "EVENT",
    "add_template",
    "baseline_event",
    "fill",
    "log_event",
    "next_head",
    "queue_weight",
    "remove_template",
    "run",
    "run_baseline",
    "template_cost",
]


@kernel(nrt=False, inline=True)
def _sigmoid(z):
    """``e^z / (1 + e^z)`` without overflow."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@kernel(nrt=False, inline=True)
def queue_weight(j, qlen, par, wpar):
    """``f_j(Q) = alpha * max(f(Q_j + h_j), eps / (4 |J|) * f(max_k Q_k + h_j))`` (or frozen).

    ``wpar[0]`` holds frozen weights, ``wpar[1]`` the bias ``h_j`` of each type.  The
    floor applies only while ``Q_j > 0``: a type with no queued job has nothing to protect,
    and a floor raised by another type's queue would keep its empty templates alive and
    starve that very type (the floor exists so that no type with waiting jobs is starved).
    """
    if par[S.P_FROZEN] != 0.0:
        return wpar[0, j]
    h = wpar[1, j]
    qmax = 0
    for k in range(qlen.size):
        qmax = max(qmax, qlen[k])
    if par[S.P_FCODE] == 0.0:
        own, top = math.log1p(qlen[j] + h), math.log1p(qmax + h)
    else:
        own, top = qlen[j] + h, qmax + h
    if qlen[j] == 0:
        return par[S.P_ALPHA] * own
    return par[S.P_ALPHA] * max(own, par[S.P_EPS] / (4.0 * qlen.size) * top)


@kernel(nrt=False, inline=True)
def _swap_slot(st, m, s, j):
    """Swap slot ``s`` with the slot at place ``j`` of machine ``m``'s stack."""
    other = st.mslots[m, j]
    p = st.spos[s]
    st.mslots[m, p] = other
    st.spos[other] = p
    st.mslots[m, j] = s
    st.spos[s] = j


@kernel(nrt=False, inline=True)
def _reserve_slot(st, mo, s, tid):
    """Give free slot ``s`` to template ``tid`` (swap-remove it from its stack)."""
    m = mo.slot_machine[s]
    top = st.mfree[m] - 1
    _swap_slot(st, m, s, top)
    st.mfree[m] = top
    st.owner[s] = tid


@kernel(nrt=False, inline=True)
def _release_slot(st, mo, s):
    """Return slot ``s`` to its machine's free stack."""
    m = mo.slot_machine[s]
    top = st.mfree[m]
    _swap_slot(st, m, s, top)
    st.mfree[m] = top + 1
    st.owner[s] = -1


@kernel(nrt=False, inline=True)
def template_cost(mo, j, slots):
    """Broken-edge cost of type ``j`` on ``slots[v]`` (node v): traffic times distance."""
    b = 0.0
    sm = mo.slot_machine
    if mo.weighted[j] == 0:  # every edge carries 1: skip the products
        for e in range(mo.edge_off[j], mo.edge_off[j + 1]):
            b += mo.dist[sm[slots[mo.edges[e, 0]]], sm[slots[mo.edges[e, 1]]]]
        return b
    for e in range(mo.edge_off[j], mo.edge_off[j + 1]):
        b += mo.ew[e] * mo.dist[sm[slots[mo.edges[e, 0]]], sm[slots[mo.edges[e, 1]]]]
    return b


@kernel(nrt=False, inline=True)
def add_template(st, mo, j, state, slots, k, cost):
    """Create a type-``j`` template (``state`` VIRTUAL or ACTUAL) on ``slots[:k]``; its id."""
    st.ist[S.I_TFREE] -= 1
    tid = st.tfree[st.ist[S.I_TFREE]]
    for v in range(k):
        _reserve_slot(st, mo, slots[v], tid)
        st.t_slots[tid, v] = slots[v]
    if mo.par[S.P_RES] != 0.0:  # CPU and memory (one test per template, not per slot)
        base = mo.node_off[j]
        for v in range(k):
            m = mo.slot_machine[slots[v]]
            st.mres[m, 0] -= mo.ndem[base + v, 0]
            st.mres[m, 1] -= mo.ndem[base + v, 1]
    st.ist[S.I_FREE_SLOTS] -= k
    st.t_type[tid] = j
    st.t_state[tid] = state
    st.t_cost[tid] = cost
    c = 2 - state
    st.tlists[j, c, st.ntl[j, c]] = tid
    st.tpos[tid] = st.ntl[j, c]
    st.ntl[j, c] += 1
    return tid


@kernel(nrt=False, inline=True)
def _unlist(st, tid):
    j, c = st.t_type[tid], 2 - st.t_state[tid]
    n = st.ntl[j, c] - 1
    last = st.tlists[j, c, n]
    st.tlists[j, c, st.tpos[tid]] = last
    st.tpos[last] = st.tpos[tid]
    st.ntl[j, c] = n


@kernel(nrt=False, inline=True)
def remove_template(st, mo, tid):
    """Delete a template (virtual, or emptied by the caller) and free its slots."""
    j = st.t_type[tid]
    k = mo.knodes[j]
    for v in range(k):
        _release_slot(st, mo, st.t_slots[tid, v])
    if mo.par[S.P_RES] != 0.0:
        base = mo.node_off[j]
        for v in range(k):
            m = mo.slot_machine[st.t_slots[tid, v]]
            st.mres[m, 0] += mo.ndem[base + v, 0]
            st.mres[m, 1] += mo.ndem[base + v, 1]
    st.ist[S.I_FREE_SLOTS] += k
    _unlist(st, tid)
    st.t_state[tid] = S.UNUSED
    st.tfree[st.ist[S.I_TFREE]] = tid
    st.ist[S.I_TFREE] += 1


@kernel(nrt=False, inline=True)
def _set_state(st, tid, state):
    _unlist(st, tid)
    j, c = st.t_type[tid], 2 - state
    st.t_state[tid] = state
    st.tlists[j, c, st.ntl[j, c]] = tid
    st.tpos[tid] = st.ntl[j, c]
    st.ntl[j, c] += 1


@kernel(nrt=False, inline=True)
def log_event(st, mo, lg, kind, tid, now):
    """Record that the job in template ``tid`` starts there or ends (if logging is on)."""
    if mo.par[S.P_LOG] == 0.0:
        return
    i = st.ist[S.I_LOG]
    j = st.t_type[tid]
    lg.t[i] = now
    lg.ev[i, 0] = kind
    lg.ev[i, 1] = tid
    lg.ev[i, 2] = j
    lg.ev[i, 3] = st.t_job[tid]
    if kind == S.LOG_START:
        for v in range(mo.knodes[j]):
            lg.slots[i, v] = st.t_slots[tid, v]
    st.ist[S.I_LOG] = i + 1


@kernel(nrt=False, inline=True)
def fill(st, mo, mt, lg, j, now, measuring):
    """Move queued type-j jobs (FIFO) into empty type-j templates (the last listed first)."""
    cap = st.qbuf.shape[1]
    while st.qlen[j] > 0 and st.ntl[j, 1] > 0:
        tid = st.tlists[j, 1, st.ntl[j, 1] - 1]
        _set_state(st, tid, S.ACTUAL)
        st.cur_cost[j] += st.t_cost[tid]
        entered = st.qbuf[j, st.qhead[j]]
        st.qhead[j] = (st.qhead[j] + 1) % cap
        st.qlen[j] -= 1
        st.t_job[tid] = st.ist[S.I_JOBS]
        st.ist[S.I_JOBS] += 1
        log_event(st, mo, lg, S.LOG_START, tid, now)
        if measuring:
            mt.cnt[j, S.C_PLACED] += 1
            mt.acc[j, S.A_WAIT] += now - entered


@kernel(nrt=False, inline=True)
def _accumulate(st, mt, dt):
    for j in range(st.qlen.size):
        mt.acc[j, S.A_QUEUE] += st.qlen[j] * dt
        mt.acc[j, S.A_ACTUAL] += st.ntl[j, 0] * dt
        mt.acc[j, S.A_VIRTUAL] += st.ntl[j, 1] * dt
        mt.acc[j, S.A_COST] += st.cur_cost[j] * dt


@kernel(nrt=False, inline=True)
def _total_rate(st, mo, policy, vclock):
    """Rate of the next event: arrivals, departures, virtual clocks and queue clocks."""
    rate = 0.0
    for j in range(mo.lam.size):
        rate += mo.lam[j] + mo.mu[j] * st.ntl[j, 0]
        if vclock:
            rate += mo.mu[j] * st.ntl[j, 1]
        if policy == DGP_CLOCK:
            rate += mo.nu[j]
    return rate


@kernel(nrt=False, inline=True)
def _integrate(st, mt, now, t):
    """Add the time integrals of ``(now, t]`` inside the window, snapshot at batch ends."""
    tw = st.fst[S.F_TWARM]
    if t <= tw:
        return
    start = max(now, tw)
    b = st.ist[S.I_BATCH]
    while b < mt.bounds.size and mt.bounds[b] <= t:
        _accumulate(st, mt, mt.bounds[b] - start)
        for j in range(mt.acc.shape[0]):
            for c in range(mt.acc.shape[1]):
                mt.snap[b, j, c] = mt.acc[j, c]
            for c in range(mt.cnt.shape[1]):
                mt.snap_cnt[b, j, c] = mt.cnt[j, c]
        start = mt.bounds[b]
        b += 1
    st.ist[S.I_BATCH] = b
    _accumulate(st, mt, t - start)


@kernel(nrt=False, inline=True)
def _decode(st, mo, u, policy, vclock):
    """Event ``(kind, j, idx)`` of the uniform ``u`` on ``[0, rate)``.

    ``kind``: 0 arrival, 1 departure (of actual template ``idx``), 2 virtual clock (of
    virtual template ``idx``), 3 queue clock; for each type in turn.
    """
    nj = mo.lam.size
    for j in range(nj):
        if u < mo.lam[j]:
            return 0, j, 0
        u -= mo.lam[j]
        r = mo.mu[j] * st.ntl[j, 0]
        if u < r:
            return 1, j, min(int(u / mo.mu[j]), st.ntl[j, 0] - 1)
        u -= r
        if vclock:
            r = mo.mu[j] * st.ntl[j, 1]
            if u < r:
                return 2, j, min(int(u / mo.mu[j]), st.ntl[j, 1] - 1)
            u -= r
        if policy == DGP_CLOCK:
            if u < mo.nu[j] or j == nj - 1:
                return 3, j, 0
            u -= mo.nu[j]
    return 0, nj - 1, 0  # rounding at the very top of the range: the last event of the last type


@kernel(nrt=False, inline=True)
def _add_with_coin(st, mo, mt, j, b, z, rng, measuring):
    """Add the proposal in ``st.scratch`` (cost ``b``) with probability ``e^z / (1 + e^z)``."""
    if rng.random() < _sigmoid(z):
        add_template(st, mo, j, S.VIRTUAL, st.scratch, mo.knodes[j], b)
        if measuring:
            mt.cnt[j, S.C_ADDED] += 1
    elif measuring:
        mt.cnt[j, S.C_REJECTED] += 1


@kernel(nrt=False, inline=True)
def _keep_with_coin(st, mo, mt, tid, z, rng, measuring):
    """Keep the empty template ``tid`` with probability ``e^z / (1 + e^z)``, else remove it."""
    if rng.random() >= _sigmoid(z):
        j = st.t_type[tid]
        remove_template(st, mo, tid)
        if measuring:
            mt.cnt[j, S.C_REMOVED] += 1


@kernel(nrt=False, inline=True)
def _counted(mt, j, found, measuring):
    """Count a proposal for type ``j`` (and a failed one: no partition ``found``)."""
    if measuring:
        mt.cnt[j, S.C_TRIED] += 1
        if not found:
            mt.cnt[j, S.C_FAILED] += 1
    return found


@kernel(nrt=False, inline=True)
def _propose(st, mo, mt, j, rng, measuring):
    """DGP: propose the paper's uniform partition for type ``j``, add it with its coin."""
    if not _counted(mt, j, uniform_partition(st, mo, j, rng), measuring):
        return
    b = template_cost(mo, j, st.scratch)
    w = queue_weight(j, st.qlen, mo.par, mo.wpar) - b
    _add_with_coin(st, mo, mt, j, b, w / mo.par[S.P_BETA], rng, measuring)


@kernel(nrt=False)
def _propose_local(st, mo, mt, j, rng, measuring):
    """DGP with local proposals: as :func:`_propose`, with the keep rule ``R / (1 + R)``.

    ``log R = w / beta - K log S - log q(A | C)`` (:mod:`._kernel_propose`).  Not inlined:
    its code would slow the uniform proposals' loop, and it costs more than the call.
    """
    if not _counted(mt, j, local_partition(st, mo, j, rng), measuring):
        return
    b = template_cost(mo, j, st.scratch)
    w = queue_weight(j, st.qlen, mo.par, mo.wpar) - b
    z = w / mo.par[S.P_BETA] - mo.knodes[j] * mo.par[S.P_LOGS] - log_q(st, mo, j, st.scratch, False)
    _add_with_coin(st, mo, mt, j, b, z, rng, measuring)


@kernel(nrt=False, inline=True)
def _decide(st, mo, mt, tid, rng, measuring):
    """DGP: keep the empty template ``tid`` with its coin, or remove it."""
    w = queue_weight(st.t_type[tid], st.qlen, mo.par, mo.wpar) - st.t_cost[tid]
    _keep_with_coin(st, mo, mt, tid, w / mo.par[S.P_BETA], rng, measuring)


@kernel(nrt=False)
def _decide_local(st, mo, mt, tid, rng, measuring):
    """DGP with local proposals: the keep decision with ``q(A | C without A)``."""
    j = st.t_type[tid]
    w = queue_weight(j, st.qlen, mo.par, mo.wpar) - st.t_cost[tid]
    z = (
        w / mo.par[S.P_BETA]
        - mo.knodes[j] * mo.par[S.P_LOGS]
        - log_q(st, mo, j, st.t_slots[tid], True)
    )
    _keep_with_coin(st, mo, mt, tid, z, rng, measuring)


@kernel(nrt=False, inline=True)
def next_head(st, mo, blocked):
    """Return the type whose queue head entered first, not ``blocked`` (-1: none)."""
    # an int64, not the literal -1: a literal's type reaches the callers' calls while numba
    # types them, and each slot function was compiled twice (for Literal[int](-1) too)
    best = mo.knodes.size - mo.knodes.size - 1
    for j in range(mo.knodes.size):
        if (
            st.qlen[j] > 0
            and blocked[j] == 0
            and (best < 0 or st.qbuf[j, st.qhead[j]] < st.qbuf[best, st.qhead[best]])
        ):
            best = j
    return best


@kernel(nrt=False, inline=True)
def _place_waiting(st, mo, mt, lg, policy, now, measuring):
    """Baselines: place queue heads in order of entry time while they fit (others wait).

    A type whose head does not fit is skipped until the next event, so a smaller job of
    another type may go first (CHOICE: FIFO within a type, backfilling across types).
    """
    nj = mo.knodes.size
    blocked = st.iwork[5]
    for j in range(nj):
        blocked[j] = 0
    while True:
        j = next_head(st, mo, blocked)
        if j < 0:
            return
        k = mo.knodes[j]
        if k > st.ist[S.I_FREE_SLOTS]:
            blocked[j] = 1
            continue
        if policy == STORM_DEFAULT:
            ok = storm_slots(st, mo, j, k)
        elif policy == GREEDY:
            ok = greedy_slots(st, mo, j, k)
        else:
            ok = ras_slots(st, mo, j, k)
        if not ok:
            blocked[j] = 1
            continue
        b = template_cost(mo, j, st.scratch)
        add_template(st, mo, j, S.VIRTUAL, st.scratch, k, b)
        fill(st, mo, mt, lg, j, now, measuring)


@kernel(nrt=False, inline=True)
def _same_frame(st):
    """MaxWeight: the last frame was proven and the same jobs are present per type.

    Between frames templates stay (a departure leaves its template empty, an arrival fills
    one), so the configuration in place is then still a max-weight one: the frame keeps it.
    """
    same = st.fst[S.F_KEEP] != 0.0
    for j in range(st.qlen.size):  # a loop: generators do not compile without the NRT
        same = same and st.qlen[j] + st.ntl[j, 0] == st.frame_q[j]
    return same


#: ``_clock`` returns this to go on with the event it drew (any other value is a status).
_EVENT = -1
#: What :func:`baseline_event` returns to go on (an event happened).
EVENT = _EVENT


@kernel(nrt=False, inline=True)
def _clock(st, mo, mt, lg, now, rate, rng):
    """Draw the time of the next event after ``now``, integrate up to it.

    Returns ``(status, time)``: ``_EVENT`` to go on with an event at that time, else a
    status: NEED_QUEUE, NEED_LOG (the time is ``now``), DONE, STOP (a MaxWeight frame
    boundary; a frame that keeps the last proven configuration is counted in
    ``ist[I_KEPT]`` and passed over).
    """
    fst, ist = st.fst, st.ist
    for j in range(mo.lam.size):
        if st.qlen[j] == st.qbuf.shape[1]:
            return S.NEED_QUEUE, now
    if mo.par[S.P_LOG] != 0.0 and ist[S.I_LOG] > lg.t.size - st.t_type.size - 2:
        return S.NEED_LOG, now
    while True:
        t = now + rng.standard_exponential() / rate
        limit = min(fst[S.F_TEND], fst[S.F_TSTOP])
        hit = t >= limit
        if hit:
            t = limit
        _integrate(st, mt, now, t)
        now = t
        if not hit:
            return _EVENT, now
        if fst[S.F_TEND] <= fst[S.F_TSTOP]:
            return S.DONE, now
        if not _same_frame(st):
            return S.STOP, now
        fst[S.F_TSTOP] += fst[S.F_FRAME]  # MaxWeight keeps its proven configuration
        ist[S.I_KEPT] += 1


@kernel(nrt=False, inline=True)
def _next_event(st, mo, mt, lg, now, policy, vclock, rng):
    """Advance to the next event (:func:`_clock`) and draw what it is (:func:`_decode`).

    Returns ``(status, time, measuring, kind, j, idx)``; on a status other than ``_EVENT``
    the time is stored in ``fst[F_NOW]`` and the rest is meaningless.
    """
    rate = _total_rate(st, mo, policy, vclock)
    status, now = _clock(st, mo, mt, lg, now, rate, rng)
    if status != _EVENT:
        st.fst[S.F_NOW] = now
        return status, now, False, -1, -1, -1
    st.ist[S.I_EVENTS] += 1
    kind, j, idx = _decode(st, mo, rng.random() * rate, policy, vclock)
    return _EVENT, now, now > st.fst[S.F_TWARM], kind, j, idx


@kernel(nrt=False, inline=True)
def baseline_event(st, mo, mt, lg, now, policy, rng):
    """Run one event of a policy that never moves a job.

    An arrival joins its queue, a departure deletes its template.  Returns ``(status,
    time, measuring)``; ``EVENT``: the queue heads may now be placed, else the status to
    return.
    """
    status, now, measuring, kind, j, idx = _next_event(st, mo, mt, lg, now, policy, False, rng)
    if status != _EVENT:
        return status, now, measuring
    if kind == 0:
        _arrive(st, mt, j, now, measuring)
    else:
        remove_template(st, mo, _depart(st, mo, mt, lg, j, idx, now, measuring))
    return EVENT, now, measuring


@kernel(nrt=False, inline=True)
def _arrive(st, mt, j, now, measuring):
    """Put an arriving type-j job at the end of its queue."""
    st.ist[S.I_ARR_ALL] += 1
    if measuring:
        mt.cnt[j, S.C_ARRIVED] += 1
    st.qbuf[j, (st.qhead[j] + st.qlen[j]) % st.qbuf.shape[1]] = now
    st.qlen[j] += 1


@kernel(nrt=False, inline=True)
def _depart(st, mo, mt, lg, j, idx, now, measuring):
    """Let the job of actual type-j template number ``idx`` leave (its template empties)."""
    tid = st.tlists[j, 0, idx]
    st.ist[S.I_DEP_ALL] += 1
    if measuring:
        mt.cnt[j, S.C_DEPARTED] += 1
    log_event(st, mo, lg, S.LOG_END, tid, now)
    _set_state(st, tid, S.VIRTUAL)
    st.cur_cost[j] -= st.t_cost[tid]
    return tid


@kernel(nrt=False, entry=True, label="the placement simulator (DGP, MaxWeight)")
def run(st, mo, mt, lg, policy, budget, rng):
    """Advance DGP, dgp-clock or MaxWeight by at most ``budget`` events; return a status.

    When time crosses the end of a micro-batch (``mt.bounds``), ``mt.acc`` is copied to
    ``mt.snap[b]`` and ``mt.cnt`` to ``mt.snap_cnt[b]``.  Returns DONE at ``fst[F_TEND]``,
    STOP at ``fst[F_TSTOP]`` (a MaxWeight frame boundary, unless the frame keeps the last
    proven configuration: then it counts ``ist[I_KEPT]`` and goes on), CHUNK when the budget
    is spent, NEED_QUEUE when a queue buffer is full, NEED_LOG when the placement log may
    not hold the next event's rows.  The baselines have their own loop,
    :func:`run_baseline`: one loop for all would be slower for each (a larger loop, and
    records passed whole to every helper that is not inlined).
    """
    vclock = mo.par[S.P_VCLOCK] != 0.0 and policy != FRAME
    local = mo.par[S.P_LOCAL] != 0.0
    now = st.fst[S.F_NOW]
    for _ in range(budget):
        status, now, measuring, kind, j, idx = _next_event(st, mo, mt, lg, now, policy, vclock, rng)
        if status != _EVENT:
            return status
        propose = kind == 3  # a queue clock's tick, or (below) an arrival under DGP
        decide = -1  # the empty template whose keep decision comes up
        if kind == 0:
            _arrive(st, mt, j, now, measuring)
            propose = policy == DGP
        elif kind == 1:
            tid = _depart(st, mo, mt, lg, j, idx, now, measuring)
            if policy != FRAME:
                decide = tid
        elif kind == 2:
            decide = st.tlists[j, 1, idx]
        # one call site each: the helpers are inlined, and every copy costs compile time
        if propose:
            if local:
                _propose_local(st, mo, mt, j, rng, measuring)
            else:
                _propose(st, mo, mt, j, rng, measuring)
        if decide >= 0:
            if local:
                _decide_local(st, mo, mt, decide, rng, measuring)
            else:
                _decide(st, mo, mt, decide, rng, measuring)
        fill(st, mo, mt, lg, j, now, measuring)
    st.fst[S.F_NOW] = now
    return S.CHUNK


@kernel(nrt=False, entry=True, label="the placement simulator (Storm's schedulers, greedy)")
def run_baseline(st, mo, mt, lg, policy, budget, rng):
    """Advance Storm's default, greedy or the resource-aware scheduler (see :func:`run`).

    Queue heads are placed after each arrival and departure; a template is deleted when its
    job leaves.
    """
    now = st.fst[S.F_NOW]
    for _ in range(budget):
        status, now, measuring = baseline_event(st, mo, mt, lg, now, policy, rng)
        if status != EVENT:
            return status
        _place_waiting(st, mo, mt, lg, policy, now, measuring)
    st.fst[S.F_NOW] = now
    return S.CHUNK
