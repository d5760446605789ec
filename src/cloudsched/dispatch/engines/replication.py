"""One replication of any engine: its parameters, its start, its status loop, what it measured.

:class:`RunSpec` is what a kernel needs to know about a replication, :class:`InitialState`
the tasks and I-queue entries at time 0, :class:`TaskSource` what feeds the event list, and
:class:`RawRun` what one replication measured, before the warm-up is cut.
:class:`Replication` is the status loop every engine shares: it calls the engine's kernel
for a budget of events, merges micro-batches, grows what the kernel ran out of (each engine
says how), stops at checkpoints and at the deadline, and collects the :class:`RawRun`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.guard import call_kernel, check_deadline
from cloudsched.dispatch.plugin import Policy

__all__ = [
    "MICRO_BATCHES",
    "InitialState",
    "RawRun",
    "Replication",
    "RunSpec",
    "TaskSource",
    "initial_width",
    "measured_arrivals",
    "merge_pairs",
]

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

    response_times: np.ndarray  # float32, by measured-arrival order (record mode; else empty)
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
    measure_from: int | None = None  # first micro-batch of the fresh stretch (open-ended)

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

    ``policy`` is a registered policy name, a plug-in reference or a
    :class:`~cloudsched.dispatch.plugin.Policy`.  Run length is either in tasks
    (``end_tasks >= 0``: arrivals ``warm_tasks`` to ``end_tasks - 1`` are measured, arrival
    ``end_tasks`` closes the window; ``open_end``: the window stays open until
    :meth:`Engine.close_window`) or in time (``end_tasks = -1``: the window is
    ``[t_warm, t_end]``).  ``rate`` is the arrival rate per server (the load, in the
    Markov-chain mode).  ``width`` is the initial micro-batch width in measured arrivals,
    rounded up to a power of two (0: chosen from the expected run length); ``record`` keeps
    every response time.  ``deadline``: the ``time.perf_counter()`` past which the run is
    stopped (:class:`~cloudsched.dispatch.engines.guard.TimeLimitExceeded`; None: no limit).
    ``unchecked``: a plug-in's kernel compiled without bounds checking.  ``opt``: the
    policy's resolved options (:func:`cloudsched.dispatch.options.resolve_options`);
    ``slots``: servers each dispatcher balances over (its subset; 0: all N);
    ``refresh``: the period at which queue lengths are published (0: read live).
    """

    policy: str | Policy
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
    deadline: float | None = None
    unchecked: bool = False
    opt: tuple[float, ...] = ()
    slots: int = 0
    refresh: float = 0.0

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


def merge_pairs(
    bsum: np.ndarray,
    bcnt: np.ndarray,
    snap: np.ndarray,
    snap_area: np.ndarray,
    segments: np.ndarray,
    ctl: np.ndarray,
) -> None:
    """Merge micro-batches in pairs, in place (the width in ``ctl`` doubles).

    ``snap`` / ``snap_area`` keep the rows of the merged batches' openings; ``segments``
    (the response-time histogram, or the levels joined, per segment) merges its segments in
    pairs too.
    """
    half = bsum.size // 2
    bsum[:half] = bsum[0::2] + bsum[1::2]
    bsum[half:] = 0.0
    bcnt[:half] = bcnt[0::2] + bcnt[1::2]
    bcnt[half:] = 0
    snap[: half + 1] = snap[0::2]
    snap[half + 1 :] = 0.0
    snap_area[: half + 1] = snap_area[0::2]
    snap_area[half + 1 :] = 0.0
    seg = R.H_SEGMENTS // 2
    segments[:seg] = segments[0::2] + segments[1::2]
    segments[seg:] = 0
    ctl[R.C_WIDTH] *= 2


def measured_arrivals(ist: np.ndarray, ctl: np.ndarray) -> int:
    """Measured arrivals so far (0 before the window opens), from a kernel's scalars."""
    phase = int(ist[R.I_PHASE])
    if phase == R.WARMUP:
        return 0
    key = R.I_ARRIVALS if phase == R.MEASURE else R.I_ARR_CLOSE
    return int(ist[key]) - int(ctl[R.C_ARR_WARM])


class Replication:
    """One replication of an engine, resumable event by event (the loop every engine shares).

    ``advance(budget)`` runs at most ``budget`` events, merging micro-batches and growing
    whatever the kernel ran out of whenever it asks, and returns ``True`` once the run is
    complete.  It also returns (``False``, with :attr:`at_checkpoint` set) when the
    measured-arrival count reaches the checkpoint set by :meth:`set_checkpoint`.

    An engine's replication sets ``st`` (its state record, with ``ist``, ``fst``, ``msg``),
    ``mt`` (its :class:`~cloudsched.dispatch.engines.records.Meter`) and ``policy``, and
    implements :meth:`_step` (one call of its kernel) and :meth:`_grow`.
    """

    st: Any
    mt: R.Meter

    def __init__(self, spec: RunSpec, policy: Policy, rng: np.random.Generator) -> None:
        self.spec, self.policy, self.rng = spec, policy, rng
        self.n, self.m = spec.n, spec.m
        self.ctl = R.new_control(
            spec.warm_tasks, spec.end_tasks, spec.open_end, initial_width(spec)
        )
        if spec.open_end:
            self.expected_events = math.inf
        elif spec.end_tasks >= 0:
            self.expected_events = 2.0 * spec.end_tasks
        else:
            self.expected_events = 2.0 * spec.rate * spec.n * spec.t_end
        self.wall = 0.0
        self.at_checkpoint = False

    # -- what an engine provides -----------------------------------------------------------
    def _step(self) -> int:  # pragma: no cover - every engine defines it
        """Call the kernel once (at most ``ctl[C_BUDGET]`` events); return its status."""
        raise NotImplementedError

    def _grow(self, status: int) -> None:  # pragma: no cover - every engine defines it
        """Grow what the kernel ran out of (``status``), or raise."""
        raise RuntimeError(f"unknown kernel status {status}")

    def _histogram(self) -> np.ndarray:
        """Return the response-time histogram per segment (:class:`RawRun`'s ``hist``)."""
        return np.asarray(self.mt.hist).copy()

    def _records(self, measured: int) -> np.ndarray:
        """Return the response times kept (record mode), else an empty array."""
        return np.zeros(0, np.float32)

    def _rt_range(self) -> tuple[float, float]:
        """Return the smallest and largest measured response time (bounds: 0 and inf)."""
        return 0.0, math.inf

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call a kernel (:func:`cloudsched.dispatch.engines.guard.call_kernel`)."""
        return call_kernel(self.policy, fn, args, self.spec.deadline, lambda: self.events)

    # -- running -------------------------------------------------------------------------
    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; return True when the run is complete."""
        self.ctl[R.C_BUDGET] = budget
        self.at_checkpoint = False
        t0 = time.perf_counter()
        try:
            while True:
                status = self._step()
                check_deadline(self.policy, self.spec.deadline, self.events)
                if status == R.DONE:
                    return True
                if status == R.CHUNK:
                    return False
                if status == R.CHECKPOINT:
                    self.at_checkpoint = True
                    self.ctl[R.C_NEXT_CHECK] = R.OPEN_END
                    return False
                if status == R.NEED_MERGE:
                    mt = self.mt
                    merge_pairs(mt.bsum, mt.bcnt, mt.snap, mt.snap_area, mt.hist, self.ctl)
                else:
                    self._grow(status)
        finally:
            # wall time covers the kernel, growing the state and drawing new tasks
            self.wall += time.perf_counter() - t0

    # -- controlling an open-ended window ----------------------------------------------
    @property
    def width(self) -> int:
        """Current micro-batch width, in measured arrivals."""
        return int(self.ctl[R.C_WIDTH])

    @property
    def events(self) -> int:
        """Events simulated so far."""
        return int(self.st.ist[R.I_EVENTS])

    @property
    def measured(self) -> int:
        """Measured arrivals so far (0 before the window opens)."""
        return measured_arrivals(self.st.ist, self.ctl)

    def set_checkpoint(self, measured: int) -> None:
        """Pause (``at_checkpoint``) once ``measured`` arrivals have been measured."""
        self.ctl[R.C_NEXT_CHECK] = measured
        self.at_checkpoint = False

    def close_window(self) -> None:
        """End the measurement window at the next arrival (open-ended runs)."""
        self.ctl[R.C_ARR_END] = self.st.ist[R.I_ARRIVALS]
        self.ctl[R.C_NEXT_CHECK] = R.OPEN_END

    def complete_batches(self) -> int:
        """Micro-batches whose response times are all known (a prefix of them).

        The count engines draw a task's response time when it arrives: a micro-batch is
        complete once its last task has arrived.
        """
        return self.measured // self.width

    # -- results -------------------------------------------------------------------------
    def result(self) -> RawRun:
        """Collect what was measured (call once the run is complete)."""
        st, mt = self.st, self.mt
        measured = self.measured
        used = -(-measured // self.width)
        rt_min, rt_max = self._rt_range()
        return RawRun(
            response_times=self._records(measured),
            batch_sum=mt.bsum[:used].copy(),
            batch_count=mt.bcnt[:used].copy(),
            width=self.width,
            measured=measured,
            snap=mt.snap[:used].copy(),
            snap_area=mt.snap_area[:used].copy(),
            hist=self._histogram(),
            segment_batches=mt.bsum.size // R.H_SEGMENTS,
            tail_area=mt.area.copy(),
            p0_area=float(st.fst[R.F_AREA_P0]),
            t_warm=float(st.fst[R.F_TWARM]),
            t_end=float(st.fst[R.F_TEND]),
            messages=st.msg.copy(),
            rt_min=rt_min,
            rt_max=rt_max,
            events=self.events,
            wall_seconds=self.wall,
        )
