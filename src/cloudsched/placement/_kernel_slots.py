"""Compiled slot choice of the baselines: Storm's EvenScheduler order, greedy, Storm's RAS.

Each function writes the chosen slot of every node of a type-``j`` job into
``st.scratch[:k]`` (node ``v`` in ``scratch[v]``) and returns True, or returns False when the
job does not fit (a node finds no machine with a free slot and room for its CPU and
memory).  They follow the plain versions of :mod:`cloudsched.placement.baselines` exactly
(tests compare them), and change nothing in the state but ``st.iwork``, ``st.fwork`` and
``st.scratch``.  Resource checks run only when ``mo.par[P_RES]`` is set.
"""

from __future__ import annotations

import math

import numpy as np

from cloudsched._jit import kernel
from cloudsched.placement import state as S

__all__ = ["fits", "greedy_slots", "machine_order", "ras_slots", "sort_by_key", "storm_slots"]


@kernel(nrt=False, inline=True)
def fits(mo, res, m, node):
    """Whether machine ``m``, with free CPU and memory ``res[:, m]``, has room for ``node``."""
    if mo.par[S.P_RES] == 0.0:
        return True
    return res[0, m] >= mo.ndem[node, 0] and res[1, m] >= mo.ndem[node, 1]


@kernel(nrt=False, inline=True)
def _take(mo, res, m, node):
    if mo.par[S.P_RES] != 0.0:
        res[0, m] -= mo.ndem[node, 0]
        res[1, m] -= mo.ndem[node, 1]


@kernel(nrt=False, inline=True)
def _copy_res(st, mo, res):
    """Copy the machines' free CPU and memory into ``res[0:2, :L]`` (with limits only)."""
    if mo.par[S.P_RES] == 0.0:
        return
    for m in range(st.mres.shape[0]):
        res[0, m] = st.mres[m, 0]
        res[1, m] = st.mres[m, 1]


@kernel(nrt=False)
def _sift(order, key, i, size):
    """Sift entry ``i`` of the max-heap ``order`` (by ``key``) down to its place."""
    v = order[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and key[order[c + 1]] > key[order[c]]:
            c += 1
        if key[order[c]] <= key[v]:
            break
        order[i] = order[c]
        i = c
    order[i] = v


@kernel(nrt=False)
def sort_by_key(order, key, n):
    """Sort ``order[:n]`` (indices) by increasing ``key`` in place (heapsort, no allocation)."""
    for i in range(n // 2 - 1, -1, -1):
        _sift(order, key, i, n)
    for end in range(n - 1, 0, -1):
        top = order[0]
        order[0] = order[end]
        order[end] = top
        _sift(order, key, np.int64(0), end)


@kernel(nrt=False)
def storm_slots(st, mo, j, k):
    """EvenScheduler order: machines by free slots, their slots interleaved round robin.

    Machines are visited by decreasing free slots, ties by index (keys ``-free * L + m``
    are distinct, so any sort gives this order).  With resource limits, node ``v`` takes
    the first slot of that list not yet taken whose machine has room for it.
    """
    mfree, mslots, scratch = st.mfree, st.mslots, st.scratch
    nm = mfree.size
    key, order, used = st.iwork[0], st.iwork[1], st.iwork[2]
    res = st.fwork
    for m in range(nm):
        key[m] = -mfree[m] * nm + m
        order[m] = m
    sort_by_key(order, key, nm)
    base = mo.node_off[j]
    if mo.par[S.P_RES] == 0.0:
        got = 0
        depth = 0
        while got < k:
            for i in range(nm):
                m = order[i]
                if mfree[m] > depth and got < k:
                    scratch[got] = mslots[m, mfree[m] - 1 - depth]
                    got += 1
            depth += 1
        return True
    _copy_res(st, mo, res)
    for m in range(nm):
        used[m] = 0
    for v in range(k):
        found = False
        depth = 0
        while not found:  # the first untaken slot of the list whose machine fits
            more = False
            for i in range(nm):
                m = order[i]
                if mfree[m] > depth:
                    more = True
                    if used[m] == depth and fits(mo, res, m, base + v):
                        found = True
                        break
            if found or not more:
                break
            depth += 1
        if not found:
            return False
        scratch[v] = mslots[m, mfree[m] - 1 - used[m]]
        used[m] += 1
        _take(mo, res, m, base + v)
    return True


@kernel(nrt=False)
def greedy_slots(st, mo, j, k):
    """Traffic-aware greedy (the rule of :func:`.baselines.greedy`)."""
    mfree, mslots, scratch = st.mfree, st.mslots, st.scratch
    node_off, bfs, adj_off, adj, rack = mo.node_off, mo.bfs, mo.adj_off, mo.adj, mo.rack
    left, rack_mark, where = st.iwork[0], st.iwork[2], st.iwork[3]
    res, traffic = st.fwork, st.fwork[2]
    limited = mo.par[S.P_RES] != 0.0  # read once: the machine loops below are the hot path
    nm = mfree.size
    for m in range(nm):  # (traffic and rack_mark are back to 0 after each node)
        left[m] = mfree[m]
    _copy_res(st, mo, res)
    base = node_off[j]
    for v in range(k):
        where[v] = -1
    for i in range(k):
        v = bfs[base + i]
        nh = 0
        for a in range(adj_off[base + v], adj_off[base + v + 1]):
            w = adj[a]
            if where[w] >= 0:
                traffic[where[w]] += mo.adj_w[a]
                rack_mark[rack[where[w]]] = 1
                nh += 1
        best = -1
        if nh > 0:
            for m in range(nm):
                if (
                    traffic[m] > 0.0
                    and left[m] > 0
                    and (not limited or fits(mo, res, m, base + v))
                    and (
                        best < 0
                        or traffic[m] > traffic[best]
                        or (traffic[m] == traffic[best] and left[m] > left[best])
                    )
                ):
                    best = m
        if best < 0:
            for m in range(nm):
                if left[m] > 0 and (not limited or fits(mo, res, m, base + v)):
                    if best < 0:
                        best = m
                        continue
                    sm, sb = rack_mark[rack[m]], rack_mark[rack[best]]
                    if sm > sb or (sm == sb and left[m] > left[best]):
                        best = m
        for a in range(adj_off[base + v], adj_off[base + v + 1]):
            w = adj[a]
            if where[w] >= 0:
                traffic[where[w]] = 0.0
                rack_mark[rack[where[w]]] = 0
        if best < 0:
            return False
        where[v] = best
        left[best] -= 1
        if limited:
            _take(mo, res, best, base + v)
        scratch[v] = mslots[best, left[best]]
    return True


@kernel(nrt=False, inline=True)
def _lex_less(keys, a, b):
    """Row ``a`` of ``keys`` before row ``b`` (lexicographic)."""
    for c in range(keys.shape[1]):
        if keys[a, c] != keys[b, c]:
            return keys[a, c] < keys[b, c]
    return False


@kernel(nrt=False)
def _lex_sort(order, keys, lo, hi):
    """Sort ``order[lo:hi]`` by the rows of ``keys`` (insertion sort: racks are few)."""
    for i in range(lo + 1, hi):
        v = order[i]
        p = i - 1
        while p >= lo and _lex_less(keys, v, order[p]):
            order[p + 1] = order[p]
            p -= 1
        order[p + 1] = v


@kernel(nrt=False, inline=True)
def _set_key(keys, i, avail, total, nres):
    """``keys[i] = (-mean share, -least share, i)`` of ``avail`` in ``total`` (percent).

    Storm 2.x's order (``NodeSorter.sortObjectResourcesCommon``): mean first.
    """
    low = 1e300
    mean = 0.0
    for r in range(nres):
        pct = avail[r] / total[r] * 100.0 if total[r] > 0.0 else 0.0
        low = min(low, pct)
        mean += pct
    keys[i, 0] = -(mean / nres)
    keys[i, 1] = -low
    keys[i, 2] = i


@kernel(nrt=False, label="Storm's machine order")
def machine_order(st, mo, order):
    """Storm RAS's machine order into ``order[:L]`` (see :func:`.baselines.machine_order`).

    Resources: free slots, and CPU and memory where every machine limits them.  Rows
    ``0..L-1`` of ``st.favail`` / ``st.fkeys`` hold machines, rows ``L + q`` rack ``q``.
    """
    nm = st.mfree.size
    nrack = st.favail.shape[0] - nm
    av, keys, rorder, cols = st.favail, st.fkeys, st.iwork[4], st.iwork[3]
    nres = 1  # column 0: slots; then the limited resources, mres column cols[c]
    if mo.par[S.P_RES] != 0.0:
        for r in range(2):
            limited = True
            for m in range(nm):
                if math.isinf(mo.mcap[m, r]):
                    limited = False
            if limited:
                cols[nres] = r
                nres += 1
    for q in range(nrack):
        for c in range(3):
            av[nm + q, c] = 0.0
    for m in range(nm):
        av[m, 0] = st.mfree[m]
        for c in range(1, nres):
            av[m, c] = st.mres[m, cols[c]]
        for c in range(nres):
            av[nm + mo.rack[m], c] += av[m, c]
    tot = st.fwork[3]
    for c in range(nres):
        tot[c] = 0.0
        for q in range(nrack):
            tot[c] += av[nm + q, c]
    for q in range(nrack):
        _set_key(keys, nm + q, av[nm + q], tot, nres)
        rorder[q] = nm + q
    _lex_sort(rorder, keys, np.int64(0), nrack)  # not a literal 0: one compiled copy
    n = 0
    for a in range(nrack):
        q = rorder[a] - nm
        start = n
        for m in range(nm):
            if mo.rack[m] == q:
                order[n] = m
                n += 1
        for i in range(start, n):
            _set_key(keys, order[i], av[order[i]], av[nm + q], nres)
        _lex_sort(order, keys, start, n)


@kernel(nrt=False)
def ras_slots(st, mo, j, k):
    """Storm's ResourceAwareScheduler (the rule of :func:`.baselines.resource_aware`)."""
    order, left = st.iwork[1], st.iwork[0]
    res = st.fwork
    machine_order(st, mo, order)
    nm = st.mfree.size
    for m in range(nm):
        left[m] = st.mfree[m]
    _copy_res(st, mo, res)
    base = mo.node_off[j]
    for i in range(k):
        v = mo.ras[base + i]
        found = -1
        for a in range(nm):
            m = order[a]
            if left[m] > 0 and fits(mo, res, m, base + v):
                found = m
                break
        if found < 0:
            return False
        left[found] -= 1
        _take(mo, res, found, base + v)
        st.scratch[v] = st.mslots[found, left[found]]
    return True
