"""The checked form of :func:`~cloudsched.placement.simulation.simulate_placement`'s arguments.

:func:`plan_placement` checks and resolves every argument (policy, ranges, per-type values,
DGP's defaults read off the instance, the overload warning) without running anything and
returns a :class:`PlacementPlan`; sweeps check every point of a grid with it first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError, check_choice, check_int, check_real
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.defaults import dgp_defaults
from cloudsched.placement.policies import PLACEMENT_POLICIES
from cloudsched.placement.workload import JobType

__all__ = ["PLACEMENT_POLICIES", "PlacementPlan", "plan_placement"]

#: Micro-batches recorded per run.
MICRO_BATCHES = 1024
#: Default relative precision of an open-ended run.
DEFAULT_PRECISION = 0.02
#: Default cap of an open-ended run, in mean holding times of the longest job type.
DEFAULT_MAX_HOLDING_TIMES = 200_000.0
#: DGP's default alpha aims at a cost at most this far above the static bound.
DEFAULT_TARGET_GAP = 0.15


@dataclass(frozen=True)
class PlacementPlan:
    """The arguments of :func:`simulate_placement`, checked and resolved (nothing has run).

    ``auto`` holds the instance's DGP defaults, ``calibrate`` says whether ``alpha`` will be
    calibrated against the bound, ``overload`` is the overload warning (None if the workload
    fits), ``rates`` and ``frozen`` the checked ``clock_rate`` and ``frozen_weights``.
    """

    policy: str
    longest: float
    horizon: float | None
    precision: float
    max_horizon: float
    warmup: float | None
    dgp: bool
    auto: dict[str, Any]
    calibrate: bool
    beta: float
    alpha: float
    h: float | tuple[float, ...]
    epsilon: float
    f: str
    target_gap: float
    frame: float
    solver_time_limit: float | None
    batches: int
    rates: tuple[float, ...] | None
    frozen: tuple[float, ...] | None
    overload: str | None
    virtual_clock: bool
    clock_rate: float | Sequence[float] | None
    compare_bound: bool | None


def _per_type(
    name: str, value: Any, n: int, *, low: float = -math.inf, low_open: bool = False,
    scalar: bool = True,
) -> tuple[float, ...]:  # fmt: skip
    """One checked number per job type: ``value`` is a number (if ``scalar``) or n of them."""
    if scalar and not isinstance(value, list | tuple | np.ndarray):
        return (check_real(name, value, low=low, low_open=low_open),) * n
    if isinstance(value, str) or not isinstance(value, list | tuple | np.ndarray) or len(
        value) != n:  # fmt: skip
        allowed = f"one number{' or one' if scalar else ''} per job type ({n})"
        raise ParameterError(name, value, allowed)
    return tuple(check_real(name, x, low=low, low_open=low_open) for x in value)


def plan_placement(
    cluster: Cluster,
    job_types: Sequence[JobType],
    policy: str = "dgp",
    *,
    horizon: float | None = None,
    warmup: float | None = None,
    beta: float | None = None,
    alpha: float | None = None,
    h: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    f: str | None = None,
    virtual_clock: bool = True,
    clock_rate: float | Sequence[float] | None = None,
    frame: float = 1.0,
    solver_time_limit: float | None = 10.0,
    frozen_weights: Sequence[float] | None = None,
    batches: int = 20,
    precision: float = DEFAULT_PRECISION,
    max_horizon: float | None = None,
    compare_bound: bool | None = None,
    target_gap: float = DEFAULT_TARGET_GAP,
) -> PlacementPlan:
    """Check and resolve the arguments of :func:`simulate_placement` without running anything.

    Same arguments (but ``rng`` and ``progress``); raises
    :class:`~cloudsched.errors.ParameterError` on the first bad one.
    """
    policy = check_choice("policy", policy, PLACEMENT_POLICIES)
    if not job_types:
        raise ParameterError("job_types", [], "at least one job type")
    for jt in job_types:
        cluster.check_fits(jt.topology, name=f"job type {jt.name!r}")
    longest = max(jt.mean_duration for jt in job_types)
    if horizon is not None:
        horizon = check_real("horizon", horizon, low=0.0, low_open=True)
    precision = check_real("precision", precision, low=0.0, high=1.0, low_open=True)
    max_horizon = check_real(
        "max_horizon", DEFAULT_MAX_HOLDING_TIMES * longest if max_horizon is None else max_horizon,
        low=0.0, low_open=True,
    )  # fmt: skip
    if warmup is not None:
        limit = horizon if horizon is not None else max_horizon
        warmup = check_real("warmup", warmup, low=0.0, high=limit, high_open=True)
    dgp = policy in ("dgp", "dgp-clock")
    auto = dgp_defaults(cluster, job_types) if dgp else {"alpha": 1.0, "f": "log"}
    calibrate = dgp and alpha is None and frozen_weights is None
    beta = check_real("beta", auto.get("beta", 0.1) if beta is None else beta,
                      low=0.0, low_open=True)  # fmt: skip
    alpha = check_real("alpha", auto["alpha"] if alpha is None else alpha,
                       low=0.0, low_open=True)  # fmt: skip
    hs = _per_type("h", auto.get("h", 0.0) if h is None else h, len(job_types), low=0.0)
    h = hs[0] if len(set(hs)) == 1 else hs
    epsilon = check_real("epsilon", auto.get("epsilon", 0.5) if epsilon is None else epsilon,
                         low=0.0, high=1.0, low_open=True, high_open=True)  # fmt: skip
    f = check_choice("f", str(auto["f"]) if f is None else f, ("log", "identity"))
    target_gap = check_real("target_gap", target_gap, low=0.0, low_open=True)
    frame = check_real("frame", frame, low=0.0, low_open=True)
    if solver_time_limit is not None:
        solver_time_limit = check_real(
            "solver_time_limit", solver_time_limit, low=0.0, low_open=True
        )
    batches = check_int("batches", batches, low=2, high=MICRO_BATCHES // 4)
    rates = None
    if clock_rate is not None:
        rates = _per_type("clock_rate", clock_rate, len(job_types), low=0.0, low_open=True)
    frozen = None
    if frozen_weights is not None:
        if isinstance(frozen_weights, str) or not isinstance(frozen_weights, Sequence | np.ndarray):
            raise ParameterError("frozen_weights", frozen_weights, "one number per job type")
        frozen = _per_type("frozen_weights", list(frozen_weights), len(job_types),
                           scalar=False)  # fmt: skip
    demand = sum(jt.load * jt.topology.nodes for jt in job_types)
    overload = None
    if demand >= cluster.total_slots:
        overload = (
            f"the workload asks for {demand:.4g} slots on average but the cluster has "
            f"{cluster.total_slots}: no policy can keep the queues bounded"
        )
    return PlacementPlan(
        policy=policy,
        longest=longest,
        horizon=horizon,
        precision=precision,
        max_horizon=max_horizon,
        warmup=warmup,
        dgp=dgp,
        auto=auto,
        calibrate=calibrate,
        beta=beta,
        alpha=alpha,
        h=h,
        epsilon=epsilon,
        f=f,
        target_gap=target_gap,
        frame=frame,
        solver_time_limit=solver_time_limit,
        batches=batches,
        rates=rates,
        frozen=frozen,
        overload=overload,
        virtual_clock=virtual_clock,
        clock_rate=clock_rate,
        compare_bound=compare_bound,
    )
