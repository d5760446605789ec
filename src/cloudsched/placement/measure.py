"""From a placement run to steady-state estimates, and when an open-ended run may stop.

The dispatch simulator's rules (:mod:`cloudsched.steadystate`) applied to the placement's
time integrals.

A run is recorded from time 0 in up to 1024 micro-batches of equal length (merged in pairs,
their length doubling, when an open-ended run fills them).  The warm-up is cut where MSER
finds it on the total queue length and on the cost rate (or at a given time); the mean queue
length, the cost rate and the cost per job in service get batch-means intervals, certified
as in the dispatch simulator.  An open-ended run stops at the first checkpoint (every 15% of
time) where the queue and cost intervals are certified, the cost rate's half-width is at
most ``precision`` of it and the queue's at most ``precision`` of the jobs in the system, or
at ``max_horizon``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched.placement import state as K
from cloudsched.placement.engine import PlacementEngine
from cloudsched.placement.maxweight import FrameController
from cloudsched.progress import Progress
from cloudsched.results import interval
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS, SeriesEstimate, analyse_series, mser

__all__ = ["Estimates", "estimates", "precision_of", "run_until_precise", "summary_fields"]

#: Checkpoints of an open-ended run are this factor apart in time.
CHECK_GROWTH = 1.15
#: The first checkpoint comes after this many micro-batches.
FIRST_CHECK_BATCHES = 64
_CHUNK_EVENTS = 200_000
#: Below this served fraction (jobs left / jobs arrived in the window) a warning is given.
SERVED_WARNING = 0.98


def _starts(eng: PlacementEngine, k: int) -> np.ndarray:
    """Start of each of the first ``k`` micro-batches and the end of the last."""
    return np.concatenate([[0.0], eng.mt.bounds[:k]])


@dataclass(frozen=True)
class Estimates:
    """The warm-up cut and the three interval estimates of the first ``k`` micro-batches."""

    k: int
    cut: int
    found: bool
    queue: SeriesEstimate
    cost: SeriesEstimate
    per_job: SeriesEstimate

    def certified(self, name: str) -> bool:
        """Batches long enough and independent (warm-up and drift are judged for the run)."""
        e: SeriesEstimate = getattr(self, name)
        return e.long_enough and e.independent and math.isfinite(e.half_width)

    @property
    def steady(self) -> bool:
        """Warm-up found and neither the queue nor the cost drifts."""
        return self.found and not (self.queue.drifting or self.cost.drifting)


def estimates(
    eng: PlacementEngine, k: int, *, batches: int, relaxation: float, warmup: float | None
) -> Estimates:
    """Cut the warm-up of the first ``k`` micro-batches and estimate queue and cost.

    ``warmup=None`` cuts the warm-up by MSER; a fraction in [0, 1) drops that share of the
    micro-batches instead (no detection).
    """
    starts = _starts(eng, k)
    width = np.diff(starts)
    per = np.diff(eng.mt.snap[:k].sum(axis=1), axis=0, prepend=0.0)  # (k, N_ACC)
    if warmup is not None:
        cut, found = min(math.ceil(warmup * k - 1e-9), k - 2), True
    else:
        d_queue, f_queue = mser(per[:, K.A_QUEUE] / width)
        d_cost, f_cost = mser(per[:, K.A_COST] / width)
        cut, found = max(d_queue, d_cost), f_queue and f_cost

    def est(num: np.ndarray, den: np.ndarray) -> SeriesEstimate:
        return analyse_series(
            num, den, starts, batches=batches, relaxation=relaxation, truncation=cut
        )

    return Estimates(
        k=k,
        cut=cut,
        found=found,
        queue=est(per[:, K.A_QUEUE], width),
        cost=est(per[:, K.A_COST], width),
        per_job=est(per[:, K.A_COST], per[:, K.A_ACTUAL]),
    )


def _in_service(eng: PlacementEngine, est: Estimates) -> float:
    starts = _starts(eng, est.k)
    area = eng.mt.snap[est.k - 1, :, K.A_ACTUAL].sum()
    if est.cut > 0:
        area -= eng.mt.snap[est.cut - 1, :, K.A_ACTUAL].sum()
    return float(area / (starts[-1] - starts[est.cut]))


def precision_of(eng: PlacementEngine, est: Estimates) -> float:
    """Return the larger of the two relative half-widths: the cost rate's, and the queue's.

    The queue's half-width is taken relative to the mean number of jobs in the system.
    """
    cost = est.cost.half_width / abs(est.cost.mean) if est.cost.mean else 0.0
    jobs = est.queue.mean + _in_service(eng, est)
    queue = est.queue.half_width / jobs if jobs > 0 else math.inf
    return max(cost, queue)


def run_until_precise(
    eng: PlacementEngine,
    *,
    width: float,
    batches: int,
    relaxation: float,
    precision: float,
    max_horizon: float,
    progress: Progress | None = None,
) -> tuple[int, str]:
    """Run an open-ended placement simulation until the stopping rule holds.

    The engine's micro-batches must be ``width`` long from time 0.  Returns the number of
    micro-batches behind the estimate and the reason the run stopped (``precision`` or
    ``max_horizon``); the run ends at the last of those micro-batches.
    """
    k_check = FIRST_CHECK_BATCHES
    while True:
        if eng.batches_done == eng.mt.bounds.size:  # every micro-batch full: merge in pairs
            eng.merge_batches()
            width *= 2.0
        target = min(float(eng.mt.bounds[k_check - 1]), max_horizon)
        eng.extend(target)
        while not eng.advance(_CHUNK_EVENTS):
            pass
        k = eng.batches_done
        est = estimates(eng, k, batches=batches, relaxation=relaxation, warmup=None)
        rel = precision_of(eng, est)
        certified = est.steady and est.certified("queue") and est.certified("cost")
        if progress is not None:
            need = MIN_BATCH_RELAXATIONS * batches * est.queue.relaxation
            grow = (rel / precision) ** 2 if math.isfinite(rel) else 4.0
            progress(min(0.99, target / max(need, target * grow, 1e-300)), "")
        if certified and rel <= precision:
            return k, "precision"
        if target >= max_horizon:
            return k, "max_horizon"
        now = eng.batches_done
        k_check = min(eng.mt.bounds.size, max(now + 1, math.ceil(now * CHECK_GROWTH)))


def summary_fields(
    eng: PlacementEngine,
    k: int,
    est: Estimates,
    ctl: FrameController | None,
    overload: str | None,
    fixed_warmup: bool,
) -> dict[str, Any]:
    """Return the measured fields of a placement result (``PlacementResult``)."""
    starts = _starts(eng, k)
    d = est.cut
    t0, end = float(starts[d]), float(starts[k])
    window = end - t0
    acc0 = eng.mt.snap[d - 1] if d > 0 else np.zeros_like(eng.mt.acc)
    cnt0 = eng.mt.snap_cnt[d - 1] if d > 0 else np.zeros_like(eng.mt.cnt)
    acc, cnt = eng.mt.snap[k - 1] - acc0, eng.mt.snap_cnt[k - 1] - cnt0
    kn = eng.mo.knodes.astype(float)
    slots = eng.cluster.total_slots
    in_service = acc[:, K.A_ACTUAL] / window
    virtual = acc[:, K.A_VIRTUAL] / window
    queue = acc[:, K.A_QUEUE] / window
    cost = acc[:, K.A_COST] / window
    per_type = _per_type(eng, acc, cnt, window)
    steady, notes = _verdict(est, overload, fixed_warmup, per_type)
    arrived, departed = int(cnt[:, K.C_ARRIVED].sum()), int(cnt[:, K.C_DEPARTED].sum())
    served = _ratio(float(departed), float(arrived))

    def ci95(name: str) -> tuple[float, float] | None:
        e: SeriesEstimate = getattr(est, name)
        if not (steady and est.certified(name)):
            return None
        return interval(e.mean, e.half_width)

    frames, gaps = _frame_fields(ctl, t0, end)
    total_in = float(in_service.sum())
    q = est.queue
    return dict(
        warmup_time=t0,
        warmup_detected=not fixed_warmup and est.found,
        measured_time=window,
        steady_state=steady,
        relaxation_estimate=max(q.relaxation, est.cost.relaxation),
        ci_method=(
            f"batch means ({q.batches} batches of {q.batch_span:.4g} time units, "
            f"{'fixed' if fixed_warmup else 'MSER'} warm-up), widened x{q.correction:.3f} "
            "for batch length"
        ),
        warnings=tuple(notes),
        mean_queue_length=float(queue.sum()),
        mean_queue_length_ci95=ci95("queue"),
        mean_partition_cost=_ratio(float(cost.sum()), total_in),
        mean_partition_cost_ci95=ci95("per_job"),
        cost_rate=float(cost.sum()),
        cost_rate_ci95=ci95("cost"),
        served_fraction=served,
        utilization=float(kn @ in_service) / slots,
        reserved_fraction=float(kn @ (in_service + virtual)) / slots,
        mean_in_service=total_in,
        mean_wait=_ratio(float(acc[:, K.A_WAIT].sum()), float(cnt[:, K.C_PLACED].sum())),
        mean_actual_templates=total_in,
        mean_virtual_templates=float(virtual.sum()),
        final_queue_length=int(eng.st.qlen.sum()),
        proposals_tried=int(cnt[:, K.C_TRIED].sum()),
        proposals_failed=int(cnt[:, K.C_FAILED].sum()),
        proposals_rejected=int(cnt[:, K.C_REJECTED].sum()),
        templates_added=int(cnt[:, K.C_ADDED].sum()),
        templates_removed=int(cnt[:, K.C_REMOVED].sum()),
        migrations=frames["migrations"],
        migrated_nodes=frames["migrated_nodes"],
        preemptions=frames["preemptions"],
        frames=frames["frames"],
        frames_not_optimal=frames["not_optimal"],
        frame_gap_mean=gaps[0],
        frame_gap_max=gaps[1],
        solver_seconds=ctl.solve_time if ctl else 0.0,
        arrived=arrived,
        placed=int(cnt[:, K.C_PLACED].sum()),
        departed=departed,
        events=eng.events,
        per_type=per_type,
    )


def _frame_fields(
    ctl: FrameController | None, t0: float, end: float
) -> tuple[dict[str, Any], tuple[float, float]]:
    """Frames and their counts after ``t0``, and the mean and largest optimality gap."""
    if ctl is None:
        keys = ("frames", "not_optimal", "migrations", "migrated_nodes", "preemptions")
        return dict.fromkeys(keys, 0), (math.nan, math.nan)
    inside = [r[-3] for r in ctl.records if t0 < r[0] <= end]
    gaps = (float(np.mean(inside)), float(np.max(inside))) if inside else (math.nan, math.nan)
    return ctl.counts_after(t0), gaps


def _per_type(
    eng: PlacementEngine, acc: np.ndarray, cnt: np.ndarray, window: float
) -> list[dict[str, Any]]:
    """One dict of time averages and counts per job type, over the window."""
    in_service = acc[:, K.A_ACTUAL] / window
    virtual = acc[:, K.A_VIRTUAL] / window
    queue = acc[:, K.A_QUEUE] / window
    cost = acc[:, K.A_COST] / window
    per_type: list[dict[str, Any]] = []
    for j, jt in enumerate(eng.job_types):
        tried, failed = int(cnt[j, K.C_TRIED]), int(cnt[j, K.C_FAILED])
        per_type.append(
            {
                "name": jt.name,
                "nodes": jt.topology.nodes,
                "edges": jt.topology.edges,
                "arrival_rate": jt.arrival_rate,
                "mean_duration": jt.mean_duration,
                "load": jt.load,
                "mean_queue_length": float(queue[j]),
                "final_queue_length": int(eng.st.qlen[j]),
                "mean_in_service": float(in_service[j]),
                "mean_virtual_templates": float(virtual[j]),
                "mean_partition_cost": _ratio(float(cost[j]), float(in_service[j])),
                "cost_rate": float(cost[j]),
                "mean_wait": _ratio(float(acc[j, K.A_WAIT]), float(cnt[j, K.C_PLACED])),
                "arrived": int(cnt[j, K.C_ARRIVED]),
                "placed": int(cnt[j, K.C_PLACED]),
                "departed": int(cnt[j, K.C_DEPARTED]),
                "served_fraction": _ratio(float(cnt[j, K.C_DEPARTED]), float(cnt[j, K.C_ARRIVED])),
                "proposals_tried": tried,
                "proposals_failed": failed,
                "proposal_success_rate": _ratio(tried - failed, tried),
            }
        )
    return per_type


def _verdict(
    est: Estimates, overload: str | None, fixed_warmup: bool, per_type: list[dict[str, Any]]
) -> tuple[bool, list[str]]:
    """Whether the window is a steady state, and the warnings (why not, what is withheld)."""
    steady = overload is None and (est.found or fixed_warmup)
    notes = [overload] if overload else []
    if overload is None and not fixed_warmup and not est.found:
        notes.append(
            "no warm-up truncation point found (the queue or the cost still trends): "
            "no steady state reached; run longer"
        )
    drifting = [n for n in ("queue", "cost") if getattr(est, n).drifting]
    if steady and drifting:
        steady = False
        what = "queue length" if drifting == ["queue"] else " and ".join(drifting)
        notes.append(
            f"the {what} changed significantly between the two halves of the window "
            "(drift test, level 0.001): not steady"
        )
    low = [str(t["name"]) for t in per_type if float(t["served_fraction"]) < SERVED_WARNING]
    if low:
        notes.append(
            f"jobs of {', '.join(low)} are served more slowly than they arrive "
            f"(served fraction below {SERVED_WARNING:g} in the window)"
        )
    withheld = [n for n in ("queue", "cost", "per_job") if steady and not est.certified(n)]
    if withheld:
        notes.append(_why_withheld(getattr(est, withheld[0]), withheld))

    return steady, notes


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def _why_withheld(e: SeriesEstimate, names: list[str]) -> str:
    what = ", ".join(names)
    if not e.long_enough:
        return (
            f"interval of {what} withheld: batches span {e.batch_span / e.relaxation:.3g} "
            f"relaxation times (an honest interval needs {MIN_BATCH_RELAXATIONS:g}); "
            "run longer"
        )
    return f"interval of {what} withheld: the batch means are correlated; run longer"
