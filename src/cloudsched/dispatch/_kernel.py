"""Compiled event loop for task dispatch with Poisson arrivals and exponential service.

The system is simulated as a continuous-time Markov chain: with ``B`` busy servers the
next event comes after an ``Exp(lam*N + B)`` time; with probability ``lam*N / (lam*N + B)``
it is an arrival, otherwise the departure of the task in service at a busy server chosen
uniformly (memorylessness makes this exact).  Every task is tracked individually (FIFO per
server, arrival times in one shared pool), so response times are exact per task.

Work per event is O(1) (O(d) for probing policies).  Memory is O(N + M + tasks in system):
tasks live in one pool shared by all servers (a free list, no per-server capacity) and the
I-queues live in one arena of power-of-two blocks (one block per dispatcher, doubled when
full, freed blocks reused by size class).  When the pool, the arena or the per-level arrays
run short, the kernel returns a status asking the caller to enlarge them, then resumes:
no event is ever half applied.

Random draws, in order, per event: ``standard_exponential`` (time step), ``random`` (event
type; it also picks the busy server of a departure and the dispatcher of an arrival, both
uniform given the event type); then the policy's draws.  Uniform integers in ``[0, n)`` are
``floor(random() * n)``.  The reference implementation in
:mod:`cloudsched.dispatch.sim_reference` makes the same draws in the same order.
"""

from __future__ import annotations

import numpy as np

from cloudsched._jit import kernel

# Policy codes.
RANDOM, ROUND_ROBIN, JSQ, POD, JIQ, JIQ_ORIGINAL, JIQ_POD, JIQ_THRESHOLD, JIQ_SQ = range(9)
POLICY_CODES = {
    "random": RANDOM,
    "round-robin": ROUND_ROBIN,
    "jsq": JSQ,
    "pod": POD,
    "jiq": JIQ,
    "jiq-original": JIQ_ORIGINAL,
    "jiq-pod": JIQ_POD,
    "jiq-threshold": JIQ_THRESHOLD,
    "jiq-sq": JIQ_SQ,
}

# Status codes returned by ``run``.
DONE, CHUNK, NEED_POOL, NEED_ARENA, NEED_LEVELS, BUFFER_FULL = range(6)

# Phases.
WARMUP, MEASURE, DRAIN = range(3)

# Indices into the int64 scalar state ``ist``.
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
    I_NREC,
    I_PHASE,
    I_MAXLEN,
) = range(12)
N_IST = 12

# Indices into the float64 scalar state ``fst``.
F_NOW, F_TWARM, F_TEND, F_AREA_P0, F_LAST_P0 = range(5)
N_FST = 5

# Message counters ``msg``.
M_JOIN, M_DELETE, M_PROBE, M_STALE = range(4)


@kernel
def _uniform_index(rng: np.random.Generator, n: int) -> int:
    k = int(rng.random() * n)
    return k if k < n else n - 1


@kernel
def _touch_level(i, now, ist, cnt, area, last):
    if ist[I_PHASE] == MEASURE:
        area[i] += cnt[i] * (now - last[i])
        last[i] = now


@kernel
def _touch_p0(now, ist, fst):
    if ist[I_PHASE] == MEASURE:
        fst[F_AREA_P0] += ist[I_NEMPTY] * (now - fst[F_LAST_P0])
        fst[F_LAST_P0] = now


@kernel
def _iq_add(m, s, now, ist, fst, arena, iq_start, iq_cap, iq_size, iq_of, iq_pos, free_head):
    """Append server ``s`` to I-queue ``m`` (the arena has room: checked before the event)."""
    size = iq_size[m]
    if size == iq_cap[m]:
        cap = iq_cap[m]
        new_cap = 2 * cap
        cls = 0
        while (1 << cls) < new_cap:
            cls += 1
        if free_head[cls] >= 0:
            start = free_head[cls]
            free_head[cls] = arena[start]
        else:
            start = ist[I_ARENA_TOP]
            ist[I_ARENA_TOP] += new_cap
        old = iq_start[m]
        for k in range(size):
            arena[start + k] = arena[old + k]
        old_cls = cls - 1
        arena[old] = free_head[old_cls]
        free_head[old_cls] = old
        iq_start[m] = start
        iq_cap[m] = new_cap
        if new_cap > ist[I_MAXCAP]:
            ist[I_MAXCAP] = new_cap
    if size == 0:
        _touch_p0(now, ist, fst)
        ist[I_NEMPTY] -= 1
    arena[iq_start[m] + size] = s
    iq_pos[s] = size
    iq_of[s] = m
    iq_size[m] = size + 1


@kernel
def _iq_remove(s, now, ist, fst, arena, iq_start, iq_size, iq_of, iq_pos):
    """Remove server ``s`` from its I-queue (swap with the last entry)."""
    m = iq_of[s]
    p = iq_pos[s]
    last_idx = iq_size[m] - 1
    moved = arena[iq_start[m] + last_idx]
    arena[iq_start[m] + p] = moved
    iq_pos[moved] = p
    iq_size[m] = last_idx
    iq_of[s] = -1
    iq_pos[s] = -1
    if last_idx == 0:
        _touch_p0(now, ist, fst)
        ist[I_NEMPTY] += 1


@kernel
def _probe(rng, n, d, replace, qlen, perm):
    """Sample ``d`` servers (distinct unless ``replace``); return the first least loaded.

    The sample order is uniformly random, so the first minimum is a uniform choice among
    tied servers.  Distinct samples use a partial Fisher-Yates shuffle of ``perm``.
    """
    best = -1
    best_len = 0
    for k in range(d):
        if replace:
            s = _uniform_index(rng, n)
        else:
            j = k + _uniform_index(rng, n - k)
            s = perm[j]
            perm[j] = perm[k]
            perm[k] = s
        if best < 0 or qlen[s] < best_len:
            best = s
            best_len = qlen[s]
    return best


@kernel
def _choose_iqueue(rng, policy, m_count, d, iq_size, dperm):
    """I-queue that a server joins: uniform, or the shortest of ``d`` distinct (JIQ-SQ(d))."""
    if policy != JIQ_SQ:
        return _uniform_index(rng, m_count)
    best = -1
    for k in range(d):
        j = k + _uniform_index(rng, m_count - k)
        m = dperm[j]
        dperm[j] = dperm[k]
        dperm[k] = m
        if best < 0 or iq_size[m] < iq_size[best]:
            best = m
    return best


@kernel
def _start_measure(tw, ist, fst, area, last):
    ist[I_PHASE] = MEASURE
    fst[F_TWARM] = tw
    for i in range(area.shape[0]):
        area[i] = 0.0
        last[i] = tw
    fst[F_AREA_P0] = 0.0
    fst[F_LAST_P0] = tw


@kernel
def _finish_measure(te, ist, fst, cnt, area, last):
    for i in range(area.shape[0]):
        area[i] += cnt[i] * (te - last[i])
        last[i] = te
    fst[F_AREA_P0] += ist[I_NEMPTY] * (te - fst[F_LAST_P0])
    fst[F_LAST_P0] = te
    fst[F_TEND] = te
    ist[I_PHASE] = DRAIN


@kernel
def init_state(
    rng,
    ipar,
    qlen,
    head,
    tailq,
    pool_next,
    busy_pos,
    cnt,
    bstart,
    jperm,
    jpos,
    perm,
    dperm,
    rr,
    arena,
    iq_start,
    iq_cap,
    iq_size,
    iq_of,
    iq_pos,
    free_head,
    ist,
    fst,
):
    """Empty system at time 0; I-queue policies list every server (the initial joins are free).

    Round-robin dispatchers start at uniformly drawn servers.  Array shapes: per server
    ``(N,)``, per dispatcher ``(M,)``; all int64 except as noted in ``simulate``.
    """
    policy, n, m_count, d = ipar[0], ipar[1], ipar[2], ipar[3]
    for s in range(n):
        qlen[s] = 0
        head[s] = -1
        tailq[s] = -1
        busy_pos[s] = -1
        jperm[s] = s
        jpos[s] = s
        perm[s] = s
        iq_of[s] = -1
        iq_pos[s] = -1
    for k in range(pool_next.shape[0]):
        pool_next[k] = k + 1 if k + 1 < pool_next.shape[0] else -1
    for i in range(cnt.shape[0]):
        cnt[i] = 0
    cnt[0] = n
    bstart[0] = 0
    for i in range(1, bstart.shape[0]):
        bstart[i] = n
    for c in range(free_head.shape[0]):
        free_head[c] = -1
    for k in range(ist.shape[0]):
        ist[k] = 0
    for k in range(fst.shape[0]):
        fst[k] = 0.0
    ist[I_POOL_FREE] = 0
    ist[I_NEMPTY] = m_count
    for m in range(m_count):
        dperm[m] = m
        iq_size[m] = 0
    if policy == ROUND_ROBIN:
        for m in range(m_count):
            rr[m] = _uniform_index(rng, n)
    if policy >= JIQ:
        cap0 = iq_cap[0]
        for m in range(m_count):
            iq_start[m] = m * cap0
            iq_cap[m] = cap0
        ist[I_ARENA_TOP] = m_count * cap0
        ist[I_MAXCAP] = cap0
        for s in range(n):
            m = _choose_iqueue(rng, policy, m_count, d, iq_size, dperm)
            _iq_add(m, s, 0.0, ist, fst, arena, iq_start, iq_cap, iq_size, iq_of, iq_pos, free_head)


@kernel
def run(
    rng,
    ipar,
    fpar,
    qlen,
    head,
    tailq,
    pool_next,
    pool_arr,
    pool_meas,
    busy_list,
    busy_pos,
    cnt,
    area,
    last,
    bstart,
    jperm,
    jpos,
    perm,
    dperm,
    rr,
    arena,
    iq_start,
    iq_cap,
    iq_size,
    iq_of,
    iq_pos,
    free_head,
    ist,
    fst,
    msg,
    buf,
    bsum,
    bcnt,
):
    """Advance the simulation until done, or until the caller must act (see status codes).

    ``ipar`` = [policy, N, M, d, z, with_replacement, warm-up arrivals, end arrivals (-1 in
    horizon mode), event budget, batches B]; ``fpar`` = [lam * N, warm-up time, end time].
    A measured task belongs to batch ``b`` by its arrival (index in tasks mode, time in
    horizon mode); ``pool_meas`` holds ``b + 1`` (0: not measured).  At its departure its
    response time is added to ``bsum[b]`` / ``bcnt[b]`` (float64 / int64, shape ``(B,)``)
    and appended to ``buf`` (float32) at ``ist[I_NREC]``.
    """
    policy, n, m_count, d, z = ipar[0], ipar[1], ipar[2], ipar[3], ipar[4]
    replace = ipar[5] == 1
    arr_warm, arr_end, budget, nbatch = ipar[6], ipar[7], ipar[8], ipar[9]
    lam_n, t_warm, t_end = fpar[0], fpar[1], fpar[2]
    iq_policy = policy >= JIQ
    thresh = z if policy == JIQ_THRESHOLD else 0
    nlev = cnt.shape[0]
    done = 0
    while True:
        if ist[I_PHASE] == DRAIN and ist[I_MEAS_IN_SYS] == 0:
            return DONE
        if done >= budget:
            return CHUNK
        if ist[I_POOL_FREE] < 0:
            return NEED_POOL
        if iq_policy and ist[I_ARENA_TOP] + 2 * ist[I_MAXCAP] > arena.shape[0]:
            return NEED_ARENA
        if ist[I_MAXLEN] + 2 >= nlev:
            return NEED_LEVELS
        if ist[I_NREC] >= buf.shape[0]:
            return BUFFER_FULL
        nbusy = ist[I_NBUSY]
        rate = lam_n + nbusy
        now = fst[F_NOW] + rng.standard_exponential() / rate
        u = rng.random() * rate
        is_arrival = u < lam_n
        if ist[I_PHASE] == WARMUP:
            if arr_end < 0 and now >= t_warm:
                _start_measure(t_warm, ist, fst, area, last)
            elif arr_end >= 0 and is_arrival and ist[I_ARRIVALS] == arr_warm:
                _start_measure(now, ist, fst, area, last)
        if ist[I_PHASE] == MEASURE:
            if arr_end < 0 and now >= t_end:
                _finish_measure(t_end, ist, fst, cnt, area, last)
            elif arr_end >= 0 and is_arrival and ist[I_ARRIVALS] == arr_end:
                _finish_measure(now, ist, fst, cnt, area, last)
        measuring = ist[I_PHASE] == MEASURE
        fst[F_NOW] = now
        ist[I_EVENTS] += 1
        done += 1
        if is_arrival:
            ist[I_ARRIVALS] += 1
            # Given an arrival, u / lam_n is uniform on [0, 1): it picks the dispatcher.
            m = int(u / lam_n * m_count)
            if m >= m_count:
                m = m_count - 1
            from_iq = False
            if policy == RANDOM:
                s = _uniform_index(rng, n)
            elif policy == ROUND_ROBIN:
                s = rr[m]
                rr[m] = s + 1 if s + 1 < n else 0
            elif policy == JSQ:
                lo = ist[I_JSQ_MIN]
                s = jperm[bstart[lo] + _uniform_index(rng, bstart[lo + 1] - bstart[lo])]
            elif policy == POD:
                s = _probe(rng, n, d, replace, qlen, perm)
                if measuring:
                    msg[M_PROBE] += d
            elif iq_size[m] > 0:
                s = arena[iq_start[m] + _uniform_index(rng, iq_size[m])]
                _iq_remove(s, now, ist, fst, arena, iq_start, iq_size, iq_of, iq_pos)
                from_iq = True
                if policy == JIQ_ORIGINAL and qlen[s] > 0 and measuring:
                    msg[M_STALE] += 1
            elif policy == JIQ_POD:
                s = _probe(rng, n, d, replace, qlen, perm)
                if measuring:
                    msg[M_PROBE] += d
            else:
                s = _uniform_index(rng, n)
            idx = ist[I_POOL_FREE]
            ist[I_POOL_FREE] = pool_next[idx]
            pool_next[idx] = -1
            pool_arr[idx] = now
            if measuring:
                if arr_end >= 0:
                    b = (ist[I_ARRIVALS] - 1 - arr_warm) * nbatch // (arr_end - arr_warm)
                else:
                    b = int((now - t_warm) / (t_end - t_warm) * nbatch)
                pool_meas[idx] = min(b, nbatch - 1) + 1
            else:
                pool_meas[idx] = 0
            if head[s] < 0:
                head[s] = idx
            else:
                pool_next[tailq[s]] = idx
            tailq[s] = idx
            old = qlen[s]
            new = old + 1
            qlen[s] = new
            _touch_level(new, now, ist, cnt, area, last)
            cnt[new] += 1
            if new > ist[I_MAXLEN]:
                ist[I_MAXLEN] = new
            if old == 0:
                busy_pos[s] = nbusy
                busy_list[nbusy] = s
                ist[I_NBUSY] = nbusy + 1
            if policy == JSQ:
                j = bstart[new] - 1  # last slot of bucket `old`
                other = jperm[j]
                p = jpos[s]
                jperm[p] = other
                jpos[other] = p
                jperm[j] = s
                jpos[s] = j
                bstart[new] -= 1
                if old == ist[I_JSQ_MIN] and bstart[old] == bstart[new]:
                    ist[I_JSQ_MIN] = new
            if measuring:
                ist[I_MEAS_IN_SYS] += 1
            if iq_policy and policy != JIQ_ORIGINAL:
                if iq_of[s] >= 0 and new > thresh:
                    _iq_remove(s, now, ist, fst, arena, iq_start, iq_size, iq_of, iq_pos)
                    if measuring:
                        msg[M_DELETE] += 1
                elif from_iq and new <= thresh:
                    m2 = _choose_iqueue(rng, policy, m_count, d, iq_size, dperm)
                    _iq_add(
                        m2,
                        s,
                        now,
                        ist,
                        fst,
                        arena,
                        iq_start,
                        iq_cap,
                        iq_size,
                        iq_of,
                        iq_pos,
                        free_head,
                    )
                    if measuring:
                        msg[M_JOIN] += 1
        else:
            k = int(u - lam_n)
            if k >= nbusy:
                k = nbusy - 1
            s = busy_list[k]
            idx = head[s]
            head[s] = pool_next[idx]
            if head[s] < 0:
                tailq[s] = -1
            if pool_meas[idx] > 0:
                rt = now - pool_arr[idx]
                b = pool_meas[idx] - 1
                bsum[b] += rt
                bcnt[b] += 1
                buf[ist[I_NREC]] = rt
                ist[I_NREC] += 1
                ist[I_MEAS_IN_SYS] -= 1
            pool_next[idx] = ist[I_POOL_FREE]
            ist[I_POOL_FREE] = idx
            old = qlen[s]
            new = old - 1
            _touch_level(old, now, ist, cnt, area, last)
            cnt[old] -= 1
            qlen[s] = new
            if new == 0:
                p = busy_pos[s]
                moved = busy_list[nbusy - 1]
                busy_list[p] = moved
                busy_pos[moved] = p
                busy_pos[s] = -1
                ist[I_NBUSY] = nbusy - 1
            if policy == JSQ:
                j = bstart[old]  # first slot of bucket `old`
                other = jperm[j]
                p = jpos[s]
                jperm[p] = other
                jpos[other] = p
                jperm[j] = s
                jpos[s] = j
                bstart[old] += 1
                if new < ist[I_JSQ_MIN]:
                    ist[I_JSQ_MIN] = new
            if iq_policy and iq_of[s] < 0 and new <= thresh:
                # JIQ-Original: a server still listed (stale entry) does not join again.
                m2 = _choose_iqueue(rng, policy, m_count, d, iq_size, dperm)
                _iq_add(
                    m2, s, now, ist, fst, arena, iq_start, iq_cap, iq_size, iq_of, iq_pos, free_head
                )
                if measuring:
                    msg[M_JOIN] += 1
                    if policy == JIQ_SQ:
                        msg[M_PROBE] += d
