"""The Dask executor of a sweep: a private TLS cluster on loopback, or a given scheduler."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cloudsched.errors import ExternalError, ParameterError
from cloudsched.experiments.sweep_spec import Run, SweepSpec
from cloudsched.progress import Progress, counted

__all__ = [
    "DASK_CONNECT_TIMEOUT",
    "DASK_NO_WORKER_TIMEOUT",
    "local_cluster",
    "require_dask",
    "run_dask",
]


#: Seconds to reach a Dask scheduler before giving up.
DASK_CONNECT_TIMEOUT = 10.0
#: Seconds a Dask sweep waits with no live worker before it stops.
DASK_NO_WORKER_TIMEOUT = 60.0


def require_dask() -> None:
    """Refuse in one line when Dask is not installed (it is an optional extra)."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        raise ParameterError(
            "executor",
            "dask",
            "'local' or a pool of yours: Dask is not installed (pip install \"cloudsched[dask]\")",
        )


def local_cluster(workers: int) -> Any:
    """Start the private Dask cluster of a sweep: TLS with a certificate made for it.

    Scheduler and workers listen on 127.0.0.1 only, and speak TLS with a temporary
    certificate authority created in memory (``Security.temporary()``): a process without
    this run's certificate (another user's, or another program's) can neither submit work
    to the workers nor read results.  No dashboard, and the scheduler's HTTP server (which
    starts anyway) on a free loopback port: never the fixed 8787 another program may hold.
    Workers start with Ctrl-C ignored (a terminal sends it to the whole process group):
    the sweep alone answers it, by closing the cluster, which stops them.
    """
    import logging
    import signal

    from distributed import LocalCluster
    from distributed.security import Security

    security = Security.temporary()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tls://",
            security=security,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,  # a failed run reaches the sweep through its
            # future; the workers' own error lines (a heartbeat cut by Ctrl-C) are noise
            scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def run_dask(
    spec: SweepSpec,
    out: Path,
    todo: list[Run],
    workers: int,
    scheduler: str | None,
    progress: Progress | None,
    security: Any = None,
    *,
    task: Callable[..., dict[str, Any]],
    store: Callable[[Path, SweepSpec, Run, dict[str, Any]], None],
) -> None:
    """Run ``todo`` on a Dask cluster (a private one, or ``scheduler``'s); ``store`` each row.

    ``task(kind, params, root, spawn_key, base_dir)`` is what a worker runs for one run.
    """
    import time

    from distributed import Client
    from distributed import wait as dask_wait

    cluster = None
    if scheduler is None:
        cluster = local_cluster(workers)
        client = Client(cluster, security=cluster.security)
    else:
        try:
            client = Client(scheduler, timeout=DASK_CONNECT_TIMEOUT, security=security)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ParameterError(
                "--scheduler",
                scheduler,
                f"the address of a reachable Dask scheduler, e.g. "
                f"tls://host:8786 ({type(exc).__name__}: {exc})",
            ) from None
    try:
        futures = {
            client.submit(
                task,
                spec.kind,
                r.params,
                spec.seed,
                r.spawn_key,
                spec.base_dir,
                pure=False,
                key=f"cloudsched-{r.run_id}",
            ): r
            for r in todo
        }
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
                store(out, spec, futures[fut], row)
                finished += 1
                if progress is not None:
                    progress(*counted(finished, len(todo)))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
