"""Compiled event loop of the graph-placement simulator.

The system is a continuous-time Markov chain.  Its events, with their rates, are:

* arrival of a type-j job: ``lam[j]``;
* departure of the job in one actual type-j template: ``mu[j]`` per actual template (the
  template is chosen uniformly: exact by memorylessness);
* the own clock of an empty (virtual) type-j template, when virtual clocks are on:
  ``mu[j]`` per virtual template (``graph-placement.md``: this makes the product form exact);
* a tick of the dedicated Poisson clock of queue j (``dgp-clock`` only): ``nu[j]``.

Random draws, in order, per event: ``standard_exponential`` (time step), ``random`` (event
type, and the template it concerns); then the policy's draws: one ``random`` per node drawn by
the Random Partition Procedure (it stops at the first conflict) and one ``random`` for the
add/keep coin.  Uniform integers in ``[0, n)`` are ``floor(random() * n)``.  The reference in
:mod:`cloudsched.placement.reference` makes the same draws in the same order.

State: ``owner[s]`` is the template holding slot ``s`` (-1: free); each machine keeps its free
slots in a stack (``mslots``, ``mfree``, ``spos``); templates live in fixed tables (there are
never more than ``S // min K_j`` of them) with per-type lists of actual and virtual ones; the
queues are ring buffers of entry times (``qbuf``), enlarged by the caller on request.
"""

from __future__ import annotations

import math

import numpy as np

from cloudsched._jit import kernel

# Policy codes.
DGP, DGP_CLOCK, STORM_DEFAULT, GREEDY, FRAME = range(5)
POLICY_CODES = {
    "dgp": DGP,
    "dgp-clock": DGP_CLOCK,
    "storm-default": STORM_DEFAULT,
    "greedy": GREEDY,
    "maxweight": FRAME,
}

# Status codes returned by ``run``.
DONE, CHUNK, STOP, NEED_QUEUE = range(4)

# Template states; a type's template lists are indexed by ``2 - state`` (0: actual, 1: virtual).
UNUSED, VIRTUAL, ACTUAL = range(3)

# ``par`` (float64): algorithm parameters.
P_BETA, P_ALPHA, P_EPS, P_FCODE, P_VCLOCK, P_FROZEN = range(6)
N_PAR = 6
# ``fst`` (float64 scalars).
F_NOW, F_TWARM, F_TEND, F_TSTOP = range(4)
N_FST = 4
# ``ist`` (int64 scalars).
I_TFREE, I_FREE_SLOTS, I_EVENTS, I_ARR_ALL, I_DEP_ALL, I_BATCH = range(6)
N_IST = 6
# ``acc[j, :]`` (float64): time integrals over the window, and the sum of waits.
A_QUEUE, A_ACTUAL, A_VIRTUAL, A_COST, A_WAIT = range(5)
N_ACC = 5
# ``cnt[j, :]`` (int64): counts over the window.
C_ARRIVED, C_PLACED, C_DEPARTED, C_TRIED, C_FAILED, C_REJECTED, C_ADDED, C_REMOVED = range(8)
N_CNT = 8


@kernel
def _index(rng: np.random.Generator, n: int) -> int:
    k = int(rng.random() * n)
    return k if k < n else n - 1


@kernel
def _keep_probability(w: float, beta: float) -> float:
    z = w / beta
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@kernel
def queue_weight(j, qlen, par, wpar):
    """``f_j(Q) = alpha * max(f(Q_j + h_j), eps / (4 |J|) * f(max_k Q_k + h_j))`` (or frozen).

    ``wpar[0]`` holds frozen weights, ``wpar[1]`` the bias ``h_j`` of each type.  The floor
    applies only while ``Q_j > 0``: a type with no queued job has nothing to protect, and a
    floor raised by another type's queue would keep its empty templates alive and starve
    that very type (the floor exists so that no type with waiting jobs is starved).
    """
    if par[P_FROZEN] != 0.0:
        return wpar[0, j]
    h = wpar[1, j]
    qmax = 0
    for k in range(qlen.size):
        qmax = max(qmax, qlen[k])
    if par[P_FCODE] == 0.0:
        own, top = math.log1p(qlen[j] + h), math.log1p(qmax + h)
    else:
        own, top = qlen[j] + h, qmax + h
    if qlen[j] == 0:
        return par[P_ALPHA] * own
    return par[P_ALPHA] * max(own, par[P_EPS] / (4.0 * qlen.size) * top)


@kernel
def reserve_slot(s, tid, owner, slot_machine, mslots, mfree, spos):
    """Give free slot ``s`` to template ``tid`` (swap-remove it from its machine's stack)."""
    m = slot_machine[s]
    top = mfree[m] - 1
    last = mslots[m, top]
    p = spos[s]
    mslots[m, p] = last
    spos[last] = p
    mslots[m, top] = s
    spos[s] = top
    mfree[m] = top
    owner[s] = tid


@kernel
def release_slot(s, owner, slot_machine, mslots, mfree, spos):
    """Return slot ``s`` to its machine's free stack."""
    m = slot_machine[s]
    top = mfree[m]
    other = mslots[m, top]
    p = spos[s]
    mslots[m, p] = other
    spos[other] = p
    mslots[m, top] = s
    spos[s] = top
    mfree[m] = top + 1
    owner[s] = -1


@kernel
def template_cost(j, slots, edges, edge_off, slot_machine, dist):
    """Broken-edge cost of type ``j`` on ``slots[v]`` (node v)."""
    b = 0.0
    for e in range(edge_off[j], edge_off[j + 1]):
        b += dist[slot_machine[slots[edges[e, 0]]], slot_machine[slots[edges[e, 1]]]]
    return b


@kernel
def add_template(j, state, slots, k, cost, owner, slot_machine, mslots, mfree, spos,
                 t_type, t_state, t_cost, t_slots, tfree, tlists, tpos, ntl, ist):  # fmt: skip
    """Create a type-``j`` template (``state`` VIRTUAL or ACTUAL) on ``slots[:k]``; its id."""
    ist[I_TFREE] -= 1
    tid = tfree[ist[I_TFREE]]
    for v in range(k):
        reserve_slot(slots[v], tid, owner, slot_machine, mslots, mfree, spos)
        t_slots[tid, v] = slots[v]
    ist[I_FREE_SLOTS] -= k
    t_type[tid] = j
    t_state[tid] = state
    t_cost[tid] = cost
    c = 2 - state
    tlists[j, c, ntl[j, c]] = tid
    tpos[tid] = ntl[j, c]
    ntl[j, c] += 1
    return tid


@kernel
def _unlist(tid, tlists, tpos, ntl, t_type, t_state):
    j, c = t_type[tid], 2 - t_state[tid]
    n = ntl[j, c] - 1
    last = tlists[j, c, n]
    tlists[j, c, tpos[tid]] = last
    tpos[last] = tpos[tid]
    ntl[j, c] = n


@kernel
def remove_template(tid, knodes, owner, slot_machine, mslots, mfree, spos,
                    t_type, t_state, t_slots, tfree, tlists, tpos, ntl, ist):  # fmt: skip
    """Delete a virtual template and free its slots."""
    k = knodes[t_type[tid]]
    for v in range(k):
        release_slot(t_slots[tid, v], owner, slot_machine, mslots, mfree, spos)
    ist[I_FREE_SLOTS] += k
    _unlist(tid, tlists, tpos, ntl, t_type, t_state)
    t_state[tid] = UNUSED
    tfree[ist[I_TFREE]] = tid
    ist[I_TFREE] += 1


@kernel
def _set_state(tid, state, tlists, tpos, ntl, t_type, t_state):
    _unlist(tid, tlists, tpos, ntl, t_type, t_state)
    j, c = t_type[tid], 2 - state
    t_state[tid] = state
    tlists[j, c, ntl[j, c]] = tid
    tpos[tid] = ntl[j, c]
    ntl[j, c] += 1


@kernel
def fill(j, now, measuring, qbuf, qhead, qlen, acc, cnt, cur_cost, t_cost,
          tlists, tpos, ntl, t_type, t_state):  # fmt: skip
    """Move queued type-j jobs (FIFO) into empty type-j templates (the last listed first)."""
    cap = qbuf.shape[1]
    while qlen[j] > 0 and ntl[j, 1] > 0:
        tid = tlists[j, 1, ntl[j, 1] - 1]
        _set_state(tid, ACTUAL, tlists, tpos, ntl, t_type, t_state)
        cur_cost[j] += t_cost[tid]
        entered = qbuf[j, qhead[j]]
        qhead[j] = (qhead[j] + 1) % cap
        qlen[j] -= 1
        if measuring:
            cnt[j, C_PLACED] += 1
            acc[j, A_WAIT] += now - entered


@kernel
def _random_partition(j, rng, knodes, owner, scratch):
    """Random Partition Procedure: slot v of the proposal is uniform over all slots.

    Returns True and leaves the slots in ``scratch[:K]`` (marked -2 in ``owner``), or False
    (nothing marked) when a drawn slot is reserved or already drawn.
    """
    n = owner.size
    for v in range(knodes[j]):
        s = _index(rng, n)
        if owner[s] != -1:
            for u in range(v):
                owner[scratch[u]] = -1
            return False
        owner[s] = -2
        scratch[v] = s
    for u in range(knodes[j]):
        owner[scratch[u]] = -1
    return True


@kernel
def storm_slots(k, mfree, mslots, order_key, scratch):
    """EvenScheduler order: machines by free slots (most first), slots round robin."""
    nm = mfree.size
    for m in range(nm):
        order_key[m] = -mfree[m] * nm + m
    order = np.argsort(order_key[:nm])
    got = 0
    depth = 0
    while got < k:
        for i in range(nm):
            m = order[i]
            if mfree[m] > depth and got < k:
                scratch[got] = mslots[m, mfree[m] - 1 - depth]
                got += 1
        depth += 1


@kernel
def greedy_slots(j, k, node_off, bfs, adj_off, adj, rack, mfree, mslots, left, counts,
                 rack_mark, where, scratch):  # fmt: skip
    """Traffic-aware greedy (same rule as :func:`cloudsched.placement.baselines.greedy`)."""
    nm = mfree.size
    for m in range(nm):
        left[m] = mfree[m]
    base = node_off[j]
    for v in range(k):
        where[v] = -1
    for i in range(k):
        v = bfs[base + i]
        nh = 0
        for a in range(adj_off[base + v], adj_off[base + v + 1]):
            w = adj[a]
            if where[w] >= 0:
                counts[where[w]] += 1
                rack_mark[rack[where[w]]] = 1
                nh += 1
        best = -1
        if nh > 0:
            for m in range(nm):
                if (
                    counts[m] > 0
                    and left[m] > 0
                    and (
                        best < 0
                        or counts[m] > counts[best]
                        or (counts[m] == counts[best] and left[m] > left[best])
                    )
                ):
                    best = m
        if best < 0:
            for m in range(nm):
                if left[m] > 0:
                    if best < 0:
                        best = m
                        continue
                    sm, sb = rack_mark[rack[m]], rack_mark[rack[best]]
                    if sm > sb or (sm == sb and left[m] > left[best]):
                        best = m
        for a in range(adj_off[base + v], adj_off[base + v + 1]):
            w = adj[a]
            if where[w] >= 0:
                counts[where[w]] = 0
                rack_mark[rack[where[w]]] = 0
        where[v] = best
        left[best] -= 1
        scratch[v] = mslots[best, left[best]]


@kernel
def _accumulate(dt, qlen, ntl, cur_cost, acc):
    for j in range(qlen.size):
        acc[j, A_QUEUE] += qlen[j] * dt
        acc[j, A_ACTUAL] += ntl[j, 0] * dt
        acc[j, A_VIRTUAL] += ntl[j, 1] * dt
        acc[j, A_COST] += cur_cost[j] * dt


@kernel
def run(
    rng, policy, budget, par, lam, mu, nu, wpar, knodes, edges, edge_off, node_off, bfs,
    adj_off, adj, rack, slot_machine, dist, owner, mslots, mfree, spos, t_type, t_state,
    t_cost, t_slots, tfree, tlists, tpos, ntl, qbuf, qhead, qlen, cur_cost, fst, ist, acc,
    cnt, scratch, iwork, bounds, snap, snap_cnt,
):  # fmt: skip
    """Advance the chain by at most ``budget`` events; return a status code.

    Shapes: J types, S slots, L machines, T template rows, Kmax nodes.  ``tlists`` is
    (J, 2, T) (actual, virtual), ``ntl`` (J, 2), ``qbuf`` (J, cap) float64 entry times,
    ``t_slots`` (T, Kmax), ``scratch`` (Kmax,), ``iwork`` (5, max(L, racks, J, Kmax)) int64
    work rows (greedy indexes one of them by graph node).
    ``bounds`` (B,) are the ends of the batches of the window (the last is ``fst[F_TEND]``):
    when time crosses one, ``acc`` is copied to ``snap[b]`` (B, J, N_ACC) and ``cnt`` to
    ``snap_cnt[b]`` (B, J, N_CNT).
    Returns DONE at ``fst[F_TEND]``, STOP at ``fst[F_TSTOP]`` (a MaxWeight frame boundary),
    CHUNK when the budget is spent, NEED_QUEUE when a queue buffer is full.
    """
    nj = lam.size
    cap = qbuf.shape[1]
    beta = par[P_BETA]
    vclock = par[P_VCLOCK] != 0.0 and policy != FRAME
    now = fst[F_NOW]
    tw, tend, tstop = fst[F_TWARM], fst[F_TEND], fst[F_TSTOP]
    ev = 0
    while ev < budget:
        for j in range(nj):
            if qlen[j] == cap:
                fst[F_NOW] = now
                return NEED_QUEUE
        rate = 0.0
        for j in range(nj):
            rate += lam[j]
            rate += mu[j] * ntl[j, 0]
            if vclock:
                rate += mu[j] * ntl[j, 1]
            if policy == DGP_CLOCK:
                rate += nu[j]
        t = now + rng.standard_exponential() / rate
        limit = min(tend, tstop)
        hit = t >= limit
        if hit:
            t = limit
        if t > tw:
            start = max(now, tw)
            b = ist[I_BATCH]
            while b < bounds.size and bounds[b] <= t:
                _accumulate(bounds[b] - start, qlen, ntl, cur_cost, acc)
                snap[b] = acc
                snap_cnt[b] = cnt
                start = bounds[b]
                b += 1
            ist[I_BATCH] = b
            _accumulate(t - start, qlen, ntl, cur_cost, acc)
        now = t
        if hit:
            fst[F_NOW] = now
            return DONE if tend <= tstop else STOP
        ev += 1
        measuring = now > tw
        ist[I_EVENTS] += 1
        u = rng.random() * rate
        # Decode the event: for each type, arrival / departure / virtual clock / queue clock.
        kind = -1
        j = 0
        idx = 0
        for j in range(nj):
            if u < lam[j]:
                kind = 0
                break
            u -= lam[j]
            r = mu[j] * ntl[j, 0]
            if u < r:
                kind = 1
                idx = min(int(u / mu[j]), ntl[j, 0] - 1)
                break
            u -= r
            if vclock:
                r = mu[j] * ntl[j, 1]
                if u < r:
                    kind = 2
                    idx = min(int(u / mu[j]), ntl[j, 1] - 1)
                    break
                u -= r
            if policy == DGP_CLOCK:
                if u < nu[j] or j == nj - 1:
                    kind = 3
                    break
                u -= nu[j]
        if kind < 0:  # rounding at the very top of the range: the last event of the last type
            j = nj - 1
            kind = 0
        k = knodes[j]
        propose = False
        decide = -1
        if kind == 0:
            ist[I_ARR_ALL] += 1
            if measuring:
                cnt[j, C_ARRIVED] += 1
            qbuf[j, (qhead[j] + qlen[j]) % cap] = now
            qlen[j] += 1
            propose = policy == DGP
        elif kind == 1:
            tid = tlists[j, 0, idx]
            ist[I_DEP_ALL] += 1
            if measuring:
                cnt[j, C_DEPARTED] += 1
            _set_state(tid, VIRTUAL, tlists, tpos, ntl, t_type, t_state)
            cur_cost[j] -= t_cost[tid]
            if policy in (STORM_DEFAULT, GREEDY):
                remove_template(tid, knodes, owner, slot_machine, mslots, mfree, spos, t_type,
                                t_state, t_slots, tfree, tlists, tpos, ntl, ist)  # fmt: skip
            elif policy != FRAME:
                decide = tid
        elif kind == 2:
            decide = tlists[j, 1, idx]
        else:
            propose = True
        if propose:
            if measuring:
                cnt[j, C_TRIED] += 1
            if _random_partition(j, rng, knodes, owner, scratch):
                b = template_cost(j, scratch, edges, edge_off, slot_machine, dist)
                w = queue_weight(j, qlen, par, wpar) - b
                if rng.random() < _keep_probability(w, beta):
                    add_template(j, VIRTUAL, scratch, k, b, owner, slot_machine, mslots, mfree,
                                 spos, t_type, t_state, t_cost, t_slots, tfree, tlists, tpos,
                                 ntl, ist)  # fmt: skip
                    if measuring:
                        cnt[j, C_ADDED] += 1
                elif measuring:
                    cnt[j, C_REJECTED] += 1
            elif measuring:
                cnt[j, C_FAILED] += 1
        if decide >= 0:
            w = queue_weight(j, qlen, par, wpar) - t_cost[decide]
            if rng.random() >= _keep_probability(w, beta):
                remove_template(decide, knodes, owner, slot_machine, mslots, mfree, spos, t_type,
                                t_state, t_slots, tfree, tlists, tpos, ntl, ist)  # fmt: skip
                if measuring:
                    cnt[j, C_REMOVED] += 1
        if policy in (STORM_DEFAULT, GREEDY):
            if kind <= 1:
                _place_waiting(policy, now, measuring, knodes, node_off, bfs, adj_off, adj,
                               rack, edges, edge_off, slot_machine, dist, owner, mslots, mfree,
                               spos, t_type, t_state, t_cost, t_slots, tfree, tlists, tpos, ntl,
                               qbuf, qhead, qlen, cur_cost, ist, acc, cnt, scratch,
                               iwork)  # fmt: skip
        else:
            fill(j, now, measuring, qbuf, qhead, qlen, acc, cnt, cur_cost, t_cost,
                  tlists, tpos, ntl, t_type, t_state)  # fmt: skip
    fst[F_NOW] = now
    return CHUNK


@kernel
def _place_waiting(policy, now, measuring, knodes, node_off, bfs, adj_off, adj, rack, edges,
                   edge_off, slot_machine, dist, owner, mslots, mfree, spos, t_type, t_state,
                   t_cost, t_slots, tfree, tlists, tpos, ntl, qbuf, qhead, qlen, cur_cost, ist,
                   acc, cnt, scratch, iwork):  # fmt: skip
    """Baselines: place queue heads in order of entry time while they fit (others wait).

    A type whose head does not fit is skipped until the next event, so a smaller job of
    another type may go first (CHOICE: FIFO within a type, backfilling across types).
    """
    nj = knodes.size
    blocked = iwork[4]
    for j in range(nj):
        blocked[j] = 0
    while True:
        best = -1
        for j in range(nj):
            if (
                qlen[j] > 0
                and blocked[j] == 0
                and (best < 0 or qbuf[j, qhead[j]] < qbuf[best, qhead[best]])
            ):
                best = j
        if best < 0:
            return
        j = best
        k = knodes[j]
        if k > ist[I_FREE_SLOTS]:
            blocked[j] = 1
            continue
        if policy == STORM_DEFAULT:
            storm_slots(k, mfree, mslots, iwork[0], scratch)
        else:
            greedy_slots(j, k, node_off, bfs, adj_off, adj, rack, mfree, mslots, iwork[0],
                         iwork[1], iwork[2], iwork[3], scratch)  # fmt: skip
        b = template_cost(j, scratch, edges, edge_off, slot_machine, dist)
        add_template(j, VIRTUAL, scratch, k, b, owner, slot_machine, mslots, mfree, spos,
                     t_type, t_state, t_cost, t_slots, tfree, tlists, tpos, ntl, ist)  # fmt: skip
        fill(j, now, measuring, qbuf, qhead, qlen, acc, cnt, cur_cost, t_cost,
              tlists, tpos, ntl, t_type, t_state)  # fmt: skip
