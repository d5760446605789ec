"""Event-driven simulation of graph-job placement: :func:`simulate_placement`.

The policies (``graph-placement.md``) are described in :mod:`cloudsched.placement.policies`.

CHOICES where the note is silent:

* ``Q_j`` in DGP's weight is the number of waiting type-j jobs: after the arrival joins the
  queue for a proposal at an arrival, before the head moves in for a keep decision.
* Virtual clocks (``virtual_clock=True``, the default): an empty template also gets a keep
  decision at rate ``mu_j``, so that with frozen weights the configuration is exactly the
  product form of the note; ``virtual_clock=False`` is the paper's literal algorithm, where an
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

import dataclasses
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from cloudsched.placement.assignments import assignment_table, final_table
from cloudsched.placement.beside_bound import Bound, against_bound, bound_beside, bound_is_cheap
from cloudsched.placement.calibration import DefaultsRefused, calibrate_alpha, check_served
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.engine import EngineParams, PlacementEngine
from cloudsched.placement.maxweight import FrameController
from cloudsched.placement.measure import estimates, precision_of, run_until_precise, summary_fields
from cloudsched.placement.optimize import StaticOptimum
from cloudsched.placement.result import PlacementResult
from cloudsched.placement.spec import (
    DEFAULT_PRECISION,
    DEFAULT_TARGET_GAP,
    MICRO_BATCHES,
    PlacementSpec,
)
from cloudsched.placement.workload import JobType
from cloudsched.progress import Progress
from cloudsched.randomness import Seed, streams

__all__ = ["DefaultsRefused", "run_placement", "simulate_placement"]


def simulate_placement(
    policy: str,
    cluster: Cluster,
    job_types: Sequence[JobType],
    *,
    horizon: float | None = None,
    warmup: float | str = "auto",
    beta: float | None = None,
    alpha: float | None = None,
    h: float | Sequence[float] | None = None,
    epsilon: float | None = None,
    f: str | None = None,
    virtual_clock: bool = True,
    clock_rate: float | Sequence[float] | None = None,
    frame: float = 1.0,
    solver_time_limit: float | None = 10.0,
    solver: str = "auto",
    proposal: str = "local",
    locality: float = 0.9,
    record: bool = False,
    frozen_weights: Sequence[float] | None = None,
    batches: int = 20,
    precision: float = DEFAULT_PRECISION,
    max_horizon: float | None = None,
    compare_bound: bool | None = None,
    optimum: StaticOptimum | None = None,
    target_gap: float = DEFAULT_TARGET_GAP,
    rng: Seed = None,
    progress: Progress | None = None,
) -> PlacementResult:
    """Simulate one placement policy from an empty cluster.

    Parameters
    ----------
    policy : str
        One of ``storm-default``, ``greedy``, ``maxweight``, ``dgp``, ``dgp-clock``
        (:data:`~cloudsched.placement.policies.PLACEMENT_POLICIES`).
    cluster : Cluster
        Machines, slots, racks.
    job_types : sequence of JobType
        Graphs, arrival rates and mean holding times.
    horizon : float, optional
        Fix the simulated time.  By default the run goes on until its intervals are certified
        and precise (``precision``), or until ``max_horizon``.
    warmup : "auto" or float
        ``auto`` (default): the warm-up is detected by MSER; a fraction in [0, 0.9] drops
        that share of the run instead (as ``simulate`` does).
    beta, alpha, h, epsilon, f
        DGP: temperature, weight scale, bias (one number, or one per type), epsilon in
        (0, 1), ``log`` (log(1 + x)) or ``identity``.  By default DGP's are read off the
        instance (:func:`cloudsched.placement.defaults.dgp_defaults`), and on small
        instances (:func:`bound_is_cheap`) whose bound is proven, ``alpha`` is calibrated:
        the largest of a few values (shortest queues) whose pilot run comes within
        ``target_gap`` of the bound.  MaxWeight's defaults: ``f`` the identity and ``alpha``
        the largest least template cost plus half a cost unit
        (:func:`cloudsched.placement.defaults.maxweight_defaults`).
    virtual_clock : bool
        DGP: empty templates get keep decisions at rate ``mu_j`` (see module notes).
    clock_rate : float or sequence of float, optional
        ``dgp-clock``: rate of each queue's clock (default: the type's arrival rate).
    frame : float
        MaxWeight: frame length T.
    solver_time_limit : float or None
        MaxWeight: seconds per frame for HiGHS (past it, the best configuration found is
        used and counted in ``frames_not_optimal``).
    solver : {"auto", "exact", "fast"}
        MaxWeight: the max-weight configuration's solver (:mod:`.optimize`; ``auto``: exact
        up to 32 slots and 8-node graphs).
    proposal : {"local", "uniform"}
        DGP: local proposals (the default: machine by machine, corrected so that the
        stationary law is the paper's; :mod:`._kernel_propose`), or the paper's Random
        Partition Procedure (``uniform``; far above the optimum unless ``alpha`` is small
        and queues are long).
    locality : float
        DGP with local proposals: the chance, in [0, 1], that a node is proposed on the
        machine of the node before it.
    record : bool
        Keep which slot each node of each job held, over time (``assignments``).
    frozen_weights : sequence of float, optional
        Replace ``f_j(Q)`` by these fixed numbers (the fixed-weight algorithm of the paper's
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
        Bound the static optimum (:func:`cloudsched.placement.optimize.static_optimum`,
        within 10 s) and report it beside the cost: ``bound`` is its lower bound (the
        optimum when ``bound_proven``), ``bound_gap`` the cost's excess over it.  Default:
        on, unless the workload is above capacity.
    optimum : StaticOptimum, optional
        The static optimum of this cluster and workload, already computed (as ``place
        compare`` does once for all its policies): used instead of bounding it again.
    target_gap : float
        DGP's default ``alpha`` aims at a cost at most this fraction above the bound; a
        result further above it gets a warning.
    rng : int, numpy.random.Generator or None
        Seed or generator (:mod:`cloudsched.randomness`); the root seed, drawn when None, is
        recorded in the result as ``seed``.
    progress : callable, optional
        Called with the fraction of simulated time done.

    Returns
    -------
    PlacementResult

    Raises
    ------
    ParameterError
        An argument outside its range (nothing is run).
    DefaultsRefused
        DGP or MaxWeight with every parameter left to its default, on a workload the
        cluster can hold, served less than 99% of some type's jobs, in calibration pilots
        or in an open-ended run (the message says which type; ``result`` holds the run).
    """
    given = locals()  # every argument but rng, progress and optimum is a field of the spec
    spec = PlacementSpec(
        **{f.name: given[f.name] for f in dataclasses.fields(PlacementSpec) if f.init}
    )
    if spec.overload is not None:
        warnings.warn(spec.overload, RuntimeWarning, stacklevel=2)
    return run_placement(spec, rng=rng, progress=progress, optimum=optimum)


def run_placement(
    spec: PlacementSpec,
    *,
    rng: Seed = None,
    progress: Progress | None = None,
    optimum: StaticOptimum | None = None,
) -> PlacementResult:
    """Run a checked :class:`~cloudsched.placement.spec.PlacementSpec`.

    See :func:`simulate_placement`; the overload warning is the caller's to give.
    """
    seed, (gen,) = streams(rng)
    cluster, job_types = spec.cluster, spec.job_types
    bound = None
    compare = spec.compare_bound
    if compare is None:
        compare = spec.overload is None
    if compare and spec.overload is None:
        bound = bound_beside(cluster, job_types, optimum)
    given = spec  # as the caller built it (the run below may fill in the calibrated alpha)
    spec, alpha, calibration = _calibrated(spec, bound, gen)
    model = spec.model
    relax = spec.longest  # a lower bound of the relaxation time; the data's may be larger
    horizon = spec.horizon
    eng, ctl, width = _start(spec, alpha, gen)
    t0 = time.perf_counter()  # the simulation alone (not the bound, not calibration pilots)
    k, reason = _advance(eng, spec, width, progress)
    if ctl is not None:
        ctl.fill_kept(eng)
    wall = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, "")
    fixed = spec.fixed_warmup
    est = estimates(eng, k, batches=spec.batches, relaxation=relax, warmup=fixed)
    fields = summary_fields(eng, k, est, ctl, spec.overload, fixed is not None)
    reached = None
    if horizon is None and fields["cost_rate_ci95"] is not None:
        reached = precision_of(eng, est)
    shown = _shown_params(spec, alpha, eng.mo.nu)
    if model.dgp:
        shown["chosen"] = (
            "calibrated against the bound"
            if calibration
            else ("from the instance" if alpha == spec.auto["alpha"] else "given")
        )
        if calibration:
            shown["pilots"] = calibration
    gap = against_bound(spec, bound, fields)
    result = PlacementResult(
        policy=model.name,
        params=shown,
        seed=seed,
        horizon=horizon,
        warmup="auto" if fixed is None else f"{fixed:g}",
        stop_reason=reason,
        precision_target=spec.precision if horizon is None else None,
        precision_reached=reached,
        bound=None if bound is None else bound.value,
        bound_proven=None if bound is None else bound.proven,
        bound_gap=gap,
        bound_note=None if bound is None else bound.note,
        wall_seconds=wall,
        events_per_second=fields["events"] / wall if wall > 0 else math.nan,
        **fields,
        assignments=assignment_table(eng) if spec.record else None,
        final_placement=final_table(eng),
        frame_table=ctl.table([jt.name for jt in job_types]) if ctl is not None else None,
    )
    check_served(given, result)
    return result


def _calibrated(
    spec: PlacementSpec, bound: Bound | None, gen: np.random.Generator
) -> tuple[PlacementSpec, float, Any]:
    """Return the spec to run, its alpha, and the calibration pilots (None: not calibrated).

    DGP's alpha is calibrated against the bound where it is proven and cheap; with
    ``auto_h``, h follows the alpha chosen (local proposals' bias is in cost units).
    """
    # once built, the spec's optional fields hold checked values (none is None)
    alpha: float = spec.alpha  # type: ignore[assignment]
    cheap = bound is not None and bound.value is not None and bound.proven
    if not (spec.calibrate and cheap and bound_is_cheap(spec.cluster, spec.job_types)):
        return spec, alpha, None
    assert bound is not None and bound.value is not None
    alpha, h, calibration = calibrate_alpha(spec, bound.value, gen.spawn(1)[0], run_placement)
    if spec.auto_h:
        spec = replace(spec, alpha=alpha, h=h)
    return spec, alpha, calibration


def _start(
    spec: PlacementSpec, alpha: float, gen: np.random.Generator
) -> tuple[PlacementEngine, FrameController | None, float]:
    """Build the engine and, for frame-based policies, start its frame controller.

    The engine records from time 0 in micro-batches; the warm-up is cut afterwards.
    """
    r: Any = spec
    params = EngineParams(
        spec.model.code,
        r.beta,
        alpha,
        r.h,
        r.epsilon,
        r.f,
        bool(spec.virtual_clock),
        spec.rates,
        spec.frozen,
        r.proposal,
        r.locality,
        r.record,
        spec.model.plugin,
    )
    width = spec.longest / 4 if spec.horizon is None else spec.horizon / MICRO_BATCHES
    eng = PlacementEngine(
        spec.cluster, spec.job_types, params, width * MICRO_BATCHES, 0.0, MICRO_BATCHES, gen
    )
    ctl = None
    if spec.model.frames:
        ctl = FrameController(spec.frame, alpha, r.f, spec.solver_time_limit, solver=r.solver)
        ctl.start(eng)
    return eng, ctl, width


def _advance(
    eng: PlacementEngine, spec: PlacementSpec, width: float, progress: Progress | None
) -> tuple[int, str]:
    """Run to the horizon, or until the interval is precise; return the batches and why."""
    r: Any = spec
    if spec.horizon is None:
        return run_until_precise(
            eng,
            width=width,
            batches=spec.batches,
            relaxation=spec.longest,
            precision=spec.precision,
            max_horizon=r.max_horizon,
            progress=progress,
        )
    while not eng.advance(200_000):
        if progress is not None:
            progress(eng.now / spec.horizon, "")
    return MICRO_BATCHES, "horizon"


def _shown_params(spec: PlacementSpec, alpha: float, nu: np.ndarray) -> dict[str, Any]:
    """Return the policy's parameters as used (recorded in the result's ``params``)."""
    model = spec.model
    if model.dgp:
        out: dict[str, Any] = {
            "beta": spec.beta,
            "alpha": alpha,
            "h": spec.h,
            "epsilon": spec.epsilon,
            "f": spec.f,
            "virtual_clock": spec.virtual_clock,
            "proposal": spec.proposal,
        }
        if spec.proposal == "local":
            out["locality"] = spec.locality
        if model.name == "dgp-clock":
            out["clock_rate"] = [float(x) for x in nu]
        if spec.frozen is not None:
            out["frozen_weights"] = list(spec.frozen)
        return out
    if model.frames:
        return {"alpha": alpha, "f": spec.f, "frame": spec.frame, "solver": spec.solver}
    return {}
