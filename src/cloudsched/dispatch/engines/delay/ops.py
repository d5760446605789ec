"""Compiled helpers of the delay engine: ordered views, the message heap, the I-queues.

**Ordered view** (:class:`~.records.View`): ``val[s]`` is what a dispatcher reads for server
``s`` (a published length or its own active requests), ``perm`` lists the servers in
increasing ``val`` and ``start[v]`` is the number of servers with ``val < v`` (``start``
holds one more entry than the levels).  A change of one ``val`` by one is one swap
(:func:`view_up`, :func:`view_down`), and a uniform server among those with the smallest
value is one draw (:func:`view_least`): ``jsq`` on a view in O(1).  :func:`own_view` is
dispatcher ``k``'s row of the per-dispatcher views.

**Message heap** (:class:`~.records.Messages`): ``time`` (float64) and ``body`` (int64,
``(capacity, 4)``: kind, server, value, sequence number), a binary min-heap on time;
``size[0]`` its size.

**I-queues** (:class:`~.records.IQueues`; ``iq[j]``: dispatchers listing ``j`` servers, as in
the counts engine).
"""

from __future__ import annotations

from cloudsched._jit import kernel
from cloudsched.dispatch.engines.counts.kernel import iq_move
from cloudsched.dispatch.engines.delay.records import View

__all__ = [
    "MSG_DELETE",
    "MSG_INFO",
    "MSG_JOIN",
    "heap_pop",
    "heap_push",
    "iq_add",
    "iq_remove",
    "own_view",
    "view_down",
    "view_least",
    "view_set",
    "view_up",
]

#: Message kinds in the heap.
MSG_INFO, MSG_JOIN, MSG_DELETE = range(3)


@kernel(nrt=False, inline=True)
def _swap_to(perm, pos, s, j):
    """Swap server ``s`` with the server at place ``j`` of ``perm`` (``pos`` its inverse)."""
    other = perm[j]
    i = pos[s]
    perm[i] = other
    pos[other] = i
    perm[j] = s
    pos[s] = j


@kernel(nrt=False, inline=True)
def view_up(view, s):
    """Raise ``val[s]`` by one: swap ``s`` with the last server of its level."""
    val, perm, pos, start = view
    v = val[s]
    last = start[v + 1] - 1
    _swap_to(perm, pos, s, last)
    start[v + 1] = last
    val[s] = v + 1


@kernel(nrt=False, inline=True)
def view_down(view, s):
    """Lower ``val[s]`` by one: swap ``s`` with the first server of its level."""
    val, perm, pos, start = view
    v = val[s]
    first = start[v]
    _swap_to(perm, pos, s, first)
    start[v] = first + 1
    val[s] = v - 1


@kernel(nrt=False, inline=True)
def view_set(view, s, to):
    """Set ``val[s]`` to ``to`` (one swap per level crossed)."""
    while view.val[s] < to:
        view_up(view, s)
    while view.val[s] > to:
        view_down(view, s)


@kernel(nrt=False, inline=True)
def view_least(view, x):
    """Return a server with the smallest ``val`` (``x`` uniform in [0, 1)), uniformly."""
    low = view.val[view.perm[0]]
    return view.perm[int(x * view.start[low + 1])]


@kernel(nrt=False, inline=True)
def own_view(own, k):
    """Dispatcher ``k``'s view of its own active requests (rows of the ``(M, N)`` tables)."""
    return View(own.val[k], own.perm[k], own.pos[k], own.start[k])


@kernel(nrt=False, inline=True)
def _heap_copy(msgs, i, j):
    """Copy message ``j`` (time and body) to entry ``i`` of the heap."""
    msgs.time[i] = msgs.time[j]
    for c in range(4):
        msgs.body[i, c] = msgs.body[j, c]


@kernel(nrt=False, inline=True)
def heap_push(msgs, t, kind, server, value, seq):
    """Add a message landing at time ``t``."""
    htime, hmsg, hn = msgs.time, msgs.body, msgs.size
    i = hn[0]
    hn[0] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if htime[parent] <= t:
            break
        _heap_copy(msgs, i, parent)
        i = parent
    htime[i] = t
    hmsg[i, 0] = kind
    hmsg[i, 1] = server
    hmsg[i, 2] = value
    hmsg[i, 3] = seq


@kernel(nrt=False, inline=True)
def heap_pop(msgs, out):
    """Remove the earliest message into ``out`` (kind, server, value, sequence)."""
    htime, hmsg, hn = msgs.time, msgs.body, msgs.size
    for c in range(4):
        out[c] = hmsg[0, c]
    n = hn[0] - 1
    hn[0] = n
    t = htime[n]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and htime[child + 1] < htime[child]:
            child += 1
        if htime[child] >= t:
            break
        _heap_copy(msgs, i, child)
        i = child
    _heap_copy(msgs, i, n)


@kernel(nrt=False, inline=True)
def iq_add(lists, iq, fst, now, measuring, k, s):
    """List server ``s`` in I-queue ``k``; returns its new size."""
    iqe, iqn, epos = lists.entries, lists.size, lists.pos
    c = iqn[k]
    iqe[k, c] = s
    epos[s] = c
    iqn[k] = c + 1
    iq_move(iq, fst, now, measuring, c, c + 1)
    return c + 1


@kernel(nrt=False, inline=True)
def iq_remove(lists, iq, fst, now, measuring, k, s):
    """Remove server ``s`` from I-queue ``k`` (the last entry takes its place)."""
    iqe, iqn, epos = lists.entries, lists.size, lists.pos
    c = iqn[k] - 1
    i = epos[s]
    other = iqe[k, c]
    iqe[k, i] = other
    epos[other] = i
    epos[s] = -1
    iqn[k] = c
    iq_move(iq, fst, now, measuring, c + 1, c)
