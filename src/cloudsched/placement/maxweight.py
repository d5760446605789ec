"""Frame-based MaxWeight: replace the whole configuration every T time units.

At each frame boundary the configuration becomes a max-weight configuration
(:func:`~cloudsched.placement.configuration.max_weight_configuration`) with template weight
``alpha * f(Q_j) - b_A``.  CHOICES where the paper is silent:

* ``Q_j`` counts every type-j job present (waiting or in service), and a type gets at most
  ``Q_j`` templates (``graph-placement.md``); ``f`` is ``log(1 + x)`` or the identity.
* Jobs in service are matched to the new templates of their type so that as many nodes as
  possible stay on their machine (:func:`scipy.optimize.linear_sum_assignment`); a job whose
  template puts any node on another machine counts as one migration (``migrated_nodes``
  counts the nodes).  When the new configuration has fewer type-j templates than type-j jobs
  in service, the unmatched jobs are preempted back to the head of their queue
  (``preemptions``); memoryless service makes their remaining time unchanged.
* Templates left empty are virtual until the next frame: jobs that arrive or wait fill them.
* A running job whose new template puts every node on the machine it is on keeps its slots.

The solver (``solver``: ``exact``, ``fast`` or ``auto``,
:mod:`cloudsched.placement.optimize`) reports each frame's weight and an upper bound on the
best weight; :attr:`FrameController.records` keeps them (``frames`` in the result, and
``--frames FILE`` on the command line), with the gap ``(bound - weight) / bound``.  Solutions
are reused for the same vector of jobs present (the fast solver is deterministic, and so is
HiGHS on a problem it proves; a time-limited MILP is not, so those are solved again).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from cloudsched.placement import _kernel as K
from cloudsched.placement import state as S
from cloudsched.placement.configuration import (
    MaxWeightSolution,
    exact_is_cheap,
    max_weight_configuration,
)
from cloudsched.placement.engine import PlacementEngine
from cloudsched.placement.fastpack import Library, weight_bound

__all__ = ["FRAME_FIELDS", "FrameController"]


#: Columns of :attr:`FrameController.history`.
FRAME_FIELDS = ("time", "frames", "not_optimal", "migrations", "migrated_nodes", "preemptions")


class FrameController:
    """Called by the engine at each frame boundary; keeps MaxWeight's own counters.

    Counters run from time 0; ``history`` holds their values after every frame (columns
    :data:`FRAME_FIELDS`), so that a measurement window can count the frames inside it;
    ``records`` holds each frame's time, jobs present and templates per type, weight, upper
    bound and whether it is proven.
    """

    def __init__(
        self,
        frame: float,
        alpha: float,
        f: str,
        time_limit: float | None,
        warmup: float = 0.0,
        solver: str = "auto",
        keep_proven: bool = True,
    ) -> None:
        self.frame, self.alpha, self.f, self.time_limit = frame, alpha, f, time_limit
        self.keep_proven = keep_proven  # False: solve every frame (a test's reference)
        self.warmup, self.solver = warmup, solver
        self.frames = 0
        self.not_optimal = 0
        self.migrations = 0
        self.migrated_nodes = 0
        self.preemptions = 0
        self.solve_time = 0.0
        self.solves = 0
        self.history: list[tuple[float, int, int, int, int, int]] = []
        self.records: list[tuple[Any, ...]] = []
        self._cache: dict[tuple[int, ...], MaxWeightSolution] = {}
        self._bounds: dict[tuple[int, ...], float] = {}
        self._kept_seen = 0
        self._library: Library | None = None
        self._kind = solver

    def start(self, eng: PlacementEngine) -> None:
        """Register with the engine; the first frame boundary is at ``frame``."""
        tops = [jt.topology for jt in eng.job_types]
        if self.solver == "auto":
            self._kind = "exact" if exact_is_cheap(eng.cluster, tops) else "fast"
        if self._kind == "fast" or self.solver == "auto":  # auto tries the packing first
            self._library = Library.build(eng.cluster, tops)
        eng.on_stop = self
        eng.set_stop(self.frame)

    def weight(self, q: float) -> float:
        """``alpha * f(q)``."""
        return self.alpha * (math.log1p(q) if self.f == "log" else q)

    def solve(self, eng: PlacementEngine, present: np.ndarray) -> MaxWeightSolution:
        """Return the frame's configuration for the jobs present.

        Exact: reused for the same jobs present when proven.  Fast: packed around the
        running jobs that are already least-cost (its bound reused for the same jobs
        present).  ``auto`` where the MILP is cheap: the packing first, the MILP only when
        the packing does not reach its bound (a frame's configuration is proven optimal
        either way; the packing takes milliseconds where the MILP took 0.2-0.6 s).
        """
        key = tuple(int(q) for q in present)
        values = [self.weight(float(q)) for q in present]
        tops = [jt.topology for jt in eng.job_types]
        sol = None
        if self._kind == "exact" and key in self._cache:
            return self._cache[key]
        if self._library is not None:
            keep = [
                (j, eng.machines_of(int(t)), float(eng.st.t_cost[t]))
                for j in range(len(tops))
                for t in eng.templates(j, actual=True)
            ]
            if key not in self._bounds and len(self._bounds) < 100_000:
                self._bounds[key] = weight_bound(self._library, values, present)
            bound = self._bounds.get(key)
            sol = max_weight_configuration(
                eng.cluster,
                tops,
                values,
                present,
                solver="fast",
                library=self._library,
                keep=keep,
                bound=bound,
            )
        if self._kind == "exact" and (sol is None or not sol.optimal):
            packed = sol
            sol = max_weight_configuration(
                eng.cluster, tops, values, present, time_limit=self.time_limit, solver="exact"
            )
            if sol.optimal and len(self._cache) < 100_000:
                self._cache[key] = sol
            elif packed is not None:
                sol = _better(packed, sol)
        assert sol is not None  # fast has a library; exact solves above
        self.solve_time += sol.solve_time
        self.solves += 1
        return sol

    def __call__(self, eng: PlacementEngine) -> None:
        """Replace the configuration at a frame boundary and schedule the next one."""
        now = eng.now
        measuring = now > self.warmup
        nj = len(eng.job_types)
        present = eng.st.qlen + eng.st.ntl[:, 0]
        self.fill_kept(eng)
        sol = self.solve(eng, present)
        new_by_type: list[list[np.ndarray]] = [[] for _ in range(nj)]
        for j, machines in sol.templates:
            new_by_type[j].append(machines)
        moved_before = self.migrations
        preempted = np.zeros(nj, dtype=np.int64)
        adds: list[tuple[int, np.ndarray, int, int]] = []
        for j in range(nj):  # free what moves first (all types), then install
            preempted[j] = self._clear(eng, j, new_by_type[j], measuring, adds)
        for j, machines, state, job in adds:
            tid = self._add(eng, j, machines, state)
            if job >= 0:
                eng.st.t_job[tid] = job
                eng.log(S.LOG_START, tid)
        eng.st.cur_cost[:] = 0.0
        for j in range(nj):
            eng.st.cur_cost[j] = float(eng.st.t_cost[eng.templates(j, True)].sum())
            if preempted[j]:
                self._push_front(eng, j, int(preempted[j]), now)
                if measuring:
                    self.preemptions += int(preempted[j])
            if eng.st.qlen[j] > 0 and eng.st.ntl[j, 1] > 0:
                K.fill(eng.st, eng.mo, eng.mt, eng.lg, j, now, measuring)
        self._close(eng, now, present, sol, self.migrations - moved_before)

    def _close(
        self,
        eng: PlacementEngine,
        now: float,
        present: np.ndarray,
        sol: MaxWeightSolution,
        moved: int,
    ) -> None:
        """Count and record the frame, and schedule the next one.

        The kernel itself passes the frames that keep a proven configuration for the same
        jobs present (``ist[I_KEPT]``); :meth:`_fill_kept` counts them at the next solve.
        """
        self.frames += 1
        self.not_optimal += int(not sol.optimal)
        eng.st.frame_q[:] = present
        eng.st.fst[S.F_KEEP] = 1.0 if sol.optimal and self.keep_proven else 0.0
        eng.st.fst[S.F_FRAME] = self.frame
        self._kept_seen = int(eng.st.ist[S.I_KEPT])
        self.history.append(
            (
                now,
                self.frames,
                self.not_optimal,
                self.migrations,
                self.migrated_nodes,
                self.preemptions,
            )
        )
        self.records.append(
            (
                now,
                *present.tolist(),
                *sol.counts(len(present)).tolist(),
                sol.weight,
                sol.upper_bound,
                sol.gap,
                sol.optimal,
                moved,
            )
        )
        eng.set_stop(now + self.frame)

    def fill_kept(self, eng: PlacementEngine) -> None:
        """Record the frames the kernel kept since the last solve (one row each)."""
        kept = int(eng.st.ist[S.I_KEPT]) - self._kept_seen
        if kept and self.records:
            last = self.records[-1]
            for i in range(1, kept + 1):
                self.records.append((last[0] + i * self.frame, *last[1:-1], 0))
            self.frames += kept
        self._kept_seen = int(eng.st.ist[S.I_KEPT])

    def _clear(
        self,
        eng: PlacementEngine,
        j: int,
        new: list[np.ndarray],
        measuring: bool,
        adds: list[tuple[int, np.ndarray, int, int]],
    ) -> int:
        """Remove type j's templates that do not stay; queue in ``adds`` those to install.

        Running jobs go to the new templates that overlap their machines most (``adds``
        carries their job number, -1 for an empty template).  Returns the number of running
        jobs left without a template (preempted).
        """
        old_ids = eng.templates(j, actual=True)
        old = [eng.machines_of(int(t)) for t in old_ids]
        match: dict[int, int] = {}  # new index -> old index
        same: dict[bytes, list[int]] = {}
        for a, machines in enumerate(old):
            same.setdefault(machines.tobytes(), []).append(a)
        for b, machines in enumerate(new):  # a job already on its new template stays
            if same.get(machines.tobytes()):
                match[b] = same[machines.tobytes()].pop()
        rest_old = [a for a in range(len(old)) if a not in set(match.values())]
        rest_new = [b for b in range(len(new)) if b not in match]
        if rest_old and rest_new:  # the others move to the template that overlaps them most
            overlap = np.array([[np.sum(old[a] == new[b]) for b in rest_new] for a in rest_old])
            rows, cols = linear_sum_assignment(overlap, maximize=True)
            match.update({rest_new[c]: rest_old[r] for r, c in zip(rows, cols, strict=True)})
        for tid in eng.templates(j, actual=False):
            K.remove_template(eng.st, eng.mo, int(tid))
        stay = {b for b, a in match.items() if np.array_equal(old[a], new[b])}
        jobs: dict[int, int] = {}
        for b, a in match.items():
            if b in stay:
                continue
            moved = int(np.sum(old[a] != new[b]))
            if measuring:
                self.migrations += 1
                self.migrated_nodes += moved
            tid = int(old_ids[a])
            jobs[b] = int(eng.st.t_job[tid])
            eng.log(S.LOG_END, tid)
            K.remove_template(eng.st, eng.mo, tid)
        kept = set(match.values())
        for a, tid in enumerate(old_ids.tolist()):
            if a not in kept:
                eng.log(S.LOG_END, tid)
                K.remove_template(eng.st, eng.mo, tid)
        for b, machines in enumerate(new):
            if b not in stay:
                adds.append((j, machines, S.ACTUAL if b in match else S.VIRTUAL, jobs.get(b, -1)))
        return len(old) - len(match)

    @staticmethod
    def _add(eng: PlacementEngine, j: int, machines: np.ndarray, state: int) -> int:
        """Add a type-j template on ``machines`` (free slots of each), as ``state``."""
        slots = np.zeros(eng.st.scratch.size, dtype=np.int64)
        used: dict[int, int] = {}
        for v, m in enumerate(machines.tolist()):
            slots[v] = eng.st.mslots[m, eng.st.mfree[m] - 1 - used.get(m, 0)]
            used[m] = used.get(m, 0) + 1
        cost = eng.cluster.cost(eng.job_types[j].topology, machines)
        return int(K.add_template(eng.st, eng.mo, j, state, slots, len(machines), cost))

    def counts_after(self, t: float) -> dict[str, int]:
        """Frames and their counts after time ``t`` (the start of a measurement window).

        Frames kept by the kernel move nobody and are proven, so only ``frames`` counts
        them (from :attr:`records`, which has every frame once :meth:`fill_kept` ran).
        """
        before = (0, 0, 0, 0, 0)
        for row in self.history:
            if row[0] > t:
                break
            before = row[1:]
        last = (
            self.frames,
            self.not_optimal,
            self.migrations,
            self.migrated_nodes,
            self.preemptions,
        )
        out = {k: a - b for k, a, b in zip(FRAME_FIELDS[1:], last, before, strict=True)}
        out["frames"] = sum(1 for r in self.records if r[0] > t)
        return out

    def table(self, names: list[str]) -> Any:
        """Return ``records`` as a DataFrame (one row per frame)."""
        import pandas as pd

        cols = [
            "time",
            *(f"present.{n}" for n in names),
            *(f"templates.{n}" for n in names),
            "weight",
            "upper_bound",
            "gap",
            "proven",
            "migrations",
        ]
        return pd.DataFrame(self.records, columns=cols)

    @staticmethod
    def _push_front(eng: PlacementEngine, j: int, n: int, now: float) -> None:
        """Put ``n`` preempted jobs back at the head of queue ``j`` (entry time ``now``)."""
        if eng.st.qlen[j] + n > eng.st.qbuf.shape[1]:
            eng.grow_queues(int(eng.st.qlen[j] + n))
        cap = eng.st.qbuf.shape[1]
        for _ in range(n):
            eng.st.qhead[j] = (eng.st.qhead[j] - 1) % cap
            eng.st.qbuf[j, eng.st.qhead[j]] = now
            eng.st.qlen[j] += 1


def _better(packed: MaxWeightSolution, milp: MaxWeightSolution) -> MaxWeightSolution:
    """Return the heavier of a packing and a time-limited MILP, with the tighter bound.

    The MILP's incumbent at its time limit may weigh less than the packing found first;
    the frame runs the best configuration found so far and its gap to the least bound.
    """
    bounds = [b for b in (packed.upper_bound, milp.upper_bound) if not math.isnan(b)]
    bound = min(bounds, default=math.nan)
    best = packed if packed.weight > milp.weight else milp
    return replace(
        best,
        upper_bound=bound,
        optimal=bool(best.weight >= bound - 1e-9 * max(1.0, abs(bound))),
        solve_time=packed.solve_time + milp.solve_time,
    )
