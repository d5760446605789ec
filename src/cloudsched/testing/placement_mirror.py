"""Slow, plain references for the placement code, used by differential and oracle tests.

* :class:`ReferencePlacement`: the event loop of :mod:`cloudsched.placement._kernel` written
  with Python sets, lists and deques (DGP, dgp-clock, Storm default, greedy).  Same draws in
  the same order, so for one seed it gives the same counts and time averages.  It exposes the
  configuration (:meth:`ReferencePlacement.configuration`) for the product-form test.
* The exhaustive oracles (max-weight configuration, DGP's product form) live in
  :mod:`cloudsched.testing.placement_oracles`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from cloudsched.placement import state as K
from cloudsched.placement.baselines import bfs_order, greedy, resource_aware, storm_default
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology
from cloudsched.placement.workload import JobType

__all__ = ["BASELINES", "ReferencePlacement"]

BASELINES = ("storm-default", "greedy", "resource-aware")


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


class ReferencePlacement:
    """The placement chain, one event per :meth:`step`; templates are ``(type, slots)``."""

    def __init__(
        self,
        cluster: Cluster,
        job_types: Sequence[JobType],
        policy: str,
        rng: np.random.Generator,
        *,
        beta: float = 0.1,
        alpha: float = 0.2,
        h: float | Sequence[float] = 0.0,
        epsilon: float = 0.5,
        f: str = "log",
        virtual_clock: bool = True,
        frozen_weights: Sequence[float] | None = None,
        proposal: str = "uniform",
        locality: float = 0.9,
        correct: bool = True,
        warmup: float = 0.0,
        horizon: float = math.inf,
    ) -> None:
        self.cluster, self.jobs, self.policy, self.rng = cluster, list(job_types), policy, rng
        self.beta, self.alpha, self.eps, self.f = beta, alpha, epsilon, f
        self.h = [float(x) for x in np.broadcast_to(np.asarray(h, float), (len(self.jobs),))]
        self.vclock = virtual_clock
        self.frozen = frozen_weights
        # local proposals; ``correct=False`` drops their Metropolis-Hastings correction (so
        # that a test can show the product-form check would catch it)
        self.local, self.theta, self.correct = proposal == "local", locality, correct
        self.order = [bfs_order(jt.topology) for jt in job_types]
        self.res_free = cluster.capacity.copy()
        self.warmup, self.horizon = warmup, horizon
        self.done = False
        self.machine = np.repeat(np.arange(cluster.machines), cluster.slots)
        self.nslots = cluster.total_slots
        nj = len(job_types)
        self.lam = [j.arrival_rate for j in job_types]
        self.mu = [1.0 / j.mean_duration for j in job_types]
        self.owner: list[int] = [-1] * self.nslots
        self.slots_of: dict[int, tuple[int, ...]] = {}
        self.type_of: dict[int, int] = {}
        self.cost_of: dict[int, float] = {}
        self.lists: list[list[list[int]]] = [[[], []] for _ in range(nj)]  # actual, virtual
        self.free_ids = list(range(self.nslots // min(j.topology.nodes for j in job_types) + 1))
        self.free_ids.reverse()
        self.queues: list[deque[float]] = [deque() for _ in range(nj)]
        self.now = 0.0
        self.area = np.zeros((nj, K.N_ACC))
        self.count = np.zeros((nj, K.N_CNT), dtype=np.int64)

    # Templates ---------------------------------------------------------------------------
    def _add(self, j: int, slots: Sequence[int], state: int) -> None:
        tid = self.free_ids.pop()
        dem = self.jobs[j].topology.demands()
        for v, s in enumerate(slots):
            self.owner[s] = tid
            self.res_free[self.machine[s]] -= dem[v]
        self.slots_of[tid], self.type_of[tid] = tuple(slots), j
        self.cost_of[tid] = self._cost(j, slots)
        self.lists[j][2 - state].append(tid)

    def _unlist(self, tid: int, which: int) -> None:  # swap-remove, as the kernel does
        lst = self.lists[self.type_of[tid]][which]
        i = lst.index(tid)
        lst[i] = lst[-1]
        lst.pop()

    def _remove(self, tid: int, which: int) -> None:
        self._unlist(tid, which)
        dem = self.jobs[self.type_of[tid]].topology.demands()
        for v, s in enumerate(self.slots_of.pop(tid)):
            self.owner[s] = -1
            self.res_free[self.machine[s]] += dem[v]
        self.free_ids.append(tid)

    def _cost(self, j: int, slots: Sequence[int]) -> float:
        return self.cluster.cost(self.jobs[j].topology, self.machine[list(slots)])

    def _weight(self, j: int) -> float:
        if self.frozen is not None:
            return float(self.frozen[j])
        f = math.log1p if self.f == "log" else float
        q = [len(x) for x in self.queues]
        if q[j] == 0:  # the floor protects only types with waiting jobs
            return self.alpha * f(self.h[j])
        top = self.eps / (4 * len(q)) * f(max(q) + self.h[j])
        return self.alpha * max(f(q[j] + self.h[j]), top)

    def _fill(self, j: int, measuring: bool) -> None:
        while self.queues[j] and self.lists[j][1]:
            tid = self.lists[j][1][-1]
            self._unlist(tid, 1)
            self.lists[j][0].append(tid)
            entered = self.queues[j].popleft()
            if measuring:
                self.count[j, K.C_PLACED] += 1
                self.area[j, K.A_WAIT] += self.now - entered

    def _index(self, n: int) -> int:
        return min(int(self.rng.random() * n), n - 1)

    def _free(
        self, taken: dict[int, int], machine: int | None = None, rack: int | None = None
    ) -> list[int]:
        """Free slots not drawn yet (of one machine, one rack, or all), in slot order."""
        return [
            s
            for s in range(self.nslots)
            if self.owner[s] == -1
            and s not in taken.values()
            and (machine is None or self.machine[s] == machine)
            and (rack is None or self.cluster.rack[self.machine[s]] == rack)
        ]

    def _draw(self, j: int) -> list[int] | None:
        """Draw the proposal's slot per node (uniform or local); None when it fails."""
        top = self.jobs[j].topology
        taken: dict[int, int] = {}  # node -> slot
        if self.local:
            if top.nodes > sum(1 for s in self.owner if s == -1):
                return None
            prev = -1
            for v in self.order[j]:
                s = -1
                if prev >= 0:
                    m = int(self.machine[taken[prev]])
                    here = self._free(taken, machine=m)
                    if here and self.rng.random() < self.theta:
                        s = here[self._index(len(here))]
                    else:
                        near = self._free(taken, rack=int(self.cluster.rack[m]))
                        if near and self.rng.random() < self.theta:
                            s = near[self._index(len(near))]
                if s < 0:
                    anywhere = self._free(taken)
                    s = anywhere[self._index(len(anywhere))]
                taken[v], prev = s, v
                if not self._room(top, taken):
                    return None
        else:
            for v in range(top.nodes):
                s = self._index(self.nslots)
                if self.owner[s] != -1 or s in taken.values():
                    return None
                taken[v] = s
                if not self._room(top, taken):
                    return None
        return [taken[v] for v in range(top.nodes)]

    def _room(self, top: Topology, taken: dict[int, int]) -> bool:
        need = np.zeros_like(self.res_free)
        for v, s in taken.items():
            need[self.machine[s]] += top.demands()[v]
        return bool(np.all(need <= self.res_free))

    def log_q(self, j: int, slots: Sequence[int], held: bool) -> float:
        """``log q(A | C)`` of the local proposal (see :mod:`.._kernel_propose`), plainly."""
        order = self.order[j]
        owner = list(self.owner)
        if held:
            for s in slots:
                owner[s] = -1
        free = [s for s in range(self.nslots) if owner[s] == -1]
        out = -math.log(len(free))
        drawn = {slots[order[0]]}
        rack = self.cluster.rack
        for i in range(1, len(order)):
            m_prev, m_now = self.machine[slots[order[i - 1]]], self.machine[slots[order[i]]]
            here = [s for s in free if self.machine[s] == m_prev and s not in drawn]
            near = [s for s in free if rack[self.machine[s]] == rack[m_prev] and s not in drawn]
            p = 1.0 / (len(free) - i)
            if near:
                p = (1.0 - self.theta) * p + (
                    self.theta / len(near) if rack[m_now] == rack[m_prev] else 0.0
                )
            if here:
                p = (1.0 - self.theta) * p + (self.theta / len(here) if m_now == m_prev else 0.0)
            out += math.log(p)
            drawn.add(slots[order[i]])
        return out

    def _log_ratio(self, j: int, w: float, slots: Sequence[int], held: bool) -> float:
        z = w / self.beta
        if self.local and self.correct:
            z -= self.jobs[j].topology.nodes * math.log(self.nslots) + self.log_q(j, slots, held)
        return z

    def _propose(self, j: int, measuring: bool) -> None:
        drawn = self._draw(j)
        if measuring:
            self.count[j, K.C_TRIED] += 1
        if drawn is None:
            if measuring:
                self.count[j, K.C_FAILED] += 1
            return
        w = self._weight(j) - self._cost(j, drawn)
        if self.rng.random() < _sigmoid(self._log_ratio(j, w, drawn, False)):
            self._add(j, drawn, K.VIRTUAL)
            if measuring:
                self.count[j, K.C_ADDED] += 1
        elif measuring:
            self.count[j, K.C_REJECTED] += 1

    def _place_waiting(self, measuring: bool) -> None:
        blocked: set[int] = set()
        while True:
            heads = [(q[0], j) for j, q in enumerate(self.queues) if q and j not in blocked]
            if not heads:
                return
            _, j = min(heads)
            top = self.jobs[j].topology
            free = np.bincount(
                self.machine[[s for s in range(self.nslots) if self.owner[s] == -1]],
                minlength=self.cluster.machines,
            )
            rule = {
                "storm-default": storm_default,
                "greedy": greedy,
                "resource-aware": resource_aware,
            }[self.policy]
            where = rule(top, free, self.cluster, self.res_free)
            if where is None:
                blocked.add(j)
                continue
            taken: list[int] = []
            for m in where:
                free_here = [s for s in range(self.nslots) if self.machine[s] == m]
                taken.append(next(s for s in free_here if self.owner[s] == -1 and s not in taken))
            self._add(j, taken, K.VIRTUAL)
            self._fill(j, measuring)

    # Events ------------------------------------------------------------------------------
    def configuration(self) -> list[tuple[int, tuple[int, ...]]]:
        """List the templates present (actual and virtual) as ``(type, slot of each node)``."""
        return sorted((self.type_of[t], s) for t, s in self.slots_of.items())

    def step(self) -> float:
        """Apply one event; return the time spent in the previous state.

        At the horizon no event is applied and ``done`` becomes True.
        """
        nj = len(self.jobs)
        clock = self.policy == "dgp-clock"
        rates = []
        for j in range(nj):
            rates.append(("arr", j, self.lam[j]))
            rates.append(("dep", j, self.mu[j] * len(self.lists[j][0])))
            if self.vclock:
                rates.append(("virt", j, self.mu[j] * len(self.lists[j][1])))
            if clock:
                rates.append(("tick", j, self.lam[j]))
        total = sum(r for _, _, r in rates)
        t = self.now + self.rng.standard_exponential() / total
        if t >= self.horizon:
            t, self.done = self.horizon, True
        if t > self.warmup:
            dt = t - max(self.now, self.warmup)
            for j in range(nj):
                self.area[j, K.A_QUEUE] += len(self.queues[j]) * dt
                self.area[j, K.A_ACTUAL] += len(self.lists[j][0]) * dt
                self.area[j, K.A_VIRTUAL] += len(self.lists[j][1]) * dt
                self.area[j, K.A_COST] += sum(self.cost_of[x] for x in self.lists[j][0]) * dt
        held, self.now = t - self.now, t
        if self.done:
            return held
        measuring = t > self.warmup
        u = self.rng.random() * total
        kind, j, idx = "arr", nj - 1, 0
        for name, jj, r in rates:
            if u < r or (name == "tick" and jj == nj - 1):
                kind, j = name, jj
                idx = (
                    min(int(u / self.mu[jj]), len(self.lists[jj][0 if name == "dep" else 1]) - 1)
                    if name in ("dep", "virt")
                    else 0
                )
                break
            u -= r
        decide = -1
        if kind == "arr":
            self.queues[j].append(t)
            if measuring:
                self.count[j, K.C_ARRIVED] += 1
            if self.policy == "dgp":
                self._propose(j, measuring)
        elif kind == "dep":
            tid = self.lists[j][0][idx]
            if measuring:
                self.count[j, K.C_DEPARTED] += 1
            self._unlist(tid, 0)
            self.lists[j][1].append(tid)
            if self.policy in BASELINES:
                self._remove(tid, 1)
            else:
                decide = tid
        elif kind == "virt":
            decide = self.lists[j][1][idx]
        else:
            self._propose(j, measuring)
        if decide >= 0:
            w = self._weight(j) - self.cost_of[decide]
            if self.rng.random() >= _sigmoid(self._log_ratio(j, w, self.slots_of[decide], True)):
                self._remove(decide, 1)
                if measuring:
                    self.count[j, K.C_REMOVED] += 1
        if self.policy in BASELINES:
            if kind in ("arr", "dep"):
                self._place_waiting(measuring)
        else:
            self._fill(j, measuring)
        return held
