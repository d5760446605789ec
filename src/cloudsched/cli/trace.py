"""Workload-log commands: ``trace stats`` and ``trace list``; the log options they share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.common import check_outputs, emit, render_table, resolve_format, to_json, wrote
from cloudsched.cli.options import FormatJson, Out, opt

__all__ = ["LogFormat", "LogService", "Trace", "TraceFormat", "Unfinished", "register", "trace_log"]

Trace = Annotated[
    list[str] | None,
    opt(
        "--trace",
        help="Replay this log, or a shipped one by name (cloudsched trace list); "
        "repeatable: files are read in order, as one log.",
    ),
]
TraceFormat = Annotated[
    str,
    opt(
        "--trace-format",
        help="auto (from a shipped name, .swf, or the first line), google2011, swf, csv, "
        "nginx, envoy, envoy-json or haproxy.",
    ),
]
Unfinished = Annotated[
    str, opt("--unfinished", help="Google trace tasks that never finish: drop or censor.")
]
LogFormat = Annotated[
    str | None,
    opt(
        "--log-format",
        help="NGINX: the log_format string the log was written with (default: combined "
        "followed by $request_time $upstream_response_time).",
    ),
]
LogService = Annotated[
    str,
    opt(
        "--log-service",
        help="Access logs: service time = the backend's time (upstream) or the whole "
        "request at the proxy (total).",
    ),
]


def trace_log(trace: list[str] | None, trace_format: str, **options: Any) -> Any:
    """Read the log ``--trace`` names (``options`` as :func:`~.logs.read_log`'s), or None."""
    if not trace:
        return None
    from cloudsched.dispatch.workload.logs import read_log

    return read_log(trace, trace_format, **options)


def trace_stats(
    files: Annotated[
        list[str],
        typer.Argument(help="Log files (read in order as one log), or shipped names (trace list)."),
    ],
    *,
    trace_format: TraceFormat = "auto",
    unfinished: Unfinished = "drop",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    fmt: FormatJson = None,
    plot: Annotated[
        Path | None,
        opt("--plot", help="Histogram of service times to this file (.png, .pdf or .svg)."),
    ] = None,
    out: Out = None,
) -> None:
    """Task count, time span, arrival rate and service-time statistics of a log."""
    check_outputs(out=out, plot=plot, inputs=files)
    from cloudsched.dispatch.workload.logs import log_inputs, read_log
    from cloudsched.dispatch.workload.traces import trace_summary

    fmt = resolve_format(fmt, out, ("table", "json"))
    log = read_log(
        files, trace_format, unfinished=unfinished, log_format=log_format, log_service=log_service
    )
    summary = trace_summary(log)
    summary["inputs"] = log_inputs(log)
    if fmt == "json":
        text = to_json(summary)
    else:
        shown = {k: v for k, v in summary.items() if k not in ("notes", "inputs", "files")}
        rows = {"field": list(shown), "value": [_short(v) for v in shown.values()]}
        text = render_table(rows, f"trace: {', '.join(map(str, files))}")
        text += "".join(f"NOTE: {note}\n" for note in summary["notes"])  # type: ignore[attr-defined]
        text += "".join(
            f"read as: {k} = {v}\n" for k, v in log.header.items() if log.format not in ("swf",)
        )
    emit(text, out)
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_histogram

        plot_histogram(
            log.trace.services,
            plot,
            xlabel="service time (s)",
            title=", ".join(Path(str(f)).name for f in files),
        )
        wrote(plot)


def _short(v: object) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def trace_list() -> None:
    """List the workload logs that ship with the package (usable as --trace NAME)."""
    from cloudsched.data import DATASETS

    rows = {
        "name": list(DATASETS),
        "format": [v[1] for v in DATASETS.values()],
        "what": [v[3] for v in DATASETS.values()],
    }
    emit(render_table(rows, "shipped logs (sources and licences: cloudsched/data/README.md)"), None)


def register(app: typer.Typer) -> None:
    """Add the ``trace`` group (``stats``, ``list``) to ``app``."""
    group = typer.Typer(help="Inspect workload logs.", no_args_is_help=True)
    group.command("stats")(trace_stats)
    group.command("list")(trace_list)
    app.add_typer(group, name="trace")
