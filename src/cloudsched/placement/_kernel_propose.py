"""Compiled proposals of DGP: the paper's uniform Random Partition Procedure and local ones.

Both leave the proposed slots in ``st.scratch[:K]`` and return whether the proposal is a
feasible template (free slots, distinct, and room for every node's CPU and memory).

*Uniform* (the paper): slot ``v`` is uniform over all ``S`` slots; a reserved or repeated
slot fails the proposal.  Every feasible template has probability ``S^-K``.

*Local* (beyond the paper): nodes in breadth-first order (``mo.bfs``); the first goes to a
slot drawn uniformly from the free slots of the cluster; each next one, with probability
``theta`` (if the machine of the node before it has a free slot left), to a free slot of
that machine drawn uniformly; otherwise, with probability ``theta`` (if its rack has one), to
a free slot of that rack drawn uniformly; otherwise to a free slot of the cluster drawn
uniformly.  A free slot is one no template holds and the proposal has not drawn.  Its
probability ``q(A | C)`` is the product of the steps' probabilities, computed exactly by
:func:`log_q` both at the proposal and when the template's keep decision comes up (in the
configuration without it),
so that the keep probability ``R / (1 + R)`` with ``R = e^(w / beta) S^-K / q(A | C)``
keeps the stationary law exactly the paper's product form (for the uniform proposal
``R = e^(w / beta)``, the paper's rule).

Draws: uniform, one ``random`` per node; local, one ``random`` for the first node, then per
node a ``random`` for the machine coin (only when the machine before has a free slot), a
``random`` for the rack coin (only when that coin fails or was not drawn, and the rack has a
free slot), and one for the slot.  The mirror (:mod:`cloudsched.testing.placement_mirror`) makes the
same draws.
"""

from __future__ import annotations

import math

from cloudsched._jit import kernel
from cloudsched.placement import state as S
from cloudsched.placement._kernel_slots import fits

__all__ = ["local_partition", "log_q", "uniform_partition"]


@kernel(nrt=False, inline=True)
def _index(rng, n):
    k = int(rng.random() * n)
    return k if k < n else n - 1


@kernel(nrt=False, inline=True)
def _reset(st, mo, k):
    """Unmark the ``k`` drawn slots (and their machines' counts, with resource limits)."""
    res = mo.par[S.P_RES] != 0.0
    for u in range(k):
        s = st.scratch[u]
        st.owner[s] = -1
        if res:
            st.iwork[0, mo.slot_machine[s]] = 0


@kernel(nrt=False, inline=True)
def _mark(st, mo, s, node):
    """Mark slot ``s`` drawn for ``node``; False if its machine has no room left for it.

    With resource limits, ``st.iwork[0]`` counts the slots drawn on each machine.
    """
    st.owner[s] = -2
    if mo.par[S.P_RES] == 0.0:
        return True
    m = mo.slot_machine[s]
    st.iwork[0, m] += 1
    if st.iwork[0, m] == 1:  # first node of the proposal on m: start from its free room
        st.fwork[0, m] = st.mres[m, 0]
        st.fwork[1, m] = st.mres[m, 1]
    if not fits(mo, st.fwork, m, node):
        return False
    st.fwork[0, m] -= mo.ndem[node, 0]
    st.fwork[1, m] -= mo.ndem[node, 1]
    return True


@kernel(nrt=False, inline=True)
def uniform_partition(st, mo, j, rng):
    """Draw the paper's Random Partition Procedure (each node's slot uniform over all)."""
    n = st.owner.size
    k = mo.knodes[j]
    base = mo.node_off[j]
    for v in range(k):
        s = _index(rng, n)
        if st.owner[s] != -1:
            _reset(st, mo, v)
            return False
        st.scratch[v] = s
        if not _mark(st, mo, s, base + v):
            _reset(st, mo, v + 1)
            return False
    _reset(st, mo, k)
    return True


@kernel(nrt=False, inline=True)
def _nth_free(st, lo, hi, i):
    """Return the ``i``-th slot (0-based) of ``lo..hi-1`` that is free and not drawn."""
    for s in range(lo, hi):
        if st.owner[s] == -1:
            if i == 0:
                return s
            i -= 1
    return -1


@kernel(nrt=False, inline=True)
def _nth_free_in_rack(st, mo, r, i):
    """Return the ``i``-th free, undrawn slot (0-based, in slot order) of rack ``r``."""
    for s in range(st.owner.size):
        if st.owner[s] == -1 and mo.rack[mo.slot_machine[s]] == r:
            if i == 0:
                return s
            i -= 1
    return -1


@kernel(nrt=False, inline=True)
def _count_racks(st, mo):
    """Count the free slots of each rack into ``st.rfree``."""
    for r in range(st.rfree.size):
        st.rfree[r] = 0
    for m in range(st.mfree.size):
        st.rfree[mo.rack[m]] += st.mfree[m]


@kernel(nrt=False)
def local_partition(st, mo, j, rng):
    """Draw a local proposal (see the module notes).

    Drawn slots are counted per machine in ``st.iwork[0]`` and per rack in ``st.iwork[2]``.
    """
    k = mo.knodes[j]
    base = mo.node_off[j]
    nslots = st.owner.size
    theta = mo.par[S.P_THETA]
    free = st.ist[S.I_FREE_SLOTS]
    if k > free:
        return False
    _count_racks(st, mo)
    prev = -1
    for i in range(k):
        v = mo.bfs[base + i]
        s = -1
        if prev >= 0:
            m = mo.slot_machine[st.scratch[prev]]
            r = mo.rack[m]
            here = st.mfree[m] - st.iwork[0, m]
            if here > 0 and rng.random() < theta:
                s = _nth_free(st, mo.slot_first[m], mo.slot_first[m + 1], _index(rng, here))
            else:
                near = st.rfree[r] - st.iwork[2, r]
                if near > 0 and rng.random() < theta:
                    s = _nth_free_in_rack(st, mo, r, _index(rng, near))
        if s < 0:
            s = _nth_free(st, 0, nslots, _index(rng, free - i))
        st.scratch[v] = s
        st.iwork[2, mo.rack[mo.slot_machine[s]]] += 1
        if mo.par[S.P_RES] == 0.0:  # (with limits, _mark counts the machine's slots)
            st.iwork[0, mo.slot_machine[s]] += 1
        prev = v
        if not _mark(st, mo, s, base + v):
            _reset_order(st, mo, j, i + 1)
            return False
    _reset_order(st, mo, j, k)
    return True


@kernel(nrt=False, inline=True)
def _reset_order(st, mo, j, n):
    """Unmark the slots of the first ``n`` nodes in breadth-first order."""
    base = mo.node_off[j]
    for i in range(n):
        s = st.scratch[mo.bfs[base + i]]
        st.owner[s] = -1
        st.iwork[0, mo.slot_machine[s]] = 0
        st.iwork[2, mo.rack[mo.slot_machine[s]]] = 0


@kernel(nrt=False)
def log_q(st, mo, j, slots, held):
    """``log q(A | C)`` of the local proposal drawing ``slots`` (node v on ``slots[v]``).

    ``held`` is True when ``A`` is in the configuration (its keep decision): ``C`` is then
    the configuration without it, so its slots count as free.  Uses ``st.iwork[1]`` (per
    machine) and ``st.iwork[3]`` (per rack): A's slots there, less those replayed so far.
    """
    k = mo.knodes[j]
    base = mo.node_off[j]
    theta = mo.par[S.P_THETA]
    rest, rack_rest = st.iwork[1], st.iwork[3]
    _count_racks(st, mo)
    for v in range(k):
        m = mo.slot_machine[slots[v]]
        rest[m] = 0
        rack_rest[mo.rack[m]] = 0
    if held:
        for v in range(k):
            m = mo.slot_machine[slots[v]]
            rest[m] += 1
            rack_rest[mo.rack[m]] += 1
    free = st.ist[S.I_FREE_SLOTS] + (k if held else 0)
    out = -math.log(free)
    for i in range(1, k):
        m_now = mo.slot_machine[slots[mo.bfs[base + i]]]
        m_prev = mo.slot_machine[slots[mo.bfs[base + i - 1]]]
        r_prev = mo.rack[m_prev]
        rest[m_prev] -= 1  # the node before is placed: one fewer free slot there
        rack_rest[r_prev] -= 1
        here = st.mfree[m_prev] + rest[m_prev]
        near = st.rfree[r_prev] + rack_rest[r_prev]
        p = 1.0 / (free - i)
        if near > 0:  # the rack step
            p = (1.0 - theta) * p + (theta / near if mo.rack[m_now] == r_prev else 0.0)
        if here > 0:  # the machine step
            p = (1.0 - theta) * p + (theta / here if m_now == m_prev else 0.0)
        out += math.log(p)
    for v in range(k):
        m = mo.slot_machine[slots[v]]
        rest[m] = 0
        rack_rest[mo.rack[m]] = 0
    return out
