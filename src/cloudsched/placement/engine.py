"""State arrays of the placement simulator and the loop that drives the compiled kernel.

:class:`PlacementEngine` allocates the arrays of :mod:`cloudsched.placement._kernel`, runs it
in chunks, enlarges the queue buffers when asked, and, for MaxWeight, replaces the
configuration at every frame boundary (:mod:`cloudsched.placement.maxweight`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched.placement import _kernel as K
from cloudsched.placement import state as S
from cloudsched.placement._kernel_plugin import run_plugin
from cloudsched.placement.baselines import bfs_order, ras_order
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.policies import GREEDY, RESOURCE_AWARE, STORM_DEFAULT
from cloudsched.placement.workload import JobType

__all__ = ["EngineParams", "PlacementEngine"]

#: Policies the kernel's baseline loop runs (:func:`cloudsched.placement._kernel.run_baseline`).
BASELINE_CODES = (STORM_DEFAULT, GREEDY, RESOURCE_AWARE)


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
    proposal: str = "local"
    locality: float = 0.9
    record: bool = False
    #: a plug-in's :class:`~cloudsched.placement.plugin.PlacementPlugin` (code PLUGIN)
    plugin: Any = None

    def par(self, cluster: Cluster | None = None) -> np.ndarray:
        """Pack the parameters into the kernel's ``par`` array (for ``cluster``)."""
        out = np.zeros(S.N_PAR)
        out[S.P_BETA] = self.beta
        out[S.P_ALPHA] = self.alpha
        out[S.P_EPS] = self.epsilon
        out[S.P_FCODE] = 0.0 if self.f == "log" else 1.0
        out[S.P_VCLOCK] = 1.0 if self.virtual_clock else 0.0
        out[S.P_FROZEN] = 1.0 if self.frozen_weights is not None else 0.0
        out[S.P_RES] = 1.0 if cluster is not None and cluster.has_resources else 0.0
        out[S.P_LOCAL] = 1.0 if self.proposal == "local" else 0.0
        out[S.P_THETA] = self.locality
        out[S.P_LOGS] = math.log(cluster.total_slots) if cluster is not None else 0.0
        out[S.P_LOG] = 1.0 if self.record else 0.0
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
        integrals (``mt.snap``) and counts (``mt.snap_cnt``) so far are recorded.
    rng : numpy.random.Generator
        The only source of randomness.

    The kernel's records are :attr:`mo` (model), :attr:`st` (templates and queues) and
    :attr:`mt` (measurements), see :mod:`cloudsched.placement.state`.
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
        self.mo = _model(cluster, self.job_types, params)
        self.st = _state(cluster, self.mo, horizon, warmup)
        rows = self.st.t_type.size
        cap = 4 * rows + 4096 if params.record else 1
        self.lg = S.Log(
            np.zeros(cap),
            np.zeros((cap, 4), dtype=np.int64),
            np.zeros((cap, self.st.scratch.size if params.record else 1), dtype=np.int64),
        )
        #: Log rows emptied so far (when recording): a list of (t, ev, machines) chunks.
        self.log_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        nj = len(job_types)
        bounds = warmup + (horizon - warmup) * np.arange(1, batches + 1) / batches
        bounds[-1] = horizon
        self.mt = S.Meter(
            acc=np.zeros((nj, S.N_ACC)),
            cnt=np.zeros((nj, S.N_CNT), dtype=np.int64),
            bounds=bounds,
            snap=np.zeros((batches, nj, S.N_ACC)),
            snap_cnt=np.zeros((batches, nj, S.N_CNT), dtype=np.int64),
        )
        self.done = False
        self.on_stop: Callable[[PlacementEngine], None] | None = None

    @property
    def now(self) -> float:
        """Current simulated time."""
        return float(self.st.fst[S.F_NOW])

    def set_stop(self, t: float) -> None:
        """Make the kernel return STOP at time ``t`` (a MaxWeight frame boundary)."""
        self.st.fst[S.F_TSTOP] = t

    def advance(self, budget: int) -> bool:
        """Run at most ``budget`` events; True when the horizon is reached."""
        while not self.done:
            if self.params.plugin is not None:
                status = run_plugin(self, budget)
            else:
                step = K.run_baseline if self.params.policy in BASELINE_CODES else K.run
                status = step(
                    self.st, self.mo, self.mt, self.lg, self.params.policy, budget, self.rng
                )
            if status == S.DONE:
                self.done = True
            elif status == S.NEED_QUEUE:
                self.grow_queues()
            elif status == S.NEED_LOG:
                self.empty_log()
            elif status == S.STOP:
                if self.on_stop is None:  # pragma: no cover - only MaxWeight sets stops
                    raise RuntimeError("placement kernel stopped without a frame handler")
                self.on_stop(self)
            else:
                return False
        return True

    def extend(self, t_end: float) -> None:
        """Let the run continue to time ``t_end`` (open-ended runs stop at checkpoints)."""
        self.st.fst[S.F_TEND] = t_end
        self.done = False

    @property
    def batches_done(self) -> int:
        """Micro-batches whose end has been reached (their snapshots are recorded)."""
        return int(self.st.ist[S.I_BATCH])

    def merge_batches(self) -> None:
        """Merge the (all finished) micro-batches in pairs; the next ones are twice as long."""
        mt = self.mt
        total = mt.bounds.size
        half = total // 2
        width = float(mt.bounds[-1] - mt.bounds[-2]) if total > 1 else float(mt.bounds[0])
        mt.snap[:half] = mt.snap[1::2]
        mt.snap[half:] = 0.0
        mt.snap_cnt[:half] = mt.snap_cnt[1::2]
        mt.snap_cnt[half:] = 0
        bounds = np.empty(total)
        bounds[:half] = mt.bounds[1::2]
        bounds[half:] = mt.bounds[-1] + 2.0 * width * np.arange(1, total - half + 1)
        self.mt = mt._replace(bounds=bounds)
        self.st.ist[S.I_BATCH] = half

    def grow_queues(self, need: int = 0) -> None:
        """Double the queue buffers (at least to ``need`` entries), keeping FIFO order."""
        st = self.st
        nj, cap = st.qbuf.shape
        new_cap = max(2 * cap, need)
        out = np.zeros((nj, new_cap))
        for j in range(nj):
            idx = (st.qhead[j] + np.arange(st.qlen[j])) % cap
            out[j, : st.qlen[j]] = st.qbuf[j, idx]
        st.qhead[:] = 0
        self.st = st._replace(qbuf=out)

    def empty_log(self) -> None:
        """Move the kernel's placement log to :attr:`log_chunks`."""
        n = int(self.st.ist[S.I_LOG])
        if n:
            self.log_chunks.append(
                (self.lg.t[:n].copy(), self.lg.ev[:n].copy(), self.lg.slots[:n].copy())
            )
            self.st.ist[S.I_LOG] = 0

    def log(self, kind: int, tid: int) -> None:
        """Record a start or end of the job in template ``tid`` now (MaxWeight's frames)."""
        if not self.params.record:
            return
        if self.st.ist[S.I_LOG] >= self.lg.t.size:
            self.empty_log()
        K.log_event(self.st, self.mo, self.lg, kind, tid, self.now)

    # Views used by the result, MaxWeight and the invariant tests. ------------------------
    @property
    def events(self) -> int:
        """Events simulated so far."""
        return int(self.st.ist[S.I_EVENTS])

    def templates(self, j: int, actual: bool) -> np.ndarray:
        """Ids of the actual (or virtual) type-j templates."""
        c = 0 if actual else 1
        return self.st.tlists[j, c, : self.st.ntl[j, c]].copy()

    def machines_of(self, tid: int) -> np.ndarray:
        """Machine of each node of template ``tid``."""
        k = self.mo.knodes[self.st.t_type[tid]]
        return self.mo.slot_machine[self.st.t_slots[tid, :k]]

    def queue(self, j: int) -> np.ndarray:
        """Entry times of the queued type-j jobs, head first."""
        st = self.st
        cap = st.qbuf.shape[1]
        return st.qbuf[j, (st.qhead[j] + np.arange(st.qlen[j])) % cap]


def _model(cluster: Cluster, job_types: list[JobType], params: EngineParams) -> S.Model:
    """Build the kernel's model record: rates, graphs in flat arrays, the cluster."""
    tops = [j.topology for j in job_types]
    nj, nm = len(job_types), cluster.machines
    knodes = np.array([t.nodes for t in tops], dtype=np.int64)
    edge_lists = [t.edge_array() for t in tops]
    adj_off, adj = [0], []
    adj_w: list[float] = []
    for t in tops:
        for v in range(t.nodes):
            nbrs = sorted(t.graph.neighbors(v))
            adj.extend(nbrs)
            adj_w.extend(t.graph.edges[v, w].get("weight", 1.0) for w in nbrs)
            adj_off.append(adj_off[-1] + len(nbrs))
    lam = np.array([j.arrival_rate for j in job_types])
    # row 0: frozen weights (if any); row 1: the bias h_j of each type
    wpar = np.zeros((2, nj))
    if params.frozen_weights is not None:
        wpar[0] = params.frozen_weights
    wpar[1] = np.broadcast_to(np.asarray(params.h, dtype=float), (nj,))
    i64 = np.int64
    return S.Model(
        lam=lam,
        mu=np.array([1.0 / j.mean_duration for j in job_types]),
        nu=np.asarray(params.clock_rates if params.clock_rates is not None else lam, dtype=float),
        wpar=wpar,
        par=params.par(cluster),
        knodes=knodes,
        edges=np.vstack([e.reshape(-1, 2) for e in edge_lists]).astype(i64),
        edge_off=np.concatenate([[0], np.cumsum([len(e) for e in edge_lists])]).astype(i64),
        node_off=np.concatenate([[0], np.cumsum(knodes)]).astype(i64),
        bfs=np.concatenate([np.asarray(bfs_order(t), dtype=i64) for t in tops]),
        adj_off=np.asarray(adj_off, dtype=i64),
        adj=np.asarray(adj, dtype=i64),
        adj_w=np.asarray(adj_w, dtype=float),
        ew=np.concatenate([t.edge_weights() for t in tops]).astype(float),
        weighted=np.array([int(t.weighted) for t in tops], dtype=i64),
        ndem=np.vstack([t.demands() for t in tops]).astype(float),
        ras=np.concatenate([np.asarray(ras_order(t), dtype=i64) for t in tops]),
        rack=np.asarray(cluster.rack, dtype=i64),
        slot_machine=np.repeat(np.arange(nm), cluster.slots).astype(i64),
        slot_first=np.concatenate([[0], np.cumsum(cluster.slots)]).astype(i64),
        dist=np.ascontiguousarray(cluster.distance, dtype=np.float64),
        mcap=np.ascontiguousarray(cluster.capacity, dtype=np.float64),
    )


def _state(cluster: Cluster, mo: S.Model, horizon: float, warmup: float) -> S.State:
    """Build the initial state: every slot free, no template, empty queues."""
    i64 = np.int64
    s, nm, nj = cluster.total_slots, cluster.machines, mo.lam.size
    kmax = int(mo.knodes.max())
    mslots = np.full((nm, int(cluster.slots.max())), -1, dtype=i64)
    spos = np.zeros(s, dtype=i64)
    for m in range(nm):
        mine = np.flatnonzero(mo.slot_machine == m)
        mslots[m, : mine.size] = mine
        spos[mine] = np.arange(mine.size)
    rows = s // int(mo.knodes.min()) + 1
    fst = np.zeros(S.N_FST)
    fst[S.F_TWARM], fst[S.F_TEND], fst[S.F_TSTOP] = warmup, horizon, np.inf
    ist = np.zeros(S.N_IST, dtype=i64)
    ist[S.I_TFREE] = rows
    ist[S.I_FREE_SLOTS] = s
    # rows indexed by machine, rack, job type, graph node, and (RAS) the 3 resource columns
    wide = max(nm, cluster.racks, nj, kmax, 3)
    return S.State(
        owner=np.full(s, -1, dtype=i64),
        mslots=mslots,
        mfree=cluster.slots.astype(i64).copy(),
        spos=spos,
        mres=np.ascontiguousarray(cluster.capacity, dtype=np.float64).copy(),
        rfree=np.bincount(cluster.rack, weights=cluster.slots, minlength=cluster.racks).astype(i64),
        t_type=np.zeros(rows, dtype=i64),
        t_state=np.zeros(rows, dtype=i64),
        t_cost=np.zeros(rows),
        t_slots=np.zeros((rows, kmax), dtype=i64),
        tfree=np.arange(rows - 1, -1, -1, dtype=i64),
        tlists=np.zeros((nj, 2, rows), dtype=i64),
        tpos=np.zeros(rows, dtype=i64),
        ntl=np.zeros((nj, 2), dtype=i64),
        qbuf=np.zeros((nj, 1024)),
        qhead=np.zeros(nj, dtype=i64),
        qlen=np.zeros(nj, dtype=i64),
        cur_cost=np.zeros(nj),
        t_job=np.full(rows, -1, dtype=i64),
        frame_q=np.full(nj, -1, dtype=i64),
        fst=fst,
        ist=ist,
        scratch=np.zeros(kmax, dtype=i64),
        # work rows indexed by machine, rack, job type and (greedy) graph node
        iwork=np.zeros((6, wide), dtype=i64),
        fwork=np.zeros((4, max(nm, 3))),
        favail=np.zeros((nm + cluster.racks, 3)),
        fkeys=np.zeros((nm + cluster.racks, 3)),
    )
