"""Experiment commands: ``sweep``, ``reproduce`` (the papers' figures) and ``demo``."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskProgressColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from cloudsched.cli._sigint import stopped_by
from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs
from cloudsched.cli.console import description_column, warn
from cloudsched.cli.options import Seed, opt

__all__ = ["register"]


class _CountBar:
    """A rich bar with run counts and an ETA, on standard error when it is a terminal.

    Without a terminal no bar is drawn (a transient bar would still leave a blank line,
    which would break the one-line error contract); a plain ``progress:`` line with the runs
    done and the time left is written every minute instead (``CLOUDSCHED_PROGRESS_SECONDS``).
    """

    def __init__(self, description: str) -> None:
        self.description = description
        self.live = sys.stderr.isatty()
        self.plain = LazyProgress(description)
        self.bar = Progress(
            description_column(),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.bar.add_task(description, total=None)
        if self.live:
            self.bar.start()

    def __call__(self, fraction: float, status: str = "") -> None:
        """Show the share done (a :data:`~cloudsched.progress.Progress`; ``(k of n runs)``)."""
        if self.live:
            self.bar.update(
                self.task,
                completed=max(fraction, 0.0),
                total=1.0,
                description=f"{self.description} {status}",
            )
        else:
            self.plain(fraction, status)

    def close(self) -> None:
        self.plain.close()
        if self.live:
            self.bar.stop()
            self.live = False


def _security(scheduler: str | None, ca: Path | None, cert: Path | None, key: Path | None) -> Any:
    """Return the TLS settings to reach an external scheduler (None: Dask's own config)."""
    from cloudsched.errors import ParameterError

    given = {"--tls-ca": ca, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    if scheduler is None:
        raise ParameterError("--tls-ca", str(ca or cert or key), "given with --scheduler")
    for name, path in given.items():
        if path is None or not path.is_file():
            raise ParameterError(
                name, str(path), "a readable file (give all three: --tls-ca, --tls-cert, --tls-key)"
            )
    from cloudsched.experiments.sweep_dask import require_dask

    require_dask()
    from distributed.security import Security

    return Security(
        tls_ca_file=str(ca),
        tls_client_cert=str(cert),
        tls_client_key=str(key),
        require_encryption=True,
    )


def sweep(
    spec: Annotated[Path, typer.Argument(help="Sweep spec (YAML): kind, seed, fixed, grid, ...")],
    *,
    out_arg: Annotated[str, opt("--out", help="Results directory (Parquet, one file per run).")],
    executor: Annotated[str, opt("--executor", help="local or dask.")] = "local",
    workers: Annotated[int, opt("--workers", help="Worker processes (>= 1).")] = 1,
    scheduler: Annotated[
        str | None,
        opt(
            "--scheduler", help="Dask scheduler address, tls://host:port (implies --executor dask)."
        ),
    ] = None,
    tls_ca: Annotated[
        Path | None, opt("--tls-ca", help="With --scheduler: its CA certificate.")
    ] = None,
    tls_cert: Annotated[
        Path | None, opt("--tls-cert", help="With --scheduler: this client's certificate.")
    ] = None,
    tls_key: Annotated[
        Path | None, opt("--tls-key", help="With --scheduler: this client's private key.")
    ] = None,
    resume: Annotated[bool, opt("--resume", help="Skip the runs already stored in --out.")] = False,
) -> None:
    """Run a grid of simulate/predict/place runs; results go to DIR/runs/*.parquet."""
    check_outputs(out_dir=out_arg)  # a str: Typer would turn '' into Path('.')
    out = Path(out_arg)
    from cloudsched.experiments.sweep import load_spec, run_sweep

    parsed = load_spec(spec)
    security = _security(scheduler, tls_ca, tls_cert, tls_key)
    bar = _CountBar(f"sweep {spec.name}")
    try:  # SIGTERM ends a sweep as Ctrl-C does (cli._sigint): workers stopped, no temporary file
        df = run_sweep(
            parsed,
            out,
            executor=executor,
            workers=workers,
            scheduler=scheduler,
            security=security,
            resume=resume,
            progress=bar,
        )
    except KeyboardInterrupt:
        bar.close()
        from cloudsched.experiments.sweep import stored_ids

        kept = len(stored_ids(out)) if out.is_dir() else 0
        sys.stderr.write(
            f"interrupted: {kept} runs stored in {out / 'runs'}; rerun with --resume to finish\n"
        )
        # not typer.Exit: main() would add its own line
        raise SystemExit(143 if stopped_by() == signal.SIGTERM else 130) from None
    finally:
        bar.close()
    Console(stderr=True).print(f"{len(df)} runs stored in {out / 'runs'}")
    for note in _warning_summary(df):
        warn(note)


def _warning_summary(df: Any) -> list[str]:
    """One line per distinct run warning: how many runs have it (the rows keep them all)."""
    import numpy as np

    if "warnings" not in df.columns:
        return []
    counts: dict[str, int] = {}
    for cell in df["warnings"].dropna():
        note = "; ".join(map(str, cell)) if isinstance(cell, list | tuple | np.ndarray) else cell
        if note:
            counts[str(note)] = counts.get(str(note), 0) + 1
    return [f"{n} of {len(df)} runs: {note}" for note, n in counts.items()]


def reproduce(
    paper: Annotated[
        str,
        typer.Argument(
            help="jiq (Wang, Feng and Cheng: task dispatch) or dgp (Ghaderi, Shakkottai and "
            "Srikant: graph placement)."
        ),
    ],
    *,
    out_arg: Annotated[str, opt("--out", help="Report folder.")],
    quick: Annotated[bool, opt("--quick", help="Smaller systems: under 5 minutes.")] = False,
    workers: Annotated[int, opt("--workers", help="Worker processes for the sweeps (>= 1).")] = 2,
    seed: Seed = 2026,
) -> None:
    """Every table and figure of one paper, as report.md and report.html."""
    check_outputs(out_dir=out_arg)  # a str: Typer would turn '' into Path('.')
    out = Path(out_arg)
    from cloudsched.errors import check_choice, check_int
    from cloudsched.experiments.reproduce import PAPERS
    from cloudsched.experiments.reproduce import reproduce as run

    which = check_choice("PAPER", paper, tuple(PAPERS))
    seed = check_int("--seed", seed, low=0, high=2**62)  # stored as int64, plus small offsets
    workers = check_int("--workers", workers, low=1, high=1024)
    console = Console(stderr=True)
    path = run(
        which,
        out,
        quick=quick,
        workers=workers,
        seed=seed,
        log=lambda line: console.print(f"[dim]{line}[/dim]"),
    )
    console.print(f"report written to {path}")


#: What the demo's first line says it takes (benchmarks/bench_docs_times.py, 2 cores).
DEMO_TIMES = (
    "measured on 2 cores: about 2.5 minutes the first time, half of it compiling the "
    "simulator; about 75 s after that"
)


def demo(
    *,
    out_arg: Annotated[str, opt("--out", help="Report folder.")] = "cloudsched-report",
    fresh: Annotated[
        bool, opt("--fresh", help="Recompute even where the folder holds this code's report.")
    ] = False,
) -> None:
    """Write a short report: the README's three questions answered, then the papers' figures."""
    check_outputs(out_dir=out_arg)  # a str: Typer would turn '' into Path('.')
    out = Path(out_arg)
    from cloudsched.experiments.demo import SEED, reusable, run_demo

    console = Console(stderr=True)
    if not fresh and reusable(out, SEED):
        path = out / "report.md"
        console.print(
            f"cloudsched demo: {out}/ already holds the report of this version of cloudsched "
            f"and seed: reusing it (--fresh recomputes): {path} and {path.with_suffix('.html')}"
        )
        return
    console.print(
        f"cloudsched demo: writing a short report to {out}/ ({DEMO_TIMES}; the compiling "
        "happens once per machine and version of cloudsched, and `cloudsched warmup` does "
        "it ahead)"
    )
    path = run_demo(out, log=lambda line: console.print(f"[dim]{line}[/dim]"), fresh=fresh)
    console.print(
        f"report written to {path} and {path.with_suffix('.html')} "
        "(self-contained: open it in any browser)"
    )


def examples(
    *,
    out_arg: Annotated[
        str, opt("--out", help="Folder to write the example files to.")
    ] = "examples",
) -> None:
    """Write the example files the documentation uses (workloads, clusters, plug-ins)."""
    check_outputs(out_dir=out_arg)
    from cloudsched.data import example_files
    from cloudsched.errors import ParameterError
    from cloudsched.io import atomic_write_bytes

    out = Path(out_arg)
    shipped = example_files()
    for name, data in shipped.items():  # nothing is written if one file is in the way
        target = out / name
        if target.exists() and (not target.is_file() or target.read_bytes() != data):
            raise ParameterError(
                "--out",
                out_arg,
                f"a folder where {name} is absent or the same (it holds another {name})",
            )
    written = 0
    for name, data in shipped.items():
        target = out / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(target, data)
            written += 1
    Console(stderr=True).print(
        f"{written} example files written to {out}/ ({len(shipped) - written} already there)"
    )


def register(app: typer.Typer) -> None:
    """Add the commands to the main app."""
    app.command()(sweep)
    app.command()(reproduce)
    app.command()(demo)
    app.command()(examples)
