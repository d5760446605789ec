"""One replication of a dispatch run: its parameters, its start, and what it measured.

:class:`RunSpec` is what the kernel needs to know about a replication, :class:`InitialState`
the tasks and I-queue entries at time 0, :class:`TaskSource` what feeds the event-list
engine, and :class:`RawRun` what one replication measured, before the warm-up is cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cloudsched.dispatch import state as S
from cloudsched.dispatch.plugin import Policy

__all__ = [
    "MICRO_BATCHES",
    "InitialState",
    "RawRun",
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
    stopped (:class:`~cloudsched.dispatch.engine.TimeLimitExceeded`; None: no limit).
    ``unchecked``: a plug-in's kernel compiled without bounds checking.
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

    def expected_tasks(self) -> float:
        """Measured arrivals expected in the window (``inf`` when open-ended)."""
        if self.open_end:
            return float("inf")
        if self.end_tasks >= 0:
            return float(self.end_tasks - self.warm_tasks)
        return self.rate * self.n * (self.t_end - self.t_warm)

    def params(self) -> S.Params:
        """Return the kernel's parameter record."""
        return S.Params(
            n=int(self.n),
            m=int(self.m),
            d=int(self.d),
            z=int(self.z),
            replace=bool(self.replace),
            lam_n=float(self.rate * self.n),
            t_warm=float(self.t_warm),
            t_end=float(self.t_end),
            record=bool(self.record),
        )


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
    seg = S.H_SEGMENTS // 2
    segments[:seg] = segments[0::2] + segments[1::2]
    segments[seg:] = 0
    ctl[S.C_WIDTH] *= 2


def measured_arrivals(ist: np.ndarray, ctl: np.ndarray) -> int:
    """Measured arrivals so far (0 before the window opens), from a kernel's scalars."""
    phase = int(ist[S.I_PHASE])
    if phase == S.WARMUP:
        return 0
    key = S.I_ARRIVALS if phase == S.MEASURE else S.I_ARR_CLOSE
    return int(ist[key]) - int(ctl[S.C_ARR_WARM])
