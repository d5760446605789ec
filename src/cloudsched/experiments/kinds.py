"""What a sweep can run: one entry per kind (``simulate``, ``predict``, ``place``).

Each :class:`Kind` says which function a point calls, which of its parameters a sweep may
set (and which it must), how to check a point without running it, and how to run one point
into one flat result row (the result record's own ``to_row``).  The sweep
(:mod:`cloudsched.experiments.sweep`) knows nothing else about the kinds, so a new kind is a
new entry here.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["KINDS", "KIND_TABLE", "Kind", "PointContext"]

#: Parameters of ``place`` that build the model (the cluster and the workload file).
PLACE_MODEL_KEYS: dict[str, Any] = {
    "cluster": str,
    "racks": int,
    "cross_rack_cost": float,
    "workload": str,
}
# Arguments a sweep cannot set: callbacks, arrays and the generator (seeds come from the spec).
_NOT_SWEPT = {
    "rng",
    "progress",
    "trace",
    "speeds",
    "frozen_weights",
    "cluster",
    "job_types",
    "record",
    "optimum",
}


@dataclass
class PointContext:
    """How a point is read: where its relative paths start, what it may reuse.

    ``cache`` holds clusters and workloads already read while checking a sweep.
    """

    base_dir: str = "."
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """One kind of sweep.

    ``target`` returns the public function a point calls (imported when needed);
    ``extra`` adds sweepable parameters that are not its arguments, ``renamed`` replaces
    arguments (``loads`` -> ``load``), ``required`` overrides the arguments without a
    default; ``check(params, ctx)`` raises a ParameterError for a bad point without running
    it, ``run(params, rng, model_seed, ctx)`` returns the point's result row.
    """

    name: str
    target: Callable[[], Callable[..., Any]]
    check: Callable[[dict[str, Any], PointContext], None]
    run: Callable[[dict[str, Any], np.random.Generator, int, PointContext], dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)
    renamed: dict[str, tuple[str, Any]] = field(default_factory=dict)
    required: frozenset[str] | None = None

    def parameters(self) -> dict[str, Any]:
        """Sweepable parameter -> its annotated type."""
        fn = self.target()
        hints = typing.get_type_hints(fn)
        out: dict[str, Any] = {}
        for name in inspect.signature(fn).parameters:
            if name in _NOT_SWEPT:
                continue
            if name in self.renamed:
                new, tp = self.renamed[name]
                out[new] = tp
            else:
                out[name] = hints.get(name, Any)
        out.update(self.extra)
        return out

    def required_parameters(self) -> set[str]:
        """Parameters without a default that a sweep of this kind must set."""
        if self.required is not None:
            return set(self.required)
        signature = inspect.signature(self.target()).parameters
        return {
            name
            for name, p in signature.items()
            if p.default is p.empty
            and name not in _NOT_SWEPT
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }


# simulate ---------------------------------------------------------------------------------
def _simulate() -> Callable[..., Any]:
    from cloudsched.dispatch.simulation import simulate

    return simulate


def with_plugin_path(params: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """Read a plug-in policy ``file.py[:NAME]`` relative to the spec's folder."""
    policy = params.get("policy")
    if not isinstance(policy, str):
        return params
    path, sep, name = policy.rpartition(":")
    if not (sep and path.endswith(".py")):
        path, sep, name = policy, "", ""
    if not path.endswith(".py") or Path(path).is_absolute():
        return params
    return {**params, "policy": f"{Path(base_dir) / path}{sep}{name}"}


def _check_simulate(params: dict[str, Any], ctx: PointContext) -> None:
    from cloudsched.dispatch.spec import SimulationSpec

    SimulationSpec(**with_plugin_path(params, ctx.base_dir))


def _run_simulate(
    params: dict[str, Any], rng: np.random.Generator, _model_seed: int, ctx: PointContext
) -> dict[str, Any]:
    from cloudsched.dispatch.simulation import simulate

    return simulate(**with_plugin_path(params, ctx.base_dir), rng=rng).to_row()


# predict ----------------------------------------------------------------------------------
def _predict() -> Callable[..., Any]:
    from cloudsched.dispatch.theory.prediction import predict

    return predict


def _check_predict(params: dict[str, Any], _ctx: PointContext) -> None:
    from cloudsched.dispatch.theory.prediction import check_predict

    kw = {k: v for k, v in params.items() if k != "load"}
    check_predict(loads=[params["load"]], **kw)


def _run_predict(
    params: dict[str, Any], _rng: np.random.Generator, _model_seed: int, _ctx: PointContext
) -> dict[str, Any]:
    from cloudsched.dispatch.theory.prediction import predict

    kw = {k: v for k, v in params.items() if k != "load"}
    out = predict(loads=[params["load"]], **kw)
    if isinstance(out, list):  # at N servers: mean field, refined and exact
        row = out[0].to_dict()
    else:
        (row,) = out.to_rows()
    for key in ("policy", "r", "d", "load", "servers", "with_replacement"):
        row.pop(key, None)  # already in the row's param.* columns
    return row


# place ------------------------------------------------------------------------------------
def _place() -> Callable[..., Any]:
    from cloudsched.placement.simulation import simulate_placement

    return simulate_placement


def _place_model(params: dict[str, Any], ctx: PointContext, seed: int) -> tuple[Any, Any]:
    """Return the point's cluster and job types (random graphs drawn from ``seed``)."""
    from cloudsched.placement import load_workload
    from cloudsched.placement.cluster import cluster_from_text

    model = {k: params[k] for k in PLACE_MODEL_KEYS if k in params}
    key = json.dumps([model, seed], sort_keys=True)
    if key in ctx.cache:
        return ctx.cache[key]
    text = str(model["cluster"])
    if text.lower().endswith((".yaml", ".yml")):  # a cluster file, relative to the spec
        text = str(Path(ctx.base_dir) / text)
    cluster = cluster_from_text(text, model.get("racks"), model.get("cross_rack_cost"))
    jobs = load_workload(Path(ctx.base_dir) / model["workload"], rng=np.random.default_rng(seed))
    for jt in jobs:
        cluster.check_fits(jt.topology, name="workload")
    ctx.cache[key] = (cluster, jobs)
    return cluster, jobs


def _check_place(params: dict[str, Any], ctx: PointContext) -> None:
    from cloudsched.placement.spec import PlacementSpec

    cluster, jobs = _place_model(params, ctx, 0)
    rest = {k: v for k, v in params.items() if k not in PLACE_MODEL_KEYS}
    PlacementSpec(rest.pop("policy", "dgp"), cluster, jobs, **rest)


def _run_place(
    params: dict[str, Any], rng: np.random.Generator, model_seed: int, ctx: PointContext
) -> dict[str, Any]:
    from cloudsched.placement.simulation import simulate_placement

    cluster, jobs = _place_model(params, PointContext(ctx.base_dir), model_seed)
    rest = {k: v for k, v in params.items() if k not in PLACE_MODEL_KEYS}
    res = simulate_placement(rest.pop("policy", "dgp"), cluster, jobs, rng=rng, **rest)
    row = res.to_row()
    # the parameters the run used (defaults included), e.g. DGP's calibrated alpha
    used = {k: v for k, v in res.params.items() if k != "pilots"}
    row = {k: v for k, v in row.items() if not k.startswith("param.")}
    row["params_used"] = json.dumps(used)
    return row


_TABLE = (
    Kind("simulate", _simulate, _check_simulate, _run_simulate),
    Kind(
        "predict",
        _predict,
        _check_predict,
        _run_predict,
        renamed={"loads": ("load", float)},
        required=frozenset({"policy", "load"}),
    ),
    Kind(
        "place",
        _place,
        _check_place,
        _run_place,
        extra=dict(PLACE_MODEL_KEYS),
        required=frozenset({"cluster", "workload"}),
    ),
)

#: Every kind by name.
KIND_TABLE: dict[str, Kind] = {k.name: k for k in _TABLE}
#: The kinds' names.
KINDS: tuple[str, ...] = tuple(KIND_TABLE)
