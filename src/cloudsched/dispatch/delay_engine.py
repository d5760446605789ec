"""The delay engine: one replication with late messages or per-dispatcher views.

:class:`DelayEngine` runs :func:`cloudsched.dispatch._kernel_delay.run_delay` behind the
interface of the counts engine (:class:`~cloudsched.dispatch.counts.CountsEngine`, whose
window, micro-batches and exact Erlang response times it shares), for the policies and
message kinds of :data:`cloudsched.dispatch.delays.DELAY_POLICIES`.  What the delays mean:
:mod:`cloudsched.dispatch.delays`.  Runs without any delay and with the shared view never
come here: they run on the engines they always ran on, with the same numbers.
"""

from __future__ import annotations

import numpy as np

from cloudsched.dispatch import state as S
from cloudsched.dispatch._kernel_delay import D_FREE, D_NBUSY, D_NFREE, N_DST, run_delay
from cloudsched.dispatch.counts import COUNT_POLICIES, CountsEngine
from cloudsched.dispatch.delays import DELAY_KINDS, DELAY_POLICIES, Delays
from cloudsched.dispatch.replication import RunSpec
from cloudsched.resources import check_memory

__all__ = ["DelayEngine"]

_HEAP = 1024
_POOL = 1024
_IQ_ROOM = 64


class DelayEngine(CountsEngine):
    """One replication with message delays or per-dispatcher views (see the module notes).

    ``initial``: servers per number of tasks at time 0 (None: empty); the idle servers are
    listed in uniform I-queues (jiq, jiq-pod), every dispatcher reads the true lengths,
    and with ``own`` views each task present counts for a uniform dispatcher.
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        delays: Delays,
        own: bool = False,
        initial: np.ndarray | None = None,
    ) -> None:
        name = getattr(spec.policy, "name", spec.policy)
        if name not in DELAY_POLICIES:
            raise ValueError(f"the delay engine does not run {name}")
        n, m = int(spec.n), int(spec.m)
        check_memory(
            "servers",
            n,
            8 * n * (24 + (3 * m if own else 0)) + 8 * m * _IQ_ROOM,
            "the delay engine's per-server state",
        )
        q = _initial_lengths(n, initial)
        iqueues = COUNT_POLICIES[name] in (COUNT_POLICIES["jiq"], COUNT_POLICIES["jiq-pod"])
        listed = rng.integers(0, m, size=n) if iqueues else np.zeros(n, np.int64)
        sizes = np.bincount(listed[q == 0], minlength=m) if iqueues else np.zeros(m, np.int64)
        iq_counts = np.bincount(sizes) if iqueues else None
        super().__init__(spec, rng, initial=np.bincount(q), iqueues=iq_counts)
        self.delays, self.own = delays, own
        self.dmean = np.array([getattr(delays, k).mean for k in DELAY_KINDS])
        self.dexp = np.array([getattr(delays, k).exponential for k in DELAY_KINDS])
        self.q = q
        busy = np.flatnonzero(q > 0)
        self.blist = np.zeros(n, np.int64)
        self.blist[: busy.size] = busy
        self.bpos = np.full(n, -1, np.int64)
        self.bpos[busy] = np.arange(busy.size)
        self.board, self.bperm, self.bidx, self.bstart = _ordered(q, self.cnt.size)
        self.bseq, self.useq = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self._init_own(rng, m)
        room = max(_IQ_ROOM, 2 * int(self.iq.size))
        self.iqe = np.zeros((m, room), np.int64)
        self.iqn = np.zeros(m, np.int64)
        self.epos = np.full(n, -1, np.int64)
        self.edisp, self.eseq, self.sseq = (
            listed.copy(),
            np.zeros(n, np.int64),
            np.zeros(n, np.int64),
        )
        if iqueues:
            for s in np.flatnonzero(q == 0):
                k = listed[s]
                self.iqe[k, self.iqn[k]] = s
                self.epos[s] = self.iqn[k]
                self.iqn[k] += 1
        self.chan = np.zeros(n)
        self.htime = np.zeros(_HEAP)
        self.hmsg = np.zeros((_HEAP, 4), np.int64)
        self.hn = np.zeros(1, np.int64)
        self.samp = np.arange(n, dtype=np.int64)
        self.dst = np.zeros(N_DST, np.int64)
        self.dst[D_NBUSY] = busy.size
        self.dst[D_FREE], self.dst[D_NFREE] = self._free_list()

    def _init_own(self, rng: np.random.Generator, m: int) -> None:
        """Per-dispatcher counts of active requests, and each server's FIFO of senders."""
        n, levels = self.n, self.cnt.size
        shape = (m, n) if self.own else (1, 1)
        self.own_count = np.zeros(shape, np.int64)
        self.operm = np.tile(np.arange(shape[1], dtype=np.int64), (shape[0], 1))
        self.opos = self.operm.copy()
        self.ostart = np.full((shape[0], levels + 1), shape[1], np.int64)
        self.ostart[:, 0] = 0
        tasks = int(self.q.sum()) if self.own else 0
        size = max(_POOL, 2 * tasks)
        self.thead = np.full(n, -1, np.int64)
        self.ttail = np.full(n, -1, np.int64)
        self.tnext = np.full(size, -1, np.int64)
        self.tdisp = np.zeros(size, np.int64)
        if not self.own:
            return
        t = 0
        for s in np.flatnonzero(self.q):
            senders = rng.integers(0, m, size=int(self.q[s]))
            for k in senders:
                self.tdisp[t] = k
                if self.ttail[s] >= 0:
                    self.tnext[self.ttail[s]] = t
                else:
                    self.thead[s] = t
                self.ttail[s] = t
                t += 1
            for k in range(m):
                self.own_count[k, s] = int((senders == k).sum())
        for k in range(m):
            _, self.operm[k], self.opos[k], self.ostart[k] = _ordered(self.own_count[k], levels)
        self._used = t

    def _free_list(self) -> tuple[int, int]:
        """Link the task slots not in use into the free list; return (head, size)."""
        used = getattr(self, "_used", 0)
        size = self.tnext.size
        if used >= size:
            return -1, 0
        self.tnext[used:-1] = np.arange(used + 1, size)
        self.tnext[-1] = -1
        return used, size - used

    def _run(self) -> int:
        spec = self.spec
        return int(
            run_delay(
                self.q,
                self.blist,
                self.bpos,
                self.cnt,
                self.iq,
                self.board,
                self.bperm,
                self.bidx,
                self.bstart,
                self.bseq,
                self.useq,
                self.own_count,
                self.operm,
                self.opos,
                self.ostart,
                self.thead,
                self.ttail,
                self.tnext,
                self.tdisp,
                self.iqe,
                self.iqn,
                self.epos,
                self.edisp,
                self.eseq,
                self.sseq,
                self.chan,
                self.htime,
                self.hmsg,
                self.hn,
                self.samp,
                self.dst,
                self.ist,
                self.fst,
                self.msg,
                self.area,
                self.last,
                self.bsum,
                self.bcnt,
                self.joins,
                self.snap,
                self.snap_area,
                self.ctl,
                float(spec.rate * self.n),
                self.n,
                self.m,
                self.code,
                self.d,
                bool(spec.replace),
                self.own,
                self.dmean,
                self.dexp,
                float(spec.t_warm),
                float(spec.t_end),
                self.rng,
            )
        )

    def _grow(self, status: int) -> None:
        """Grow the I-queue tables, the message heap or the task pool."""
        if status == S.NEED_ARENA:
            super()._grow(status)
            room = 2 * self.iqe.shape[1]
            grown = np.zeros((self.iqe.shape[0], room), np.int64)
            grown[:, : self.iqe.shape[1]] = self.iqe
            self.iqe = grown
        elif status == S.NEED_TASKS:  # the message heap (its last row is scratch)
            size = self.htime.size
            check_memory("delay", str(self.delays), 80 * size, "the messages in flight")
            self.htime = np.concatenate([self.htime, np.zeros(size)])
            self.hmsg = np.concatenate([self.hmsg, np.zeros((size, 4), np.int64)])
        elif status == S.NEED_POOL:
            size = self.tnext.size
            check_memory("load", self.spec.rate, 32 * size, "the tasks in the system")
            self.tnext = np.concatenate([self.tnext, np.full(size, -1, np.int64)])
            self.tdisp = np.concatenate([self.tdisp, np.zeros(size, np.int64)])
            self.tnext[size:-1] = np.arange(size + 1, 2 * size)
            self.tnext[-1] = self.dst[D_FREE]
            self.dst[D_FREE] = size
            self.dst[D_NFREE] += size
        else:  # pragma: no cover - the kernel returns no other code
            super()._grow(status)

    def _more_levels(self) -> None:
        old = self.cnt.size
        super()._more_levels()
        new = self.cnt.size
        self.bstart = np.concatenate([self.bstart, np.full(new - old, self.n, np.int64)])
        extra = np.full((self.ostart.shape[0], new - old), self.ostart[0, -1], np.int64)
        self.ostart = np.concatenate([self.ostart, extra], axis=1)


def _initial_lengths(n: int, initial: np.ndarray | None) -> np.ndarray:
    """Each server's tasks at time 0 from the number of servers per length."""
    if initial is None:
        return np.zeros(n, np.int64)
    given = np.asarray(initial, dtype=np.int64)
    if given.sum() != n:
        raise ValueError("the initial counts must place every server once")
    return np.repeat(np.arange(given.size), given)


def _ordered(val: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Build an ordered view of ``val`` (values below ``levels``): val, perm, pos, start."""
    val = np.asarray(val, dtype=np.int64).copy()
    perm = np.argsort(val, kind="stable").astype(np.int64)
    pos = np.empty_like(perm)
    pos[perm] = np.arange(perm.size)
    start = np.searchsorted(val[perm], np.arange(levels + 1), side="left").astype(np.int64)
    return val, perm, pos, start
