"""What the production balancers share: clients, subsets, joining servers, weights, memory.

The production balancers (:mod:`cloudsched.dispatch.balancers`) are built-in policies whose
rows in :mod:`cloudsched.policy_table` name the balancer, the source file and function their
rule was read from, and their options with the balancer's defaults.  What they share, and
the choices made where the balancers leave room (``CHOICE``):

* **Each dispatcher is a client with its own state**, as each proxy of a fleet is: the
  requests it has in flight at each server and what it learnt of each server.  With one
  dispatcher (the default) that is one balancer; ``--dispatchers K`` runs K.
* **Candidates**: a dispatcher balances over ``subset`` servers (gRPC A68 random
  subsetting: a uniformly drawn subset per client; 0: all servers, in server order, as in a
  configuration file).
* **Joining servers** (``join-count``, ``join-time``): the last ``join-count`` servers are
  unknown to every dispatcher before ``join-time``; a dispatcher none of whose servers is
  there yet sends to a uniform server that is (CHOICE), unmarked.
* **Weights**: ``equal``, or each server's speed.
* **Time**: durations come in mean service times (:mod:`cloudsched.dispatch.options`).

Memory (the ``slots`` layout of :class:`~cloudsched.dispatch.plugin.Policy`): ``st.mem``
holds the subsets (``sub[m * S + j]``: dispatcher m's j-th server), then per-slot ints
(region ``k`` at ``M * S * (1 + k)``), then 8 scratch ints per dispatcher; ``st.fmem`` holds
``F`` floats per slot (region ``k`` at ``k * M * S``), ``G`` per server, then per dispatcher
``H`` floats and 8 scratch.
A task carries the slot ``m * S + j`` it was sent through
(:func:`~cloudsched.dispatch.view.mark_task`).
"""

from __future__ import annotations

from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.plugin import SCRATCH, register_policy
from cloudsched.policy_table import TABLE

__all__ = [
    "O_JOIN_N",
    "O_JOIN_T",
    "O_SUBSET",
    "O_UNIT",
    "O_WEIGHTS",
    "X_CHOSEN",
    "X_EDF",
    "X_HEAP",
    "X_JOINED",
    "X_PRESENT",
    "Y_ORDER",
    "Y_TIME",
    "available",
    "builtin",
    "dat",
    "fallback",
    "fat",
    "iat",
    "in_flight",
    "joined",
    "joining",
    "option_index",
    "returned",
    "sat",
    "sent",
    "server",
    "start_slots",
    "two",
    "weight",
    "xat",
    "yat",
]


def option_index(policy: str) -> dict[str, int]:
    """Position of each option of ``policy`` in ``par.opt``."""
    return {o.name: i for i, o in enumerate(TABLE[policy].options)}


# the family's options, first in every row (policy_table.FAMILY_OPTIONS)
O_UNIT, O_SUBSET, O_JOIN_N, O_JOIN_T, O_WEIGHTS = range(5)
# scratch ints per dispatcher: the slot chosen last, servers there before the join, whether
# it has seen the join; wlr: EDF in use, heap size
X_CHOSEN, X_PRESENT, X_JOINED, X_EDF, X_HEAP = range(5)
# scratch floats per dispatcher (wlr): EDF's current time, next order number
Y_TIME, Y_ORDER = range(2)


def builtin(name: str, ints: int, floats: int, per_server: int = 0, per_client: int = 0) -> Any:
    """Register the decorated hooks as built-in ``name``.

    Its memory: ``ints`` and ``floats`` per slot, floats per server, floats per dispatcher.
    """
    row = TABLE[name]
    return register_policy(
        name,
        dispatchers=row.dispatchers,
        memory="slots",
        slot_memory=(ints, floats, per_server, per_client),
        relaxation=row.relaxation,
    )


# -- the slots layout ----------------------------------------------------------------------
@kernel(nrt=False, inline=True)
def iat(par, ints, k, slot):
    """Index in ``st.mem`` of per-slot int ``k`` of ``slot`` (``ints`` per slot)."""
    return par.m * par.slots * (1 + k) + slot


@kernel(nrt=False, inline=True)
def xat(par, ints, m, k):
    """Index in ``st.mem`` of scratch int ``k`` of dispatcher ``m``."""
    return par.m * par.slots * (1 + ints) + m * SCRATCH + k


@kernel(nrt=False, inline=True)
def fat(par, k, slot):
    """Index in ``st.fmem`` of per-slot float ``k`` of ``slot``."""
    return k * par.m * par.slots + slot


@kernel(nrt=False, inline=True)
def sat(par, floats, g, s):
    """Index in ``st.fmem`` of per-server float ``g`` of server ``s``."""
    return floats * par.m * par.slots + g * par.n + s


@kernel(nrt=False, inline=True)
def dat(par, floats, per_server, per_client, m, k):
    """Index in ``st.fmem`` of float ``k`` of dispatcher ``m`` (scratch from ``per_client``)."""
    return floats * par.m * par.slots + per_server * par.n + m * (per_client + SCRATCH) + k


@kernel(nrt=False, inline=True)
def yat(par, floats, m, k):
    """Index in ``st.fmem`` of scratch float ``k`` of dispatcher ``m`` (no other floats)."""
    return dat(par, floats, 0, 0, m, k)


@kernel(nrt=False, inline=True)
def server(st, par, m, j):
    """Return the server of dispatcher ``m``'s slot ``j``."""
    return st.mem[m * par.slots + j]


@kernel(nrt=False, inline=True)
def joining(par, s):
    """Whether server ``s`` is one of those that join mid-run."""
    return s >= par.n - int(par.opt[O_JOIN_N])


@kernel(nrt=False, inline=True)
def joined(st, par):
    """Whether the joining servers have joined (or there are none)."""
    return int(par.opt[O_JOIN_N]) == 0 or v.now(st) >= par.opt[O_JOIN_T]


@kernel(nrt=False, inline=True)
def available(st, par, ints, m):
    """Slots dispatcher ``m`` may use now (its servers there come first)."""
    if joined(st, par):
        return par.slots
    return st.mem[xat(par, ints, m, X_PRESENT)]


@kernel(nrt=False, inline=True)
def weight(st, par, s):
    """Return the configured weight of server ``s``: 1, or its speed."""
    if par.opt[O_WEIGHTS] > 0.5:
        return st.speed[s]
    return 1.0


@kernel(nrt=False)
def start_slots(st, par, rng, ints):
    """Draw each dispatcher's subset (servers there from the start first) and clear its ints."""
    n, big_s = par.n, par.slots
    for m in range(par.m):
        if big_s == n:
            for j in range(n):
                st.mem[m * big_s + j] = j
        else:  # a uniform subset: a partial Fisher-Yates shuffle of st.perm
            for s in range(n):
                st.perm[s] = s
            for j in range(big_s):
                k = j + v.uniform(rng, n - j)
                t = st.perm[k]
                st.perm[k] = st.perm[j]
                st.perm[j] = t
                st.mem[m * big_s + j] = t
        # servers there from the start first, in their drawn order
        present = 0
        for j in range(big_s):
            s = st.mem[m * big_s + j]
            if not joining(par, s):
                for i in range(j, present, -1):
                    st.mem[m * big_s + i] = st.mem[m * big_s + i - 1]
                st.mem[m * big_s + present] = s
                present += 1
        for k in range(SCRATCH):
            st.mem[xat(par, ints, m, k)] = 0
        st.mem[xat(par, ints, m, X_PRESENT)] = present
        for k in range(ints):
            for j in range(big_s):
                st.mem[iat(par, ints, k, m * big_s + j)] = 0


@kernel(nrt=False, inline=True)
def fallback(st, par, rng, ints, m):
    """Pick a uniform server that is there, for a dispatcher with none there (unmarked)."""
    st.mem[xat(par, ints, m, X_CHOSEN)] = -1
    return v.uniform(rng, par.n - int(par.opt[O_JOIN_N]))


@kernel(nrt=False, inline=True)
def sent(st, par, ints, s, m):
    """Mark the task just sent to ``s`` with its slot and count it in flight there."""
    j = st.mem[xat(par, ints, m, X_CHOSEN)]
    if j >= 0:
        slot = m * par.slots + j
        v.mark_task(st, s, slot)
        st.mem[iat(par, ints, 0, slot)] += 1


@kernel(nrt=False, inline=True)
def returned(st, par, ints):
    """Slot of the task that just left (-1: unmarked), no longer in flight."""
    mark = v.last_mark(st)
    if mark < 0:
        return -1
    slot = int(mark)
    st.mem[iat(par, ints, 0, slot)] -= 1
    return slot


@kernel(nrt=False, inline=True)
def in_flight(st, par, ints, slot):
    """Count the requests in flight through ``slot`` (sent, not yet returned)."""
    return st.mem[iat(par, ints, 0, slot)]


@kernel(nrt=False, inline=True)
def two(rng, k):
    """Two distinct uniform slots of ``k`` (in a random order): two draws."""
    a = v.uniform(rng, k)
    b = v.uniform(rng, k - 1)
    if b >= a:
        b += 1
    return a, b
