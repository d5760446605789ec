"""The occupancy-count engine: one replication of an exchangeable farm in O(longest queue).

:class:`CountsRun` runs :func:`cloudsched.dispatch.engines.counts.kernel.run_counts` in the
status loop every engine shares (:class:`~cloudsched.dispatch.engines.replication.Replication`),
so :mod:`cloudsched.dispatch.measure` and the summary treat it as any other.  It runs the
policies whose table row lists ``counts`` (random, pod, jsq, jiq, jiq-pod and jiq-sq) with
Poisson arrivals, exp(1) service and equal speeds (speed classes:
:mod:`cloudsched.dispatch.engines.classes`); its state and its cost per event do not depend
on N.

Response times are exact without per-task records: a task that joins behind ``k`` tasks
stays an Erlang(``k + 1``) time, so the histogram of the levels joined gives the
distribution as a mixture of Erlang laws, spread over the percentile bins of the per-server
engine (512 per octave) by their exact probabilities
(:func:`cloudsched.dispatch.engines.erlang.erlang_histogram`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.choice import EngineInfo
from cloudsched.dispatch.engines.counts import records as C
from cloudsched.dispatch.engines.counts.kernel import run_counts, shortest_sizes, uniform_sizes
from cloudsched.dispatch.engines.erlang import erlang_histogram
from cloudsched.dispatch.engines.replication import Replication, RunSpec
from cloudsched.dispatch.initial import meanfield_counts
from cloudsched.dispatch.policies import get_policy
from cloudsched.policy_table import with_capability
from cloudsched.resources import check_memory

if TYPE_CHECKING:
    from cloudsched.dispatch.spec import SimulationSpec

__all__ = ["ENGINE", "CountsRun", "grow_levels", "initial_counts"]

_LEVELS = 64


def grow_levels(a: np.ndarray, new: int, fill: float) -> np.ndarray:
    """Return ``a`` with its last axis grown to ``new`` entries (the new ones ``fill``)."""
    out = np.full((*a.shape[:-1], new), fill)
    out[..., : a.shape[-1]] = a
    return out


class CountsRun(Replication):
    """One replication on the occupancy counts (see the module notes).

    ``initial``: the number of servers holding each number of tasks at time 0 (None: all
    empty); ``iqueues``: the number of I-queues holding each number of entries (jiq,
    jiq-pod, jiq-sq; None: every idle server listed as the policy lists it, drawn here).
    """

    engine = "counts"
    par: Any  # its kernel's parameters (:mod:`.records`; the delay engine's extend them)

    def __init__(
        self,
        spec: RunSpec,
        rng: np.random.Generator,
        initial: np.ndarray | None = None,
        iqueues: np.ndarray | None = None,
    ) -> None:
        policy = get_policy(spec.policy)
        if not policy.builtin or policy.name not in with_capability(self.engine):
            raise ValueError(f"the {self.engine} engine does not run {policy.name}")
        if spec.record:
            raise ValueError(f"the {self.engine} engine keeps no per-task records")
        super().__init__(spec, policy, rng)
        self.par = C.params(spec, policy.name)
        levels = _LEVELS
        top = 0 if initial is None else int(np.flatnonzero(initial).max(initial=0))
        while levels < top + 4:
            levels *= 2
        cnt = np.zeros(levels)
        if initial is None:
            cnt[0] = spec.n
        else:
            given = np.asarray(initial, dtype=np.float64)[: top + 1]
            at_least = np.cumsum(given[::-1])[::-1]
            cnt[: at_least.size] = at_least
        iq = _iqueue_counts(self.par, spec, cnt, iqueues, rng)
        ist = np.zeros(R.N_IST, np.int64)
        ist[R.I_MAXLEN] = top
        ist[R.I_MAXCAP] = int(np.flatnonzero(iq).max(initial=0))
        self.st = C.State(cnt, iq, ist, np.zeros(R.N_FST), np.zeros(4, np.int64))
        self.mt = R.new_meter(spec.micro, levels, self._joins(levels))

    def _joins(self, levels: int) -> np.ndarray:
        """Allocate the table of levels joined per histogram segment."""
        return np.zeros((R.H_SEGMENTS, levels))

    def _step(self) -> int:
        return int(self._call(run_counts, self.st, self.mt, self.ctl, self.par, self.rng))

    def _grow(self, status: int) -> None:
        """Grow the levels or the I-queue sizes the kernel ran out of."""
        if status == R.NEED_LEVELS:
            self._more_levels(2 * self.st.cnt.size)
        elif status == R.NEED_ARENA:  # a longer I-queue than the table holds
            iq = self.st.iq
            grown = np.zeros(2 * iq.size)
            grown[: iq.size] = iq
            self.st = self.st._replace(iq=grown)
        else:  # pragma: no cover - the kernel returns no other code
            super()._grow(status)

    def _more_levels(self, new: int) -> None:
        """Grow every table indexed by level to ``new`` levels."""
        mt = self.mt
        check_memory(
            "load",
            f"{self.policy.name} at load {self.spec.rate:g}",
            8.0 * new * (mt.snap.shape[0] + R.H_SEGMENTS + 4),
            "the longest queue's levels (growing: is the farm overloaded?)",
        )
        self.st = self.st._replace(cnt=grow_levels(self.st.cnt, new, 0.0))
        self.mt = mt._replace(
            area=grow_levels(mt.area, new, 0.0),
            last=grow_levels(mt.last, new, self.st.fst[R.F_NOW]),
            hist=grow_levels(mt.hist, new, 0.0),
            snap_area=grow_levels(mt.snap_area, new, 0.0),
        )

    def _histogram(self) -> np.ndarray:
        return erlang_histogram(self.mt.hist, None)


def _iqueue_counts(
    par: C.Params,
    spec: RunSpec,
    cnt: np.ndarray,
    given: np.ndarray | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """I-queues per number of entries at time 0 (``[M]``: none listed, no I-queues)."""
    out = np.zeros(64)
    if not par.iqueues:
        out[0] = spec.m
        return out
    if given is None:  # every idle server joins a uniform I-queue (jiq-sq: the shortest of d)
        idle = round(cnt[0] - cnt[1])
        mean = idle / spec.m  # no I-queue exceeds this bound but with probability < 1e-40
        out = np.zeros(min(idle, int(mean + 20.0 * math.sqrt(mean) + 64)) + 2)
        if par.join == C.JOIN_SHORTEST:
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


def initial_counts(
    spec: SimulationSpec, rng: np.random.Generator
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Servers per queue length and I-queues per size at time 0 of ``spec`` (None: empty)."""
    model = spec.model.meanfield
    if spec.start != "meanfield" or model is None:
        return None, None
    n, m = spec.servers, spec.m
    return meanfield_counts(model, n, m, spec.work.load, r=n / m, d=spec.d, rng=rng)


def _start(spec: SimulationSpec, run: RunSpec, rng: np.random.Generator, clock: str) -> CountsRun:
    """One replication of ``spec``: the counts at time 0 drawn first."""
    return CountsRun(run, rng, *initial_counts(spec, rng))


#: What the counts engine keeps, and what that buys.
SUMMARY = "servers as occupancy counts: O(longest queue) state and cost per event at any N"
#: The counts engine: name, summary, laws, speeds, delays, views, records, start.
ENGINE = EngineInfo("counts", SUMMARY, "markov", "equal", False, ("shared",), False, _start)
