"""The delay engine's records: each server apart, the views dispatchers read, messages in flight.

``State``
    ``q`` (int64, ``(N,)``): tasks at each server; ``blist`` / ``bpos`` (int64, ``(N,)``): the
    busy servers (the first ``dst[D_NBUSY]``) and where each is listed (-1: idle).
    ``cnt``, ``iq`` (float64): servers holding at least ``i`` tasks and I-queues holding
    ``j`` entries, as in the counts engine, for the measurements.
    ``board`` (:class:`View`): the published lengths; ``bseq`` / ``useq`` (int64, ``(N,)``):
    the newest update delivered and sent, per server.
    ``own`` (:class:`View` of ``(M, N)`` tables; ``(1, 1)`` unless ``view="own"``): each
    dispatcher's own active requests; ``tasks`` (:class:`TaskList`): each server's FIFO of
    senders, so that a departure knows whose count to lower.
    ``lists`` (:class:`IQueues`): the I-queues' entries; ``msgs`` (:class:`Messages`): the
    messages in flight.
    ``samp`` (int64, ``(N,)``): a permutation for sampling distinct servers.
    ``dst`` (int64, ``(N_DST,)``): busy servers, head and size of the task pool's free list.
    ``ist``, ``fst``, ``msg``: the shared scalars and message counters
    (:mod:`cloudsched.dispatch.engines.records`).
``View`` (an ordered view, :mod:`.ops`)
    ``val``: what a dispatcher reads per server; ``perm``: the servers in increasing
    ``val``; ``pos``: where each is in ``perm``; ``start[v]``: the servers with ``val < v``.
``TaskList``
    ``head`` / ``tail`` (int64, ``(N,)``): each server's first and last task (-1: none);
    ``next`` / ``sender`` (int64, pool): the next task and the dispatcher that sent it.
``IQueues``
    ``entries`` (int64, ``(M, room)``): ``entries[k, :size[k]]`` the servers dispatcher ``k``
    lists; ``size`` (int64, ``(M,)``); ``pos`` (int64, ``(N,)``): where a server is listed
    (-1: nowhere); ``owner`` / ``seq`` (int64, ``(N,)``): the dispatcher and idle period of
    its entry; ``period`` (int64, ``(N,)``): each server's current idle period.
``Messages`` (a binary min-heap on time)
    ``chan`` (float64, ``(N,)``): when the last join or delete of each server lands;
    ``time`` (float64) and ``body`` (int64, ``(capacity, 4)``: kind, server, value, sequence
    number; the last row is scratch); ``size`` (int64, ``(1,)``).
``Params``
    ``base``: the counts engine's (``lam_n``, ``n``, ``m``, ``pick``, ``d``, ``probes``,
    ``replace``, ``iqueues``, ``t_warm``, ``t_end``); ``mine`` (dispatchers read their own
    active requests), ``dmean`` / ``dexp`` (float64 / bool, ``(3,)``: the info, join and
    delete delays' means and whether each is exponential).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from cloudsched.dispatch.engines.counts.records import Params as CountsParams
from cloudsched.dispatch.engines.counts.records import params as counts_params
from cloudsched.dispatch.engines.replication import RunSpec

__all__ = [
    "D_FREE",
    "D_NBUSY",
    "D_NFREE",
    "N_DST",
    "IQueues",
    "Messages",
    "Params",
    "State",
    "TaskList",
    "View",
    "params",
]

#: Scalars of the delay engine ``dst``: busy servers, head and size of the task pool's free
#: list.
D_NBUSY, D_FREE, D_NFREE = range(3)
N_DST = 3


class View(NamedTuple):
    """An ordered view: values per server, kept sorted (see the module notes)."""

    val: np.ndarray
    perm: np.ndarray
    pos: np.ndarray
    start: np.ndarray


class TaskList(NamedTuple):
    """Each server's FIFO of tasks, by the dispatcher that sent each."""

    head: np.ndarray
    tail: np.ndarray
    next: np.ndarray
    sender: np.ndarray


class IQueues(NamedTuple):
    """The I-queues' entries, each server's place and idle period."""

    entries: np.ndarray
    size: np.ndarray
    pos: np.ndarray
    owner: np.ndarray
    seq: np.ndarray
    period: np.ndarray


class Messages(NamedTuple):
    """Messages in flight (a heap on landing time) and each server's channel."""

    chan: np.ndarray
    time: np.ndarray
    body: np.ndarray
    size: np.ndarray


class State(NamedTuple):
    """The farm with late messages (see the module notes)."""

    q: np.ndarray
    blist: np.ndarray
    bpos: np.ndarray
    cnt: np.ndarray
    iq: np.ndarray
    board: View
    bseq: np.ndarray
    useq: np.ndarray
    own: View
    tasks: TaskList
    lists: IQueues
    msgs: Messages
    samp: np.ndarray
    dst: np.ndarray
    ist: np.ndarray
    fst: np.ndarray
    msg: np.ndarray


class Params(NamedTuple):
    """Parameters fixed for a run (see the module notes)."""

    base: CountsParams
    mine: bool
    dmean: np.ndarray
    dexp: np.ndarray


def params(spec: RunSpec, policy: str, mine: bool, dmean: np.ndarray, dexp: np.ndarray) -> Params:
    """Return the kernel's parameters for ``spec`` of the built-in ``policy``."""
    return Params(counts_params(spec, policy), bool(mine), dmean, dexp)
