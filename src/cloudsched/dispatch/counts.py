"""The occupancy-count engine: one replication of an exchangeable farm in O(longest queue).

:class:`CountsEngine` runs :func:`cloudsched.dispatch._kernel_counts.run_counts` behind the
interface of :class:`cloudsched.dispatch.engine.Engine` (``advance``, checkpoints, the
micro-batch tables, ``result``), so :mod:`cloudsched.dispatch.measure` and the summary treat
both alike.  It applies to the policies in :data:`COUNT_POLICIES` (random, pod, jsq, jiq,
jiq-pod and jiq-sq) with Poisson arrivals, exp(1) service and equal speeds, and to random,
pod and jsq with up to :data:`MAX_SPEED_CLASSES` distinct speeds
(:mod:`cloudsched.dispatch._kernel_classes`); its state and its cost per event do not depend
on N.

Response times are exact without per-task records: a task that joins behind ``k`` tasks
stays an Erlang(``k + 1``) time, so the histogram of the levels joined gives the
distribution as a mixture of Erlang laws, spread over the percentile bins of the per-server
engine (512 per octave) by their exact probabilities
(:func:`cloudsched.dispatch.erlang.erlang_histogram`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from cloudsched.dispatch import state as S
from cloudsched.dispatch._kernel_classes import run_classes
from cloudsched.dispatch._kernel_counts import (
    JIQ,
    JIQ_POD,
    JIQ_SQ,
    JSQ,
    POD,
    RANDOM,
    run_counts,
    shortest_sizes,
    uniform_sizes,
)
from cloudsched.dispatch.erlang import erlang_histogram
from cloudsched.dispatch.guard import check_deadline
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.replication import (
    RawRun,
    RunSpec,
    initial_width,
    measured_arrivals,
    merge_pairs,
)

__all__ = ["CLASS_POLICIES", "COUNT_POLICIES", "MAX_SPEED_CLASSES", "CountsEngine", "speed_classes"]

#: Policies whose servers are exchangeable, and their kernel codes.
COUNT_POLICIES = {
    "random": RANDOM,
    "pod": POD,
    "jsq": JSQ,
    "jiq": JIQ,
    "jiq-pod": JIQ_POD,
    "jiq-sq": JIQ_SQ,
}
#: Policies the engine runs with speed classes (they choose by queue length alone), and the
#: most classes it takes (its cost per event grows with them).
CLASS_POLICIES = ("random", "pod", "jsq")
MAX_SPEED_CLASSES = 16
_LEVELS = 64


def speed_classes(speeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the distinct speeds (increasing) and how many servers run at each."""
    values, sizes = np.unique(np.asarray(speeds, dtype=np.float64), return_counts=True)
    return values, sizes


class CountsEngine:
    """One replication on the occupancy counts (see the module notes).

    ``initial``: the number of servers holding each number of tasks at time 0 (None: all
    empty); ``iqueues``: the number of I-queues holding each number of entries (jiq,
    jiq-pod, jiq-sq; None: every idle server listed as the policy lists it, drawn here);
    ``speeds``: each server's speed (random, pod and jsq, at most
    :data:`MAX_SPEED_CLASSES` distinct values; the farm starts empty).
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        initial: np.ndarray | None = None,
        iqueues: np.ndarray | None = None,
        speeds: np.ndarray | None = None,
    ) -> None:
        policy = get_policy(spec.policy)
        if policy.name not in COUNT_POLICIES:
            raise ValueError(f"the counts engine does not run {policy.name}")
        if spec.record:
            raise ValueError("the counts engine keeps no per-task records")
        self.speed: np.ndarray | None = None
        if speeds is not None:
            self.speed, sizes = speed_classes(speeds)
            if policy.name not in CLASS_POLICIES or self.speed.size > MAX_SPEED_CLASSES:
                raise ValueError(
                    f"the counts engine runs speed classes for "
                    f"{', '.join(CLASS_POLICIES)}, at most {MAX_SPEED_CLASSES}"
                )
            if initial is not None or sizes.sum() != spec.n:
                raise ValueError("speed classes start empty, with one speed per server")
        self.spec, self.policy, self.rng = spec, policy, rng
        self.n, self.m = spec.n, spec.m
        self.code = COUNT_POLICIES[policy.name]
        self.d = 1 if self.code == RANDOM else int(spec.d)
        levels = _LEVELS
        top = 0 if initial is None else int(np.flatnonzero(initial).max(initial=0))
        while levels < top + 4:
            levels *= 2
        self.cnt = np.zeros(levels)
        if initial is None:
            self.cnt[0] = spec.n
        else:
            given = np.asarray(initial, dtype=np.float64)[: top + 1]
            at_least = np.cumsum(given[::-1])[::-1]
            self.cnt[: at_least.size] = at_least
        self.iq = _iqueue_counts(self.code, spec, self.cnt, iqueues, rng)
        self.ccnt = np.zeros((0, levels))
        if self.speed is not None:
            self.ccnt = np.zeros((self.speed.size, levels))
            self.ccnt[:, 0] = sizes
        self.ist = np.zeros(S.N_IST, np.int64)
        self.ist[S.I_MAXLEN] = top
        self.ist[S.I_MAXCAP] = int(np.flatnonzero(self.iq).max(initial=0))
        self.fst = np.zeros(S.N_FST)
        self.msg = np.zeros(4, np.int64)
        micro = spec.micro
        self.area, self.last = np.zeros(levels), np.zeros(levels)
        self.bsum, self.bcnt = np.zeros(micro), np.zeros(micro, np.int64)
        classes = () if self.speed is None else (self.speed.size,)
        self.joins = np.zeros((S.H_SEGMENTS, *classes, levels))
        self.snap = np.zeros((micro + 1, S.N_SNAP))
        self.snap_area = np.zeros((micro + 1, levels))
        self.ctl = np.zeros(S.N_CTL, np.int64)
        self.ctl[S.C_ARR_WARM] = spec.warm_tasks
        self.ctl[S.C_ARR_END] = S.OPEN_END if spec.open_end else spec.end_tasks
        self.ctl[S.C_WIDTH] = initial_width(spec)
        self.ctl[S.C_NEXT_CHECK] = S.OPEN_END
        if spec.open_end:
            self.expected_events = math.inf
        elif spec.end_tasks >= 0:
            self.expected_events = 2.0 * spec.end_tasks
        else:
            self.expected_events = 2.0 * spec.rate * spec.n * spec.t_end
        self.wall = 0.0
        self.at_checkpoint = False

    @property
    def mt(self) -> Any:
        """The micro-batch tables, under the names :mod:`~cloudsched.dispatch.measure` reads."""
        return self

    # -- running -------------------------------------------------------------------------
    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; return True when the run is complete."""
        self.ctl[S.C_BUDGET] = budget
        self.at_checkpoint = False
        t0 = time.perf_counter()
        try:
            while True:
                status = self._run()
                check_deadline(self.policy, self.spec.deadline, self.events)
                if status == S.DONE:
                    return True
                if status == S.CHUNK:
                    return False
                if status == S.CHECKPOINT:
                    self.at_checkpoint = True
                    self.ctl[S.C_NEXT_CHECK] = S.OPEN_END
                    return False
                if status == S.NEED_LEVELS:
                    self._more_levels()
                elif status == S.NEED_MERGE:
                    self._merge()
                else:
                    self._grow(status)
        finally:
            self.wall += time.perf_counter() - t0

    def _grow(self, status: int) -> None:
        """Grow the table the kernel ran out of (here: the I-queue sizes)."""
        if status != S.NEED_ARENA:  # pragma: no cover - the kernel returns no other code
            raise RuntimeError(f"unknown kernel status {status}")
        grown = np.zeros(2 * self.iq.size)  # a longer I-queue than the table holds
        grown[: self.iq.size] = self.iq
        self.iq = grown

    def _run(self) -> int:
        lam_n, t_warm, t_end = (
            float(self.spec.rate * self.n),
            float(self.spec.t_warm),
            float(self.spec.t_end),
        )
        if self.speed is not None:
            return int(
                run_classes(
                    self.cnt,
                    self.ccnt,
                    self.speed,
                    self.iq,
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
                    lam_n,
                    float(self.n),
                    self.code,
                    self.d,
                    bool(self.spec.replace),
                    t_warm,
                    t_end,
                    self.rng,
                )
            )
        return int(
            run_counts(
                self.cnt,
                self.iq,
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
                lam_n,
                float(self.n),
                self.m,
                self.code,
                self.d,
                bool(self.spec.replace),
                t_warm,
                t_end,
                self.rng,
            )
        )

    def _more_levels(self) -> None:
        from cloudsched.resources import check_memory

        new = 2 * self.cnt.size
        check_memory(
            "load",
            f"{self.policy.name} at load {self.spec.rate:g}",
            8.0 * new * (self.snap.shape[0] + S.H_SEGMENTS + 4),
            "the longest queue's levels (growing: is the farm overloaded?)",
        )

        def grow(a: np.ndarray, fill: float) -> np.ndarray:
            out = np.full((*a.shape[:-1], new), fill)
            out[..., : a.shape[-1]] = a
            return out

        self.cnt, self.area, self.ccnt = (
            grow(self.cnt, 0.0),
            grow(self.area, 0.0),
            grow(self.ccnt, 0.0),
        )
        self.last = grow(self.last, self.fst[S.F_NOW])
        self.joins, self.snap_area = grow(self.joins, 0.0), grow(self.snap_area, 0.0)

    def _merge(self) -> None:
        """Merge micro-batches in pairs (the width doubles); the levels joined follow."""
        merge_pairs(self.bsum, self.bcnt, self.snap, self.snap_area, self.joins, self.ctl)

    # -- controlling an open-ended window ----------------------------------------------
    @property
    def width(self) -> int:
        """Current micro-batch width, in measured arrivals."""
        return int(self.ctl[S.C_WIDTH])

    @property
    def events(self) -> int:
        """Events simulated so far."""
        return int(self.ist[S.I_EVENTS])

    @property
    def measured(self) -> int:
        """Measured arrivals so far (0 before the window opens)."""
        return measured_arrivals(self.ist, self.ctl)

    def set_checkpoint(self, measured: int) -> None:
        """Pause (``at_checkpoint``) once ``measured`` arrivals have been measured."""
        self.ctl[S.C_NEXT_CHECK] = measured
        self.at_checkpoint = False

    def close_window(self) -> None:
        """End the measurement window at the next arrival (open-ended runs)."""
        self.ctl[S.C_ARR_END] = self.ist[S.I_ARRIVALS]
        self.ctl[S.C_NEXT_CHECK] = S.OPEN_END

    def complete_batches(self) -> int:
        """Micro-batches whose arrivals have all arrived (their response times are known)."""
        return self.measured // self.width

    # -- results -------------------------------------------------------------------------
    def result(self) -> RawRun:
        """Collect what was measured (call once the run is complete)."""
        measured = self.measured
        used = -(-measured // self.width)
        return RawRun(
            response_times=np.zeros(0, np.float32),
            batch_sum=self.bsum[:used].copy(),
            batch_count=self.bcnt[:used].copy(),
            width=self.width,
            measured=measured,
            snap=self.snap[:used].copy(),
            snap_area=self.snap_area[:used].copy(),
            hist=erlang_histogram(self.joins, self.speed),
            segment_batches=self.bsum.size // S.H_SEGMENTS,
            tail_area=self.area.copy(),
            p0_area=float(self.fst[S.F_AREA_P0]),
            t_warm=float(self.fst[S.F_TWARM]),
            t_end=float(self.fst[S.F_TEND]),
            messages=self.msg.copy(),
            rt_min=0.0,
            rt_max=math.inf,
            events=self.events,
            wall_seconds=self.wall,
        )


def _iqueue_counts(
    code: int, spec: RunSpec, cnt: np.ndarray, given: np.ndarray | None, rng: np.random.Generator
) -> np.ndarray:
    """I-queues per number of entries at time 0 (``[M]``: none listed, no I-queues)."""
    out = np.zeros(64)
    if code not in (JIQ, JIQ_POD, JIQ_SQ):
        out[0] = spec.m
        return out
    if given is None:  # every idle server joins a uniform I-queue (jiq-sq: the shortest of d)
        idle = round(cnt[0] - cnt[1])
        mean = idle / spec.m  # no I-queue exceeds this bound but with probability < 1e-40
        out = np.zeros(min(idle, int(mean + 20.0 * math.sqrt(mean) + 64)) + 2)
        if code == JIQ_SQ:
            out[0] = spec.m
            top = shortest_sizes(idle, spec.m, spec.d, out, rng)
        else:
            top = uniform_sizes(idle, spec.m, out, rng)
        if top < 0:  # pragma: no cover
            raise RuntimeError("an I-queue beyond its bound at the start")
        given = out[: int(np.flatnonzero(out).max(initial=0)) + 1]
    given = np.asarray(given, dtype=np.float64)
    size = 64
    while size < given.size + 4:
        size *= 2
    out = np.zeros(size)
    out[: given.size] = given
    listed = float(np.arange(given.size) @ given)
    if out.sum() != spec.m or listed != cnt[0] - cnt[1]:
        raise ValueError("the I-queues must list every idle server once")
    return out
