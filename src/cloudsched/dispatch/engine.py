"""Run a compiled dispatch kernel: allocate state, resume after growth requests, collect.

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
from typing import Any

import numpy as np

from cloudsched.dispatch import state as S
from cloudsched.dispatch.guard import call_kernel, check_deadline
from cloudsched.dispatch.plugin import PluginError, Policy
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.replication import (
    InitialState,
    RawRun,
    RunSpec,
    TaskSource,
    initial_width,
    measured_arrivals,
    merge_pairs,
)
from cloudsched.progress import Progress

__all__ = ["Engine", "run_once"]

_CHUNK_EVENTS = 1 << 22
_BUFFER = 1 << 24  # first response-time buffer of a run in time or open-ended (float32)


def _grow(a: np.ndarray, size: int, fill: float | int) -> np.ndarray:
    out = np.full(size, fill, dtype=a.dtype)
    out[: a.size] = a
    return out


def _initial_iq_cap(r: float) -> int:
    cap = 4
    while cap < 2 * r:
        cap *= 2
    return cap


_NO_INT = np.zeros(0, np.int64)
_NO_FLOAT = np.zeros(0)


class Engine:
    """State of one replication of the compiled kernel, resumable event by event.

    ``advance(budget)`` runs at most ``budget`` events, enlarging the pool, the I-queue
    arena, the per-level arrays or the response buffer and merging micro-batches whenever
    the kernel asks, and returns ``True`` once the run is complete.  It also returns
    (``False``, with :attr:`at_checkpoint` set) when the measured-arrival count reaches the
    checkpoint set by :meth:`set_checkpoint`.  Tests use it to inspect the state between
    events (:attr:`st`: the :class:`~cloudsched.dispatch.state.State` record).
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        source: TaskSource | None = None,
        speeds: np.ndarray | None = None,
        initial: InitialState | None = None,
    ) -> None:
        policy = get_policy(spec.policy)
        n, m = spec.n, spec.m
        self.spec, self.policy, self.n, self.m, self.rng = spec, policy, n, m, rng
        self.source = source  # the event-list engine when a task source is given
        general = source is not None
        self._init, self._run = policy.kernels(general, spec.unchecked)
        self.st = _new_state(spec, policy, initial, speeds, general)
        self.mt = _new_meter(spec, int(self.st.cnt.size))
        self.tasks = S.Tasks(np.zeros(0), np.zeros(0))  # empty: the first event asks for one
        self.par = spec.params()
        self.ctl = np.zeros(S.N_CTL, np.int64)
        self.ctl[S.C_ARR_WARM] = spec.warm_tasks
        self.ctl[S.C_ARR_END] = S.OPEN_END if spec.open_end else spec.end_tasks
        self.ctl[S.C_WIDTH] = initial_width(spec)
        self.ctl[S.C_LAST_CHUNK] = 0
        self.ctl[S.C_NEXT_CHECK] = S.OPEN_END
        if spec.open_end:
            self.expected_events = float("inf")
        elif spec.end_tasks >= 0:
            self.expected_events = 2.0 * spec.end_tasks
        else:
            self.expected_events = 2.0 * spec.rate * n * spec.t_end
        self.wall = 0.0
        self.at_checkpoint = False
        queues = initial.queues if initial is not None else _NO_INT
        self._call(
            self._init,
            self.st,
            self.mt,
            self.par,
            rng,
            queues,
            initial.iqueue if initial is not None else _NO_INT,
            initial.services if initial is not None else _NO_FLOAT,
        )
        self.ctl[S.C_BUDGET] = 0
        self._call(self._run, self.st, self.mt, self.tasks, self.par, self.ctl, rng)  # compile

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a kernel (:func:`cloudsched.dispatch.guard.call_kernel`)."""
        return call_kernel(self.policy, fn, args, self.spec.deadline, lambda: self.events)

    def _check_deadline(self) -> None:
        check_deadline(self.policy, self.spec.deadline, self.events)

    # -- running -------------------------------------------------------------------------
    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; return True when the run is complete."""
        self.ctl[S.C_BUDGET] = budget
        self.at_checkpoint = False
        t0 = time.perf_counter()
        try:
            return self._advance()
        finally:
            # wall time covers the kernel, array growth and drawing new tasks
            self.wall += time.perf_counter() - t0

    def _advance(self) -> bool:
        while True:
            status = self._call(
                self._run, self.st, self.mt, self.tasks, self.par, self.ctl, self.rng
            )
            self._check_deadline()
            if status == S.DONE:
                return True
            if status == S.CHUNK:
                return False
            if status == S.CHECKPOINT:
                self.at_checkpoint = True
                self.ctl[S.C_NEXT_CHECK] = S.OPEN_END
                return False
            if status == S.BAD_SERVER:
                bad = int(self.st.ist[S.I_BAD])
                raise PluginError(
                    self.policy.name, f"choose returned server {bad}, outside [0, {self.n - 1}]"
                )
            self._grow(status)

    def _room(self, extra: float, what: str) -> None:
        """Refuse to grow the state by ``extra`` bytes past the memory limit (one line).

        The tasks in the system are the one thing that grows without bound: a policy that
        overloads some servers (a plug-in that always picks server 0, say) at a load the
        farm could carry fills the memory with queued tasks.
        """
        from cloudsched.resources import check_memory

        held = sum(a.nbytes for a in (*self.st, *self.mt) if isinstance(a, np.ndarray))
        shown = f"{self.st.pool.shape[0]:,} tasks in the system" if what == "pool" else what
        check_memory(
            "load",
            f"{self.policy.name} at load {self.spec.rate:g}",
            held + extra,
            f"the run's queues ({shown}, and growing: is some server overloaded?)",
        )

    def _grow(self, status: int) -> None:
        st, ist = self.st, self.st.ist
        if status == S.NEED_POOL:
            self._room(st.pool.nbytes, "pool")
            old = st.pool.shape[0]
            grown = np.zeros((2 * old, S.POOL_COLS))
            grown[:old] = st.pool
            grown[old:, S.P_NEXT] = np.arange(old + 1, 2 * old + 1)
            grown[-1, S.P_NEXT] = -1
            self.st = st._replace(pool=grown)
            ist[S.I_POOL_FREE] = old
        elif status == S.NEED_ARENA:
            size = 2 * st.arena.size + 8 * int(ist[S.I_MAXCAP])
            self._room(8.0 * size, "the I-queues")
            self.st = st._replace(arena=_grow(st.arena, size, 0))
        elif status == S.NEED_LEVELS:
            new = 2 * st.cnt.size
            self._room(8.0 * new * (4 + self.mt.snap_area.shape[0]), "the longest queue's levels")
            self.st = st._replace(
                cnt=_grow(st.cnt, new, 0.0), bstart=_grow(st.bstart, new + 1, self.n)
            )
            mt = self.mt
            grown = np.zeros((mt.snap_area.shape[0], new))
            grown[:, : mt.snap_area.shape[1]] = mt.snap_area
            self.mt = mt._replace(
                area=_grow(mt.area, new, 0.0),
                last=_grow(mt.last, new, st.fst[S.F_NOW]),
                snap_area=grown,
            )
        elif status == S.NEED_TASKS:
            assert self.source is not None
            arr, svc, last = self.source.next_chunk()
            self.tasks = S.Tasks(arr, svc)
            ist[S.I_TASK_PTR] = 0
            self.ctl[S.C_LAST_CHUNK] = int(last)
        elif status == S.BUFFER_FULL:
            old_buf = self.mt.buf
            self._room(8.0 * (old_buf.size // 2 + 1024), "the response times kept")
            self.mt = self.mt._replace(
                buf=_grow(old_buf, old_buf.size + old_buf.size // 2 + 1024, np.nan)
            )
        elif status == S.NEED_MERGE:
            self._merge()
        else:  # pragma: no cover - the kernel returns only the codes above
            raise RuntimeError(f"unknown kernel status {status}")

    def _merge(self) -> None:
        """Merge micro-batches in pairs (the width doubles); histogram segments follow."""
        mt = self.mt
        merge_pairs(mt.bsum, mt.bcnt, mt.snap, mt.snap_area, mt.hist, self.ctl)

    # -- controlling an open-ended window ----------------------------------------------
    @property
    def measuring(self) -> bool:
        """Whether the measurement window is open."""
        return int(self.st.ist[S.I_PHASE]) == S.MEASURE

    @property
    def width(self) -> int:
        """Current micro-batch width, in measured arrivals."""
        return int(self.ctl[S.C_WIDTH])

    @property
    def events(self) -> int:
        """Events simulated so far."""
        return int(self.st.ist[S.I_EVENTS])

    @property
    def measured(self) -> int:
        """Measured arrivals so far (0 before the window opens)."""
        return measured_arrivals(self.st.ist, self.ctl)

    def set_checkpoint(self, measured: int) -> None:
        """Pause (``at_checkpoint``) once ``measured`` arrivals have been measured."""
        self.ctl[S.C_NEXT_CHECK] = measured
        self.at_checkpoint = False

    def close_window(self) -> None:
        """End the measurement window at the next arrival (open-ended runs)."""
        self.ctl[S.C_ARR_END] = self.st.ist[S.I_ARRIVALS]
        self.ctl[S.C_NEXT_CHECK] = S.OPEN_END

    def complete_batches(self) -> int:
        """Micro-batches whose arrivals have all arrived and left (a prefix of them)."""
        width, full = self.width, self.measured // self.width
        done = np.flatnonzero(self.mt.bcnt[:full] != width)
        return int(done[0]) if done.size else full

    # -- results -------------------------------------------------------------------------
    def result(self) -> RawRun:
        """Collect what was measured (call once the run is complete)."""
        st, mt = self.st, self.mt
        measured = self.measured
        times = mt.buf[:measured] if self.spec.record else mt.buf[:0]
        used = -(-measured // self.width)
        return RawRun(
            response_times=times,
            batch_sum=mt.bsum[:used].copy(),
            batch_count=mt.bcnt[:used].copy(),
            width=self.width,
            measured=measured,
            snap=mt.snap[:used].copy(),
            snap_area=mt.snap_area[:used].copy(),
            hist=mt.hist.copy(),
            segment_batches=mt.bsum.size // S.H_SEGMENTS,
            tail_area=mt.area.copy(),
            p0_area=float(st.fst[S.F_AREA_P0]),
            t_warm=float(st.fst[S.F_TWARM]),
            t_end=float(st.fst[S.F_TEND]),
            messages=st.msg.copy(),
            rt_min=float(st.fst[S.F_RT_MIN]),
            rt_max=float(st.fst[S.F_RT_MAX]),
            events=self.events,
            wall_seconds=self.wall,
        )

    # -- views for tests -------------------------------------------------------------
    @property
    def qlen(self) -> np.ndarray:
        """Number of tasks at each server, shape ``(N,)``."""
        return self.st.srv[:, S.S_QLEN]

    def iqueues(self) -> list[np.ndarray]:
        """Members of each I-queue, in storage order."""
        st = self.st
        start, size = st.dsp[:, S.D_START], st.dsp[:, S.D_SIZE]
        return [st.arena[start[m] : start[m] + size[m]].copy() for m in range(self.m)]

    def tasks_in_pool(self) -> int:
        """Count the pool slots in use (walks the free list)."""
        free, k = 0, int(self.st.ist[S.I_POOL_FREE])
        while k >= 0:
            free += 1
            k = int(self.st.pool[k, S.P_NEXT])
        return self.st.pool.shape[0] - free


def _new_state(
    spec: RunSpec,
    policy: Policy,
    initial: InitialState | None,
    speeds: np.ndarray | None,
    general: bool,
) -> S.State:
    """Allocate the state record (``init`` fills it)."""
    i64 = np.int64
    n, m = spec.n, spec.m
    queues = initial.queues if initial is not None else _NO_INT
    pool, levels = n + 1024 + int(queues.sum()), 64
    while levels < int(queues.max(initial=0)) + 4:
        levels *= 2
    cap0 = _initial_iq_cap(n / m)
    dsp = np.zeros((m, S.DSP_COLS), i64)
    dsp[:, S.D_CAP] = cap0
    return S.State(
        srv=np.empty((n, S.SRV_COLS), i64),
        dsp=dsp,
        arena=np.zeros((m * cap0 + 2 * n + 1024) if policy.iqueues else 1, i64),
        free_head=np.empty(64, i64),
        pool=np.empty((pool, S.POOL_COLS)),
        busy=np.zeros(n, i64),
        cnt=np.zeros(levels),
        bstart=np.empty(levels + 1, i64),
        jperm=np.empty(n, i64),
        perm=np.empty(n, i64),
        dperm=np.empty(m, i64),
        sample=np.zeros(max(1, spec.d), i64),
        mem=np.zeros(policy.memory_size(n, m), i64),
        heap=np.zeros(n if general else 1, i64),
        hkey=np.zeros(n if general else 1),
        speed=np.ones(n) if speeds is None else np.asarray(speeds, dtype=np.float64),
        ist=np.zeros(S.N_IST, i64),
        fst=np.zeros(S.N_FST),
        msg=np.zeros(4, i64),
    )


def _new_meter(spec: RunSpec, levels: int) -> S.Meter:
    """Allocate the measurement record."""
    micro = spec.micro
    if micro < S.H_SEGMENTS or micro & (micro - 1):
        raise ValueError(f"micro must be a power of two, at least {S.H_SEGMENTS}")
    expected = spec.expected_tasks()
    if not spec.record:
        buf = 1
    elif spec.end_tasks >= 0 and not spec.open_end:  # exactly the measured arrivals
        buf = max(0, spec.end_tasks - spec.warm_tasks) + 1  # + the one that closes it
    else:  # grown by half when the window outlasts it
        buf = int(min(_BUFFER, 1.05 * expected + 1024))
    return S.Meter(
        area=np.zeros(levels),
        last=np.zeros(levels),
        bsum=np.zeros(micro),
        bcnt=np.zeros(micro, np.int64),
        hist=np.zeros((S.H_SEGMENTS, S.H_BINS), np.int64),
        snap=np.zeros((micro + 1, S.N_SNAP)),
        snap_area=np.zeros((micro + 1, levels)),
        buf=np.full(buf, np.nan, np.float32),
        scratch=np.zeros(1),
    )


def run_once(
    spec: RunSpec,
    rng: np.random.Generator,
    progress: Progress | None = None,
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
            progress(min(1.0, engine.events / engine.expected_events), "")
    if progress is not None:
        progress(1.0, "")
    return engine.result()
