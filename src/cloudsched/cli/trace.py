"""Workload-log commands: ``trace stats``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cloudsched.cli.common import check_outputs, emit, render_table, to_json
from cloudsched.errors import check_choice

__all__ = ["register"]


def trace_stats(
    files: Annotated[list[Path], typer.Argument(help="Log files, read in order as one log.")],
    *,
    trace_format: Annotated[
        str, typer.Option("--trace-format", help="google2011, swf or csv.")
    ] = "google2011",
    unfinished: Annotated[
        str, typer.Option("--unfinished", help="Google trace: drop or censor.")
    ] = "drop",
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Histogram of service times to this file (.png, .pdf or .svg)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the output to this file (atomically).")
    ] = None,
) -> None:
    """Task count, time span, arrival rate and service-time statistics of a log."""
    check_outputs(out=out, plot=plot)
    from cloudsched.dispatch.traces import read_trace, trace_summary

    fmt = check_choice("--format", fmt, ("table", "json"))
    log = read_trace(files, trace_format, unfinished=unfinished)
    summary = trace_summary(log)
    if fmt == "json":
        text = to_json(summary)
    else:
        shown = {k: v for k, v in summary.items() if k != "notes"}
        import pandas as pd

        rows = pd.DataFrame({"field": list(shown), "value": [str(v) for v in shown.values()]})
        text = render_table(rows, f"trace: {', '.join(log.files)}")
        text += "".join(f"NOTE: {note}\n" for note in summary["notes"])  # type: ignore[attr-defined]
    emit(text, out)
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_histogram

        plot_histogram(
            log.trace.services,
            plot,
            xlabel="service time (s)",
            title=", ".join(Path(f).name for f in log.files),
        )


def register(app: typer.Typer) -> None:
    """Add the ``trace`` group (``stats``) to ``app``."""
    group = typer.Typer(help="Inspect workload logs.", no_args_is_help=True)
    group.command("stats")(trace_stats)
    app.add_typer(group, name="trace")
