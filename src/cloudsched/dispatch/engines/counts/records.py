"""The occupancy-count engine's records, and how a policy's table row becomes its parameters.

``State`` (the farm as counts)
    ``cnt`` (float64, ``(L,)``): servers holding at least ``i`` tasks (``cnt[0] = N``).
    ``iq`` (float64, ``(J,)``): I-queues holding ``j`` entries (``iq[0] = M`` without
    I-queues).
    ``ist``, ``fst``, ``msg``: the shared scalars and message counters
    (:mod:`cloudsched.dispatch.engines.records`; the count kernels use ``I_ARRIVALS``,
    ``I_EVENTS``, ``I_PHASE``, ``I_MAXLEN``, ``I_MAXCAP`` (the largest I-queue),
    ``I_ARR_CLOSE`` and ``F_NOW``, ``F_TWARM``, ``F_TEND``, ``F_AREA_P0``, ``F_LAST_P0``).
``Params`` (fixed for a run)
    ``lam_n`` (arrival rate of the farm), ``n`` (servers, as a float), ``m`` (dispatchers),
    ``pick`` (a code of :data:`cloudsched.policy_table.PICKS`: where a task goes that no
    I-queue serves), ``d`` (probes, or I-queues sampled), ``probes`` (probe messages per
    such decision), ``replace`` (probes with replacement), ``iqueues``, ``join`` (a code of
    :data:`cloudsched.policy_table.JOINS`), ``t_warm``, ``t_end`` (the window in time; -1 in
    task mode).

The codes are positions in the table's tuples of rules, not one per policy: a policy runs
here when its row's rules are ones the kernel implements (``uniform``, ``least of d`` and
``least`` picks; ``uniform`` and ``shortest of d`` joins, with delete requests).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.policy_table import JOINS, PICKS, TABLE

__all__ = [
    "JOIN_SHORTEST",
    "JOIN_UNIFORM",
    "LEAST",
    "LEAST_OF_D",
    "UNIFORM",
    "Params",
    "State",
    "params",
]

#: Where a task goes when no I-queue entry serves it (positions in the table's ``PICKS``).
UNIFORM, LEAST_OF_D, LEAST = (PICKS.index(p) for p in ("uniform", "least of d", "least"))
#: Where an idle server lists itself (positions in the table's ``JOINS``).
JOIN_UNIFORM, JOIN_SHORTEST = (JOINS.index(j) for j in ("uniform", "shortest of d"))


class State(NamedTuple):
    """The farm as occupancy counts (see the module notes)."""

    cnt: np.ndarray
    iq: np.ndarray
    ist: np.ndarray
    fst: np.ndarray
    msg: np.ndarray


class Params(NamedTuple):
    """Parameters fixed for a run (see the module notes)."""

    lam_n: float
    n: float
    m: int
    pick: int
    d: int
    probes: int
    replace: bool
    iqueues: bool
    join: int
    t_warm: float
    t_end: float


def params(spec: RunSpec, policy: str) -> Params:
    """Return the kernel's parameters for ``spec`` of the built-in ``policy`` (its table row)."""
    row = TABLE[policy]
    pick = PICKS.index(row.pick)
    return Params(
        lam_n=float(spec.rate * spec.n),
        n=float(spec.n),
        m=int(spec.m),
        pick=pick,
        d=int(spec.d),
        probes=int(spec.d) if pick == LEAST_OF_D else 0,
        replace=bool(spec.replace),
        iqueues=row.iqueues,
        join=JOINS.index(row.join),
        t_warm=float(spec.t_warm),
        t_end=float(spec.t_end),
    )
