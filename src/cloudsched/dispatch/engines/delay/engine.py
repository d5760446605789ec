"""The delay engine: one replication with late messages or per-dispatcher views.

:class:`DelayRun` runs :func:`cloudsched.dispatch.engines.delay.kernel.run_delay` in the
shared status loop, on the count engine's window, micro-batches and exact Erlang response
times (:class:`~cloudsched.dispatch.engines.counts.engine.CountsRun`), for the policies whose
table row lists ``delay`` and the message kinds each sends
(:data:`cloudsched.dispatch.delays.DELAY_POLICIES`).  What the delays mean:
:mod:`cloudsched.dispatch.delays`.  Runs without any delay and with the shared view never
come here: they run on the engines they always ran on, with the same numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cloudsched.dispatch.delays import DELAY_KINDS, DELAY_POLICIES, Delays
from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.choice import EngineInfo
from cloudsched.dispatch.engines.counts.engine import CountsRun, initial_counts
from cloudsched.dispatch.engines.delay import records as D
from cloudsched.dispatch.engines.delay.kernel import run_delay
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.policy_table import TABLE
from cloudsched.resources import check_memory

if TYPE_CHECKING:
    from cloudsched.dispatch.spec import SimulationSpec

__all__ = ["ENGINE", "DelayRun"]

_HEAP = 1024
_POOL = 1024
_IQ_ROOM = 64


class DelayRun(CountsRun):
    """One replication with message delays or per-dispatcher views (see the module notes).

    ``initial``: servers per number of tasks at time 0 (None: empty); the idle servers are
    listed in uniform I-queues (jiq, jiq-pod), every dispatcher reads the true lengths,
    and with ``own`` views each task present counts for a uniform dispatcher.
    """

    engine = "delay"

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
        iqueues = TABLE[name].iqueues
        listed = rng.integers(0, m, size=n) if iqueues else np.zeros(n, np.int64)
        sizes = np.bincount(listed[q == 0], minlength=m) if iqueues else np.zeros(m, np.int64)
        iq_counts = np.bincount(sizes) if iqueues else None
        super().__init__(spec, rng, initial=np.bincount(q), iqueues=iq_counts)
        self.delays = delays
        dmean = np.array([getattr(delays, k).mean for k in DELAY_KINDS])
        dexp = np.array([getattr(delays, k).exponential for k in DELAY_KINDS])
        self.par = D.params(spec, name, own, dmean, dexp)
        st = self.st
        busy = np.flatnonzero(q > 0)
        blist = np.zeros(n, np.int64)
        blist[: busy.size] = busy
        bpos = np.full(n, -1, np.int64)
        bpos[busy] = np.arange(busy.size)
        board = D.View(*_ordered(q, st.cnt.size))
        own_view, tasks, used = _own(q, rng, m, st.cnt.size, own)
        room = max(_IQ_ROOM, 2 * int(st.iq.size))
        lists = D.IQueues(
            entries=np.zeros((m, room), np.int64),
            size=np.zeros(m, np.int64),
            pos=np.full(n, -1, np.int64),
            owner=listed.copy(),
            seq=np.zeros(n, np.int64),
            period=np.zeros(n, np.int64),
        )
        if iqueues:
            for s in np.flatnonzero(q == 0):
                k = listed[s]
                lists.entries[k, lists.size[k]] = s
                lists.pos[s] = lists.size[k]
                lists.size[k] += 1
        msgs = D.Messages(
            chan=np.zeros(n),
            time=np.zeros(_HEAP),
            body=np.zeros((_HEAP, 4), np.int64),
            size=np.zeros(1, np.int64),
        )
        dst = np.zeros(D.N_DST, np.int64)
        dst[D.D_NBUSY] = busy.size
        dst[D.D_FREE], dst[D.D_NFREE] = _free_list(tasks.next, used)
        self.st = D.State(
            q=q,
            blist=blist,
            bpos=bpos,
            cnt=st.cnt,
            iq=st.iq,
            board=board,
            bseq=np.zeros(n, np.int64),
            useq=np.zeros(n, np.int64),
            own=own_view,
            tasks=tasks,
            lists=lists,
            msgs=msgs,
            samp=np.arange(n, dtype=np.int64),
            dst=dst,
            ist=st.ist,
            fst=st.fst,
            msg=st.msg,
        )

    def _step(self) -> int:
        return int(self._call(run_delay, self.st, self.mt, self.ctl, self.par, self.rng))

    def _grow(self, status: int) -> None:
        """Grow the I-queue tables, the message heap or the task pool."""
        st = self.st
        if status == R.NEED_ARENA:
            super()._grow(status)
            old = st.lists.entries
            grown = np.zeros((old.shape[0], 2 * old.shape[1]), np.int64)
            grown[:, : old.shape[1]] = old
            self.st = self.st._replace(lists=st.lists._replace(entries=grown))
        elif status == R.NEED_TASKS:  # the message heap (its last row is scratch)
            size = st.msgs.time.size
            check_memory("delay", str(self.delays), 80 * size, "the messages in flight")
            msgs = st.msgs._replace(
                time=np.concatenate([st.msgs.time, np.zeros(size)]),
                body=np.concatenate([st.msgs.body, np.zeros((size, 4), np.int64)]),
            )
            self.st = st._replace(msgs=msgs)
        elif status == R.NEED_POOL:
            tasks, dst = st.tasks, st.dst
            size = tasks.next.size
            check_memory("load", self.spec.rate, 32 * size, "the tasks in the system")
            nxt = np.concatenate([tasks.next, np.full(size, -1, np.int64)])
            nxt[size:-1] = np.arange(size + 1, 2 * size)
            nxt[-1] = dst[D.D_FREE]
            sender = np.concatenate([tasks.sender, np.zeros(size, np.int64)])
            self.st = st._replace(tasks=tasks._replace(next=nxt, sender=sender))
            dst[D.D_FREE] = size
            dst[D.D_NFREE] += size
        else:  # pragma: no cover - the kernel returns no other code
            super()._grow(status)

    def _more_levels(self, new: int) -> None:
        old = self.st.cnt.size
        super()._more_levels(new)
        st = self.st
        start = np.concatenate([st.board.start, np.full(new - old, self.n, np.int64)])
        own = st.own
        extra = np.full((own.start.shape[0], new - old), own.start[0, -1], np.int64)
        self.st = st._replace(
            board=st.board._replace(start=start),
            own=own._replace(start=np.concatenate([own.start, extra], axis=1)),
        )


def _own(
    q: np.ndarray, rng: np.random.Generator, m: int, levels: int, own: bool
) -> tuple[D.View, D.TaskList, int]:
    """Per-dispatcher counts of active requests, each server's FIFO of senders, slots used."""
    n = q.size
    shape = (m, n) if own else (1, 1)
    count = np.zeros(shape, np.int64)
    perm = np.tile(np.arange(shape[1], dtype=np.int64), (shape[0], 1))
    pos = perm.copy()
    start = np.full((shape[0], levels + 1), shape[1], np.int64)
    start[:, 0] = 0
    size = max(_POOL, 2 * int(q.sum()) if own else 0)
    tasks = D.TaskList(
        head=np.full(n, -1, np.int64),
        tail=np.full(n, -1, np.int64),
        next=np.full(size, -1, np.int64),
        sender=np.zeros(size, np.int64),
    )
    t = 0
    if own:
        for s in np.flatnonzero(q):
            senders = rng.integers(0, m, size=int(q[s]))
            for k in senders:
                tasks.sender[t] = k
                if tasks.tail[s] >= 0:
                    tasks.next[tasks.tail[s]] = t
                else:
                    tasks.head[s] = t
                tasks.tail[s] = t
                t += 1
            for k in range(m):
                count[k, s] = int((senders == k).sum())
        for k in range(m):
            _, perm[k], pos[k], start[k] = _ordered(count[k], levels)
    return D.View(count, perm, pos, start), tasks, t


def _free_list(nxt: np.ndarray, used: int) -> tuple[int, int]:
    """Link the task slots not in use into the free list; return (head, size)."""
    size = nxt.size
    if used >= size:
        return -1, 0
    nxt[used:-1] = np.arange(used + 1, size)
    nxt[-1] = -1
    return used, size - used


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


def _start(spec: SimulationSpec, run: RunSpec, rng: np.random.Generator, clock: str) -> DelayRun:
    """One replication of ``spec``: the queue lengths at time 0 drawn first."""
    start, _ = initial_counts(spec, rng)
    return DelayRun(run, rng, spec.delays, spec.view == "own", start)


#: What the delay engine keeps, and what that buys.
SUMMARY = (
    "each server apart with late info, join and delete messages, or each dispatcher's own view"
)
#: The delay engine: name, summary, laws, speeds, delays, views, records, start.
ENGINE = EngineInfo("delay", SUMMARY, "markov", "equal", True, ("shared", "own"), False, _start)
