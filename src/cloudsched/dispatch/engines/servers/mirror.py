"""Slow pure-Python mirror of the dispatch simulator, for differential tests.

An order-faithful transliteration of the compiled per-server kernel (:mod:`.kernel`) and of
the built-in policies (:mod:`cloudsched.dispatch.builtin_policies`; the production
balancers' in :mod:`.mirror_reports`): the same algorithm and the same random draws in the
same order, written plainly: Python lists and deques, and time averages accumulated over
every level at every event (not lazily).  For the same seed it gives bit-identical response
times and message counts; time averages agree to rounding.  Micro-batch sums, snapshots and
the response-time histogram are rebuilt at the end from per-task records and per-arrival
snapshots (:mod:`.mirror_batches`), an independent check of the kernel's bookkeeping.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import InitialState, RawRun, RunSpec, TaskSource
from cloudsched.dispatch.engines.servers.mirror_balancers import BalancerRule
from cloudsched.dispatch.engines.servers.mirror_batches import final_width, hist_bin
from cloudsched.dispatch.engines.servers.mirror_reports import RULES
from cloudsched.dispatch.engines.servers.mirror_views import Views
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.workload.slowdown import Slowdown

__all__ = ["mirror_run"]


def _index(rng: np.random.Generator, n: int) -> int:
    return min(int(rng.random() * n), n - 1)


class _Reference(Views):
    def __init__(
        self,
        code: str,
        n: int,
        m: int,
        d: int,
        z: int,
        replace: bool,
        rng: np.random.Generator,
        speeds: np.ndarray | None = None,
        initial: InitialState | None = None,
        opt: tuple[float, ...] = (),
        slots: int = 0,
        slowdown: Slowdown | None = None,
    ) -> None:
        self.code, self.n, self.m, self.d, self.rng = code, n, m, d, rng
        self.replace = replace
        self.thresh = z if code == "jiq-threshold" else 0
        self.queues: list[deque[tuple[float, int, float]]] = [deque() for _ in range(n)]
        self.speeds = speeds
        self.slow = slowdown or Slowdown(1.0, 1.0, math.inf, math.inf)  # none: never
        self.slow_factor = self.slow.factors(n)
        self.done_at: dict[int, float] = {}  # general mode: completion time of each busy server
        self.busy: list[int] = []
        self.busy_pos = [-1] * n
        self.perm = list(range(n))
        self.dperm = list(range(m))
        # JSQ buckets: servers ordered by queue length; bucket L is order[start[L]:start[L+1]]
        self.order = list(range(n))
        self.where = list(range(n))
        self.start = [0] + [n] * 4
        self.jsq_min = 0
        self.iq: list[list[int]] = [[] for _ in range(m)]
        self.listed_in = [-1] * n
        self.rr = [0] * m
        self.messages = [0, 0, 0, 0]
        if code == "round-robin":
            self.rr = [_index(rng, n) for _ in range(m)]
        if initial is not None and initial.queues.size:
            sizes = iter(initial.services.tolist())
            for s in range(n):
                for _ in range(int(initial.queues[s])):
                    size = next(sizes) if speeds is not None else 0.0
                    self._enqueue(s, (0.0, -1, size), 0.0)
        self.rule: BalancerRule | None = None
        if code in RULES:  # a production balancer (its own mirror)
            self.held = [len(q) for q in self.queues]  # kept for the rule's probes
            self.rule = RULES[code](code, n, m, slots or n, opt, rng, speeds, self.held)
        if code.startswith("jiq"):
            given = initial is not None and initial.iqueue.size == n
            for s in range(n):
                if given:
                    assert initial is not None
                    if initial.iqueue[s] >= 0:
                        self.iq[int(initial.iqueue[s])].append(s)
                        self.listed_in[s] = int(initial.iqueue[s])
                elif len(self.queues[s]) <= self.thresh:
                    self._join(s, count=False)

    # I-queues ---------------------------------------------------------------------------
    def _choose_iqueue(self) -> int:
        if self.code != "jiq-sq":
            m = _index(self.rng, self.m)
        else:
            m = -1
            for k in range(self.d):
                j = k + _index(self.rng, self.m - k)
                self.dperm[j], self.dperm[k] = self.dperm[k], self.dperm[j]
                cand = self.dperm[k]
                if m < 0 or len(self.iq[cand]) < len(self.iq[m]):
                    m = cand
        return m

    def _unlist(self, s: int) -> None:
        members = self.iq[self.listed_in[s]]
        p = members.index(s)
        members[p] = members[-1]
        members.pop()
        self.listed_in[s] = -1

    def _join(self, s: int, count: bool) -> None:
        m = self._choose_iqueue()
        self.iq[m].append(s)
        self.listed_in[s] = m
        if count:
            self.messages[K.M_JOIN] += 1
            if self.code == "jiq-sq":
                self.messages[K.M_PROBE] += self.d

    # events -------------------------------------------------------------------------------
    def speed(self, s: int, now: float) -> float:
        """Speed of server ``s`` for a service starting at ``now`` (a slowdown's factor)."""
        scale = self.slow_factor[s] if self.slow.active(now) else 1.0
        return float(self.speeds[s] * scale)  # type: ignore[index]

    def _enqueue(self, s: int, task: tuple[float, int, float], now: float) -> int:
        """Append a task to server ``s``; return the previous queue length."""
        old = len(self.queues[s])
        self.queues[s].append(task)
        if old == 0:
            self.busy_pos[s] = len(self.busy)
            self.busy.append(s)
            if self.speeds is not None:
                self.done_at[s] = now + task[2] / self.speed(s, now)
        if self.code == "jsq":
            self._bucket_up(s, old)
        return old

    def arrival(
        self, now: float, u_arrival: float | None, measuring: bool, batch: int, size: float = 0.0
    ) -> None:
        code, rng = self.code, self.rng
        if u_arrival is not None:
            m = min(int(u_arrival * self.m), self.m - 1)
        elif code == "round-robin" or code.startswith("jiq") or self.rule is not None:
            m = _index(rng, self.m)
        else:
            m = 0
        from_iq = False
        if self.rule is not None:
            s = self.rule.choose(m, now)
            self.messages[K.M_PROBE] += self.rule.probes_sent if measuring else 0
        elif code == "random":
            s = _index(rng, self.n)
        elif code == "round-robin":
            s = self.rr[m]
            self.rr[m] = (s + 1) % self.n
        elif code == "jsq" and self.refresh > 0:  # the shortest on the board
            s = self.board_min[_index(rng, len(self.board_min))]
        elif code == "jsq":
            lo, hi = self.start[self.jsq_min], self.start[self.jsq_min + 1]
            s = self.order[lo + _index(rng, hi - lo)]
        elif code == "pod":
            s = self._probe()
            self.messages[K.M_PROBE] += self.d if measuring else 0
        elif self.iq[m]:
            s = self.iq[m][_index(rng, len(self.iq[m]))]
            self._unlist(s)
            from_iq = True
            if code == "jiq-original" and self.queues[s] and measuring:
                self.messages[K.M_STALE] += 1
        elif code == "jiq-pod":
            s = self._probe()
            self.messages[K.M_PROBE] += self.d if measuring else 0
        else:
            s = _index(rng, self.n)
        old = self._enqueue(s, (now, batch, size), now)
        if self.rule is not None:
            self.held[s] += 1
            self.rule.sent(s, m)
        if code.startswith("jiq") and code != "jiq-original":
            if self.listed_in[s] >= 0 and old + 1 > self.thresh:
                self._unlist(s)
                self.messages[K.M_DELETE] += 1 if measuring else 0
            elif from_iq and old + 1 <= self.thresh:
                self._join(s, measuring)

    def departure(self, s: int, now: float, measuring: bool) -> tuple[float, int]:
        arrived, batch, _ = self.queues[s].popleft()
        old = len(self.queues[s]) + 1
        if self.speeds is not None:
            if self.queues[s]:
                self.done_at[s] = now + self.queues[s][0][2] / self.speed(s, now)
            else:
                del self.done_at[s]
        if old == 1:
            last = self.busy.pop()
            if last != s:
                p = self.busy_pos[s]
                self.busy[p] = last
                self.busy_pos[last] = p
            self.busy_pos[s] = -1
        if self.code == "jsq":
            self._bucket_down(s, old)
        if self.code.startswith("jiq") and self.listed_in[s] < 0 and old - 1 <= self.thresh:
            self._join(s, measuring)
        if self.rule is not None:
            self.held[s] -= 1
            self.rule.left(s, now, now - arrived)
        return now - arrived, batch


def mirror_run(
    spec: RunSpec,
    rng: np.random.Generator,
    source: TaskSource | None = None,
    speeds: np.ndarray | None = None,
    initial: InitialState | None = None,
    slowdown: Slowdown | None = None,
) -> RawRun:
    """Run the mirror; same arguments and result as ``engine.run_once`` (built-in policies).

    With a task ``source`` it is the event-list (general) mode: the next event is the
    earlier of the next arrival and the earliest completion (found by a scan).
    """
    code, n, m = get_policy(spec.policy).name, spec.n, spec.m
    warm_tasks, end_tasks, t_warm, t_end = spec.warm_tasks, spec.end_tasks, spec.t_warm, spec.t_end
    general = source is not None
    if general:
        speeds = np.ones(n) if speeds is None else np.asarray(speeds, dtype=np.float64)
    args = (spec.d, spec.z, spec.replace, rng, speeds if general else None, initial)
    ref = _Reference(code, n, m, *args, spec.opt, spec.slots, slowdown)
    ref.refresh = spec.refresh
    chunk_arr, chunk_svc, last, ptr = np.zeros(0), np.zeros(0), False, 0
    lam_n = spec.rate * n
    now, arrivals, events, phase = 0.0, 0, 0, K.WARMUP
    base = warm_tasks  # arrivals before the window: measured ordinals count from here
    in_system_measured = 0
    times: list[float] = []
    orders: list[int] = []
    snaps: list[tuple[float, float, list[int], list[float]]] = []  # one per measured arrival
    area: list[float] = []
    p0_area = 0.0
    tw = te = 0.0
    closed_at = 0

    def levels() -> list[int]:
        top = max((len(q) for q in ref.queues), default=0)
        return [sum(1 for q in ref.queues if len(q) >= i) for i in range(top + 1)]

    def accumulate(until: float) -> None:
        nonlocal p0_area
        dt = until - now
        for i, c in enumerate(levels()):
            if i >= len(area):
                area.append(0.0)
            area[i] += c * dt
        p0_area += sum(1 for q in ref.iq if not q) * dt

    while not (phase == K.DRAIN and in_system_measured == 0):
        u, dep = 0.0, -1
        if source is not None:
            if phase == K.DRAIN:  # no arrivals in the drain
                na = np.inf
            else:
                if ptr >= chunk_arr.size and not last:
                    chunk_arr, chunk_svc, last = source.next_chunk()
                    ptr = 0
                na = chunk_arr[ptr] if ptr < chunk_arr.size else np.inf
            dep, nd = min(ref.done_at.items(), key=lambda kv: kv[1], default=(-1, np.inf))
            if na == np.inf and nd == np.inf:
                if phase == K.WARMUP:
                    phase, tw, base = K.MEASURE, now, arrivals
                    snaps.append((now, 0.0, [0, 0, 0, 0], []))
                if phase == K.MEASURE:
                    te, phase, closed_at = now, K.DRAIN, arrivals
                break
            is_arrival = bool(na <= nd)
            nxt = float(na if is_arrival else nd)
        else:
            lam = 0.0 if phase == K.DRAIN else lam_n  # no arrivals in the drain
            rate = lam + len(ref.busy)
            nxt = now + rng.standard_exponential() / rate
            u = rng.random() * rate
            is_arrival = u < lam
        if phase == K.WARMUP and (
            (end_tasks < 0 and nxt >= t_warm)
            or (end_tasks >= 0 and is_arrival and arrivals == warm_tasks)
        ):
            phase = K.MEASURE
            tw = now = t_warm if end_tasks < 0 else nxt
            base = arrivals
            snaps.append((tw, 0.0, [0, 0, 0, 0], []))
        if phase == K.MEASURE and (
            (end_tasks < 0 and nxt >= t_end)
            or (end_tasks >= 0 and is_arrival and arrivals == end_tasks)
        ):
            te = t_end if end_tasks < 0 else nxt
            accumulate(te)
            phase, closed_at = K.DRAIN, arrivals
        elif phase == K.MEASURE:
            accumulate(nxt)
        now = nxt
        ref.publish(now)
        events += 1
        measuring = phase == K.MEASURE
        if is_arrival:
            order = arrivals - base if measuring else -1
            if order > 0:
                snaps.append((now, p0_area, list(ref.messages), list(area)))
            arrivals += 1
            if source is not None:
                ref.arrival(now, None, measuring, order, float(chunk_svc[ptr]))
                ptr += 1
            else:
                ref.arrival(now, u / lam_n, measuring, order)
            in_system_measured += 1 if measuring else 0
        else:
            if source is None:
                dep = ref.busy[min(int(u - lam), len(ref.busy) - 1)]
            rt, order = ref.departure(dep, now, measuring)
            if order >= 0:
                times.append(rt)
                orders.append(order)
                in_system_measured -= 1
    measured = closed_at - base if phase == K.DRAIN else 0
    width = final_width(spec, measured)
    used = -(-measured // width)
    bsum, bcnt = np.zeros(used), np.zeros(used, dtype=np.int64)
    hist = np.zeros((K.H_SEGMENTS, K.H_BINS), dtype=np.int64)
    seg_batches = spec.micro // K.H_SEGMENTS
    for rt, order in zip(times, orders, strict=True):
        b = order // width
        bsum[b] += rt
        bcnt[b] += 1
        hist[b // seg_batches, hist_bin(rt)] += 1
    levels_seen = len(area)
    snap = np.zeros((used, K.N_SNAP))
    snap_area = np.zeros((used, levels_seen))
    for b in range(used):
        t, p0, msgs, ar = snaps[b * width]
        snap[b, K.SN_T], snap[b, K.SN_P0] = t, p0
        snap[b, K.SN_MSG : K.SN_MSG + 4] = msgs
        snap_area[b, : len(ar)] = ar
    return RawRun(
        response_times=np.array(times, dtype=np.float32)[np.argsort(orders, kind="stable")],
        batch_sum=bsum,
        batch_count=bcnt,
        width=width,
        measured=measured,
        snap=snap,
        snap_area=snap_area,
        hist=hist,
        segment_batches=seg_batches,
        tail_area=np.array(area),
        p0_area=p0_area,
        t_warm=tw,
        t_end=te,
        messages=np.array(ref.messages, dtype=np.int64),
        rt_min=min(times, default=math.inf),
        rt_max=max(times, default=0.0),
        events=events,
        wall_seconds=0.0,
    )
