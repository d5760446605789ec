"""``cloudsched compare``: several policies x loads (x d, r) in one table and one figure.

``tune``, which searches instead of comparing, is in :mod:`.tune`.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, parse_loads, render_table, wrote
from cloudsched.cli.console import warn
from cloudsched.cli.options import (
    Arrivals,
    BalancerOptions,
    FormatAll,
    MaxTasks,
    Out,
    Precision,
    Seed,
    Service,
    Slowdown,
    TimeLimit,
    opt,
)
from cloudsched.cli.trace import LogFormat, LogService, Trace, TraceFormat, Unfinished, trace_log
from cloudsched.errors import ParameterError, check_int, check_real

__all__ = ["compare_table", "register"]


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}g}"


def compare_table(rows: list[dict[str, Any]], title: str) -> str:
    """Render compare rows in 80 columns (``*``: not steady; ``~``: short of its precision).

    ``-``: no model or interval.

    ``mf``: the mean field; ``sim T``: the simulated mean.  The ``d`` column shows
    jiq-threshold's ``z`` instead (``z=1``).
    """
    cols: dict[str, list[str]] = {
        k: []
        for k in ("policy", "d", "r", "load", "mf T", "sim T", "± 95%", "mf p99", "p99", "msg/task")
    }
    for row in rows:
        half = (row["ci95_high"] - row["ci95_low"]) / 2
        cols["policy"].append(row["policy"])
        cols["d"].append(
            str(row["d"])
            if row["d"]
            else (f"z={row['threshold']}" if row.get("threshold") is not None else "-")
        )
        cols["r"].append(f"{row['r']:g}")
        cols["load"].append(_fmt(row["load"]))
        cols["mf T"].append(_fmt(row["meanfield_T"]))
        cols["sim T"].append(
            _fmt(row["mean_response_time"])
            + ("*" if not row["steady_state"] else "~" if _short(row) else "")
        )
        cols["± 95%"].append(_fmt(half, 2))
        cols["mf p99"].append(_fmt(row["meanfield_p99"]))
        cols["p99"].append(_fmt(row["p99"]))
        cols["msg/task"].append(_fmt(row["messages_per_task"], 3))
    text = render_table(cols, title)
    text += "mf: mean field (N = inf); sim T: simulated mean; ± 95%: half-width of its CI\n"
    if not all(r["steady_state"] for r in rows):
        text += "* not steady: no interval, the number describes this run only\n"
    from cloudsched.results import in_interval

    off = [
        r
        for r in rows
        if r["steady_state"]
        and in_interval(r["meanfield_T"], r["ci95_low"], r["ci95_high"]) is False
    ]
    if off:
        loads: dict[str, list[str]] = {}
        for r in off:
            loads.setdefault(r["policy"], []).append(_fmt(r["load"]))
        names = "; ".join(f"{p} at load {', '.join(v)}" for p, v in loads.items())
        note = (
            f"mf T is outside the simulated interval for {names}: the N = inf limit leaves "
            "out this farm's 1/N effect (`cloudsched predict POLICY --servers N` gives the "
            "refined value)"
        )
        text += textwrap.fill(note, width=80) + "\n"
    short = [r for r in rows if r["steady_state"] and _short(r)]
    if short:
        asked = short[0].get("precision_target")
        reached = ", ".join(_fmt(r.get("precision_reached"), 3) for r in short)
        text += (
            f"~ stopped at --max-tasks before --precision {asked:.3g} held (reached "
            f"{reached}):\n  the interval is wider than asked\n"
        )
    return text


def _short(row: dict[str, Any]) -> bool:
    """Whether an open-ended run stopped before its precision target held."""
    return row.get("stop_reason") == "max_tasks" and row.get("precision_target") is not None


def _grid_values(
    policies: list[str], d: list[int] | None, r: list[float] | None, threshold: list[int] | None
) -> tuple[list[int], list[float] | None, list[int]]:
    """Check the compared values of d, r and the threshold (defaults 2, each policy's, 1)."""
    if len(set(policies)) != len(policies):
        raise ParameterError("POLICIES", policies, "distinct policy names")
    ds = [check_int("--d", x, low=1) for x in (d or [2])]
    rs = [check_real("--r", x, low=1.0) for x in r] if r else None
    zs = [check_int("--threshold", x, low=0, high=2**62) for x in (threshold or [1])]
    return ds, rs, zs


def compare(
    policies: Annotated[list[str], typer.Argument(help="Policies (or plug-in FILE.py:NAME).")],
    *,
    servers: Annotated[int, opt("--servers", help="Number of servers N (>= 1).")],
    load: Annotated[
        list[str] | None, opt("--load", help="Load per server; repeatable (several loads).")
    ] = None,
    loads: Annotated[str | None, opt("--loads", help="A load range START:STOP:COUNT.")] = None,
    d: Annotated[list[int] | None, opt("--d", help="Probes d; repeatable (default 2).")] = None,
    r: Annotated[
        list[float] | None,
        opt(
            "--r",
            help="Servers per dispatcher N/M; repeatable (default: 10 for round-robin and the "
            "JIQ family, one dispatcher for the others).",
        ),
    ] = None,
    threshold: Annotated[
        list[int] | None, opt("--threshold", help="z of jiq-threshold; repeatable (default 1).")
    ] = None,
    precision: Precision = 0.01,
    tasks: Annotated[int | None, opt("--tasks", help="Fix each run's length in arrivals.")] = None,
    max_tasks: MaxTasks = 200_000_000,
    time_limit: TimeLimit = None,
    seed: Seed = 0,
    service: Service = None,
    arrivals: Arrivals = None,
    trace: Trace = None,
    trace_format: TraceFormat = "auto",
    unfinished: Unfinished = "drop",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    option: BalancerOptions = None,
    slowdown: Slowdown = None,
    fmt: FormatAll = None,
    out: Out = None,
    plot: Annotated[
        Path | None,
        opt("--plot", help="Plot response time against load per policy (.png/.pdf/.svg)."),
    ] = None,
) -> None:
    """Compare policies at several loads: mean field, simulated mean with CI, p99, messages."""
    check_outputs(out=out, plot=plot, inputs=trace or [])
    import pandas as pd

    from cloudsched.cli.common import resolve_format
    from cloudsched.cli.results import FRAME_FORMATS, flat_inputs, run_inputs, write_frame
    from cloudsched.experiments.compare import compare as run_compare

    fmt = resolve_format(fmt, out, FRAME_FORMATS)
    servers = check_int("--servers", servers, low=1)
    precision = check_real("--precision", precision, low=0.0, high=1.0, low_open=True)
    log = trace_log(
        trace, trace_format, unfinished=unfinished, log_format=log_format, log_service=log_service
    )
    grid: list[float | None] = (
        [None]
        if log is not None and not (load or loads)
        else [float(x) for x in parse_loads(load, loads)]
    )
    ds, rs, zs = _grid_values(policies, d, r, threshold)
    bar = LazyProgress("compare", delay=1.0)

    try:
        pairs = run_compare(
            policies,
            grid,
            servers=servers,
            ds=ds,
            rs=rs,
            thresholds=zs,
            seed=seed,
            progress=bar,
            exponential=service is None and arrivals is None and log is None and not slowdown,
            policy_options=option or [],
            slowdown=slowdown,
            precision=precision,
            tasks=tasks,
            max_tasks=max_tasks,
            time_limit=time_limit,
            service=service,
            arrivals=arrivals,
            trace=log.trace if log else None,
        )
    finally:
        bar.close()
    inputs = run_inputs(
        service=service,
        arrivals=arrivals,
        speeds=None,
        log=log,
        service_scale=1.0,
        load_given=grid != [None],
    )
    rows = [row for row, _ in pairs]
    for row, res in pairs:  # every run's own warnings, as simulate gives them
        for note in res.warnings:
            warn(f"{row['policy']} load {_fmt(row['load'])}: {note}")
    title = f"compare: N = {servers}, seed {seed} ({inputs['time_unit']})"
    if fmt == "table":
        text = compare_table(rows, title)
        from cloudsched.cli.common import emit

        emit(text, out)
    else:
        df = pd.DataFrame([{**row, **flat_inputs(inputs)} for row in rows])
        payload = {"servers": servers, "seed": seed, "inputs": inputs, "rows": rows}
        write_frame(df, fmt, out, title, payload)
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_compare

        plot_compare(
            rows,
            plot,
            title=f"N = {servers}" + (f", trace {', '.join(trace)}" if trace else ""),
            ylabel=f"mean response time ({inputs['time_unit']})",
        )
        wrote(plot)


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``tune`` to ``app``."""
    app.command()(compare)
