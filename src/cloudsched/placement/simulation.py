"""Event-driven simulation of graph-job placement: :func:`simulate_placement`.

Policies (``graph-placement.md``):

``storm-default``, ``greedy``
    Place queue heads as soon as they fit (FIFO within a type; across types by entry time,
    and a type whose head does not fit does not block the others); a template is deleted
    when its job leaves.
``dgp``
    Dynamic Graph Partitioning: at each arrival the Random Partition Procedure proposes a
    template, added (virtual) with probability ``e^(w/beta) / (1 + e^(w/beta))``; at each
    departure the template is kept with that probability.  ``w = f_j(Q) - b_A``.
``dgp-clock``
    The same decisions, but proposals happen at the ticks of a Poisson clock per queue
    (rate ``clock_rate``, by default the type's arrival rate) instead of at arrivals.
``maxweight``
    Frame-based MaxWeight (:mod:`cloudsched.placement.maxweight`).

CHOICES where the note is silent:

* ``Q_j`` in DGP's weight is the number of waiting type-j jobs: after the arrival joins the
  queue for a proposal at an arrival, before the head moves in for a keep decision.
* Virtual clocks (``virtual_clock=True``, the default): an empty template also gets a keep
  decision at rate ``mu_j``, so that with frozen weights the configuration is exactly the
  product form of the note; ``virtual_clock=False`` is the seed's literal algorithm, where an
  empty template waits for the next arrival.
* When several empty templates of a type exist, the most recently listed one is filled.
* Partitioning cost counts actual templates only (an empty template carries no traffic):
  ``cost_rate`` is its time average (per unit time), ``mean_partition_cost`` the same divided
  by the mean number of jobs in service (per job in service).
* ``mean_wait`` is the mean time from entering the queue to being placed, over placements in
  the window (a job preempted by MaxWeight re-enters the queue).

Measurement follows the dispatch simulator's rules (:mod:`cloudsched.steadystate`): the run
is recorded from time 0 in 1024 equal micro-batches; the warm-up is cut where MSER finds it
on the total queue length and on the cost rate (or at a fixed ``warmup`` time); the queue,
cost-rate and cost-per-job intervals are batch means (``batches`` batches) widened for
batch length and given only when certified (each batch at least five relaxation times, the
relaxation time being the larger of the longest mean holding time and the integrated
autocorrelation time measured); a queue or cost still trending, or a workload above the
cluster's capacity, gives ``steady_state`` False and no intervals.  ``warnings`` says why.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError, check_seed
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.defaults import cost_unit
from cloudsched.placement.engine import EngineParams, PlacementEngine
from cloudsched.placement.maxweight import FrameController
from cloudsched.placement.measure import estimates, precision_of, run_until_precise, summary_fields
from cloudsched.placement.plan import (
    DEFAULT_PRECISION,
    DEFAULT_TARGET_GAP,
    MICRO_BATCHES,
    PLACEMENT_POLICIES,
    plan_placement,
)
from cloudsched.placement.policies import get_placement_policy
from cloudsched.placement.workload import JobType

__all__ = ["PLACEMENT_POLICIES", "PlacementResult", "simulate_placement"]

#: ``compare_bound`` by default when the cluster has at most this many slots ...
BOUND_MAX_SLOTS = 32
#: ... and every graph at most this many nodes.
BOUND_MAX_NODES = 8
#: Seconds allowed to each pricing MILP of the bound computed beside a run.
BOUND_TIME_LIMIT = 10.0
#: DGP alpha tried by calibration, in cost units, largest (shortest queues) first.
CALIBRATION_ALPHAS = (1 / 25, 1 / 100, 1 / 400)
#: Length of a calibration pilot run, in mean holding times of the longest type.
PILOT_HOLDING_TIMES = 20_000.0


@dataclass(frozen=True)
class PlacementResult:
    """Time averages and counts over the measurement window ``(warmup, horizon]``.

    Totals are over all job types; ``per_type`` holds one dict per type with the same
    quantities.  ``*_ci`` are 95% confidence half-widths from batch means (NaN, ``null`` in
    JSON, when the interval is not certified or there is no steady state).  ``warmup`` is
    the time cut (detected by MSER unless it was given: ``warmup_detected``),
    ``measured_time`` the length of the window, ``horizon`` its end; ``served_fraction`` is
    jobs that left over jobs that arrived in the window (per type in ``per_type``); and
    ``bound`` is the static optimum's cost rate when it was solved (``bound_gap`` the
    cost's relative excess over it, ``bound_note`` why it is missing), and
    ``steady_state``, ``ci_method``, ``relaxation_estimate``, ``precision_target`` /
    ``precision_reached`` (open-ended runs), ``stop_reason`` and ``warnings`` say how far the
    numbers can be trusted.
    """

    policy: str
    params: dict[str, Any]
    seed: int | None
    horizon: float
    warmup: float
    warmup_detected: bool
    measured_time: float
    steady_state: bool
    relaxation_estimate: float
    precision_target: float | None
    precision_reached: float | None
    stop_reason: str
    ci_method: str
    warnings: tuple[str, ...]
    mean_queue_length: float
    mean_queue_length_ci: float
    mean_partition_cost: float
    mean_partition_cost_ci: float
    cost_rate: float
    cost_rate_ci: float
    served_fraction: float
    bound: float | None
    bound_proven: bool | None
    bound_gap: float | None
    bound_note: str | None
    utilization: float
    reserved_fraction: float
    mean_in_service: float
    mean_wait: float
    mean_actual_templates: float
    mean_virtual_templates: float
    final_queue_length: int
    proposals_tried: int
    proposals_failed: int
    proposals_rejected: int
    templates_added: int
    templates_removed: int
    migrations: int
    migrated_nodes: int
    preemptions: int
    frames: int
    frames_not_optimal: int
    solver_seconds: float
    arrived: int
    placed: int
    departed: int
    events: int
    wall_time: float
    per_type: list[dict[str, Any]] = field(default_factory=list)

    @property
    def events_per_second(self) -> float:
        """Simulated events per second of wall time."""
        return self.events / self.wall_time if self.wall_time > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; undefined values (NaN) become None."""
        out = asdict(self)
        out["warnings"] = list(self.warnings)
        out["events_per_second"] = self.events_per_second
        return _nan_to_none(out)


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return x


def bound_is_cheap(cluster: Cluster, job_types: Sequence[JobType]) -> bool:
    """Say whether the static optimum is quick to prove (small cluster, small graphs)."""
    return cluster.total_slots <= BOUND_MAX_SLOTS and all(
        jt.topology.nodes <= BOUND_MAX_NODES for jt in job_types
    )


@dataclass(frozen=True)
class _Bound:
    value: float | None
    proven: bool | None
    note: str | None


def _bound(cluster: Cluster, job_types: Sequence[JobType]) -> _Bound:
    from cloudsched.placement.optimize import static_optimum

    try:
        opt = static_optimum(cluster, job_types, time_limit=BOUND_TIME_LIMIT)
    except ParameterError as exc:
        return _Bound(None, None, str(exc))
    note = None if opt.proven else "a pricing problem hit its time limit: not proven optimal"
    return _Bound(opt.cost_rate, opt.proven, note)


def _gap(cost: float, bound: float, ci: float = math.nan) -> float | None:
    """Relative excess of ``cost`` over ``bound`` (0 when below it).

    Against a zero bound the gap is 0 when the cost is zero within its interval, else inf.
    """
    if not math.isfinite(cost):
        return None
    if bound > 1e-9:
        return max(cost - bound, 0.0) / bound
    within = cost <= 1e-9 or (math.isfinite(ci) and cost - ci <= 0.0)
    return 0.0 if within else math.inf


def _calibrate_alpha(
    cluster: Cluster, job_types: Sequence[JobType], policy: str, bound: float, target: float,
    seed: int, kw: dict[str, Any],
) -> tuple[float, list[dict[str, float]]]:  # fmt: skip
    """Largest alpha of :data:`CALIBRATION_ALPHAS` whose pilot cost is within ``target``.

    Failing that, the alpha of the cheapest pilot.  Pilots run a fixed length with their own
    generators, derived from ``seed``.
    """
    unit = cost_unit(cluster)
    pilots: list[dict[str, float]] = []
    best = None
    length = PILOT_HOLDING_TIMES * max(jt.mean_duration for jt in job_types)
    for i, a in enumerate(CALIBRATION_ALPHAS):
        alpha = a * unit
        r = simulate_placement(
            cluster, job_types, policy, horizon=length, alpha=alpha, compare_bound=False,
            rng=np.random.default_rng([seed, i]), **kw,
        )  # fmt: skip
        gap = _gap(r.cost_rate, bound)
        pilots.append({"alpha": alpha, "cost_rate": r.cost_rate,
                       "mean_queue_length": r.mean_queue_length,
                       "gap": math.inf if gap is None else gap})  # fmt: skip
        if best is None or r.cost_rate < pilots[best]["cost_rate"]:
            best = i
        if gap is not None and gap <= target and r.served_fraction >= 0.99:
            return alpha, pilots
    assert best is not None
    return pilots[best]["alpha"], pilots


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def simulate_placement(
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
    rng: int | np.random.Generator | None = None,
    progress: Callable[[float], None] | None = None,
) -> PlacementResult:
    """Simulate one policy from an empty cluster.

    Parameters
    ----------
    cluster : Cluster
        Machines, slots, racks.
    job_types : sequence of JobType
        Graphs, arrival rates and mean holding times.
    policy : str
        One of ``storm-default``, ``greedy``, ``maxweight``, ``dgp``, ``dgp-clock``.
    horizon : float, optional
        Fix the simulated time.  By default the run goes on until its intervals are certified
        and precise (``precision``), or until ``max_horizon``.
    warmup : float, optional
        Start of the measurement window (default: detected by MSER).
    beta, alpha, h, epsilon, f
        DGP: temperature, weight scale, bias (one number, or one per type), epsilon in
        (0, 1), ``log`` (log(1 + x)) or ``identity``.  By default DGP's are read off the
        instance (:func:`cloudsched.placement.defaults.dgp_defaults`), and when the static
        bound is known ``alpha`` is calibrated: the largest of a few values (shortest
        queues) whose pilot run comes within ``target_gap`` of the bound.  MaxWeight uses
        ``alpha`` (default 1) and ``f`` (default ``log``).
    virtual_clock : bool
        DGP: empty templates get keep decisions at rate ``mu_j`` (see module notes).
    clock_rate : float or sequence of float, optional
        ``dgp-clock``: rate of each queue's clock (default: the type's arrival rate).
    frame : float
        MaxWeight: frame length T.
    solver_time_limit : float or None
        MaxWeight: seconds per frame for HiGHS (past it, the best configuration found is
        used and counted in ``frames_not_optimal``).
    frozen_weights : sequence of float, optional
        Replace ``f_j(Q)`` by these fixed numbers (the fixed-weight algorithm of the seed's
        proof, used to test the product form).
    batches : int
        Batches for the confidence intervals (2..256).
    precision : float
        Open-ended runs stop when the cost rate's 95% half-width is at most this fraction
        of it, and the mean queue length's at most this fraction of the jobs in the system.
    max_horizon : float, optional
        Open-ended runs stop at this time in any case (default: 200,000 mean holding times of
        the longest type); the result says so.
    compare_bound : bool, optional
        Solve the static optimum (:func:`cloudsched.placement.optimize.static_optimum`) and
        report it beside the cost (``bound``, ``bound_gap``).  Default: when the instance is
        small enough for it to be cheap (:func:`bound_is_cheap`).
    target_gap : float
        DGP's default ``alpha`` aims at a cost at most this fraction above the bound; a
        result further above it gets a warning.
    rng : int, numpy.random.Generator or None
        Seed or generator (an int is recorded in the result as ``seed``).
    progress : callable, optional
        Called with the fraction of simulated time done.

    Returns
    -------
    PlacementResult
    """
    plan = plan_placement(
        cluster, job_types, policy, horizon=horizon, warmup=warmup, beta=beta, alpha=alpha,
        h=h, epsilon=epsilon, f=f, virtual_clock=virtual_clock, clock_rate=clock_rate,
        frame=frame, solver_time_limit=solver_time_limit, frozen_weights=frozen_weights,
        batches=batches, precision=precision, max_horizon=max_horizon,
        compare_bound=compare_bound, target_gap=target_gap,
    )  # fmt: skip
    if plan.overload is not None:
        warnings.warn(plan.overload, RuntimeWarning, stacklevel=2)
    policy = plan.policy
    longest = plan.longest
    horizon = plan.horizon
    precision = plan.precision
    max_horizon = plan.max_horizon
    warmup = plan.warmup
    dgp = plan.dgp
    auto = plan.auto
    calibrate = plan.calibrate
    beta = plan.beta
    alpha = plan.alpha
    h = plan.h
    epsilon = plan.epsilon
    f = plan.f
    target_gap = plan.target_gap
    frame = plan.frame
    solver_time_limit = plan.solver_time_limit
    batches = plan.batches
    rates = plan.rates
    frozen = plan.frozen
    overload = plan.overload
    virtual_clock = plan.virtual_clock
    clock_rate = plan.clock_rate
    compare_bound = plan.compare_bound
    rng = check_seed("seed", rng)
    seed = rng if isinstance(rng, int) else None
    gen = np.random.default_rng(rng)

    bound = None
    if compare_bound is None:
        compare_bound = overload is None and bound_is_cheap(cluster, job_types)
    if compare_bound and overload is None:
        bound = _bound(cluster, job_types)
    calibration = None
    if calibrate and bound is not None and bound.value is not None:
        pilot_seed = int(gen.integers(2**63))
        alpha, calibration = _calibrate_alpha(
            cluster, job_types, policy, bound.value, target_gap, pilot_seed,
            dict(beta=beta, h=h, epsilon=epsilon, f=f, virtual_clock=virtual_clock,
                 clock_rate=clock_rate),
        )  # fmt: skip

    params = EngineParams(
        get_placement_policy(policy).code, beta, alpha, h, epsilon, f, bool(virtual_clock),
        rates, frozen,
    )
    # recorded from time 0 in micro-batches; the warm-up is cut afterwards
    relax = longest  # a lower bound of the relaxation time; the data's estimate may be larger
    width = longest / 4 if horizon is None else horizon / MICRO_BATCHES
    eng = PlacementEngine(
        cluster, job_types, params, width * MICRO_BATCHES, 0.0, MICRO_BATCHES, gen
    )
    ctl = None
    if policy == "maxweight":
        ctl = FrameController(frame, alpha, f, solver_time_limit)
        ctl.start(eng)
    t0 = time.perf_counter()  # the simulation alone (not the bound, not calibration pilots)
    if horizon is None:
        k, reason = run_until_precise(
            eng, width=width, batches=batches, relaxation=relax, precision=precision,
            max_horizon=max_horizon, progress=progress,
        )  # fmt: skip
    else:
        while not eng.advance(200_000):
            if progress is not None:
                progress(eng.now / horizon)
        k, reason = MICRO_BATCHES, "horizon"
    wall = time.perf_counter() - t0
    if progress is not None:
        progress(1.0)
    est = estimates(eng, k, batches=batches, relaxation=relax, warmup=warmup)
    fields = summary_fields(eng, k, est, ctl, overload, warmup is not None)
    reached = None
    if horizon is None and not math.isnan(fields["cost_rate_ci"]):
        reached = precision_of(eng, est)
    shown = _shown_params(policy, beta, alpha, h, epsilon, f, virtual_clock, eng.mo.nu, frame,
                          frozen)  # fmt: skip
    if dgp:
        shown["chosen"] = (
            "calibrated against the bound"
            if calibration
            else ("from the instance" if alpha == auto["alpha"] else "given")
        )
        if calibration:
            shown["pilots"] = calibration
    gap = None
    if bound is not None and bound.value is not None:
        gap = _gap(fields["cost_rate"], bound.value, fields["cost_rate_ci"])
        if gap is not None and gap > target_gap and fields["steady_state"]:
            why = (
                (
                    " (DGP's proposals are uniform random partitions: a cost nearer the bound "
                    "needs a smaller --alpha and longer queues)"
                )
                if dgp
                else ""
            )
            how = "above a zero" if math.isinf(gap) else f"{100 * gap:.0f}% above the"
            fields["warnings"] = (*fields["warnings"], (
                f"cost rate {fields['cost_rate']:.4g} is {how} static optimum "
                f"{bound.value:.4g}{why}"
            ))  # fmt: skip
    return PlacementResult(
        policy=policy, params=shown, seed=seed, wall_time=wall, stop_reason=reason,
        precision_target=precision if horizon is None else None, precision_reached=reached,
        bound=None if bound is None else bound.value,
        bound_proven=None if bound is None else bound.proven,
        bound_gap=gap, bound_note=None if bound is None else bound.note,
        **fields,
    )  # fmt: skip


def _shown_params(
    policy: str, beta: float, alpha: float, h: float | tuple[float, ...], epsilon: float, f: str,
    virtual_clock: bool, nu: np.ndarray, frame: float, frozen: tuple[float, ...] | None,
) -> dict[str, Any]:  # fmt: skip
    if policy in ("dgp", "dgp-clock"):
        out: dict[str, Any] = {
            "beta": beta, "alpha": alpha, "h": h, "epsilon": epsilon, "f": f,
            "virtual_clock": virtual_clock,
        }  # fmt: skip
        if policy == "dgp-clock":
            out["clock_rate"] = [float(x) for x in nu]
        if frozen is not None:
            out["frozen_weights"] = list(frozen)
        return out
    if policy == "maxweight":
        return {"alpha": alpha, "f": f, "frame": frame}
    return {}
