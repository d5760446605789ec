"""The result record of a placement simulation.

Its shape follows the dispatch simulator's :class:`~cloudsched.dispatch.SimulationResult`:
the same names for the same things (``seed``, ``warmup``, ``warmup_time``,
``measured_time``, ``ci95``-style ``(low, high)`` intervals, ``wall_seconds``,
``events_per_second``), ``to_dict`` for JSON and ``to_row`` for one flat table row.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields
from typing import Any

from cloudsched.results import finite_or_none, interval_columns

__all__ = ["CI_FIELDS", "PlacementResult"]

#: The quantities that carry a 95% interval, ``{name}_ci95``.
CI_FIELDS = ("mean_queue_length", "mean_partition_cost", "cost_rate")
#: Tables carried beside the record, left out of ``to_dict`` and ``to_row``.
_TABLES = ("assignments", "frame_table", "final_placement")


@dataclass(frozen=True)
class PlacementResult:
    """Time averages and counts over the measurement window, after the warm-up.

    Totals are over all job types; ``per_type`` holds one dict per type with the same
    quantities.  ``*_ci95`` are 95% confidence intervals ``(low, high)`` from batch means
    (None, ``null`` in JSON, when the interval is not certified or there is no steady
    state; ``warnings`` says why).

    How it was measured: ``warmup`` (``auto``: MSER, or the fixed fraction as given),
    ``warmup_detected``, ``warmup_time`` (simulated time cut), ``measured_time`` (length of
    the window), ``horizon`` (the requested length, None for an open-ended run),
    ``relaxation_estimate``, ``precision_target`` / ``precision_reached`` (open-ended runs),
    ``stop_reason`` (``precision``, ``max_horizon`` or ``horizon``), ``ci_method``.
    ``served_fraction`` is jobs that left over jobs that arrived in the window (per type in
    ``per_type``); ``bound`` is the static optimum's cost rate (its lower bound unless
    ``bound_proven``), ``bound_gap`` the cost's relative excess over it (None when the cost
    lies below it with no interval or beyond its interval: not a long-run rate), and
    ``bound_note`` why the optimum is missing or not proven.
    ``seed`` is the root seed drawn or given (None when a generator was passed), so a run is
    regenerated with ``rng=seed``.  MaxWeight's ``frame_gap_mean`` / ``frame_gap_max`` are the
    mean and largest optimality gap of the frames in the window (0 for proven frames);
    ``frame_table`` has every frame, and ``assignments`` (with ``record=True``) every node
    of every placement (:func:`cloudsched.placement.assignments.assignment_table`).
    """

    policy: str
    params: dict[str, Any]
    seed: int | None
    horizon: float | None
    warmup: str
    warmup_detected: bool
    warmup_time: float
    measured_time: float
    steady_state: bool
    relaxation_estimate: float
    precision_target: float | None
    precision_reached: float | None
    stop_reason: str
    ci_method: str
    warnings: tuple[str, ...]
    mean_queue_length: float
    mean_queue_length_ci95: tuple[float, float] | None
    mean_partition_cost: float
    mean_partition_cost_ci95: tuple[float, float] | None
    cost_rate: float
    cost_rate_ci95: tuple[float, float] | None
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
    frame_gap_mean: float
    frame_gap_max: float
    solver_seconds: float
    arrived: int
    placed: int
    departed: int
    events: int
    wall_seconds: float
    events_per_second: float
    per_type: list[dict[str, Any]] = field(default_factory=list)
    #: With ``record=True``: one row per node of each placement (:mod:`.assignments`).
    assignments: Any = field(default=None, repr=False, compare=False)
    #: MaxWeight: one row per frame (:meth:`.maxweight.FrameController.table`).
    frame_table: Any = field(default=None, repr=False, compare=False)
    #: The jobs running at the end of the run (:func:`.assignments.final_table`).
    final_placement: Any = field(default=None, repr=False, compare=False)

    def _fields(self) -> dict[str, Any]:
        """Return the record's values (copied), without the tables carried beside it."""
        return {
            f.name: copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
            if f.name not in _TABLES
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; undefined values (NaN, infinities) become None."""
        out = self._fields()
        out["warnings"] = list(self.warnings)
        for name in CI_FIELDS:
            ci = getattr(self, f"{name}_ci95")
            out[f"{name}_ci95"] = None if ci is None else list(ci)
        return finite_or_none(out)

    def to_row(self) -> dict[str, Any]:
        """Flatten the result into one row for pandas or CSV.

        Scalars; each interval as ``{name}_ci95_low``/``_high`` (NaN without one); the
        policy parameters as ``param.{key}`` (lists joined by spaces); ``warnings`` joined by
        ``"; "``; and each job type's numbers as ``{type}.{key}``.
        """
        row: dict[str, Any] = {}
        for k, v in self._fields().items():
            if k in ("params", "per_type", "warnings") or k.endswith("_ci95"):
                continue
            row[k] = v
        for name in CI_FIELDS:
            row.update(interval_columns(getattr(self, f"{name}_ci95"), f"{name}_"))
        for k, v in self.params.items():
            if k == "pilots":
                continue  # calibration pilots: in to_dict only
            row[f"param.{k}"] = " ".join(f"{x:g}" for x in v) if isinstance(v, list | tuple) else v
        row["warnings"] = "; ".join(self.warnings)
        for t in self.per_type:
            for k, v in t.items():
                if k != "name":
                    row[f"{t['name']}.{k}"] = v
        return {k: (math.nan if v is None else v) for k, v in row.items()}
