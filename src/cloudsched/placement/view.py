"""What a placement plug-in's hook may read: the cluster, the job's graph and what is free.

A hook ``place(st, mo, j, k, where)`` (:mod:`cloudsched.placement.plugin`) receives the
kernel's records: ``st`` (the state) and ``mo`` (the model), the job's type ``j`` and its
number of nodes ``k``.  These compiled functions read them without knowing their layout
(:mod:`cloudsched.placement.state`); a hook should use them rather than the records'
fields, which may change.  Nodes of a job are ``0..k-1``; machines ``0..L-1``.
"""

from __future__ import annotations

from cloudsched._jit import kernel
from cloudsched.placement import state as S

__all__ = [
    "cpu",
    "distance",
    "free_cpu",
    "free_memory",
    "free_slots",
    "limited",
    "link_end",
    "link_traffic",
    "links",
    "machines",
    "memory",
    "rack",
]


@kernel(nrt=False, inline=True)
def machines(st):
    """Return the number of machines L."""
    return st.mfree.size


@kernel(nrt=False, inline=True)
def free_slots(st, m):
    """Free slots of machine ``m`` now."""
    return st.mfree[m]


@kernel(nrt=False, inline=True)
def limited(mo):
    """Whether the cluster limits CPU or memory (else the ``free_*`` values are ``inf``)."""
    return mo.par[S.P_RES] != 0.0


@kernel(nrt=False, inline=True)
def free_cpu(st, m):
    """Free CPU of machine ``m`` (percent of a core)."""
    return st.mres[m, 0]


@kernel(nrt=False, inline=True)
def free_memory(st, m):
    """Free memory of machine ``m`` (MB)."""
    return st.mres[m, 1]


@kernel(nrt=False, inline=True)
def cpu(mo, j, v):
    """CPU that node ``v`` of a type-``j`` job needs."""
    return mo.ndem[mo.node_off[j] + v, 0]


@kernel(nrt=False, inline=True)
def memory(mo, j, v):
    """Memory that node ``v`` of a type-``j`` job needs."""
    return mo.ndem[mo.node_off[j] + v, 1]


@kernel(nrt=False, inline=True)
def links(mo, j, v):
    """Return node ``v``'s links: ``for a in range(*links(mo, j, v))`` (:func:`link_end`)."""
    base = mo.node_off[j]
    return mo.adj_off[base + v], mo.adj_off[base + v + 1]


@kernel(nrt=False, inline=True)
def link_end(mo, a):
    """Return the node at the other end of link ``a`` (a node of the same job)."""
    return mo.adj[a]


@kernel(nrt=False, inline=True)
def link_traffic(mo, a):
    """Traffic of link ``a``."""
    return mo.adj_w[a]


@kernel(nrt=False, inline=True)
def rack(mo, m):
    """Rack of machine ``m``."""
    return mo.rack[m]


@kernel(nrt=False, inline=True)
def distance(mo, m, n):
    """Cost of one unit of traffic between machines ``m`` and ``n`` (0 on one machine)."""
    return mo.dist[m, n]
