"""Parameter sweeps: a grid of runs, executed locally, on Dask or on any pool, stored run by run.

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

Executors: this process, a local process pool, Dask (an optional extra, ``pip install
"cloudsched[dask]"``: a private LocalCluster or a scheduler's address), or any pool the
caller already has, as SciPy's ``workers=`` and emcee's ``pool=`` take one: a
:class:`concurrent.futures.Executor` (``loky.get_reusable_executor()``,
``mpi4py.futures.MPIPoolExecutor()``, a Dask client's ``get_executor()``) or anything with a
``map`` (``multiprocessing.Pool``, ``ray.util.multiprocessing.Pool``), or such a ``map``
itself.  Runs are sent as picklable tuples to :func:`run_task`; results come back to this
process, which stores them.

Storage: one Parquet file per finished run, ``DIR/runs/<run id>.parquet``, written
atomically (temporary file, then rename), so an interrupted sweep loses at most the runs in
flight, and ``resume`` skips every run already stored.  :func:`load_results` reads them all.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.errors import ExternalError, ParameterError
from cloudsched.experiments.kinds import KIND_TABLE, KINDS, PointContext
from cloudsched.experiments.sweep_spec import Run, SweepSpec, load_spec, parse_spec
from cloudsched.io import atomic_path
from cloudsched.progress import Progress, counted

__all__ = [
    "KINDS",
    "Run",
    "SweepSpec",
    "load_results",
    "load_spec",
    "parse_spec",
    "run_one",
    "run_sweep",
    "run_task",
    "stored_ids",
]

#: Columns that measure the machine, not the model: they differ between identical runs.
TIMING_COLUMNS = ("wall_seconds", "events_per_second", "solver_seconds")


def run_one(
    kind: str, params: dict[str, Any], root: int, spawn_key: tuple[int, ...], base_dir: str = "."
) -> dict[str, Any]:
    """Run one point and return its result row (flat: scalars only).

    Warnings the run issues are not printed (workers would print them out of order); they
    are in the row's ``warnings`` column, which the CLI summarises at the end.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run_one(kind, params, root, spawn_key, base_dir)


def run_task(task: tuple[str, dict[str, Any], int, tuple[int, ...], str]) -> dict[str, Any]:
    """:func:`run_one` of ``(kind, params, root, spawn_key, base_dir)``: what a pool maps."""
    return run_one(*task)


def _run_one(
    kind: str, params: dict[str, Any], root: int, spawn_key: tuple[int, ...], base_dir: str
) -> dict[str, Any]:
    rng = np.random.default_rng(np.random.SeedSequence(root, spawn_key=spawn_key))
    # random graphs of a workload come from the point alone: the same for every replication
    point = np.random.SeedSequence(root, spawn_key=spawn_key[:-1])
    row = KIND_TABLE[kind].run(params, rng, int(point.generate_state(1)[0]), PointContext(base_dir))
    row.pop("seed", None)
    return row


def _row_frame(spec: SweepSpec, run: Run, row: dict[str, Any]) -> pd.DataFrame:
    out: dict[str, Any] = {"run_id": run.run_id, "replication": run.replication}
    out.update(
        {
            f"param.{k}": (json.dumps(v) if isinstance(v, list | dict) else v)
            for k, v in run.params.items()
        }
    )
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
    executor: str | Any = "local",
    workers: int = 1,
    scheduler: str | None = None,
    security: Any = None,
    resume: bool = False,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Run every run of ``spec`` not yet stored; return the rows of all of ``spec``'s runs.

    Parameters
    ----------
    spec : SweepSpec
        The validated spec.
    out_dir : path-like
        Results directory (``runs/`` of Parquet files, and a copy of the spec).
    executor : "local", "dask", an Executor, a pool with ``map``, or a ``map``
        ``local``: this process (``workers=1``) or a process pool; ``dask`` (the optional
        extra ``cloudsched[dask]``): a private ``distributed.LocalCluster`` of ``workers``
        processes (TLS with a certificate of its own, on 127.0.0.1:
        :func:`~cloudsched.experiments.sweep_dask.local_cluster`), or the scheduler at
        ``scheduler``.  Any :class:`concurrent.futures.Executor` (runs stored as each
        finishes), or an object with ``map`` or a map-like callable (``pool.map``; runs stored
        in order as it yields them): the caller's pool, started and stopped by the caller.
    workers : int
        Worker processes.
    scheduler : str, optional
        Address of a running Dask scheduler (``tls://host:8786``); implies ``dask``.
        An unreachable address is a :class:`ParameterError`; a worker or scheduler lost
        mid-sweep, or no live worker for
        :data:`~cloudsched.experiments.sweep_dask.DASK_NO_WORKER_TIMEOUT` seconds, an
        :class:`ExternalError` saying what was stored (``resume`` continues).
    security : distributed.Security, optional
        How to reach ``scheduler``: its TLS certificates (``Security(tls_ca_file=...,
        tls_client_cert=..., tls_client_key=..., require_encryption=True)``).  Default:
        Dask's configuration (``distributed.comm.tls`` in ``~/.config/dask`` or the
        ``DASK_DISTRIBUTED__COMM__TLS__*`` variables).  A scheduler reached without TLS
        runs whatever anyone who can reach it submits: use ``tls://``.
    resume : bool
        Skip stored runs; without it a directory that already holds runs is refused.
    progress : callable, optional
        ``progress(fraction, "(k of n runs)")`` (:mod:`cloudsched.progress`) as runs finish.
    """
    from cloudsched.errors import check_choice, check_int

    pool = None if isinstance(executor, str) else executor
    if pool is not None and not (hasattr(pool, "submit") or hasattr(pool, "map") or callable(pool)):
        raise ParameterError(
            "executor",
            type(pool).__name__,
            "'local', 'dask', a concurrent.futures.Executor, a pool with map, or a map",
        )
    executor = "pool" if pool is not None else check_choice("executor", executor, ("local", "dask"))
    workers = check_int("workers", workers, low=1, high=1024)
    if scheduler is not None:
        if not str(scheduler).strip():
            raise ParameterError("scheduler", scheduler, "a Dask scheduler address")
        executor = "dask"
    if executor == "dask":
        from cloudsched.experiments.sweep_dask import require_dask

        require_dask()
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
        tmp.write_text(
            json.dumps(
                {
                    "kind": spec.kind,
                    "seed": spec.seed,
                    "replications": spec.replications,
                    "fixed": spec.fixed,
                    "grid": spec.grid,
                },
                indent=2,
                default=str,
            )
        )
    todo = [r for r in spec.runs() if r.run_id not in done]
    total = len(todo)
    if progress is not None:
        progress(*counted(0, total))
    if pool is not None:
        _run_given(spec, out, todo, pool, progress)
    elif executor == "dask":
        from cloudsched.experiments.sweep_dask import run_dask

        run_dask(
            spec, out, todo, workers, scheduler, progress, security, task=run_one, store=_store
        )
    elif workers == 1:
        for k, run in enumerate(todo):
            _store(
                out,
                spec,
                run,
                run_one(spec.kind, run.params, spec.seed, run.spawn_key, spec.base_dir),
            )
            if progress is not None:
                progress(*counted(k + 1, total))
    else:
        _run_pool(spec, out, todo, workers, progress)
    df = load_results(out)
    # only this spec's runs (a resumed directory may also hold runs of an earlier grid)
    return df[df["run_id"].isin({r.run_id for r in spec.runs()})].reset_index(drop=True)


def _run_given(
    spec: SweepSpec, out: Path, todo: list[Run], pool: Any, progress: Progress | None
) -> None:
    """Run ``todo`` on the caller's executor, pool or map; store each row as it comes back."""
    tasks = [(spec.kind, r.params, spec.seed, r.spawn_key, spec.base_dir) for r in todo]
    if hasattr(pool, "submit"):  # a concurrent.futures.Executor: stored as each finishes
        from concurrent.futures import as_completed

        futures = {pool.submit(run_task, t): r for t, r in zip(tasks, todo, strict=True)}
        try:
            for k, fut in enumerate(as_completed(futures)):
                _store(out, spec, futures[fut], fut.result())
                if progress is not None:
                    progress(*counted(k + 1, len(todo)))
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
        return
    mapped = pool.map if hasattr(pool, "map") else pool
    rows = mapped(run_task, tasks)
    for k, (run, row) in enumerate(zip(todo, rows, strict=True)):
        _store(out, spec, run, row)
        if progress is not None:
            progress(*counted(k + 1, len(todo)))


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


def _run_pool(
    spec: SweepSpec, out: Path, todo: list[Run], workers: int, progress: Progress | None
) -> None:
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
                    progress(*counted(finished, len(todo)))
    except BaseException:
        # Ctrl-C, SIGTERM or a failed run: drop the queued runs and stop the ones in flight
        # (their results would be lost anyway; a resumed sweep recomputes them identically)
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.terminate()
        raise
    pool.shutdown()
