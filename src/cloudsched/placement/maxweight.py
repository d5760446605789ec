"""Frame-based MaxWeight: replace the whole configuration every T time units.

At each frame boundary the configuration becomes a max-weight configuration
(:func:`~cloudsched.placement.optimize.max_weight_configuration`) with template weight
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
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment

from cloudsched.placement import _kernel as K
from cloudsched.placement import state as S
from cloudsched.placement.engine import PlacementEngine
from cloudsched.placement.optimize import MaxWeightSolution, max_weight_configuration

__all__ = ["FrameController"]


#: Columns of :attr:`FrameController.history`.
FRAME_FIELDS = ("time", "frames", "not_optimal", "migrations", "migrated_nodes", "preemptions")


class FrameController:
    """Called by the engine at each frame boundary; keeps MaxWeight's own counters.

    Counters run from time 0; ``history`` holds their values after every frame (columns
    :data:`FRAME_FIELDS`), so that a measurement window can count the frames inside it.
    """

    def __init__(
        self, frame: float, alpha: float, f: str, time_limit: float | None, warmup: float = 0.0
    ) -> None:
        self.frame, self.alpha, self.f, self.time_limit = frame, alpha, f, time_limit
        self.warmup = warmup
        self.frames = 0
        self.not_optimal = 0
        self.migrations = 0
        self.migrated_nodes = 0
        self.preemptions = 0
        self.solve_time = 0.0
        self.solves = 0
        self.history: list[tuple[float, int, int, int, int, int]] = []
        # The problem depends only on the jobs present per type: proven optima are reused
        # (HiGHS is deterministic, so this changes the run time, never the result).
        self._cache: dict[tuple[int, ...], MaxWeightSolution] = {}

    def start(self, eng: PlacementEngine) -> None:
        """Register with the engine; the first frame boundary is at ``frame``."""
        eng.on_stop = self
        eng.set_stop(self.frame)

    def weight(self, q: float) -> float:
        """``alpha * f(q)``."""
        return self.alpha * (math.log1p(q) if self.f == "log" else q)

    def __call__(self, eng: PlacementEngine) -> None:
        """Replace the configuration at a frame boundary and schedule the next one."""
        now = eng.now
        measuring = now > self.warmup
        nj = len(eng.job_types)
        present = eng.st.qlen + eng.st.ntl[:, 0]
        values = [self.weight(float(q)) for q in present]
        key = tuple(int(q) for q in present)
        sol = self._cache.get(key)
        if sol is None:
            sol = max_weight_configuration(
                eng.cluster, [jt.topology for jt in eng.job_types], values, present,
                time_limit=self.time_limit,
            )  # fmt: skip
            self.solve_time += sol.solve_time
            self.solves += 1
            if sol.optimal and len(self._cache) < 100_000:
                self._cache[key] = sol
        self.frames += 1
        self.not_optimal += int(not sol.optimal)
        new_by_type: list[list[np.ndarray]] = [[] for _ in range(nj)]
        for j, machines in sol.templates:
            new_by_type[j].append(machines)
        keep: list[list[bool]] = []  # per type: is new template b taken by a running job
        preempted = np.zeros(nj, dtype=np.int64)
        for j in range(nj):
            old = [eng.machines_of(int(t)) for t in eng.templates(j, actual=True)]
            new = new_by_type[j]
            taken = [False] * len(new)
            if old and new:
                overlap = np.array([[np.sum(a == b) for b in new] for a in old])
                rows, cols = linear_sum_assignment(overlap, maximize=True)
                for a, b in zip(rows, cols, strict=True):
                    taken[b] = True
                    moved = int(np.sum(old[a] != new[b]))
                    if moved and measuring:
                        self.migrations += 1
                        self.migrated_nodes += moved
            preempted[j] = len(old) - sum(taken)
            keep.append(taken)
        self._rebuild(eng, new_by_type, keep)
        for j in range(nj):
            if preempted[j]:
                self._push_front(eng, j, int(preempted[j]), now)
                if measuring:
                    self.preemptions += int(preempted[j])
            K.fill(eng.st, eng.mo, eng.mt, eng.lg, j, now, measuring)
        self.history.append((now, self.frames, self.not_optimal, self.migrations,
                             self.migrated_nodes, self.preemptions))  # fmt: skip
        eng.set_stop(now + self.frame)

    def counts_after(self, t: float) -> dict[str, int]:
        """Frames and their counts after time ``t`` (the start of a measurement window)."""
        before = (0, 0, 0, 0, 0)
        for row in self.history:
            if row[0] > t:
                break
            before = row[1:]
        last = (self.frames, self.not_optimal, self.migrations, self.migrated_nodes,
                self.preemptions)  # fmt: skip
        return {k: a - b for k, a, b in zip(FRAME_FIELDS[1:], last, before, strict=True)}

    @staticmethod
    def _rebuild(
        eng: PlacementEngine, new_by_type: list[list[np.ndarray]], keep: list[list[bool]]
    ) -> None:
        """Clear the configuration and install the new templates (kept ones actual)."""
        for j in range(len(eng.job_types)):
            for tid in np.concatenate([eng.templates(j, True), eng.templates(j, False)]):
                K.remove_template(eng.st, eng.mo, int(tid))
        eng.st.cur_cost[:] = 0.0
        slots = np.zeros(eng.st.scratch.size, dtype=np.int64)
        for j, templates in enumerate(new_by_type):
            for b, machines in enumerate(templates):
                used: dict[int, int] = {}
                for v, m in enumerate(machines):
                    m = int(m)
                    slots[v] = eng.st.mslots[m, eng.st.mfree[m] - 1 - used.get(m, 0)]
                    used[m] = used.get(m, 0) + 1
                cost = eng.cluster.cost(eng.job_types[j].topology, machines)
                state = S.ACTUAL if keep[j][b] else S.VIRTUAL
                K.add_template(eng.st, eng.mo, j, state, slots, len(machines), cost)
                if state == S.ACTUAL:
                    eng.st.cur_cost[j] += cost

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
