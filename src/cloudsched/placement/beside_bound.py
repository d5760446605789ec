"""A placement run beside the static optimum: the bound, the gap, and what to warn about.

:func:`bound_beside` bounds the static optimum next to a run (within
:data:`BOUND_TIME_LIMIT`, or takes one already computed); :func:`gap` is the cost's excess
over it; :func:`short_of` says when the cost lies below it beyond its interval (no policy
serving all the load costs less in the long run, so that run is not yet a long-run rate and
has no gap); the two warnings say so, or that the cost is far above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.optimize import StaticOptimum, static_optimum
from cloudsched.placement.workload import JobType

__all__ = [
    "BOUND_MAX_NODES",
    "BOUND_MAX_SLOTS",
    "BOUND_TIME_LIMIT",
    "Bound",
    "above_bound",
    "against_bound",
    "below_bound",
    "bound_beside",
    "bound_is_cheap",
    "gap",
    "short_of",
]

#: Seconds allowed to the bound computed beside a run.
BOUND_TIME_LIMIT = 10.0


@dataclass(frozen=True)
class Bound:
    """The bound beside a run: its value (a lower bound, the optimum when proven), or why not."""

    value: float | None
    proven: bool | None
    note: str | None


def bound_beside(
    cluster: Cluster, job_types: Sequence[JobType], opt: StaticOptimum | None = None
) -> Bound:
    """Bound the static optimum from below (the optimum itself when proven).

    ``opt``: a static optimum already computed for this instance, used as it is.
    """
    if opt is None:
        try:
            opt = static_optimum(cluster, job_types, time_limit=BOUND_TIME_LIMIT)
        except ParameterError as exc:
            return Bound(None, None, str(exc))
    note = (
        None
        if opt.proven
        else (
            f"the optimum is not proven: {opt.lower_bound:.4g} is a lower bound "
            f"(best time-sharing found: {opt.value:.4g})"
        )
    )
    return Bound(opt.lower_bound, opt.proven, note)


def gap(cost: float, bound: float, ci: tuple[float, float] | None = None) -> float | None:
    """Relative excess of ``cost`` over ``bound`` (0 when below it; None: no cost).

    Against a zero bound the gap is 0 when the cost is zero within its interval ``ci``,
    else inf.
    """
    if not math.isfinite(cost):
        return None
    if bound > 1e-9:
        return max(cost - bound, 0.0) / bound
    within = cost <= 1e-9 or (ci is not None and ci[0] <= 0.0)
    return 0.0 if within else math.inf


def short_of(cost: float, bound: float, ci: tuple[float, float] | None) -> bool:
    """Say whether ``cost`` lies below ``bound`` with no interval, or with its whole interval.

    No policy serving all the load costs less than the static optimum in the long run, so
    such a run is not yet a long-run rate and has no gap to report.
    """
    return math.isfinite(cost) and cost < bound and (ci is None or ci[1] < bound)


def above_bound(
    cost: float, bound: float, excess: float, dgp: bool, proposal: str, proven: bool
) -> str:
    """Warn that the cost is ``excess`` (relative) above the bound, and for DGP what helps."""
    why = ""
    if dgp and proposal == "uniform":
        why = (
            " (DGP's proposals are uniform random partitions: a cost nearer the bound needs "
            "a smaller --alpha and longer queues, or --proposal local)"
        )
    elif dgp:
        why = " (a cost nearer the bound needs a smaller --alpha and longer queues)"
    how = "above a zero" if math.isinf(excess) else f"{100 * excess:.0f}% above the"
    what = "static optimum" if proven else "lower bound of the static optimum"
    return f"cost rate {cost:.4g} is {how} {what} {bound:.4g}{why}"


def below_bound(ci: tuple[float, float] | None, bound: float, proven: bool) -> str | None:
    """Warn when the whole cost interval lies below the static optimum's (lower) bound.

    No policy that serves all the load costs less than the static optimum in the long run,
    so an interval entirely below it means the run is not yet a long-run rate.
    """
    if ci is None or not ci[1] < bound * (1.0 - 1e-9):
        return None
    what = "static optimum" if proven else "lower bound of the static optimum"
    return (
        f"cost interval [{ci[0]:.4g}, {ci[1]:.4g}] lies below the {what} {bound:.4g}, "
        "which no policy serving all the load beats in the long run: the run is too "
        "short or not steady (run longer; check served)"
    )


#: DGP's alpha is calibrated against the bound when the cluster has at most this many slots
BOUND_MAX_SLOTS = 32
#: ... and every graph at most this many nodes.
BOUND_MAX_NODES = 8


def bound_is_cheap(cluster: Cluster, job_types: Sequence[JobType]) -> bool:
    """Say whether the instance is small enough to calibrate DGP's alpha against the bound."""
    return cluster.total_slots <= BOUND_MAX_SLOTS and all(
        jt.topology.nodes <= BOUND_MAX_NODES for jt in job_types
    )


def against_bound(spec: Any, bound: Any, fields: dict[str, Any]) -> float | None:
    """Return the cost's gap to the bound (None: no bound, or not above it); warn in ``fields``."""
    if bound is None or bound.value is None:
        return None
    r: Any = spec
    cost, ci = fields["cost_rate"], fields["cost_rate_ci95"]
    over = None if short_of(cost, bound.value, ci) else gap(cost, bound.value, ci)
    if over is not None and over > spec.target_gap and fields["steady_state"]:
        fields["warnings"] = (
            *fields["warnings"],
            above_bound(cost, bound.value, over, spec.model.dgp, r.proposal, bool(bound.proven)),
        )
    below = below_bound(ci, bound.value, bool(bound.proven))
    if below:
        fields["warnings"] = (*fields["warnings"], below)
    return over
