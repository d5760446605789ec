"""``cloudsched compare``: several policies x loads (x d, r) in one table and one figure."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.common import (
    LazyProgress,
    check_outputs,
    parse_loads,
    policies_given,
    render_table,
    wrote,
)
from cloudsched.cli.trace import LogFormat, LogService, TraceFormat, Unfinished
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
    cols: dict[str, list[str]] = {k: [] for k in
                                  ("policy", "d", "r", "load", "mf T", "sim T", "± 95%",
                                   "mf p99", "p99", "msg/task")}  # fmt: skip
    for row in rows:
        half = (row["ci95_high"] - row["ci95_low"]) / 2
        cols["policy"].append(row["policy"])
        cols["d"].append(str(row["d"]) if row["d"] else (
            f"z={row['threshold']}" if row.get("threshold") is not None else "-"))  # fmt: skip
        cols["r"].append(f"{row['r']:g}")
        cols["load"].append(_fmt(row["load"]))
        cols["mf T"].append(_fmt(row["meanfield_T"]))
        cols["sim T"].append(_fmt(row["mean_response_time"]) + (
            "*" if not row["steady_state"] else "~" if _short(row) else ""))  # fmt: skip
        cols["± 95%"].append(_fmt(half, 2))
        cols["mf p99"].append(_fmt(row["meanfield_p99"]))
        cols["p99"].append(_fmt(row["p99"]))
        cols["msg/task"].append(_fmt(row["messages_per_task"], 3))
    text = render_table(cols, title)
    text += "mf: mean field (N = inf); sim T: simulated mean; ± 95%: half-width of its CI\n"
    if not all(r["steady_state"] for r in rows):
        text += "* not steady: no interval, the number describes this run only\n"
    short = [r for r in rows if r["steady_state"] and _short(r)]
    if short:
        asked = short[0].get("precision_target")
        reached = ", ".join(_fmt(r.get("precision_reached"), 3) for r in short)
        text += (f"~ stopped at --max-tasks before --precision {asked:.3g} held (reached "
                 f"{reached}):\n  the interval is wider than asked\n")  # fmt: skip
    return text


def _short(row: dict[str, Any]) -> bool:
    """Whether an open-ended run stopped before its precision target held."""
    return row.get("stop_reason") == "max_tasks" and row.get("precision_target") is not None


def compare(
    policies: Annotated[list[str], typer.Argument(help="Policies (or plug-in FILE.py:NAME).")],
    *,
    servers: Annotated[int, typer.Option("--servers", help="Number of servers N (>= 1).")],
    load: Annotated[
        list[str] | None,
        typer.Option("--load", help="Load per server; repeatable (several loads)."),
    ] = None,
    loads: Annotated[
        str | None, typer.Option("--loads", help="A load range START:STOP:COUNT.")
    ] = None,
    d: Annotated[
        list[int] | None, typer.Option("--d", help="Probes d; repeatable (default 2).")
    ] = None,
    r: Annotated[
        list[float] | None,
        typer.Option("--r", help="Servers per dispatcher N/M; repeatable (default 10)."),
    ] = None,
    threshold: Annotated[
        list[int] | None,
        typer.Option("--threshold", help="z of jiq-threshold; repeatable (default 1)."),
    ] = None,
    precision: Annotated[
        float, typer.Option("--precision", help="Each run's 95% half-width / mean.")
    ] = 0.01,
    tasks: Annotated[
        int | None, typer.Option("--tasks", help="Fix each run's length in arrivals.")
    ] = None,
    max_tasks: Annotated[
        int, typer.Option("--max-tasks", help="Stop a run at this many arrivals in any case.")
    ] = 200_000_000,
    time_limit: Annotated[
        float | None,
        typer.Option("--time-limit", help="Stop a run after this many seconds (an error, "
                     "exit 1; default: none). Ctrl-C stops any run at once."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Root seed (run k uses stream k).")] = 0,
    service: Annotated[
        str | None, typer.Option("--service", help="Service-time law SPEC (as simulate).")
    ] = None,
    arrivals: Annotated[
        str | None, typer.Option("--arrivals", help="Inter-arrival law SPEC (as simulate).")
    ] = None,
    trace: Annotated[
        list[str] | None, typer.Option("--trace", help="Replay a log (or a shipped name).")
    ] = None,
    trace_format: TraceFormat = "auto",
    unfinished: Unfinished = "drop",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="table, csv, json or parquet (default: from --out)."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the rows to this file.")] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Plot response time against load per policy (.png/.pdf/.svg)."),
    ] = None,
) -> None:
    """Compare policies at several loads: mean field, simulated mean with CI, p99, messages."""
    check_outputs(out=out, plot=plot, inputs=trace or [])
    import pandas as pd

    from cloudsched.cli.common import resolve_format
    from cloudsched.cli.results import FRAME_FORMATS, flat_inputs, run_inputs, write_frame
    from cloudsched.dispatch.workload.logs import read_log
    from cloudsched.experiments.compare import compare as run_compare

    fmt = resolve_format(fmt, out, FRAME_FORMATS)
    servers = check_int("--servers", servers, low=1)
    precision = check_real("--precision", precision, low=0.0, high=1.0, low_open=True)
    log = read_log(trace, trace_format, unfinished=unfinished, log_format=log_format,
                   log_service=log_service) if trace else None  # fmt: skip
    grid: list[float | None] = [None] if log is not None and not (load or loads) else [
        float(x) for x in parse_loads(load, loads)]  # fmt: skip
    if len(set(policies)) != len(policies):
        raise ParameterError("POLICIES", policies, "distinct policy names")
    ds = [check_int("--d", x, low=1) for x in (d or [2])]
    rs = [check_real("--r", x, low=1.0) for x in (r or [10.0])]
    zs = [check_int("--threshold", x, low=0, high=2**62) for x in (threshold or [1])]
    bar = LazyProgress("compare", delay=1.0)

    try:
        pairs = run_compare(
            policies, grid, servers=servers, ds=ds, rs=rs, thresholds=zs, seed=seed,
            progress=bar,
            exponential=service is None and arrivals is None and log is None,
            precision=precision, tasks=tasks, max_tasks=max_tasks, time_limit=time_limit,
            service=service,
            arrivals=arrivals, trace=log.trace if log else None,
        )  # fmt: skip
    finally:
        bar.close()
    inputs = run_inputs(service=service, arrivals=arrivals, speeds=None, log=log,
                        service_scale=1.0, load_given=grid != [None])  # fmt: skip
    rows = [row for row, _ in pairs]
    for row, res in pairs:  # every run's own warnings, as simulate gives them
        for note in res.warnings:
            sys.stderr.write(f"warning: {row['policy']} load {_fmt(row['load'])}: {note}\n")
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

        plot_compare(rows, plot, title=f"N = {servers}" + (f", trace {', '.join(trace)}"
                                                             if trace else ""),
                     ylabel=f"mean response time ({inputs['time_unit']})")  # fmt: skip
        wrote(plot)


def _servers_range(text: str) -> tuple[int, int]:
    allowed = "N or MIN:MAX, integers with 1 <= MIN <= MAX"
    try:
        lo, _, hi = text.partition(":")
        pair = (int(lo), int(hi or lo))
    except ValueError:
        raise ParameterError("--servers", text, allowed) from None
    if not 1 <= pair[0] <= pair[1]:
        raise ParameterError("--servers", text, allowed)
    return pair


def _trace_laws(log: Any) -> tuple[Any, Any, float, float]:
    """Service and inter-arrival laws resampled from a log, its mean service and its rate.

    Equal arrival times (a gap of 0 at the log's resolution) become half the smallest
    positive gap, so that every resampled gap is positive.
    """
    import numpy as np

    from cloudsched.dispatch.workload.distributions import Empirical

    s = log.trace.services
    gaps = np.diff(log.trace.arrivals)
    positive = gaps[gaps > 0]
    if positive.size == 0:
        raise ParameterError("--trace", log.trace.source, "a log whose arrivals are not all equal")
    gaps = np.where(gaps > 0, gaps, positive.min() / 2)
    return Empirical(s), Empirical(gaps), float(s.mean()), float(gaps.size / log.trace.span)


def tune(
    policy_args: Annotated[
        list[str] | None, typer.Argument(
            metavar="POLICIES", help="Candidate policies (default: random, pod, jiq, "
            "jiq-pod; jsq is ideal: it reads every queue and counts no messages).")
    ] = None,
    *,
    p99: Annotated[float | None, typer.Option("--p99", help="Target: p99 response time.")] = None,
    mean: Annotated[
        float | None, typer.Option("--mean", help="Target: mean response time.")
    ] = None,
    unit: Annotated[
        str | None,
        typer.Option("--unit", help="Unit of the target: s or ms (with --trace), or service "
                     "(mean service times; the default without a trace)."),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option("--rate", help="Arrival rate of the whole farm: tasks per second with "
                     "--trace (default: the log's own rate), else per mean service time."),
    ] = None,
    load: Annotated[
        float | None, typer.Option("--load", help="Or: the load per server at a fixed --servers N.")
    ] = None,
    servers: Annotated[str, typer.Option("--servers", help="N, or a range MIN:MAX to search.")
                       ] = "1:10000",
    policy: Annotated[
        list[str] | None,
        typer.Option("--policy", help="Older form of POLICIES (still accepted; repeatable)."),
    ] = None,
    d: Annotated[list[int] | None, typer.Option("--d", help="d values; repeatable.")] = None,
    r: Annotated[list[float] | None, typer.Option("--r", help="r values; repeatable.")] = None,
    threshold: Annotated[
        list[int] | None,
        typer.Option("--threshold", help="z values of jiq-threshold; repeatable (default 1)."),
    ] = None,
    max_messages: Annotated[
        float | None, typer.Option("--max-messages", help="At most this many messages per task.")
    ] = None,
    service: Annotated[str | None, typer.Option("--service", help="Service law SPEC.")] = None,
    arrivals: Annotated[str | None, typer.Option("--arrivals", help="Inter-arrival SPEC.")] = None,
    trace: Annotated[
        list[str] | None, typer.Option("--trace", help="A log (or shipped name) as the workload.")
    ] = None,
    trace_format: TraceFormat = "auto",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    precision: Annotated[float, typer.Option("--precision", help="Each run's precision.")] = 0.02,
    seed: Annotated[int, typer.Option("--seed", help="Root seed.")] = 0,
    fmt: Annotated[
        str | None, typer.Option("--format", help="table or json (default: from --out).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the answer to this file.")
    ] = None,
) -> None:
    """Find the cheapest policy, d, r and N that meet a p99 or mean target, certified."""
    check_outputs(out=out, inputs=trace or [])
    from cloudsched.cli.common import emit, resolve_format
    from cloudsched.cli.tune_output import explain, log_replay
    from cloudsched.dispatch.workload.logs import read_log
    from cloudsched.experiments.tune import tune as run_tune

    fmt = resolve_format(fmt, out, ("table", "json"))
    if (p99 is None) == (mean is None):
        raise ParameterError("--p99/--mean", None, "exactly one of --p99 X or --mean X")
    metric, target = ("p99", p99) if p99 is not None else ("mean", mean)
    target = check_real(f"--{metric}", target, low=0.0, low_open=True)
    lo, hi = _servers_range(servers)
    log = read_log(trace, trace_format, log_format=log_format,
                   log_service=log_service) if trace else None  # fmt: skip
    units = ("s", "ms") if log is not None else ("service",)
    unit = unit or units[0]
    if unit not in units:
        raise ParameterError("--unit", unit, " or ".join(units) + (
            " (a trace gives times in seconds)" if log is not None else
            " (without a trace, times are in mean service times)"))  # fmt: skip
    scale, svc_law, arr_law = 1.0, service, arrivals
    if log is not None:
        if service or arrivals:
            raise ParameterError("--service", service or arrivals, "not given with --trace")
        svc_law, arr_law, mean_s, log_rate = _trace_laws(log)
        scale = mean_s / (1e-3 if unit == "ms" else 1.0)  # one mean service time, in units
        rate = (log_rate if rate is None else rate) * mean_s  # tasks per mean service time
    if load is not None:
        if (rate is not None and log is None) or lo != hi:
            raise ParameterError("--load", load, "given with a fixed --servers N, without --rate")
        rate = check_real("--load", load, low=0.0, high=1.0, low_open=True, high_open=True) * lo
    if rate is None:
        raise ParameterError("--rate", None, "given (or --load with a fixed --servers N)")
    bar = LazyProgress(f"tune {metric} <= {target:g} {unit}", delay=1.0)
    try:
        res = run_tune(
            rate=rate, target=target / scale, metric=metric, servers=(lo, hi),
            policies=policies_given(policy_args, policy) or ("random", "pod", "jiq", "jiq-pod"),
            ds=d or (2, 3),
            rs=r or (10.0,), thresholds=threshold or (1,),
            max_messages=max_messages if max_messages is not None else math.inf,
            seed=seed, service=svc_law, arrivals=arr_law, precision=precision,
            replay=log_replay(log, metric) if log is not None else None,
            say=lambda line: bar(-1.0, line.strip()[:50]), scale=scale,
            unit=unit if log is not None else "mean service times",
        )  # fmt: skip
    finally:
        bar.close()
    emit(explain(res, scale, unit, fmt, trace), out)


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``tune`` to ``app``."""
    app.command()(compare)
    app.command()(tune)
