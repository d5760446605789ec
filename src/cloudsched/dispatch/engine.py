"""Run the compiled dispatch kernel: allocate state, resume after growth requests, collect.

:func:`run_once` is one replication; :mod:`cloudsched.dispatch.simulation` builds the public
result from one or several of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cloudsched.dispatch import _kernel as K

__all__ = ["Engine", "RawRun", "RunSpec", "TaskSource", "run_once"]

_CHUNK_EVENTS = 1 << 22
_BUFFER = 1 << 20


@dataclass
class RawRun:
    """What one replication measured (before summarising)."""

    response_times: np.ndarray  # float32, completion order
    batch_sum: np.ndarray  # per batch (by arrival), float64
    batch_count: np.ndarray
    tail_area: np.ndarray  # integral of (number of servers with >= i tasks), i = 0..L-1
    p0_area: float  # integral of (number of empty I-queues)
    t_warm: float
    t_end: float
    messages: np.ndarray  # join, delete, probe, stale
    events: int
    wall_seconds: float


@dataclass(frozen=True)
class RunSpec:
    """Parameters of one replication, as the kernel sees them.

    Run length is either in tasks (``end_tasks >= 0``: arrivals ``warm_tasks`` to
    ``end_tasks - 1`` are measured, arrival ``end_tasks`` closes the window) or in time
    (``end_tasks = -1``: the window is ``[t_warm, t_end]``).  ``rate`` is the arrival rate
    per server (the load, in the Markov-chain mode).
    """

    code: int
    n: int
    m: int
    rate: float
    d: int = 1
    z: int = 0
    replace: bool = False
    warm_tasks: int = 0
    end_tasks: int = -1
    t_warm: float = -1.0
    t_end: float = -1.0
    batches: int = 20


class TaskSource(Protocol):
    """Supplies tasks to the general (event-list) mode in chunks."""

    def next_chunk(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """Return arrival times and service sizes (float64) and whether this is the last chunk."""
        ...


def _grow(a: np.ndarray, size: int, fill: float | int) -> np.ndarray:
    out = np.full(size, fill, dtype=a.dtype)
    out[: a.size] = a
    return out


def _initial_iq_cap(r: float) -> int:
    cap = 4
    while cap < 2 * r:
        cap *= 2
    return cap


_compiled = False


def _ensure_compiled() -> None:
    """Compile (or load from the cache) the kernels once, outside the timed region."""
    global _compiled
    if not _compiled:
        run_once(
            RunSpec(K.JIQ_POD, 4, 2, 0.5, 2, warm_tasks=1, end_tasks=2), np.random.default_rng(0)
        )
        _compiled = True


class Engine:
    """State of one replication of the compiled kernel, resumable event by event.

    ``advance(budget)`` runs at most ``budget`` events, enlarging the pool, the I-queue
    arena, the per-level arrays or the response buffer whenever the kernel asks, and returns
    ``True`` once the run is complete.  Tests use it to inspect the state between events.
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        source: TaskSource | None = None,
        speeds: np.ndarray | None = None,
    ) -> None:
        i64 = np.int64
        n, m, code, batches = spec.n, spec.m, spec.code, spec.batches
        self.spec, self.n, self.m, self.rng = spec, n, m, rng
        pool, levels = n + 1024, 64
        iq = code >= K.JIQ
        cap0 = _initial_iq_cap(n / m)
        self.srv = np.empty((n, K.SRV_COLS), i64)
        self.dsp = np.zeros((m, K.DSP_COLS), i64)
        self.dsp[:, K.D_CAP] = cap0
        self.pool = np.empty((pool, K.POOL_COLS))
        self.busy_list = np.zeros(n, i64)
        self.cnt = np.zeros(levels)
        self.area = np.zeros(levels)
        self.last = np.zeros(levels)
        self.bstart = np.empty(levels + 1, i64)
        self.jperm = np.empty(n, i64)
        self.perm = np.empty(n, i64)
        self.dperm = np.empty(m, i64)
        self.arena = np.zeros((m * cap0 + 2 * n + 1024) if iq else 1, i64)
        self.free_head = np.empty(64, i64)
        self.ist = np.zeros(K.N_IST, i64)
        self.fst = np.zeros(K.N_FST)
        self.msg = np.zeros(4, i64)
        # general mode (discrete-event simulation of given tasks) when a task source is given
        self.source = source
        general = source is not None
        self.arr_times = np.zeros(0)  # empty: the first event asks for a chunk
        self.svc = np.zeros(0)
        self.speed = np.ones(n) if speeds is None else np.asarray(speeds, dtype=np.float64)
        self.heap = np.zeros(n if general else 1, i64)
        self.hkey = np.zeros(n if general else 1)
        if spec.end_tasks >= 0:
            expected_tasks = spec.end_tasks - spec.warm_tasks
            self.expected_events = 2.0 * spec.end_tasks
        else:
            expected_tasks = int(spec.rate * n * (spec.t_end - spec.t_warm))
            self.expected_events = 2.0 * spec.rate * n * spec.t_end
        self.buf = np.empty(int(min(_BUFFER, max(1024, 1.05 * expected_tasks + 1024))), np.float32)
        self.bsum = np.zeros(batches)
        self.bcnt = np.zeros(batches, i64)
        self.ipar = np.array(
            [code, n, m, spec.d, spec.z, int(spec.replace), spec.warm_tasks, spec.end_tasks,
             0, batches, int(general), 0],
            i64,
        )  # fmt: skip
        self.fpar = np.array([spec.rate * n, spec.t_warm, spec.t_end])
        self.chunks: list[np.ndarray] = []
        self.wall = 0.0
        K.init_state(
            rng, self.ipar, self.srv, self.dsp, self.pool, self.cnt, self.bstart, self.jperm,
            self.perm, self.dperm, self.arena, self.free_head, self.ist, self.fst,
        )  # fmt: skip

    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; return True when the run is complete."""
        self.ipar[8] = budget
        t0 = time.perf_counter()
        try:
            return self._advance()
        finally:
            # wall time covers the kernel, array growth and drawing new tasks
            self.wall += time.perf_counter() - t0

    def _advance(self) -> bool:
        while True:
            status = K.run(
                self.rng, self.ipar, self.fpar, self.srv, self.dsp, self.pool,
                self.busy_list, self.cnt, self.area, self.last, self.bstart, self.jperm,
                self.perm, self.dperm, self.arena, self.free_head, self.ist, self.fst, self.msg,
                self.buf, self.bsum, self.bcnt, self.arr_times, self.svc, self.speed, self.heap,
                self.hkey,
            )  # fmt: skip
            if status == K.DONE:
                return True
            if status == K.CHUNK:
                return False
            self._grow(status)

    def _grow(self, status: int) -> None:
        ist = self.ist
        if status == K.NEED_POOL:
            old = self.pool.shape[0]
            grown = np.zeros((2 * old, K.POOL_COLS))
            grown[:old] = self.pool
            grown[old:, K.P_NEXT] = np.arange(old + 1, 2 * old + 1)
            grown[-1, K.P_NEXT] = -1
            self.pool = grown
            ist[K.I_POOL_FREE] = old
        elif status == K.NEED_ARENA:
            self.arena = _grow(self.arena, 2 * self.arena.size + 4 * int(ist[K.I_MAXCAP]), 0)
        elif status == K.NEED_LEVELS:
            new = 2 * self.cnt.size
            self.cnt = _grow(self.cnt, new, 0.0)
            self.area = _grow(self.area, new, 0.0)
            self.last = _grow(self.last, new, self.fst[K.F_NOW])
            self.bstart = _grow(self.bstart, new + 1, self.n)
        elif status == K.NEED_TASKS:
            assert self.source is not None
            self.arr_times, self.svc, last = self.source.next_chunk()
            ist[K.I_TASK_PTR] = 0
            self.ipar[11] = int(last)
        elif status == K.BUFFER_FULL:
            self.chunks.append(self.buf[: ist[K.I_NREC]].copy())
            ist[K.I_NREC] = 0
        else:  # pragma: no cover - the kernel returns only the codes above
            raise RuntimeError(f"unknown kernel status {status}")

    def result(self) -> RawRun:
        """Collect what was measured (call once the run is complete)."""
        times = np.concatenate([*self.chunks, self.buf[: self.ist[K.I_NREC]]])
        return RawRun(
            response_times=times,
            batch_sum=self.bsum.copy(),
            batch_count=self.bcnt.copy(),
            tail_area=self.area.copy(),
            p0_area=float(self.fst[K.F_AREA_P0]),
            t_warm=float(self.fst[K.F_TWARM]),
            t_end=float(self.fst[K.F_TEND]),
            messages=self.msg.copy(),
            events=int(self.ist[K.I_EVENTS]),
            wall_seconds=self.wall,
        )

    # -- views for tests -------------------------------------------------------------
    @property
    def qlen(self) -> np.ndarray:
        """Number of tasks at each server, shape ``(N,)``."""
        return self.srv[:, K.S_QLEN]

    def iqueues(self) -> list[np.ndarray]:
        """Members of each I-queue, in storage order."""
        start, size = self.dsp[:, K.D_START], self.dsp[:, K.D_SIZE]
        return [self.arena[start[m] : start[m] + size[m]].copy() for m in range(self.m)]

    def tasks_in_pool(self) -> int:
        """Count the pool slots in use (walks the free list)."""
        free, k = 0, int(self.ist[K.I_POOL_FREE])
        while k >= 0:
            free += 1
            k = int(self.pool[k, K.P_NEXT])
        return self.pool.shape[0] - free


def run_once(
    spec: RunSpec,
    rng: np.random.Generator,
    progress: Callable[[float], None] | None = None,
    source: TaskSource | None = None,
    speeds: np.ndarray | None = None,
) -> RawRun:
    """Simulate one replication to completion (see :class:`RunSpec` for the run length)."""
    engine = Engine(spec, rng, source, speeds)
    while not engine.advance(_CHUNK_EVENTS):
        if progress is not None:
            progress(min(1.0, engine.ist[K.I_EVENTS] / engine.expected_events))
    if progress is not None:
        progress(1.0)
    return engine.result()
