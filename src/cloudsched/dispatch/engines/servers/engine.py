"""The per-server engine: every server's queue, every task and I-queue entry kept apart.

:class:`ServersRun` is one replication of the compiled kernel (:mod:`.kernel`), built once
per policy from its hooks, with one of two clocks: ``markov`` (Poisson arrivals and exp(1)
service at equal speeds: the next event drawn from the chain's total rate) or
``event-list`` (any laws, speeds, a replayed trace: the earliest of the next given arrival
and the completions).  It runs every policy, built-in or plug-in, and alone keeps every
response time (``keep_response_times``).

Measurement is kept in *micro-batches* of consecutive measured arrivals (at most
``RunSpec.micro`` of them; when they run out, neighbours are merged in pairs and the width
doubles), so that the warm-up can be cut and batch-means intervals formed after the run:
per micro-batch the sum and count of response times, and, at each micro-batch boundary, a
snapshot of the running integrals (time, number of servers with at least i tasks, empty
I-queues, messages).  Response times also go into a histogram per segment of micro-batches
(percentiles to 0.1%), and, on request, into per-task records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.choice import EngineInfo
from cloudsched.dispatch.engines.replication import (
    InitialState,
    RawRun,
    Replication,
    RunSpec,
    TaskSource,
)
from cloudsched.dispatch.engines.servers import records as S
from cloudsched.dispatch.initial import meanfield_state
from cloudsched.dispatch.plugin import PluginError, Policy
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.workload.slowdown import Slowdown
from cloudsched.progress import Progress

if TYPE_CHECKING:
    from cloudsched.dispatch.spec import SimulationSpec

__all__ = ["ENGINE", "ServersRun", "params", "run_once"]

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


def params(spec: RunSpec) -> S.Params:
    """Return the kernel's parameter record of ``spec``."""
    return S.Params(
        n=int(spec.n),
        m=int(spec.m),
        d=int(spec.d),
        z=int(spec.z),
        replace=bool(spec.replace),
        slots=int(spec.slots or spec.n),
        lam_n=float(spec.rate * spec.n),
        t_warm=float(spec.t_warm),
        t_end=float(spec.t_end),
        record=bool(spec.record),
        opt=np.array(spec.opt if spec.opt else (0.0,), dtype=np.float64),
    )


class ServersRun(Replication):
    """One replication of the per-server kernel (see the module notes).

    ``source``: the event-list clock's task source (None: the Markov clock); ``speeds``:
    each server's speed (event list); ``initial``: the tasks and I-queue entries at time 0.
    Tests inspect the state between events through :attr:`st` (the
    :class:`~cloudsched.dispatch.engines.servers.records.State` record).
    """

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        source: TaskSource | None = None,
        speeds: np.ndarray | None = None,
        initial: InitialState | None = None,
        slowdown: Slowdown | None = None,
    ) -> None:
        policy = get_policy(spec.policy)
        super().__init__(spec, policy, rng)
        self.source = source  # the event-list clock when a task source is given
        general = source is not None
        self._init, self._run = policy.kernels(general, spec.unchecked)
        self.st = _new_state(spec, policy, initial, speeds, general, slowdown)
        self.mt = _new_meter(spec, int(self.st.cnt.size))
        self.tasks = S.Tasks(np.zeros(0), np.zeros(0))  # empty: the first event asks for one
        self.par = params(spec)
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
            general,
        )
        self.ctl[R.C_BUDGET] = 0
        self._step()  # compile

    def _step(self) -> int:
        return int(
            self._call(self._run, self.st, self.mt, self.tasks, self.par, self.ctl, self.rng)
        )

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
        if status == R.BAD_SERVER:
            bad = int(ist[R.I_BAD])
            raise PluginError(
                self.policy.name, f"choose returned server {bad}, outside [0, {self.n - 1}]"
            )
        if status == R.NEED_POOL:
            self._room(st.pool.nbytes, "pool")
            old = st.pool.shape[0]
            grown = np.zeros((2 * old, S.POOL_COLS))
            grown[:old] = st.pool
            grown[old:, S.P_NEXT] = np.arange(old + 1, 2 * old + 1)
            grown[-1, S.P_NEXT] = -1
            self.st = st._replace(pool=grown)
            ist[R.I_POOL_FREE] = old
        elif status == R.NEED_ARENA:
            size = 2 * st.arena.size + 8 * int(ist[R.I_MAXCAP])
            self._room(8.0 * size, "the I-queues")
            self.st = st._replace(arena=_grow(st.arena, size, 0))
        elif status == R.NEED_LEVELS:
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
                last=_grow(mt.last, new, st.fst[R.F_NOW]),
                snap_area=grown,
            )
        elif status == R.NEED_TASKS:
            assert self.source is not None
            arr, svc, last = self.source.next_chunk()
            self.tasks = S.Tasks(arr, svc)
            ist[R.I_TASK_PTR] = 0
            self.ctl[R.C_LAST_CHUNK] = int(last)
        elif status == R.BUFFER_FULL:
            old_buf = self.mt.buf
            self._room(8.0 * (old_buf.size // 2 + 1024), "the response times kept")
            self.mt = self.mt._replace(
                buf=_grow(old_buf, old_buf.size + old_buf.size // 2 + 1024, np.nan)
            )
        else:  # pragma: no cover - the kernel returns only the codes above
            super()._grow(status)

    # -- what the shared loop reads ---------------------------------------------------------
    @property
    def measuring(self) -> bool:
        """Whether the measurement window is open."""
        return int(self.st.ist[R.I_PHASE]) == R.MEASURE

    def complete_batches(self) -> int:
        """Micro-batches whose arrivals have all arrived and left (a prefix of them)."""
        width, full = self.width, self.measured // self.width
        done = np.flatnonzero(self.mt.bcnt[:full] != width)
        return int(done[0]) if done.size else full

    def _records(self, measured: int) -> np.ndarray:
        return self.mt.buf[:measured] if self.spec.record else self.mt.buf[:0]

    def _rt_range(self) -> tuple[float, float]:
        return float(self.st.fst[R.F_RT_MIN]), float(self.st.fst[R.F_RT_MAX])

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
        free, k = 0, int(self.st.ist[R.I_POOL_FREE])
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
    slowdown: Slowdown | None = None,
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
        mem=np.zeros(policy.memory_size(n, m, spec.slots), i64),
        fmem=np.zeros(policy.fmemory_size(n, m, spec.slots)),
        heap=np.zeros(n if general else 1, i64),
        hkey=np.zeros(n if general else 1),
        speed=np.ones(n) if speeds is None else np.asarray(speeds, dtype=np.float64),
        slow=np.ones(n) if slowdown is None else slowdown.factors(n),
        board=np.zeros(n, i64),
        board_min=np.zeros(n, i64),
        pub=np.array([spec.refresh, 0.0, 0.0]),
        slow_t=np.array(
            [np.inf, np.inf, 0.0]
            if slowdown is None
            else [slowdown.start, slowdown.end, slowdown.period]
        ),
        ist=np.zeros(R.N_IST, i64),
        fst=np.zeros(R.N_FST),
        msg=np.zeros(4, i64),
    )


def _new_meter(spec: RunSpec, levels: int) -> R.Meter:
    """Allocate the measurement record (a response-time histogram per segment)."""
    expected = spec.expected_tasks()
    if not spec.record:
        buf = 1
    elif spec.end_tasks >= 0 and not spec.open_end:  # exactly the measured arrivals
        buf = max(0, spec.end_tasks - spec.warm_tasks) + 1  # + the one that closes it
    else:  # grown by half when the window outlasts it
        buf = int(min(_BUFFER, 1.05 * expected + 1024))
    hist = np.zeros((R.H_SEGMENTS, R.H_BINS), np.int64)
    return R.new_meter(spec.micro, levels, hist, buf)


def run_once(
    spec: RunSpec,
    rng: np.random.Generator,
    progress: Progress | None = None,
    source: TaskSource | None = None,
    speeds: np.ndarray | None = None,
    initial: InitialState | None = None,
    slowdown: Slowdown | None = None,
) -> RawRun:
    """Simulate one replication of fixed length to completion (see :class:`RunSpec`)."""
    if spec.open_end:
        raise ValueError("run_once needs a fixed run length; use stopping.run_until_precise")
    engine = ServersRun(spec, rng, source, speeds, initial, slowdown)
    while not engine.advance(_CHUNK_EVENTS):
        if progress is not None:
            progress(min(1.0, engine.events / engine.expected_events), "")
    if progress is not None:
        progress(1.0, "")
    return engine.result()


def _initial(spec: SimulationSpec, rng: np.random.Generator) -> InitialState | None:
    """Draw the start of one replication of ``spec`` from the mean field (None: empty)."""
    model = spec.model.meanfield
    if spec.start != "meanfield" or model is None:
        return None
    work, n, m = spec.work, spec.servers, spec.m
    event_list = spec.choice.clock == "event-list"
    service = work.service if event_list else None
    return meanfield_state(model, n, m, work.load, r=n / m, d=spec.d, rng=rng, service=service)


def _start(spec: SimulationSpec, run: RunSpec, rng: np.random.Generator, clock: str) -> ServersRun:
    """One replication of ``spec``: its start drawn first, then its task source."""
    init = _initial(spec, rng)
    source = spec.work.source(rng, spec.servers) if clock == "event-list" else None
    return ServersRun(run, rng, source, spec.work.speeds, init, spec.work.slowdown)


#: What the servers engine keeps, and what that buys.
SUMMARY = (
    "every server's queue and task kept apart: any policy (plug-ins too), any laws and speeds "
    "(the event list), per-task records"
)
#: The servers engine: name, summary, laws, speeds, delays, views, records, start.
ENGINE = EngineInfo("servers", SUMMARY, "any", "any", False, ("shared",), True, _start)
