"""Placement policies side by side on one cluster and workload, beside the static bound.

:func:`compare_placement` runs each policy as ``cloudsched place simulate`` would (same
defaults, each with the same root seed), bounds the static optimum once
(:func:`~cloudsched.placement.optimize.static_optimum`), and returns one row per policy:
cost per unit time with its 95% interval and its gap to the bound, mean queue length, share
of the load served, mean wait, migrations, whether the run reached a steady state, and the
wall time.  A policy is a name of :data:`~cloudsched.placement.PLACEMENT_POLICIES`; DGP
runs local proposals, and the paper's uniform ones as ``dgp:uniform`` (or
``dgp-clock:uniform``; ``dgp:local`` is ``dgp``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.optimize import StaticOptimum, static_optimum
from cloudsched.placement.plugin import is_plugin_ref
from cloudsched.placement.policies import PLACEMENT_POLICIES
from cloudsched.placement.result import PlacementResult
from cloudsched.placement.workload import JobType
from cloudsched.progress import Progress

__all__ = ["DEFAULT_POLICIES", "PlacementComparison", "compare_placement", "parse_entry"]

#: What ``place compare`` runs when no policy is named.
DEFAULT_POLICIES = ("storm-default", "greedy", "resource-aware", "maxweight", "dgp", "dgp:uniform")


def parse_entry(entry: str) -> tuple[str, dict[str, Any]]:
    """Split ``dgp:uniform`` into the policy and its keyword arguments."""
    if is_plugin_ref(entry):
        return str(entry), {}
    name, _, variant = str(entry).partition(":")
    allowed = (
        "one of " + ", ".join(PLACEMENT_POLICIES) + ", dgp:uniform / dgp-clock:uniform, "
        "or a plug-in file.py:NAME"
    )
    if (
        name not in PLACEMENT_POLICIES
        or variant not in ("", "local", "uniform")
        or (variant and not name.startswith("dgp"))
    ):
        raise ParameterError("policy", entry, allowed)
    return name, ({"proposal": variant} if variant else {})


@dataclass(frozen=True)
class PlacementComparison:
    """One row per policy (:attr:`table`), the runs themselves and the bound."""

    table: Any
    results: dict[str, PlacementResult]
    bound: StaticOptimum | None
    bound_note: str | None
    refused: dict[str, str] = field(default_factory=dict)


def compare_placement(
    cluster: Cluster,
    job_types: Sequence[JobType],
    policies: Sequence[str] = DEFAULT_POLICIES,
    *,
    seed: int = 0,
    horizon: float | None = None,
    time_limit: float = 60.0,
    record: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> PlacementComparison:
    """Run ``policies`` on the same instance and bound the static optimum.

    ``options`` go to every :func:`~cloudsched.placement.simulate_placement` call (those
    a policy does not use are ignored by it); ``record`` keeps each run's placement log.
    Warnings of each run are in its result (``warnings``).  A policy whose default
    parameters do not serve the workload
    (:class:`~cloudsched.placement.simulation.DefaultsRefused`) gets a row without cost
    or gap (when a run showed it, that run's queue, service and moves, marked not steady;
    its cost is in the reason and in ``results``) and its reason in ``refused``.
    """
    import pandas as pd

    from cloudsched.placement.simulation import DefaultsRefused, simulate_placement

    entries = [(e, *parse_entry(e)) for e in policies]
    if len({e for e, _, _ in entries}) != len(entries):
        raise ParameterError("policy", list(policies), "each policy once")
    bound, note = None, None
    try:
        bound = static_optimum(cluster, job_types, time_limit=time_limit)
    except ParameterError as exc:
        note = str(exc)
    results: dict[str, PlacementResult] = {}
    refused: dict[str, str] = {}
    rows = []
    for k, (entry, name, kw) in enumerate(entries):
        if progress is not None:
            progress(k / len(entries), entry)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the overload is the caller's
                res = simulate_placement(
                    name,
                    cluster,
                    job_types,
                    horizon=horizon,
                    rng=seed,
                    record=record,
                    optimum=bound,
                    progress=_within(progress, k, len(entries), entry),
                    **kw,
                    **options,
                )
        except DefaultsRefused as exc:
            refused[entry] = str(exc)
            if exc.result is None:
                rows.append(
                    {
                        "policy": entry,
                        "cost_rate": math.nan,
                        "cost_ci95": None,
                        "gap": math.nan,
                        "mean_queue_length": math.nan,
                        "served_fraction": math.nan,
                        "mean_wait": math.nan,
                        "migrations": 0,
                        "steady_state": False,
                        "wall_seconds": time.perf_counter() - t0,
                    }
                )
                continue
            res = replace(exc.result, steady_state=False, warnings=(*exc.result.warnings, str(exc)))
        results[entry] = res
        ci = None if entry in refused else res.cost_rate_ci95
        gap = None if entry in refused else res.bound_gap
        rows.append(
            {
                "policy": entry,
                # a refused run's cost is in its one line (and the JSON), not in the table
                "cost_rate": math.nan if entry in refused else res.cost_rate,
                "cost_ci95": None if ci is None else (ci[1] - ci[0]) / 2,
                "gap": math.nan if gap is None else gap,
                "mean_queue_length": res.mean_queue_length,
                "served_fraction": res.served_fraction,
                "mean_wait": res.mean_wait,
                "migrations": res.migrations,
                "steady_state": res.steady_state,
                "wall_seconds": time.perf_counter() - t0,
            }
        )
    return PlacementComparison(pd.DataFrame(rows), results, bound, note, refused)


def _within(progress: Progress | None, k: int, n: int, entry: str) -> Progress | None:
    """Map run ``k``'s own progress into the whole comparison's (its share, its status).

    An open-ended run's estimate can step back when its interval widens; the bar keeps
    the furthest it reached.
    """
    if progress is None:
        return None
    furthest = [0.0]

    def inner(fraction: float, status: str = "") -> None:
        if fraction >= 0:
            furthest[0] = max(furthest[0], min(fraction, 1.0))
        progress((k + furthest[0]) / n, f"{entry} {status}".strip())

    return inner
