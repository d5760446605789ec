"""Compiled event loop for task dispatch with Poisson arrivals and exponential service.

The system is simulated as a continuous-time Markov chain: with ``B`` busy servers the
next event comes after an ``Exp(lam*N + B)`` time; with probability ``lam*N / (lam*N + B)``
it is an arrival, otherwise the departure of the task in service at a busy server chosen
uniformly (memorylessness makes this exact).  Every task is tracked individually (FIFO per
server, arrival times in one shared pool), so response times are exact per task.

Work per event is O(1) (O(d) for probing policies).  Memory is O(N + M + tasks in system):
tasks live in one pool shared by all servers (a free list, no per-server capacity) and the
I-queues live in one arena of power-of-two blocks (one block per dispatcher, doubled when
full, freed blocks reused by size class).  Per-server and per-dispatcher fields are stored
as rows of one int64 table each (``srv``: N x 8, ``dsp``: M x 4), so an event touches one
cache line per server: at N = 10^6 the loop is bound by memory latency, not arithmetic.
When the pool, the arena or the per-level arrays run short, the kernel returns a status
asking the caller to enlarge them, then resumes: no event is ever half applied.

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
DONE, CHUNK, NEED_POOL, NEED_ARENA, NEED_LEVELS, BUFFER_FULL, NEED_TASKS, NEED_MERGE, CHECKPOINT = (
    range(9)
)

# Indices into the int64 parameter array ``ipar``.
(
    IP_POLICY,
    IP_N,
    IP_M,
    IP_D,
    IP_Z,
    IP_REPLACE,
    IP_ARR_WARM,
    IP_ARR_END,
    IP_BUDGET,
    IP_WIDTH,
    IP_GENERAL,
    IP_LAST_CHUNK,
    IP_NEXT_CHECK,
    IP_RECORD,
) = range(14)
N_IPAR = 14
#: ``ipar[IP_ARR_END]`` of an open-ended run (the caller lowers it to close the window).
OPEN_END = 1 << 62

# Columns of the snapshot table ``snap`` (one row per micro-batch boundary): time, the
# integral of the number of empty I-queues, and the four message counters.
SN_T, SN_P0, SN_MSG = 0, 1, 2
N_SNAP = 6

# Response-time histogram: bins of relative width 2**-9 (512 per octave) from 2**-32 to
# 2**40; values outside are counted in the first or last bin.
H_SUB = 512
H_EMIN = -31  # frexp exponent of 2**-32
H_EMAX = 41
H_BINS = (H_EMAX - H_EMIN) * H_SUB
_BITS_OFFSET = (H_EMIN - 1 + 1023) << 9  # (biased exponent, top 9 mantissa bits) of bin 0
#: Number of histogram segments (each covers an equal share of the micro-batches).
H_SEGMENTS = 16

# Phases.
WARMUP, MEASURE, DRAIN = range(3)

# Columns of the per-server table ``srv`` (N x SRV_COLS, int64).
S_QLEN, S_HEAD, S_TAIL, S_BUSY, S_IQ, S_IQPOS, S_JPOS, S_HPOS = range(8)
SRV_COLS = 8
# Columns of the per-dispatcher table ``dsp`` (M x DSP_COLS, int64).
D_START, D_SIZE, D_CAP, D_RR = range(4)
DSP_COLS = 4
# Columns of the task pool ``pool`` (P x 4, float64: one row of 32 bytes per task): next slot
# in the server's FIFO (-1: none), measured-arrival ordinal + 1 (0: not measured), arrival
# time, service size.
P_NEXT, P_ORD, P_ARR, P_SVC = range(4)
POOL_COLS = 4

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
    I_TASK_PTR,
    I_HEAP_N,
    I_ARR_CLOSE,
) = range(15)
N_IST = 15

# Indices into the float64 scalar state ``fst`` (F_RT_MIN / F_RT_MAX: the smallest and
# largest measured response time).
F_NOW, F_TWARM, F_TEND, F_AREA_P0, F_LAST_P0, F_RT_MIN, F_RT_MAX = range(7)
N_FST = 7

# Message counters ``msg``.
M_JOIN, M_DELETE, M_PROBE, M_STALE = range(4)


@kernel
def _uniform_index(rng: np.random.Generator, n: int) -> int:
    k = int(rng.random() * n)
    return k if k < n else n - 1


@kernel
def _touch_p0(now, ist, fst):
    if ist[I_PHASE] == MEASURE:
        fst[F_AREA_P0] += ist[I_NEMPTY] * (now - fst[F_LAST_P0])
        fst[F_LAST_P0] = now


@kernel
def _iq_add(m, s, now, srv, dsp, arena, free_head, ist, fst):
    """Append server ``s`` to I-queue ``m`` (the arena has room: checked before the event)."""
    size = dsp[m, D_SIZE]
    if size == dsp[m, D_CAP]:
        new_cap = 2 * dsp[m, D_CAP]
        cls = 0
        while (1 << cls) < new_cap:
            cls += 1
        if free_head[cls] >= 0:
            start = free_head[cls]
            free_head[cls] = arena[start]
        else:
            start = ist[I_ARENA_TOP]
            ist[I_ARENA_TOP] += new_cap
        old = dsp[m, D_START]
        for k in range(size):
            arena[start + k] = arena[old + k]
        arena[old] = free_head[cls - 1]
        free_head[cls - 1] = old
        dsp[m, D_START] = start
        dsp[m, D_CAP] = new_cap
        if new_cap > ist[I_MAXCAP]:
            ist[I_MAXCAP] = new_cap
    if size == 0:
        _touch_p0(now, ist, fst)
        ist[I_NEMPTY] -= 1
    arena[dsp[m, D_START] + size] = s
    srv[s, S_IQPOS] = size
    srv[s, S_IQ] = m
    dsp[m, D_SIZE] = size + 1


@kernel
def _iq_remove(s, now, srv, dsp, arena, ist, fst):
    """Remove server ``s`` from its I-queue (swap with the last entry)."""
    m = srv[s, S_IQ]
    p = srv[s, S_IQPOS]
    start = dsp[m, D_START]
    last_idx = dsp[m, D_SIZE] - 1
    moved = arena[start + last_idx]
    arena[start + p] = moved
    srv[moved, S_IQPOS] = p
    dsp[m, D_SIZE] = last_idx
    srv[s, S_IQ] = -1
    srv[s, S_IQPOS] = -1
    if last_idx == 0:
        _touch_p0(now, ist, fst)
        ist[I_NEMPTY] += 1


@kernel
def _probe(rng, n, d, replace, srv, perm):
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
        if best < 0 or srv[s, S_QLEN] < best_len:
            best = s
            best_len = srv[s, S_QLEN]
    return best


@kernel
def _choose_iqueue(rng, policy, m_count, d, dsp, dperm):
    """I-queue that a server joins: uniform, or the shortest of ``d`` distinct (JIQ-SQ(d))."""
    if policy != JIQ_SQ:
        return _uniform_index(rng, m_count)
    best = -1
    for k in range(d):
        j = k + _uniform_index(rng, m_count - k)
        m = dperm[j]
        dperm[j] = dperm[k]
        dperm[k] = m
        if best < 0 or dsp[m, D_SIZE] < dsp[best, D_SIZE]:
            best = m
    return best


@kernel
def _sift_up(i, heap, hkey, srv):
    """Move entry ``i`` of the completion-time heap up to its place."""
    s = heap[i]
    key = hkey[i]
    while i > 0:
        p = (i - 1) // 2
        if hkey[p] <= key:
            break
        heap[i] = heap[p]
        hkey[i] = hkey[p]
        srv[heap[i], S_HPOS] = i
        i = p
    heap[i] = s
    hkey[i] = key
    srv[s, S_HPOS] = i


@kernel
def _sift_down(i, size, heap, hkey, srv):
    """Move entry ``i`` of the completion-time heap down to its place."""
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
        heap[i] = heap[c]
        hkey[i] = hkey[c]
        srv[heap[i], S_HPOS] = i
        i = c
    heap[i] = s
    hkey[i] = key
    srv[s, S_HPOS] = i


@kernel
def _snapshot(row, t, ist, fst, msg, cnt, area, last, snap, snap_area):
    """Record the running integrals at time ``t`` in row ``row`` of the snapshot tables."""
    snap[row, SN_T] = t
    snap[row, SN_P0] = fst[F_AREA_P0] + ist[I_NEMPTY] * (t - fst[F_LAST_P0])
    for k in range(4):
        snap[row, SN_MSG + k] = msg[k]
    for i in range(snap_area.shape[1]):
        snap_area[row, i] = area[i] + cnt[i] * (t - last[i])


@kernel
def _start_measure(tw, ist, fst, msg, cnt, area, last, snap, snap_area):
    ist[I_PHASE] = MEASURE
    fst[F_TWARM] = tw
    for i in range(area.shape[0]):
        area[i] = 0.0
        last[i] = tw
    fst[F_AREA_P0] = 0.0
    fst[F_LAST_P0] = tw
    _snapshot(0, tw, ist, fst, msg, cnt, area, last, snap, snap_area)


@kernel
def _finish_measure(te, arrivals, ist, fst, cnt, area, last):
    ist[I_ARR_CLOSE] = arrivals
    for i in range(area.shape[0]):
        area[i] += cnt[i] * (te - last[i])
        last[i] = te
    fst[F_AREA_P0] += ist[I_NEMPTY] * (te - fst[F_LAST_P0])
    fst[F_LAST_P0] = te
    fst[F_TEND] = te
    ist[I_PHASE] = DRAIN


@kernel
def hist_bin(x, scratch):
    """Histogram bin of a response time ``x``: 512 bins per octave (relative width 2**-9).

    The bin is read off the bits of the float64 (exponent and the top 9 mantissa bits),
    through ``scratch`` (float64, shape ``(1,)``): ``x = 2**e * (1 + j / 512 + ...)`` falls in
    bin ``(e + 1 - H_EMIN) * 512 + j``, the same as ``frexp`` would give.
    """
    scratch[0] = x
    k = (scratch.view(np.int64)[0] >> (52 - 9)) - _BITS_OFFSET
    if k < 0:
        return 0
    if k >= H_BINS:
        return H_BINS - 1
    return k


@kernel
def _jsq_up(s, old, jperm, bstart, srv, jsq_min):
    """Move server ``s`` from JSQ bucket ``old`` to ``old + 1``; return the new minimum."""
    new = old + 1
    j = bstart[new] - 1  # last slot of bucket `old`
    other = jperm[j]
    p = srv[s, S_JPOS]
    jperm[p] = other
    srv[other, S_JPOS] = p
    jperm[j] = s
    srv[s, S_JPOS] = j
    bstart[new] -= 1
    if old == jsq_min and bstart[old] == bstart[new]:
        return new
    return jsq_min


@kernel
def _jsq_down(s, old, jperm, bstart, srv, jsq_min):
    """Move server ``s`` from JSQ bucket ``old`` to ``old - 1``; return the new minimum."""
    j = bstart[old]  # first slot of bucket `old`
    other = jperm[j]
    p = srv[s, S_JPOS]
    jperm[p] = other
    srv[other, S_JPOS] = p
    jperm[j] = s
    srv[s, S_JPOS] = j
    bstart[old] += 1
    if old - 1 < jsq_min:
        return old - 1
    return jsq_min


@kernel
def init_state(
    rng, ipar, srv, dsp, pool, busy_list, cnt, bstart, jperm, perm, dperm, arena, free_head,
    ist, fst, init_q, init_iq, init_svc, speed, heap, hkey,
):  # fmt: skip
    """Set up the state at time 0: empty, or the given queue lengths and I-queues.

    ``init_q`` (int64, ``(N,)`` or empty) gives the number of tasks at each server (they
    arrived before time 0 and are not measured); ``init_svc`` (float64) their service sizes
    in server order (general mode; empty otherwise).  ``init_iq`` (int64, ``(N,)`` or empty)
    gives the I-queue of each server (-1: not listed), members joining in server order; when
    it is empty, I-queue policies list every server that may be listed (``qlen <= z``) in an
    I-queue chosen as at a join (these initial joins are free).  Round-robin dispatchers
    start at uniformly drawn servers.  ``dsp[:, D_CAP]`` must hold the initial I-queue
    capacity, and the pool, per-level arrays and arena must be large enough (the caller
    sizes them from ``init_q``).
    """
    policy, n, m_count, d = ipar[IP_POLICY], ipar[IP_N], ipar[IP_M], ipar[IP_D]
    thresh = ipar[IP_Z] if policy == JIQ_THRESHOLD else 0
    general = ipar[IP_GENERAL] == 1
    for s in range(n):
        srv[s, S_QLEN] = 0
        srv[s, S_HEAD] = -1
        srv[s, S_TAIL] = -1
        srv[s, S_BUSY] = -1
        srv[s, S_IQ] = -1
        srv[s, S_IQPOS] = -1
        srv[s, S_JPOS] = s
        srv[s, S_HPOS] = -1
        jperm[s] = s
        perm[s] = s
    size = pool.shape[0]
    for k in range(size):
        pool[k, P_NEXT] = k + 1 if k + 1 < size else -1
        pool[k, P_ORD] = 0.0
        pool[k, P_ARR] = 0.0
        pool[k, P_SVC] = 0.0
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
    fst[F_RT_MIN] = np.inf
    ist[I_NEMPTY] = m_count
    cap0 = dsp[0, D_CAP]
    for m in range(m_count):
        dperm[m] = m
        dsp[m, D_SIZE] = 0
        dsp[m, D_START] = m * cap0
        dsp[m, D_CAP] = cap0
        dsp[m, D_RR] = 0
    if policy == ROUND_ROBIN:
        for m in range(m_count):
            dsp[m, D_RR] = _uniform_index(rng, n)
    if init_q.shape[0] == n:
        free, k_svc, nbusy, heap_n, maxlen, jsq_min = 0, 0, 0, 0, 0, 0
        for s in range(n):
            for _ in range(init_q[s]):
                idx = free
                free += 1
                pool[idx, P_NEXT] = -1.0
                if general:
                    pool[idx, P_SVC] = init_svc[k_svc]
                    k_svc += 1
                if srv[s, S_HEAD] < 0:
                    srv[s, S_HEAD] = idx
                else:
                    pool[srv[s, S_TAIL], P_NEXT] = idx
                srv[s, S_TAIL] = idx
                old = srv[s, S_QLEN]
                srv[s, S_QLEN] = old + 1
                cnt[old + 1] += 1
                if old + 1 > maxlen:
                    maxlen = old + 1
                if policy == JSQ:
                    jsq_min = _jsq_up(s, old, jperm, bstart, srv, jsq_min)
            if init_q[s] > 0:
                srv[s, S_BUSY] = nbusy
                busy_list[nbusy] = s
                nbusy += 1
                if general:
                    heap[heap_n] = s
                    hkey[heap_n] = pool[srv[s, S_HEAD], P_SVC] / speed[s]
                    _sift_up(heap_n, heap, hkey, srv)
                    heap_n += 1
        ist[I_POOL_FREE] = free if free < size else -1
        ist[I_NBUSY] = nbusy
        ist[I_HEAP_N] = heap_n
        ist[I_MAXLEN] = maxlen
        ist[I_JSQ_MIN] = jsq_min
    if policy >= JIQ:
        ist[I_ARENA_TOP] = m_count * cap0
        ist[I_MAXCAP] = cap0
        for s in range(n):
            if init_iq.shape[0] == n:
                if init_iq[s] >= 0:
                    _iq_add(init_iq[s], s, 0.0, srv, dsp, arena, free_head, ist, fst)
            elif srv[s, S_QLEN] <= thresh:
                m = _choose_iqueue(rng, policy, m_count, d, dsp, dperm)
                _iq_add(m, s, 0.0, srv, dsp, arena, free_head, ist, fst)


@kernel
def run(
    rng, ipar, fpar, srv, dsp, pool, busy_list, cnt, area, last, bstart, jperm, perm, dperm,
    arena, free_head, ist, fst, msg, buf, rec_ord, bsum, bcnt, hist, snap, snap_area,
    arr_times, svc, speed, heap, hkey,
):  # fmt: skip
    """Advance the simulation until done, or until the caller must act (see status codes).

    ``ipar`` holds the parameters at the ``IP_*`` indices: policy, N, M, d, z,
    with_replacement, warm-up arrivals and end arrivals (-1 in horizon mode), the event
    budget of this call, the micro-batch width (measured arrivals, a power of two), general
    mode, last chunk, the next checkpoint (a measured-arrival count) and whether to record every
    response time; ``fpar`` = [lam * N, warm-up time, end time].

    Measurement.  The k-th measured arrival (k = 0, 1, ...) carries ``k + 1`` in
    ``pool[:, P_ORD]`` (0: not measured) and belongs to micro-batch ``b = k // width``.  At
    its departure its response time is added to ``bsum[b]`` / ``bcnt[b]`` (float64 / int64,
    shape ``(B,)``) and counted in ``hist[b * H_SEGMENTS // B, hist_bin(rt)]`` (int64,
    ``(H_SEGMENTS, H_BINS)``); with ``ipar[IP_RECORD] = 1`` it is also appended to ``buf``
    (float32) and ``k`` to ``rec_ord`` (int64) at ``ist[I_NREC]``.  When micro-batch ``B``
    would open, the kernel returns ``NEED_MERGE`` (the caller merges pairs and doubles the
    width).  Row ``b`` of ``snap`` (float64, ``(B + 1, N_SNAP)``) and ``snap_area`` (float64,
    ``(B + 1, L)``) holds the running integrals when micro-batch ``b`` opens (row 0: the
    start of the window).  After the measured arrival that brings the count to
    ``ipar[IP_NEXT_CHECK]`` the kernel returns ``CHECKPOINT``.  Per-level arrays ``cnt``,
    ``area``, ``last`` (float64, shape ``(L,)``) hold the number of servers with at least i
    tasks and its integral; ``bstart`` (int64, ``(L + 1,)``) the JSQ buckets.

    General mode (``ipar[IP_GENERAL] = 1``): instead of the Markov chain, a discrete-event
    simulation of given tasks.  ``arr_times`` / ``svc`` (float64, one chunk) hold arrival
    times and service sizes, consumed from ``ist[I_TASK_PTR]``; ``ipar[IP_LAST_CHUNK] = 1``
    marks the last chunk (otherwise the kernel returns ``NEED_TASKS`` at its end).  A task of
    size x at server s takes x / ``speed[s]``; completions are kept in a binary heap
    (``heap``: servers, ``hkey``: completion times, shape ``(N,)``).  An arrival comes
    before a completion at the same instant.
    """
    policy, n, m_count, d, z = ipar[IP_POLICY], ipar[IP_N], ipar[IP_M], ipar[IP_D], ipar[IP_Z]
    replace = ipar[IP_REPLACE] == 1
    arr_warm, arr_end, budget = ipar[IP_ARR_WARM], ipar[IP_ARR_END], ipar[IP_BUDGET]
    width = ipar[IP_WIDTH]  # a power of two: micro-batch of ordinal k is k >> wshift
    wshift = 0
    while (1 << wshift) < width:
        wshift += 1
    general = ipar[IP_GENERAL] == 1
    last_chunk = ipar[IP_LAST_CHUNK] == 1
    next_check = ipar[IP_NEXT_CHECK]
    record = ipar[IP_RECORD] == 1
    nmicro = bsum.shape[0]  # a power of two, a multiple of H_SEGMENTS
    segshift = 0
    while (H_SEGMENTS << segshift) < nmicro:
        segshift += 1
    scratch = np.empty(1)
    chunk_len = arr_times.shape[0]
    lam_n, t_warm, t_end = fpar[0], fpar[1], fpar[2]
    iq_policy = policy >= JIQ
    deletes = iq_policy and policy != JIQ_ORIGINAL
    thresh = z if policy == JIQ_THRESHOLD else 0
    nlev = cnt.shape[0]
    # hot scalars live in locals and are written back on exit
    now = fst[F_NOW]
    nbusy = ist[I_NBUSY]
    pool_free = ist[I_POOL_FREE]
    arrivals = ist[I_ARRIVALS]
    meas_in_sys = ist[I_MEAS_IN_SYS]
    nrec = ist[I_NREC]
    maxlen = ist[I_MAXLEN]
    jsq_min = ist[I_JSQ_MIN]
    phase = ist[I_PHASE]
    ptr = ist[I_TASK_PTR]
    heap_n = ist[I_HEAP_N]
    buf_size = buf.shape[0]
    rt_min = fst[F_RT_MIN]
    rt_max = fst[F_RT_MAX]
    task_svc = 0.0
    done = 0
    status = CHUNK
    while True:
        if phase == DRAIN and meas_in_sys == 0:
            status = DONE
            break
        if done >= budget:
            status = CHUNK
            break
        if pool_free < 0:
            status = NEED_POOL
            break
        if iq_policy and ist[I_ARENA_TOP] + 2 * ist[I_MAXCAP] > arena.shape[0]:
            status = NEED_ARENA
            break
        if maxlen + 2 >= nlev:
            status = NEED_LEVELS
            break
        if record and nrec >= buf_size:
            status = BUFFER_FULL
            break
        if phase == MEASURE and arrivals - arr_warm >= width * nmicro:
            status = NEED_MERGE
            break
        u = 0.0
        if general:
            if ptr >= chunk_len and not last_chunk:
                status = NEED_TASKS
                break
            na = arr_times[ptr] if ptr < chunk_len else np.inf
            nd = hkey[0] if heap_n > 0 else np.inf
            if na == np.inf and nd == np.inf:  # no task left anywhere
                if phase == WARMUP:
                    _start_measure(now, ist, fst, msg, cnt, area, last, snap, snap_area)
                    phase = MEASURE
                    arr_warm = arrivals
                    ipar[IP_ARR_WARM] = arrivals
                if phase == MEASURE:
                    _finish_measure(now, arrivals, ist, fst, cnt, area, last)
                    phase = DRAIN
                status = DONE
                break
            is_arrival = na <= nd
            now = na if is_arrival else nd
        else:
            rate = lam_n + nbusy
            now = now + rng.standard_exponential() / rate
            u = rng.random() * rate
            is_arrival = u < lam_n
        if phase == WARMUP:
            if arr_end < 0 and now >= t_warm:
                _start_measure(t_warm, ist, fst, msg, cnt, area, last, snap, snap_area)
                phase = MEASURE
            elif arr_end >= 0 and is_arrival and arrivals == arr_warm:
                _start_measure(now, ist, fst, msg, cnt, area, last, snap, snap_area)
                phase = MEASURE
            if phase == MEASURE:  # measured ordinals count from here
                arr_warm = arrivals
                ipar[IP_ARR_WARM] = arrivals
        if phase == MEASURE:
            if arr_end < 0 and now >= t_end:
                _finish_measure(t_end, arrivals, ist, fst, cnt, area, last)
                phase = DRAIN
            elif arr_end >= 0 and is_arrival and arrivals == arr_end:
                _finish_measure(now, arrivals, ist, fst, cnt, area, last)
                phase = DRAIN
        measuring = phase == MEASURE
        done += 1
        checkpoint = False
        if is_arrival:
            if measuring:
                order = arrivals - arr_warm
                if order > 0 and order & (width - 1) == 0:
                    _snapshot(order >> wshift, now, ist, fst, msg, cnt, area, last, snap, snap_area)
                checkpoint = order + 1 == next_check
            arrivals += 1
            if general:
                task_svc = svc[ptr]
                ptr += 1
                m = 0
                if policy == ROUND_ROBIN or iq_policy:
                    m = _uniform_index(rng, m_count)
            else:
                # Given an arrival, u / lam_n is uniform on [0, 1): it picks the dispatcher.
                m = int(u / lam_n * m_count)
                if m >= m_count:
                    m = m_count - 1
            from_iq = False
            if policy == RANDOM:
                s = _uniform_index(rng, n)
            elif policy == ROUND_ROBIN:
                s = dsp[m, D_RR]
                dsp[m, D_RR] = s + 1 if s + 1 < n else 0
            elif policy == JSQ:
                s = jperm[
                    bstart[jsq_min] + _uniform_index(rng, bstart[jsq_min + 1] - bstart[jsq_min])
                ]
            elif policy == POD:
                s = _probe(rng, n, d, replace, srv, perm)
                if measuring:
                    msg[M_PROBE] += d
            elif dsp[m, D_SIZE] > 0:
                s = arena[dsp[m, D_START] + _uniform_index(rng, dsp[m, D_SIZE])]
                _iq_remove(s, now, srv, dsp, arena, ist, fst)
                from_iq = True
                if policy == JIQ_ORIGINAL and srv[s, S_QLEN] > 0 and measuring:
                    msg[M_STALE] += 1
            elif policy == JIQ_POD:
                s = _probe(rng, n, d, replace, srv, perm)
                if measuring:
                    msg[M_PROBE] += d
            else:
                s = _uniform_index(rng, n)
            idx = pool_free
            pool_free = int(pool[idx, P_NEXT])
            pool[idx, P_NEXT] = -1.0
            pool[idx, P_ARR] = now
            pool[idx, P_SVC] = task_svc
            if measuring:
                pool[idx, P_ORD] = arrivals - arr_warm  # the ordinal + 1
                meas_in_sys += 1
            else:
                pool[idx, P_ORD] = 0.0
            if srv[s, S_HEAD] < 0:
                srv[s, S_HEAD] = idx
            else:
                pool[srv[s, S_TAIL], P_NEXT] = idx
            srv[s, S_TAIL] = idx
            old = srv[s, S_QLEN]
            new = old + 1
            srv[s, S_QLEN] = new
            if measuring:
                area[new] += cnt[new] * (now - last[new])
                last[new] = now
            cnt[new] += 1
            if new > maxlen:
                maxlen = new
            if old == 0:
                srv[s, S_BUSY] = nbusy
                busy_list[nbusy] = s
                nbusy += 1
                if general:
                    heap[heap_n] = s
                    hkey[heap_n] = now + task_svc / speed[s]
                    _sift_up(heap_n, heap, hkey, srv)
                    heap_n += 1
            if policy == JSQ:
                jsq_min = _jsq_up(s, old, jperm, bstart, srv, jsq_min)
            if deletes:
                if srv[s, S_IQ] >= 0 and new > thresh:
                    _iq_remove(s, now, srv, dsp, arena, ist, fst)
                    if measuring:
                        msg[M_DELETE] += 1
                elif from_iq and new <= thresh:
                    m2 = _choose_iqueue(rng, policy, m_count, d, dsp, dperm)
                    _iq_add(m2, s, now, srv, dsp, arena, free_head, ist, fst)
                    if measuring:
                        msg[M_JOIN] += 1
        else:
            if general:
                s = heap[0]
            else:
                k = int(u - lam_n)
                if k >= nbusy:
                    k = nbusy - 1
                s = busy_list[k]
            idx = srv[s, S_HEAD]
            nxt = int(pool[idx, P_NEXT])
            srv[s, S_HEAD] = nxt
            if nxt < 0:
                srv[s, S_TAIL] = -1
            tag = int(pool[idx, P_ORD])
            if tag > 0:
                rt = now - pool[idx, P_ARR]
                b = (tag - 1) >> wshift
                bsum[b] += rt
                bcnt[b] += 1
                hist[b >> segshift, hist_bin(rt, scratch)] += 1
                if rt < rt_min:
                    rt_min = rt
                if rt > rt_max:
                    rt_max = rt
                if record:
                    buf[nrec] = rt
                    rec_ord[nrec] = tag - 1
                    nrec += 1
                meas_in_sys -= 1
            pool[idx, P_NEXT] = pool_free
            pool_free = idx
            old = srv[s, S_QLEN]
            new = old - 1
            if measuring:
                area[old] += cnt[old] * (now - last[old])
                last[old] = now
            cnt[old] -= 1
            srv[s, S_QLEN] = new
            if general:
                if new > 0:  # the next task starts service at once
                    hkey[0] = now + pool[srv[s, S_HEAD], P_SVC] / speed[s]
                    _sift_down(0, heap_n, heap, hkey, srv)
                else:
                    heap_n -= 1
                    srv[s, S_HPOS] = -1
                    if heap_n > 0:
                        heap[0] = heap[heap_n]
                        hkey[0] = hkey[heap_n]
                        _sift_down(0, heap_n, heap, hkey, srv)
            if new == 0:
                p = srv[s, S_BUSY]
                nbusy -= 1
                moved = busy_list[nbusy]
                busy_list[p] = moved
                srv[moved, S_BUSY] = p
                srv[s, S_BUSY] = -1
            if policy == JSQ:
                jsq_min = _jsq_down(s, old, jperm, bstart, srv, jsq_min)
            if iq_policy and srv[s, S_IQ] < 0 and new <= thresh:
                # JIQ-Original: a server still listed (stale entry) does not join again.
                m2 = _choose_iqueue(rng, policy, m_count, d, dsp, dperm)
                _iq_add(m2, s, now, srv, dsp, arena, free_head, ist, fst)
                if measuring:
                    msg[M_JOIN] += 1
                    if policy == JIQ_SQ:
                        msg[M_PROBE] += d
        if checkpoint:
            status = CHECKPOINT
            break
    fst[F_NOW] = now
    fst[F_RT_MIN] = rt_min
    fst[F_RT_MAX] = rt_max
    ist[I_NBUSY] = nbusy
    ist[I_POOL_FREE] = pool_free
    ist[I_ARRIVALS] = arrivals
    ist[I_EVENTS] += done
    ist[I_MEAS_IN_SYS] = meas_in_sys
    ist[I_NREC] = nrec
    ist[I_MAXLEN] = maxlen
    ist[I_JSQ_MIN] = jsq_min
    ist[I_TASK_PTR] = ptr
    ist[I_HEAP_N] = heap_n
    return status
