"""Run the compiled dispatch kernel: allocate state, resume after growth requests, collect.

:class:`Engine` is one replication, resumable event by event; :func:`run_once` runs one to
completion.  :mod:`cloudsched.dispatch.measure` decides when an open-ended run has measured
enough, and :mod:`cloudsched.dispatch.simulation` builds the public result.

Measurement is kept in *micro-batches* of consecutive measured arrivals (at most
``RunSpec.micro`` of them; when they run out, neighbours are merged in pairs and the width
doubles), so that the warm-up can be cut and batch-means intervals formed after the run:
per micro-batch the sum and count of response times, and, at each micro-batch boundary, a
snapshot of the running integrals (time, number of servers with at least i tasks, empty
I-queues, messages).  Response times also go into a histogram per segment of micro-batches
(percentiles to 0.1%), and, on request, into per-task records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cloudsched.dispatch import _kernel as K

__all__ = ["Engine", "InitialState", "RawRun", "RunSpec", "TaskSource", "run_once"]

_CHUNK_EVENTS = 1 << 22
_BUFFER = 1 << 20
#: Micro-batches kept per run (a power of two, a multiple of the histogram segments).
MICRO_BATCHES = 1024


@dataclass
class RawRun:
    """What one replication measured (before the warm-up is cut and summarised).

    ``batch_sum`` / ``batch_count`` are per micro-batch of ``width`` measured arrivals
    (``batches_used`` of them, the last possibly partial); row ``b`` of ``snap`` /
    ``snap_area`` holds the running integrals when micro-batch ``b`` opened, and the final
    values (at ``t_end``) are ``tail_area``, ``p0_area`` and ``messages``.
    """

    response_times: np.ndarray  # float32, completion order (record mode; else empty)
    orders: np.ndarray  # int64, measured-arrival ordinal of each record
    batch_sum: np.ndarray  # per micro-batch, float64
    batch_count: np.ndarray  # int64
    width: int  # measured arrivals per micro-batch
    measured: int  # measured arrivals
    snap: np.ndarray  # (batches_used, N_SNAP) float64
    snap_area: np.ndarray  # (batches_used, L) float64
    hist: np.ndarray  # (H_SEGMENTS, H_BINS) int64
    segment_batches: int  # micro-batches per histogram segment
    tail_area: np.ndarray  # integral of (number of servers with >= i tasks), i = 0..L-1
    p0_area: float  # integral of (number of empty I-queues)
    t_warm: float
    t_end: float
    messages: np.ndarray  # join, delete, probe, stale
    rt_min: float  # smallest and largest measured response time
    rt_max: float
    events: int
    wall_seconds: float
    accepted: int | None = None  # micro-batches the stopping rule accepted (open-ended runs)

    @property
    def batches_used(self) -> int:
        """Number of micro-batches that hold measured arrivals."""
        return int(self.batch_sum.size)

    @property
    def batches_estimated(self) -> int:
        """Micro-batches behind the mean: those the stopping rule accepted, or all."""
        return self.batches_used if self.accepted is None else self.accepted


@dataclass(frozen=True)
class RunSpec:
    """Parameters of one replication, as the kernel sees them.

    Run length is either in tasks (``end_tasks >= 0``: arrivals ``warm_tasks`` to
    ``end_tasks - 1`` are measured, arrival ``end_tasks`` closes the window; ``open_end``:
    the window stays open until :meth:`Engine.close_window`) or in time (``end_tasks =
    -1``: the window is ``[t_warm, t_end]``).  ``rate`` is the arrival rate per server (the
    load, in the Markov-chain mode).  ``width`` is the initial micro-batch width in
    measured arrivals, rounded up to a power of two (0: chosen from the expected run
    length); ``record`` keeps every response time.
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
    width: int = 0
    micro: int = MICRO_BATCHES
    record: bool = True
    open_end: bool = False

    def expected_tasks(self) -> float:
        """Measured arrivals expected in the window (``inf`` when open-ended)."""
        if self.open_end:
            return float("inf")
        if self.end_tasks >= 0:
            return float(self.end_tasks - self.warm_tasks)
        return self.rate * self.n * (self.t_end - self.t_warm)


@dataclass(frozen=True)
class InitialState:
    """Tasks and I-queue entries at time 0 (see :func:`cloudsched.dispatch.initial`).

    ``queues[s]`` tasks wait at server ``s``; ``iqueue[s]`` is the I-queue listing server
    ``s`` (-1: none); ``services`` are the service sizes of the tasks in server order
    (general mode only).
    """

    queues: np.ndarray
    iqueue: np.ndarray
    services: np.ndarray


class TaskSource(Protocol):
    """Supplies tasks to the general (event-list) mode in chunks."""

    def next_chunk(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """Return arrival times and service sizes (float64) and whether this is the last chunk."""
        ...


def initial_width(spec: RunSpec) -> int:
    """Micro-batch width at the start: a power of two, at least ``spec.width``.

    With ``spec.width = 0`` it is chosen so that a run of the expected length needs no merge.
    """
    width = spec.width
    if width <= 0:
        expected = spec.expected_tasks()
        width = 1 if not np.isfinite(expected) else -(-int(expected) // spec.micro)
    return 1 << max(0, int(width) - 1).bit_length()


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


_NO_INT = np.zeros(0, np.int64)
_NO_FLOAT = np.zeros(0)


class Engine:
    """State of one replication of the compiled kernel, resumable event by event.

    ``advance(budget)`` runs at most ``budget`` events, enlarging the pool, the I-queue
    arena, the per-level arrays or the response buffer and merging micro-batches whenever
    the kernel asks, and returns ``True`` once the run is complete.  It also returns
    (``False``, with :attr:`at_checkpoint` set) when the measured-arrival count reaches the
    checkpoint set by :meth:`set_checkpoint`.  Tests use it to inspect the state between
    events.
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        source: TaskSource | None = None,
        speeds: np.ndarray | None = None,
        initial: InitialState | None = None,
    ) -> None:
        i64 = np.int64
        n, m, code = spec.n, spec.m, spec.code
        self.spec, self.n, self.m, self.rng = spec, n, m, rng
        queues = initial.queues if initial is not None else _NO_INT
        start_tasks = int(queues.sum())
        pool, levels = n + 1024 + start_tasks, 64
        while levels < int(queues.max(initial=0)) + 4:
            levels *= 2
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
        expected = spec.expected_tasks()
        if spec.open_end:
            self.expected_events = float("inf")
        elif spec.end_tasks >= 0:
            self.expected_events = 2.0 * spec.end_tasks
        else:
            self.expected_events = 2.0 * spec.rate * n * spec.t_end
        buf = int(min(_BUFFER, max(1024, 1.05 * expected + 1024))) if spec.record else 1
        self.buf = np.empty(buf, np.float32)
        self.rec_ord = np.empty(buf, i64)
        micro = spec.micro
        if micro < K.H_SEGMENTS or micro & (micro - 1):
            raise ValueError(f"micro must be a power of two, at least {K.H_SEGMENTS}")
        width = initial_width(spec)
        self.bsum = np.zeros(micro)
        self.bcnt = np.zeros(micro, i64)
        self.hist = np.zeros((K.H_SEGMENTS, K.H_BINS), i64)
        self.snap = np.zeros((micro + 1, K.N_SNAP))
        self.snap_area = np.zeros((micro + 1, levels))
        self.ipar = np.zeros(K.N_IPAR, i64)
        self.ipar[[K.IP_POLICY, K.IP_N, K.IP_M, K.IP_D, K.IP_Z, K.IP_REPLACE]] = (
            code, n, m, spec.d, spec.z, int(spec.replace),
        )  # fmt: skip
        self.ipar[K.IP_ARR_WARM] = spec.warm_tasks
        self.ipar[K.IP_ARR_END] = K.OPEN_END if spec.open_end else spec.end_tasks
        self.ipar[K.IP_WIDTH] = width
        self.ipar[K.IP_GENERAL] = int(general)
        self.ipar[K.IP_NEXT_CHECK] = K.OPEN_END
        self.ipar[K.IP_RECORD] = int(spec.record)
        self.fpar = np.array([spec.rate * n, spec.t_warm, spec.t_end])
        self.chunks: list[np.ndarray] = []
        self.ord_chunks: list[np.ndarray] = []
        self.wall = 0.0
        self.at_checkpoint = False
        K.init_state(
            rng, self.ipar, self.srv, self.dsp, self.pool, self.busy_list, self.cnt, self.bstart,
            self.jperm, self.perm, self.dperm, self.arena, self.free_head, self.ist, self.fst,
            queues, initial.iqueue if initial is not None else _NO_INT,
            initial.services if initial is not None else _NO_FLOAT, self.speed, self.heap,
            self.hkey,
        )  # fmt: skip

    # -- running -------------------------------------------------------------------------
    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; return True when the run is complete."""
        self.ipar[K.IP_BUDGET] = budget
        self.at_checkpoint = False
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
                self.buf, self.rec_ord, self.bsum, self.bcnt, self.hist, self.snap,
                self.snap_area, self.arr_times, self.svc, self.speed, self.heap, self.hkey,
            )  # fmt: skip
            if status == K.DONE:
                return True
            if status == K.CHUNK:
                return False
            if status == K.CHECKPOINT:
                self.at_checkpoint = True
                self.ipar[K.IP_NEXT_CHECK] = K.OPEN_END
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
            grown = np.zeros((self.snap_area.shape[0], new))
            grown[:, : self.snap_area.shape[1]] = self.snap_area
            self.snap_area = grown
        elif status == K.NEED_TASKS:
            assert self.source is not None
            self.arr_times, self.svc, last = self.source.next_chunk()
            ist[K.I_TASK_PTR] = 0
            self.ipar[K.IP_LAST_CHUNK] = int(last)
        elif status == K.BUFFER_FULL:
            self.chunks.append(self.buf[: ist[K.I_NREC]].copy())
            self.ord_chunks.append(self.rec_ord[: ist[K.I_NREC]].copy())
            ist[K.I_NREC] = 0
        elif status == K.NEED_MERGE:
            self._merge()
        else:  # pragma: no cover - the kernel returns only the codes above
            raise RuntimeError(f"unknown kernel status {status}")

    def _merge(self) -> None:
        """Merge micro-batches in pairs (the width doubles); histogram segments follow."""
        half = self.bsum.size // 2
        self.bsum[:half] = self.bsum[0::2] + self.bsum[1::2]
        self.bsum[half:] = 0.0
        self.bcnt[:half] = self.bcnt[0::2] + self.bcnt[1::2]
        self.bcnt[half:] = 0
        self.snap[: half + 1] = self.snap[0::2]
        self.snap[half + 1 :] = 0.0
        self.snap_area[: half + 1] = self.snap_area[0::2]
        self.snap_area[half + 1 :] = 0.0
        seg = K.H_SEGMENTS // 2
        self.hist[:seg] = self.hist[0::2] + self.hist[1::2]
        self.hist[seg:] = 0
        self.ipar[K.IP_WIDTH] *= 2

    # -- controlling an open-ended window ----------------------------------------------
    @property
    def measuring(self) -> bool:
        """Whether the measurement window is open."""
        return int(self.ist[K.I_PHASE]) == K.MEASURE

    @property
    def width(self) -> int:
        """Current micro-batch width, in measured arrivals."""
        return int(self.ipar[K.IP_WIDTH])

    @property
    def measured(self) -> int:
        """Measured arrivals so far (0 before the window opens)."""
        phase = int(self.ist[K.I_PHASE])
        if phase == K.WARMUP:
            return 0
        key = K.I_ARRIVALS if phase == K.MEASURE else K.I_ARR_CLOSE
        return int(self.ist[key]) - int(self.ipar[K.IP_ARR_WARM])

    def set_checkpoint(self, measured: int) -> None:
        """Pause (``at_checkpoint``) once ``measured`` arrivals have been measured."""
        self.ipar[K.IP_NEXT_CHECK] = measured
        self.at_checkpoint = False

    def close_window(self) -> None:
        """End the measurement window at the next arrival (open-ended runs)."""
        self.ipar[K.IP_ARR_END] = self.ist[K.I_ARRIVALS]
        self.ipar[K.IP_NEXT_CHECK] = K.OPEN_END

    def complete_batches(self) -> int:
        """Micro-batches whose arrivals have all arrived and left (a prefix of them)."""
        width, full = self.width, self.measured // self.width
        done = np.flatnonzero(self.bcnt[:full] != width)
        return int(done[0]) if done.size else full

    # -- results -------------------------------------------------------------------------
    def result(self) -> RawRun:
        """Collect what was measured (call once the run is complete)."""
        nrec = int(self.ist[K.I_NREC])
        times = np.concatenate([*self.chunks, self.buf[:nrec]])
        orders = np.concatenate([*self.ord_chunks, self.rec_ord[:nrec]])
        measured = self.measured
        used = -(-measured // self.width)
        return RawRun(
            response_times=times,
            orders=orders,
            batch_sum=self.bsum[:used].copy(),
            batch_count=self.bcnt[:used].copy(),
            width=self.width,
            measured=measured,
            snap=self.snap[:used].copy(),
            snap_area=self.snap_area[:used].copy(),
            hist=self.hist.copy(),
            segment_batches=self.bsum.size // K.H_SEGMENTS,
            tail_area=self.area.copy(),
            p0_area=float(self.fst[K.F_AREA_P0]),
            t_warm=float(self.fst[K.F_TWARM]),
            t_end=float(self.fst[K.F_TEND]),
            messages=self.msg.copy(),
            rt_min=float(self.fst[K.F_RT_MIN]),
            rt_max=float(self.fst[K.F_RT_MAX]),
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
    initial: InitialState | None = None,
) -> RawRun:
    """Simulate one replication of fixed length to completion (see :class:`RunSpec`)."""
    if spec.open_end:
        raise ValueError("run_once needs a fixed run length; use measure.run_replications")
    engine = Engine(spec, rng, source, speeds, initial)
    while not engine.advance(_CHUNK_EVENTS):
        if progress is not None:
            progress(min(1.0, engine.ist[K.I_EVENTS] / engine.expected_events))
    if progress is not None:
        progress(1.0)
    return engine.result()
