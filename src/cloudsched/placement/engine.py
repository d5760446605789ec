"""State arrays of the placement simulator and the loop that drives the compiled kernel.

:class:`PlacementEngine` allocates the arrays of :mod:`cloudsched.placement._kernel`, runs it
in chunks, enlarges the queue buffers when asked, and, for MaxWeight, replaces the
configuration at every frame boundary (:mod:`cloudsched.placement.maxweight`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cloudsched.placement import _kernel as K
from cloudsched.placement.baselines import bfs_order
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.workload import JobType

__all__ = ["EngineParams", "PlacementEngine"]


@dataclass(frozen=True)
class EngineParams:
    """Policy code and algorithm parameters, as the kernel reads them."""

    policy: int
    beta: float = 1.0
    alpha: float = 1.0
    h: float | tuple[float, ...] = 0.0
    epsilon: float = 0.5
    f: str = "log"
    virtual_clock: bool = True
    clock_rates: tuple[float, ...] | None = None
    frozen_weights: tuple[float, ...] | None = None

    def par(self) -> np.ndarray:
        """Pack the parameters into the kernel's ``par`` array."""
        out = np.zeros(K.N_PAR)
        out[K.P_BETA] = self.beta
        out[K.P_ALPHA] = self.alpha
        out[K.P_EPS] = self.epsilon
        out[K.P_FCODE] = 0.0 if self.f == "log" else 1.0
        out[K.P_VCLOCK] = 1.0 if self.virtual_clock else 0.0
        out[K.P_FROZEN] = 1.0 if self.frozen_weights is not None else 0.0
        return out


class PlacementEngine:
    """A placement simulation from an empty cluster, advanced in chunks of events.

    Parameters
    ----------
    cluster, job_types
        The model.
    params : EngineParams
        Policy and parameters.
    horizon, warmup : float
        The run ends at ``horizon``; statistics cover ``(warmup, horizon]``.
    batches : int
        The window is cut into this many equal micro-batches; at the end of each, the time
        integrals (``snap``) and counts (``snap_cnt``) so far are recorded.
    rng : numpy.random.Generator
        The only source of randomness.
    """

    def __init__(
        self,
        cluster: Cluster,
        job_types: Sequence[JobType],
        params: EngineParams,
        horizon: float,
        warmup: float,
        batches: int,
        rng: np.random.Generator,
    ) -> None:
        self.cluster, self.job_types, self.params, self.rng = cluster, list(job_types), params, rng
        nj = len(job_types)
        tops = [j.topology for j in job_types]
        s = cluster.total_slots
        nm = cluster.machines
        kmax = max(t.nodes for t in tops)
        self.knodes = np.array([t.nodes for t in tops], dtype=np.int64)
        edge_lists = [t.edge_array() for t in tops]
        self.edge_off = np.concatenate([[0], np.cumsum([len(e) for e in edge_lists])]).astype(
            np.int64
        )
        self.edges = np.vstack([e.reshape(-1, 2) for e in edge_lists]).astype(np.int64)
        self.node_off = np.concatenate([[0], np.cumsum(self.knodes)]).astype(np.int64)
        self.bfs = np.concatenate([np.asarray(bfs_order(t), dtype=np.int64) for t in tops])
        adj_off, adj = [0], []
        for t in tops:
            for v in range(t.nodes):
                nbrs = sorted(t.graph.neighbors(v))
                adj.extend(nbrs)
                adj_off.append(adj_off[-1] + len(nbrs))
        self.adj_off = np.asarray(adj_off, dtype=np.int64)
        self.adj = np.asarray(adj, dtype=np.int64)
        self.rack = (np.arange(nm) * cluster.racks // nm).astype(np.int64)
        self.slot_machine = np.repeat(np.arange(nm), cluster.slots).astype(np.int64)
        self.dist = np.ascontiguousarray(cluster.distance, dtype=np.float64)
        self.lam = np.array([j.arrival_rate for j in job_types])
        self.mu = np.array([1.0 / j.mean_duration for j in job_types])
        self.nu = np.asarray(
            params.clock_rates if params.clock_rates is not None else self.lam, dtype=float
        )
        # row 0: frozen weights (if any); row 1: the bias h_j of each type
        self.wpar = np.zeros((2, nj))
        if params.frozen_weights is not None:
            self.wpar[0] = params.frozen_weights
        self.wpar[1] = np.broadcast_to(np.asarray(params.h, dtype=float), (nj,))
        self.par = params.par()
        # Dynamic state: every slot free, no template, empty queues.
        self.owner = np.full(s, -1, dtype=np.int64)
        self.mslots = np.full((nm, int(cluster.slots.max())), -1, dtype=np.int64)
        self.spos = np.zeros(s, dtype=np.int64)
        for m in range(nm):
            mine = np.flatnonzero(self.slot_machine == m)
            self.mslots[m, : mine.size] = mine
            self.spos[mine] = np.arange(mine.size)
        self.mfree = cluster.slots.astype(np.int64).copy()
        rows = s // int(self.knodes.min()) + 1
        self.t_type = np.zeros(rows, dtype=np.int64)
        self.t_state = np.zeros(rows, dtype=np.int64)
        self.t_cost = np.zeros(rows)
        self.t_slots = np.zeros((rows, kmax), dtype=np.int64)
        self.tfree = np.arange(rows - 1, -1, -1, dtype=np.int64)
        self.tlists = np.zeros((nj, 2, rows), dtype=np.int64)
        self.tpos = np.zeros(rows, dtype=np.int64)
        self.ntl = np.zeros((nj, 2), dtype=np.int64)
        self.qbuf = np.zeros((nj, 1024))
        self.qhead = np.zeros(nj, dtype=np.int64)
        self.qlen = np.zeros(nj, dtype=np.int64)
        self.cur_cost = np.zeros(nj)
        self.fst = np.zeros(K.N_FST)
        self.fst[K.F_TWARM], self.fst[K.F_TEND], self.fst[K.F_TSTOP] = warmup, horizon, np.inf
        self.ist = np.zeros(K.N_IST, dtype=np.int64)
        self.ist[K.I_TFREE] = rows
        self.ist[K.I_FREE_SLOTS] = s
        self.acc = np.zeros((nj, K.N_ACC))
        self.cnt = np.zeros((nj, K.N_CNT), dtype=np.int64)
        self.scratch = np.zeros(kmax, dtype=np.int64)
        # work rows indexed by machine, rack, job type and (greedy) graph node
        self.iwork = np.zeros((5, max(nm, cluster.racks, nj, kmax)), dtype=np.int64)
        self.bounds = warmup + (horizon - warmup) * np.arange(1, batches + 1) / batches
        self.bounds[-1] = horizon
        self.snap = np.zeros((batches, nj, K.N_ACC))
        self.snap_cnt = np.zeros((batches, nj, K.N_CNT), dtype=np.int64)
        self.done = False
        self.on_stop: Callable[[PlacementEngine], None] | None = None

    @property
    def now(self) -> float:
        """Current simulated time."""
        return float(self.fst[K.F_NOW])

    def set_stop(self, t: float) -> None:
        """Make the kernel return STOP at time ``t`` (a MaxWeight frame boundary)."""
        self.fst[K.F_TSTOP] = t

    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; True when the horizon is reached."""
        while not self.done:
            status = K.run(
                self.rng, self.params.policy, budget, self.par, self.lam, self.mu, self.nu,
                self.wpar, self.knodes, self.edges, self.edge_off, self.node_off, self.bfs,
                self.adj_off, self.adj, self.rack, self.slot_machine, self.dist, self.owner,
                self.mslots, self.mfree, self.spos, self.t_type, self.t_state, self.t_cost,
                self.t_slots, self.tfree, self.tlists, self.tpos, self.ntl, self.qbuf, self.qhead,
                self.qlen, self.cur_cost, self.fst, self.ist, self.acc, self.cnt, self.scratch,
                self.iwork, self.bounds, self.snap, self.snap_cnt,
            )  # fmt: skip
            if status == K.DONE:
                self.done = True
            elif status == K.NEED_QUEUE:
                self.grow_queues()
            elif status == K.STOP:
                if self.on_stop is None:  # pragma: no cover - only MaxWeight sets stops
                    raise RuntimeError("placement kernel stopped without a frame handler")
                self.on_stop(self)
            else:
                return False
        return True

    def extend(self, t_end: float) -> None:
        """Let the run continue to time ``t_end`` (open-ended runs stop at checkpoints)."""
        self.fst[K.F_TEND] = t_end
        self.done = False

    @property
    def batches_done(self) -> int:
        """Micro-batches whose end has been reached (their snapshots are recorded)."""
        return int(self.ist[K.I_BATCH])

    def merge_batches(self) -> None:
        """Merge the (all finished) micro-batches in pairs; the next ones are twice as long."""
        total = self.bounds.size
        half = total // 2
        width = float(self.bounds[-1] - self.bounds[-2]) if total > 1 else float(self.bounds[0])
        self.snap[:half] = self.snap[1::2]
        self.snap[half:] = 0.0
        self.snap_cnt[:half] = self.snap_cnt[1::2]
        self.snap_cnt[half:] = 0
        bounds = np.empty(total)
        bounds[:half] = self.bounds[1::2]
        bounds[half:] = self.bounds[-1] + 2.0 * width * np.arange(1, total - half + 1)
        self.bounds = bounds
        self.ist[K.I_BATCH] = half

    def grow_queues(self, need: int = 0) -> None:
        """Double the queue buffers (at least to ``need`` entries), keeping FIFO order."""
        nj, cap = self.qbuf.shape
        new_cap = max(2 * cap, need)
        out = np.zeros((nj, new_cap))
        for j in range(nj):
            idx = (self.qhead[j] + np.arange(self.qlen[j])) % cap
            out[j, : self.qlen[j]] = self.qbuf[j, idx]
        self.qbuf = out
        self.qhead[:] = 0

    # Views used by the result, MaxWeight and the invariant tests. ------------------------
    def templates(self, j: int, actual: bool) -> np.ndarray:
        """Ids of the actual (or virtual) type-j templates."""
        c = 0 if actual else 1
        return self.tlists[j, c, : self.ntl[j, c]].copy()

    def machines_of(self, tid: int) -> np.ndarray:
        """Machine of each node of template ``tid``."""
        k = self.knodes[self.t_type[tid]]
        return self.slot_machine[self.t_slots[tid, :k]]

    def queue(self, j: int) -> np.ndarray:
        """Entry times of the queued type-j jobs, head first."""
        cap = self.qbuf.shape[1]
        return self.qbuf[j, (self.qhead[j] + np.arange(self.qlen[j])) % cap]
