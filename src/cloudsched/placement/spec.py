"""The specification of a placement simulation, checked when it is built.

:class:`PlacementSpec` holds every argument of :func:`~cloudsched.placement.simulate_placement`
but the random stream and the progress callback.  Building one checks and resolves them
(policy, ranges, per-type values, DGP's defaults read off the instance, the overload
warning) without running anything; sweeps build one for every point of a grid first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError, check_choice, check_int, check_real
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.configuration import SOLVERS
from cloudsched.placement.defaults import dgp_defaults, maxweight_defaults
from cloudsched.placement.policies import PlacementPolicy, get_placement_policy
from cloudsched.placement.workload import JobType

__all__ = ["DEFAULT_PRECISION", "DEFAULT_TARGET_GAP", "MICRO_BATCHES", "PROPOSALS", "PlacementSpec"]

#: DGP's proposals: local ones (the default), or the paper's uniform Random Partition Procedure.
PROPOSALS = ("local", "uniform")

#: Micro-batches recorded per run.
MICRO_BATCHES = 1024
#: Default relative precision of an open-ended run.
DEFAULT_PRECISION = 0.02
#: Default cap of an open-ended run, in mean holding times of the longest job type.
DEFAULT_MAX_HOLDING_TIMES = 200_000.0
#: DGP's default alpha aims at a cost at most this far above the static bound.
DEFAULT_TARGET_GAP = 0.15


@dataclass(frozen=True)
class PlacementSpec:
    """A placement simulation to run (the arguments of ``simulate_placement``), checked.

    The fields are the arguments of :func:`~cloudsched.placement.simulate_placement` as
    given (see there); building the spec checks them and fills the resolved fields:
    ``model`` (the :class:`~cloudsched.placement.policies.PlacementPolicy`), ``longest``
    (the longest mean holding time), ``fixed_warmup`` (the warm-up fraction, None:
    detected), ``auto`` (the instance's DGP defaults), ``calibrate`` (whether ``alpha`` will
    be calibrated against the bound), ``rates`` and ``frozen`` (checked ``clock_rate`` and
    ``frozen_weights``), ``auto_h`` (``h`` was not given), ``defaults`` (DGP or MaxWeight
    with none of its parameters given: such a run must serve every type, see
    :class:`~cloudsched.placement.simulation.DefaultsRefused`) and ``overload`` (the
    overload warning, None if the workload fits).
    ``beta``, ``alpha``, ``h``, ``epsilon``, ``f`` and the run-length fields hold their
    checked (or default) values.
    """

    policy: str
    cluster: Cluster = field(repr=False)
    job_types: Sequence[JobType] = field(repr=False)
    horizon: float | None = None
    warmup: float | str = "auto"
    beta: float | None = None
    alpha: float | None = None
    h: float | Sequence[float] | None = None
    epsilon: float | None = None
    f: str | None = None
    virtual_clock: bool = True
    clock_rate: float | Sequence[float] | None = None
    frame: float = 1.0
    solver_time_limit: float | None = 10.0
    solver: str = "auto"
    proposal: str = "local"
    locality: float = 0.9
    record: bool = False
    frozen_weights: Sequence[float] | None = None
    batches: int = 20
    precision: float = DEFAULT_PRECISION
    max_horizon: float | None = None
    compare_bound: bool | None = None
    target_gap: float = DEFAULT_TARGET_GAP
    model: PlacementPolicy = field(init=False, repr=False)
    longest: float = field(init=False)
    fixed_warmup: float | None = field(init=False)
    auto: dict[str, Any] = field(init=False, repr=False)
    calibrate: bool = field(init=False)
    auto_h: bool = field(init=False)
    defaults: bool = field(init=False)
    rates: tuple[float, ...] | None = field(init=False)
    frozen: tuple[float, ...] | None = field(init=False)
    overload: str | None = field(init=False)

    def __post_init__(self) -> None:
        model = get_placement_policy(self.policy)
        job_types = list(self.job_types)
        if not job_types:
            raise ParameterError("job_types", [], "at least one job type")
        for jt in job_types:
            self.cluster.check_fits(jt.topology, name=f"job type {jt.name!r}")
        longest = max(jt.mean_duration for jt in job_types)
        out: dict[str, Any] = {"model": model, "job_types": tuple(job_types), "longest": longest}
        out.update(
            _run_length(
                self.horizon, self.precision, self.max_horizon, self.warmup, self.batches, longest
            )
        )
        out.update(_algorithm(self, model, job_types))
        demand = sum(jt.load * jt.topology.nodes for jt in job_types)
        slots = self.cluster.total_slots
        out["overload"] = (
            None
            if demand < slots
            else (
                f"the workload asks for {demand:.4g} slots on average but the cluster has "
                f"{slots}: no policy can keep the queues bounded"
            )
        )
        for name, value in out.items():
            object.__setattr__(self, name, value)

    @property
    def open_ended(self) -> bool:
        """Whether the run decides its own length (no ``horizon``)."""
        return self.horizon is None


def _run_length(
    horizon: float | None,
    precision: float,
    max_horizon: float | None,
    warmup: float | str,
    batches: int,
    longest: float,
) -> dict[str, Any]:
    """Check horizon, precision, max_horizon, the warm-up fraction and batches."""
    fixed = None
    if not (isinstance(warmup, str) and warmup == "auto"):
        fixed = check_real("warmup", warmup, low=0.0, high=0.9)
    default_max = DEFAULT_MAX_HOLDING_TIMES * longest
    return {
        "horizon": None
        if horizon is None
        else check_real("horizon", horizon, low=0.0, low_open=True),
        "precision": check_real("precision", precision, low=0.0, high=1.0, low_open=True),
        "max_horizon": check_real(
            "max_horizon",
            default_max if max_horizon is None else max_horizon,
            low=0.0,
            low_open=True,
        ),
        "fixed_warmup": fixed,
        "batches": check_int("batches", batches, low=2, high=MICRO_BATCHES // 4),
    }


def _algorithm(
    spec: PlacementSpec, model: PlacementPolicy, job_types: list[JobType]
) -> dict[str, Any]:
    """Check DGP and MaxWeight parameters, filling in DGP's defaults from the instance."""
    nj = len(job_types)
    proposal = check_choice("proposal", spec.proposal, PROPOSALS)
    locality = check_real("locality", spec.locality, low=0.0, high=1.0)
    if model.dgp:
        auto = dgp_defaults(spec.cluster, job_types, proposal, locality)
    elif model.frames and (spec.alpha is None or spec.f is None):
        auto = maxweight_defaults(spec.cluster, job_types)
    else:
        auto = {"alpha": 1.0, "f": "log"}
    alpha = check_real(
        "alpha", auto["alpha"] if spec.alpha is None else spec.alpha, low=0.0, low_open=True
    )
    h = spec.h
    if h is None:  # local proposals: the bias is in cost units, so it scales with alpha
        h = tuple(b / alpha for b in auto["bias"]) if "bias" in auto else auto.get("h", 0.0)
    hs = _per_type("h", h, nj, low=0.0)
    given: tuple[Any, ...] = (
        spec.alpha,
        spec.h,
        spec.beta,
        spec.epsilon,
        spec.f,
        spec.frozen_weights,
    )
    if model.frames:
        given = (spec.alpha, spec.f)
    out: dict[str, Any] = {
        "auto_h": spec.h is None,
        "defaults": (model.dgp or model.frames) and all(g is None for g in given),
        "auto": auto,
        "calibrate": model.dgp and spec.alpha is None and spec.frozen_weights is None,
        "beta": check_real(
            "beta",
            auto.get("beta", 0.1) if spec.beta is None else spec.beta,
            low=0.0,
            low_open=True,
        ),
        "alpha": alpha,
        "h": hs[0] if len(set(hs)) == 1 else hs,
        "epsilon": check_real(
            "epsilon",
            auto.get("epsilon", 0.5) if spec.epsilon is None else spec.epsilon,
            low=0.0,
            high=1.0,
            low_open=True,
            high_open=True,
        ),
        "f": check_choice("f", str(auto["f"]) if spec.f is None else spec.f, ("log", "identity")),
        "target_gap": check_real("target_gap", spec.target_gap, low=0.0, low_open=True),
        "frame": check_real("frame", spec.frame, low=0.0, low_open=True),
        "rates": None
        if spec.clock_rate is None
        else _per_type("clock_rate", spec.clock_rate, nj, low=0.0, low_open=True),
        "frozen": None,
        "solver": check_choice("solver", spec.solver, SOLVERS),
        "proposal": proposal,
        "locality": locality,
        "record": bool(spec.record),
    }
    if spec.solver_time_limit is not None:
        out["solver_time_limit"] = check_real(
            "solver_time_limit", spec.solver_time_limit, low=0.0, low_open=True
        )
    weights = spec.frozen_weights
    if weights is not None:
        if isinstance(weights, str) or not isinstance(weights, Sequence | np.ndarray):
            raise ParameterError("frozen_weights", weights, "one number per job type")
        out["frozen"] = _per_type("frozen_weights", list(weights), nj, scalar=False)
    return out


def _per_type(
    name: str,
    value: Any,
    n: int,
    *,
    low: float = -math.inf,
    low_open: bool = False,
    scalar: bool = True,
) -> tuple[float, ...]:
    """One checked number per job type: ``value`` is a number (if ``scalar``) or n of them."""
    if scalar and not isinstance(value, list | tuple | np.ndarray):
        return (check_real(name, value, low=low, low_open=low_open),) * n
    if (
        isinstance(value, str)
        or not isinstance(value, list | tuple | np.ndarray)
        or len(value) != n
    ):
        allowed = f"one number{' or one' if scalar else ''} per job type ({n})"
        raise ParameterError(name, value, allowed)
    return tuple(check_real(name, x, low=low, low_open=low_open) for x in value)
