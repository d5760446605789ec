"""DGP's alpha calibrated by pilot runs, and default parameters that must serve the load.

A policy run with its default parameters (DGP, MaxWeight) is a promise that they suit the
instance.  :func:`calibrate_alpha` picks DGP's alpha on small instances from pilot runs, each
candidate judged on several pilots; :func:`check_served` refuses an open-ended default run
that left some type unserved.  Either raises :class:`DefaultsRefused`, whose one-line
message names the type and what to set instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.placement.beside_bound import gap as excess
from cloudsched.placement.defaults import LOCAL_MARGINS_UNITS, cost_unit
from cloudsched.placement.result import PlacementResult
from cloudsched.placement.spec import PlacementSpec

__all__ = [
    "CALIBRATION_ALPHAS",
    "PILOT_HOLDING_TIMES",
    "PILOT_SEEDS",
    "SERVED_FLOOR",
    "DefaultsRefused",
    "calibrate_alpha",
    "check_served",
]

#: DGP alpha tried by calibration, in cost units, largest (shortest queues) first.
CALIBRATION_ALPHAS = (1 / 25, 1 / 100, 1 / 400)
#: Length of a calibration pilot run, in mean holding times of the longest type.
PILOT_HOLDING_TIMES = 20_000.0
#: Pilots per calibration candidate, each on its own stream: a candidate is judged on all.
PILOT_SEEDS = 3
#: Default parameters must serve at least this share of every type's jobs.
SERVED_FLOOR = 0.99
#: A pilot serves when it is steady and serves at least this share of every type's jobs
#: (a pilot starts empty and is short, so a long but stable queue still fills up in it).
PILOT_SERVED_FLOOR = 0.95


class DefaultsRefused(ParameterError):
    """A policy's default parameters do not serve a workload the cluster can hold.

    Raised by :func:`run_placement` when calibration pilots, or an open-ended run with the
    default parameters, serve less than :data:`SERVED_FLOOR` of some type's jobs; the
    message names the type and what to set instead.  ``result`` is the run that showed it
    (None when the pilots did).
    """

    def __init__(self, policy: str, problem: str, result: PlacementResult | None = None) -> None:
        super().__init__("policy", policy, problem)
        self.result = result
        self.args = (problem,)  # the problem names the policy

    def __str__(self) -> str:
        return str(self.args[0])


def _least_served(res: PlacementResult) -> tuple[str, float]:
    """Return the type served least and its served fraction (a type with no arrival: 1)."""
    worst = ("", 1.0)
    for t in res.per_type:
        served = float(t["served_fraction"])
        served = 1.0 if math.isnan(served) else served
        if served < worst[1]:
            worst = (str(t["name"]), served)
    return worst


def _refusal(spec: PlacementSpec, what: str, near: bool = False) -> str:
    """Return the refusal message: ``what`` went wrong and the parameters to set instead."""
    name = spec.model.name + (":uniform" if spec.proposal == "uniform" else "")
    hint = (
        "set --alpha and --h (alpha, h) yourself, or use maxweight"
        if near
        else "set --alpha and --h (alpha, h) yourself, or use another policy"
        if spec.model.dgp
        else "set --alpha and --f (alpha, f) yourself, or use another policy"
    )
    fail = "are not near the optimum on" if near else "do not serve"
    return f"{name}'s default parameters {fail} this workload: {what}; {hint}"


def _candidates(spec: PlacementSpec) -> list[tuple[float, float | None]]:
    """``(alpha in cost units, local margin in cost units or None)`` in the order tried."""
    if spec.proposal != "local" or not spec.auto_h:
        return [(a, None) for a in CALIBRATION_ALPHAS]
    return [(a, m) for m in LOCAL_MARGINS_UNITS for a in CALIBRATION_ALPHAS]


def calibrate_alpha(
    spec: PlacementSpec, bound: float, rng: np.random.Generator, run: Callable[..., PlacementResult]
) -> tuple[float, Any, list[dict[str, Any]]]:
    """Return the first candidate (alpha, and h) whose pilots serve and are near the bound.

    Candidates: the alphas of :data:`CALIBRATION_ALPHAS`, largest (shortest queues) first;
    with local proposals and no ``h`` given, each with the bias margins of
    :data:`~cloudsched.placement.defaults.LOCAL_MARGINS_UNITS` in turn.  Each candidate
    runs :data:`PILOT_SEEDS` pilots of a fixed length, each on its own stream spawned from
    ``rng``, judged together: every pilot must be steady and serve at least
    :data:`PILOT_SERVED_FLOOR` of every type's jobs, and the mean of their costs must be
    within ``target_gap`` of the bound (within ``target_gap`` cost units of a zero bound).
    Failing that, the candidate whose pilots all serve and cost least on average; if none
    serves, :class:`DefaultsRefused`.  ``run`` runs a pilot
    (:func:`~cloudsched.placement.simulation.run_placement`).  Returns alpha, the ``h`` to
    run with (None: the spec's own) and every pilot's summary.
    """
    unit = cost_unit(spec.cluster)
    pilots: list[dict[str, Any]] = []
    length = PILOT_HOLDING_TIMES * spec.longest
    candidates = _candidates(spec)
    for (a, m), gen in zip(candidates, rng.spawn(len(candidates)), strict=True):
        alpha = a * unit
        h: Any = None if spec.auto_h else spec.h
        if m is not None:
            h = tuple((b + m * unit) / alpha for b in spec.auto["bias_base"])
        pilot = replace(spec, horizon=length, alpha=alpha, compare_bound=False, h=h)
        runs = [run(pilot, rng=g) for g in gen.spawn(PILOT_SEEDS)]
        cost = float(np.mean([r.cost_rate for r in runs]))
        worst = min((_least_served(r) for r in runs), key=lambda x: x[1])
        steady = all(r.steady_state for r in runs)
        gap = excess(cost, bound)
        pilots.append(
            {
                "alpha": alpha,
                **({"margin": m * unit} if m is not None else {}),
                "h": h,
                "cost_rate": cost,
                "cost_rates": [r.cost_rate for r in runs],
                "mean_queue_length": float(np.mean([r.mean_queue_length for r in runs])),
                "gap": math.inf if gap is None else gap,
                "steady": steady,
                "least_served": worst[1],
                "least_served_type": worst[0],
                "serves": steady and worst[1] >= PILOT_SERVED_FLOOR,
            }
        )
        near = cost - bound <= spec.target_gap * (bound if bound > 1e-9 else unit)
        if pilots[-1]["serves"] and near:
            return alpha, h, pilots
    serving = [p for p in pilots if p["serves"]]
    if not serving:
        worst_pilot = min(pilots, key=lambda p: (p["least_served"], p["steady"]))
        tried = ", ".join(sorted({f"{p['alpha']:.4g}" for p in pilots}))
        what = (
            f"type {worst_pilot['least_served_type']!r} was served "
            f"{100 * worst_pilot['least_served']:.3g}% of its jobs"
            if worst_pilot["least_served"] < PILOT_SERVED_FLOOR
            else "the queues kept growing"
        )
        raise DefaultsRefused(
            spec.model.name,
            _refusal(
                spec,
                (
                    f"in every calibration pilot's set (alpha {tried}, {PILOT_SEEDS} runs of "
                    f"{length:.6g} time units each) {what}"
                ),
            ),
        )
    best = min(serving, key=lambda p: p["cost_rate"])
    return float(best["alpha"]), best["h"], pilots


def check_served(spec: PlacementSpec, res: PlacementResult) -> None:
    """Refuse an open-ended run whose default parameters left a type unserved.

    DGP's defaults are also refused when the run costs more than ``target_gap`` above a
    proven static optimum: the default promises a cost near it.
    """
    if spec.overload is not None or spec.horizon is not None or not spec.defaults:
        return
    name, served = _least_served(res)
    if served < SERVED_FLOOR:
        raise DefaultsRefused(
            spec.model.name,
            _refusal(
                spec,
                (
                    f"type {name!r} was served {100 * served:.3g}% of its jobs over "
                    f"{res.measured_time:.6g} time units (needs >= {100 * SERVED_FLOOR:g}%)"
                ),
            ),
            result=res,
        )
    if not (spec.model.dgp and res.bound_proven and res.bound is not None):
        return
    bound, cost = float(res.bound), float(res.cost_rate)
    if bound > 1e-9 and cost - bound > spec.target_gap * bound:
        what = (
            f"it costs {cost:.4g} per unit time, {100 * (cost / bound - 1):.0f}% above the "
            f"static optimum {bound:.4g} (more than --target-gap {100 * spec.target_gap:g}%)"
        )
    elif bound <= 1e-9 and cost > spec.target_gap * cost_unit(spec.cluster):
        what = (
            f"it costs {cost:.4g} per unit time where the static optimum is 0 (more than "
            f"--target-gap {spec.target_gap:g} times the cost unit)"
        )
    else:
        return
    raise DefaultsRefused(spec.model.name, _refusal(spec, what, near=True), result=res)
