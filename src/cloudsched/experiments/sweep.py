"""Parameter sweeps: a grid of runs, executed locally or on Dask, stored run by run.

A sweep spec (YAML)::

    kind: simulate            # simulate | predict | place
    seed: 2026                # root seed
    replications: 3           # independent runs per grid point (simulate, place)
    fixed: {servers: 1000, r: 10, tasks: 200000}
    grid:                     # every combination of these lists
      policy: [jiq, jiq-pod]
      load: [0.5, 0.9]

Parameter names are those of :func:`cloudsched.dispatch.simulate`,
:func:`cloudsched.dispatch.predict` (``load`` is one number per run) or
:func:`cloudsched.placement.simulation.simulate_placement` (plus ``cluster``, ``racks``,
``cross_rack_cost`` and ``workload``, a path relative to the spec).

Seeds: run ``(point, replication)`` gets ``SeedSequence(seed, spawn_key=(h1, h2, rep))``
(what ``SeedSequence(seed).spawn`` does, keyed by the point instead of a counter), where
``h1, h2`` are 32-bit words of a SHA-256 of the point's parameters: a run's random numbers
depend on the root seed and the point only, never on the executor, the number of workers or
the order.  Random graphs of a ``place`` workload come from ``spawn_key=(h1, h2)``, so every
replication of a point sees the same graphs.  Run ids hash the root seed and the point.

Storage: one Parquet file per finished run, ``DIR/runs/<run id>.parquet``, written
atomically (temporary file, then rename), so an interrupted sweep loses at most the runs in
flight, and ``resume`` skips every run already stored.  :func:`load_results` reads them all.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import os
import types
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.errors import ExternalError, InputError, ParameterError
from cloudsched.io import atomic_path, read_yaml

__all__ = ["KINDS", "Run", "SweepSpec", "load_results", "load_spec", "run_one", "run_sweep"]

KINDS = ("simulate", "predict", "place")
PLACE_MODEL_KEYS = {"cluster": str, "racks": int, "cross_rack_cost": float, "workload": str}
# Arguments a sweep cannot set: callbacks, arrays and the generator (seeds come from the spec).
_NOT_SWEPT = {"rng", "progress", "trace", "speeds", "frozen_weights", "cluster", "job_types"}
#: Columns that measure the machine, not the model: they differ between identical runs.
TIMING_COLUMNS = ("wall_time", "wall_seconds", "events_per_second", "solver_seconds")


def _target(kind: str) -> Callable[..., Any]:
    if kind == "simulate":
        from cloudsched.dispatch.simulation import simulate

        return simulate
    if kind == "predict":
        from cloudsched.dispatch.meanfield import predict

        return predict
    from cloudsched.placement.simulation import simulate_placement

    return simulate_placement


def _parameters(kind: str) -> dict[str, Any]:
    """Sweepable parameter -> its annotated type."""
    fn = _target(kind)
    hints = typing.get_type_hints(fn)
    out = {
        name: hints.get(name, Any)
        for name in inspect.signature(fn).parameters
        if name not in _NOT_SWEPT
    }
    if kind == "predict":
        out.pop("loads", None)
        out["load"] = float
    if kind == "place":
        out.update(PLACE_MODEL_KEYS)
    return out


def _required(kind: str) -> set[str]:
    """Parameters without a default that a sweep of ``kind`` must set."""
    if kind == "predict":
        return {"policy", "load"}
    if kind == "place":
        return {"cluster", "workload"}
    signature = inspect.signature(_target(kind)).parameters
    return {name for name, p in signature.items()
            if p.default is p.empty and name not in _NOT_SWEPT
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}  # fmt: skip


def _accepts(tp: Any, value: Any) -> bool:
    """Tell whether ``value`` fits the annotation ``tp`` (scalars, unions, sequences)."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is not None and isinstance(value, list):
        args = typing.get_args(tp)
        return all(_accepts(args[0], v) for v in value) if args else True
    return isinstance(value, dict | list | str | int | float)


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its id, parameters, replication and seed words."""

    run_id: str
    params: dict[str, Any]
    replication: int
    spawn_key: tuple[int, ...]


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep specification (see the module docstring)."""

    kind: str
    seed: int
    replications: int
    fixed: dict[str, Any]
    grid: dict[str, list[Any]]
    base_dir: str = "."

    def points(self) -> Iterator[dict[str, Any]]:
        """Every grid point (fixed parameters included), keys of the grid in sorted order."""
        keys = sorted(self.grid)
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield {**self.fixed, **dict(zip(keys, values, strict=True))}

    def runs(self) -> list[Run]:
        """Every run: each point times each replication."""
        out = []
        for params in self.points():
            canon = json.dumps(params, sort_keys=True, default=str)
            digest = hashlib.sha256(canon.encode()).digest()
            words = (int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:8], "little"))
            # the id also covers the root seed: a resumed directory never mixes two seeds
            ident = hashlib.sha256(f"{self.seed}:{canon}".encode()).hexdigest()[:16]
            for rep in range(self.replications):
                run_id = f"{ident}-{rep}"
                out.append(Run(run_id, params, rep, (*words, rep)))
        return out


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep spec; every error names the key (nothing runs before)."""
    where = str(path)
    doc = read_yaml(path)
    if not isinstance(doc, Mapping):
        raise InputError(where, "a sweep spec is a mapping with 'kind', 'grid', ...")
    return parse_spec(dict(doc), where, str(Path(path).resolve().parent))


def parse_spec(doc: dict[str, Any], where: str = "spec", base_dir: str = ".") -> SweepSpec:
    """Validate a sweep spec given as a dict (see :func:`load_spec`)."""
    allowed = {"kind", "seed", "replications", "fixed", "grid"}
    for key in doc:
        if key not in allowed:
            raise InputError(where, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise InputError(where, f"'kind' must be one of {', '.join(KINDS)} (got {kind!r})")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**62:
        # stored as int64 in every Parquet row (reproductions add small offsets)
        raise InputError(where, f"'seed' must be an integer in [0, 2^62] (got {seed!r})")
    reps = doc.get("replications", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 100_000:
        raise InputError(where, f"'replications' must be an integer in [1, 100000] (got {reps!r})")
    fixed = doc.get("fixed") or {}
    grid = doc.get("grid")
    if not isinstance(fixed, Mapping):
        raise InputError(where, "'fixed' must be a mapping of parameter: value")
    if not isinstance(grid, Mapping) or not grid:
        raise InputError(where, "'grid' must be a non-empty mapping of parameter: [values]")
    params = _parameters(kind)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(where, f"grid.{key} must be a non-empty list of values")
        seen: set[str] = set()
        for v in values:  # a repeated value would be the same run twice
            text = json.dumps(v, sort_keys=True, default=str)
            if text in seen:
                raise InputError(where, f"grid.{key} lists {v!r} more than once (the same run)")
            seen.add(text)
    for section, items in (("fixed", {k: [v] for k, v in fixed.items()}), ("grid", grid)):
        for key, values in items.items():
            if key not in params:
                raise InputError(
                    where,
                    f"{section}.{key} is not a parameter of {kind} "
                    f"(allowed: {', '.join(sorted(params))})",
                )
            for v in values:
                if not _accepts(params[key], v):
                    raise InputError(where, f"{section}.{key}: {v!r} has the wrong type")
    both = set(fixed) & set(grid)
    if both:
        raise InputError(where, f"{sorted(both)[0]} is in both 'fixed' and 'grid'")
    for key in sorted(_required(kind)):
        if key not in fixed and key not in grid:
            raise InputError(where, f"a {kind} sweep needs '{key}' (in fixed or grid)")
    spec = SweepSpec(kind, seed, reps, dict(fixed), {k: list(v) for k, v in grid.items()}, base_dir)
    _dry_check(spec, where)
    return spec


def _dry_check(spec: SweepSpec, where: str) -> None:
    """Check every point's values as its run would, before any run (nothing is computed)."""
    from cloudsched.dispatch.meanfield import check_prediction
    from cloudsched.dispatch.plan import plan_simulation
    from cloudsched.placement.plan import plan_placement

    models: dict[str, tuple[Any, Any]] = {}
    for params in spec.points():
        try:
            if spec.kind == "simulate":
                plan_simulation(**_with_plugin_path(params, spec.base_dir))
            elif spec.kind == "predict":
                kw = {k: v for k, v in params.items() if k != "load"}
                check_prediction(loads=[params["load"]], **kw)
            else:
                model = {k: params[k] for k in PLACE_MODEL_KEYS if k in params}
                key = json.dumps(model, sort_keys=True)
                if key not in models:  # each cluster/workload read once
                    models[key] = _place_model(model, spec.base_dir, 0)
                rest = {k: v for k, v in params.items() if k not in PLACE_MODEL_KEYS}
                plan_placement(*models[key], **rest)
        except ParameterError as exc:
            point = ", ".join(f"{k}={params[k]!r}" for k in spec.grid)
            raise InputError(where, f"at {point}: {exc}" if point else str(exc)) from None


def _with_plugin_path(params: dict[str, Any], base_dir: str) -> dict[str, Any]:
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


def _place_model(params: dict[str, Any], base_dir: str, seed: int) -> tuple[Any, Any]:
    from cloudsched.placement import load_workload, parse_cluster

    cluster = parse_cluster(
        params["cluster"], racks=params.get("racks", 1),
        cross_rack_cost=params.get("cross_rack_cost", 2.0),
    )  # fmt: skip
    path = Path(base_dir) / params["workload"]
    jobs = load_workload(path, np.random.default_rng(seed))
    for jt in jobs:
        cluster.check_fits(jt.topology, name="workload")
    return cluster, jobs


def run_one(kind: str, params: dict[str, Any], root: int, spawn_key: tuple[int, ...],
            base_dir: str = ".") -> dict[str, Any]:  # fmt: skip
    """Run one point and return its result row (flat: scalars only).

    Warnings the run issues are not printed (workers would print them out of order); they
    are in the row's ``warnings`` column, which the CLI summarises at the end.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run_one(kind, params, root, spawn_key, base_dir)


def _run_one(kind: str, params: dict[str, Any], root: int, spawn_key: tuple[int, ...],
             base_dir: str) -> dict[str, Any]:  # fmt: skip
    ss = np.random.SeedSequence(root, spawn_key=spawn_key)
    rng = np.random.default_rng(ss)
    if kind == "simulate":
        from cloudsched.dispatch.simulation import simulate

        row = simulate(**_with_plugin_path(params, base_dir), rng=rng).to_row()
    elif kind == "predict":
        from cloudsched.dispatch.meanfield import predict

        kw = {k: v for k, v in params.items() if k != "load"}
        pred = predict(loads=[params["load"]], **kw)
        row = {
            "p0": float(pred.p0[0]),
            "mean_response_time": float(pred.mean_response_time[0]),
            "join_rate": float(pred.join_rate[0]),
            "delete_rate": float(pred.delete_rate[0]),
            "probe_rate": float(pred.probe_rate[0]),
        }
    else:
        from cloudsched.placement.simulation import simulate_placement

        model = {k: params[k] for k in PLACE_MODEL_KEYS if k in params}
        rest = {k: v for k, v in params.items() if k not in PLACE_MODEL_KEYS}
        # random graphs of the workload come from the point alone: the same for every replication
        point = np.random.SeedSequence(root, spawn_key=spawn_key[:-1])
        cluster, jobs = _place_model(model, base_dir, int(point.generate_state(1)[0]))
        res = simulate_placement(cluster, jobs, rng=rng, **rest).to_dict()
        per_type = res.pop("per_type")
        # the parameters the run used (defaults included), e.g. DGP's calibrated alpha
        used = res.pop("params")
        used.pop("pilots", None)
        row = dict(res)
        row["params_used"] = json.dumps(used)
        for t in per_type:
            keys = ("edges", "mean_queue_length", "mean_partition_cost", "cost_rate", "mean_wait")
            for key in keys:
                row[f"{t['name']}.{key}"] = t[key]
    row.pop("seed", None)
    return row


def _row_frame(spec: SweepSpec, run: Run, row: dict[str, Any]) -> pd.DataFrame:
    out: dict[str, Any] = {"run_id": run.run_id, "replication": run.replication}
    out.update({f"param.{k}": (json.dumps(v) if isinstance(v, list | dict) else v)
                for k, v in run.params.items()})  # fmt: skip
    out["root_seed"] = spec.seed
    out["spawn_key"] = json.dumps(list(run.spawn_key))
    for k, v in row.items():
        out[k] = None if isinstance(v, float) and math.isnan(v) else v
    return pd.DataFrame([out])


def _store(out_dir: Path, spec: SweepSpec, run: Run, row: dict[str, Any]) -> None:
    path = out_dir / "runs" / f"{run.run_id}.parquet"
    with atomic_path(path) as tmp:
        _row_frame(spec, run, row).to_parquet(tmp, index=False)


def stored_ids(out_dir: Path) -> set[str]:
    """Ids of the runs already stored under ``out_dir``."""
    runs = out_dir / "runs"
    return {p.stem for p in runs.glob("*.parquet")} if runs.is_dir() else set()


def load_results(out_dir: str | Path) -> pd.DataFrame:
    """Every stored run of a sweep, one row each, sorted by run id."""
    files = sorted((Path(out_dir) / "runs").glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    return df.sort_values("run_id", ignore_index=True)


def run_sweep(
    spec: SweepSpec,
    out_dir: str | Path,
    *,
    executor: str = "local",
    workers: int = 1,
    scheduler: str | None = None,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Run every run of ``spec`` not yet stored; return the rows of all of ``spec``'s runs.

    Parameters
    ----------
    spec : SweepSpec
        The validated spec.
    out_dir : path-like
        Results directory (``runs/`` of Parquet files, and a copy of the spec).
    executor : {"local", "dask"}
        ``local``: this process (``workers=1``) or a process pool; ``dask``: a
        ``distributed.LocalCluster`` of ``workers`` processes, or the scheduler at
        ``scheduler``.
    workers : int
        Worker processes.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); implies ``dask``.
        An unreachable address is a
        :class:`ParameterError`; a worker or scheduler lost mid-sweep, or no live worker for
        :data:`DASK_NO_WORKER_TIMEOUT` seconds, an :class:`ExternalError` saying what was
        stored (``resume`` continues).
    resume : bool
        Skip stored runs; without it a directory that already holds runs is refused.
    progress : callable, optional
        Called with (done, total) as runs finish.
    """
    from cloudsched.errors import check_choice, check_int

    executor = check_choice("executor", executor, ("local", "dask"))
    workers = check_int("workers", workers, low=1, high=1024)
    if scheduler is not None:
        if not str(scheduler).strip():
            raise ParameterError("scheduler", scheduler, "a Dask scheduler address")
        executor = "dask"
    out = Path(out_dir)
    done = stored_ids(out)
    if done and not resume:
        raise ParameterError(
            "out", str(out), "a new directory, or pass --resume to continue the stored sweep"
        )
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for stale in (out / "runs").glob(".*.tmp"):  # left by a run killed while writing
        stale.unlink(missing_ok=True)
    spec_path = out / "spec.json"
    with atomic_path(spec_path) as tmp:
        tmp.write_text(json.dumps({
            "kind": spec.kind, "seed": spec.seed, "replications": spec.replications,
            "fixed": spec.fixed, "grid": spec.grid,
        }, indent=2, default=str))  # fmt: skip
    todo = [r for r in spec.runs() if r.run_id not in done]
    total = len(todo)
    if progress is not None:
        progress(0, total)
    if executor == "dask":
        _run_dask(spec, out, todo, workers, scheduler, progress)
    elif workers == 1:
        for k, run in enumerate(todo):
            _store(out, spec, run, run_one(spec.kind, run.params, spec.seed, run.spawn_key,
                                          spec.base_dir))  # fmt: skip
            if progress is not None:
                progress(k + 1, total)
    else:
        _run_pool(spec, out, todo, workers, progress)
    df = load_results(out)
    # only this spec's runs (a resumed directory may also hold runs of an earlier grid)
    return df[df["run_id"].isin({r.run_id for r in spec.runs()})].reset_index(drop=True)


def _watch_parent() -> None:
    """Pool worker initializer: exit as soon as the sweep's process is gone.

    A worker whose parent was killed (SIGKILL leaves no chance to clean up) would otherwise
    compute its run to the end for nobody.
    """
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True, name="cloudsched-parent-watch").start()


def _run_pool(spec: SweepSpec, out: Path, todo: list[Run], workers: int,
              progress: Callable[[int, int], None] | None) -> None:  # fmt: skip
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_watch_parent)
    try:
        pending = {
            pool.submit(run_one, spec.kind, r.params, spec.seed, r.spawn_key, spec.base_dir): r
            for r in todo
        }
        finished = 0
        while pending:
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                run = pending.pop(fut)
                try:
                    row = fut.result()
                except BrokenProcessPool:
                    raise ExternalError(
                        f"a worker process died (killed, or out of memory): {finished} of "
                        f"{len(todo)} runs stored in {out}; rerun with --resume"
                    ) from None
                _store(out, spec, run, row)
                finished += 1
                if progress is not None:
                    progress(finished, len(todo))
    except BaseException:
        # Ctrl-C, SIGTERM or a failed run: drop the queued runs and stop the ones in flight
        # (their results would be lost anyway; a resumed sweep recomputes them identically)
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.terminate()
        raise
    pool.shutdown()


#: Seconds to reach a Dask scheduler before giving up.
DASK_CONNECT_TIMEOUT = 10.0
#: Seconds a Dask sweep waits with no live worker before it stops.
DASK_NO_WORKER_TIMEOUT = 60.0


def _run_dask(spec: SweepSpec, out: Path, todo: list[Run], workers: int, scheduler: str | None,
              progress: Callable[[int, int], None] | None) -> None:  # fmt: skip
    import time

    from distributed import Client, LocalCluster
    from distributed import wait as dask_wait

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout=DASK_CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ParameterError(
                "--scheduler", scheduler, f"the address of a reachable Dask scheduler, e.g. "
                f"tcp://host:8786 ({type(exc).__name__}: {exc})",
            ) from None  # fmt: skip
    try:
        futures = {
            client.submit(run_one, spec.kind, r.params, spec.seed, r.spawn_key, spec.base_dir,
                          pure=False, key=f"cloudsched-{r.run_id}"): r
            for r in todo
        }  # fmt: skip
        pending, finished, alone_since = set(futures), 0, None
        while pending:
            try:
                ready, pending = dask_wait(pending, timeout=5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                ready = set()
                if client.scheduler_info().get("workers"):
                    alone_since = None
                elif alone_since is None:
                    alone_since = time.monotonic()
                elif time.monotonic() - alone_since > DASK_NO_WORKER_TIMEOUT:
                    raise ExternalError(
                        f"no live Dask worker for {DASK_NO_WORKER_TIMEOUT:g} s: {finished} of "
                        f"{len(todo)} runs stored in {out}; start workers and rerun with --resume"
                    ) from None
            for fut in ready:
                try:
                    row = fut.result()
                except (OSError, TimeoutError) as exc:  # lost scheduler or worker
                    raise ExternalError(
                        f"the Dask cluster failed ({type(exc).__name__}: {exc}): {finished} of "
                        f"{len(todo)} runs stored in {out}; rerun with --resume"
                    ) from None
                except Exception as exc:
                    if type(exc).__name__ != "KilledWorker":
                        raise
                    raise ExternalError(
                        f"a Dask worker died running {futures[fut].run_id}: {finished} of "
                        f"{len(todo)} runs stored in {out}; rerun with --resume"
                    ) from None
                _store(out, spec, futures[fut], row)
                finished += 1
                if progress is not None:
                    progress(finished, len(todo))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
