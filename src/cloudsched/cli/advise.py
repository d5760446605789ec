"""``cloudsched advise``: which choice_count (d) for a power-of-d balancer, against a full scan."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import (
    check_outputs,
    emit,
    format_frame,
    resolve_format,
    trace_laws,
    wrote,
)
from cloudsched.cli.console import warn
from cloudsched.cli.options import FormatCsv, MaxTasks, Out, Precision, Seed, opt
from cloudsched.cli.trace import LogFormat, LogService, TraceFormat
from cloudsched.errors import ParameterError, check_int, check_real

__all__ = ["register"]

FORMATS = ("table", "csv", "json")


def _workload(
    servers: int,
    load: float | None,
    rate: float | None,
    trace: list[str] | None,
    unit: str | None,
    kw: dict[str, Any],
) -> tuple[float, dict[str, Any], float, str]:
    """Return the load, the simulator's laws, and how times are shown (scale, unit).

    Without a log: Poisson arrivals at ``load`` (or ``rate`` tasks per mean service time
    over the farm), exp(1) service, times in mean service times.  With a log: its service
    and inter-arrival times resampled, at its own rate (or ``rate`` requests per second, or
    rescaled to ``load``, as ``tune`` does), times in its unit (``s`` or ``ms``).
    """
    from cloudsched.dispatch.workload.logs import read_log

    units = ("s", "ms") if trace else ("service",)
    unit = unit or units[0]
    if unit not in units:
        why = "a log's times are seconds" if trace else "without a log, mean service times"
        raise ParameterError("--unit", unit, " or ".join(units) + f" ({why})")
    if load is not None and rate is not None:
        raise ParameterError("--load", load, "given without --rate (one sets the other)")
    if load is None and rate is None and not trace:
        raise ParameterError("--load", None, "given (or --rate, or a --trace)")
    if not trace:
        x = (
            load
            if load is not None
            else check_real("--rate", rate, low=0.0, low_open=True) / servers
        )
        return x, {}, 1.0, "mean service times"
    log = read_log(
        trace, kw["trace_format"], log_format=kw["log_format"], log_service=kw["log_service"]
    )
    svc, arr, mean_s, log_rate = trace_laws(log)
    per_second = log_rate if rate is None else check_real("--rate", rate, low=0.0, low_open=True)
    scale = mean_s / (1e-3 if unit == "ms" else 1.0)
    x = load if load is not None else per_second * mean_s / servers  # --load rescales the log
    return x, {"service": svc, "arrivals": arr}, scale, unit


def advise(
    *,
    servers: Annotated[int, opt("--servers", help="Endpoints N (>= 2).")],
    load: Annotated[
        float | None,
        opt(
            "--load",
            help="Load per endpoint, in (0, 1) (with --trace: the log's times rescaled to it).",
        ),
    ] = None,
    rate: Annotated[
        float | None,
        opt(
            "--rate",
            help="Arrival rate of the farm (per mean service time; "
            "with --trace, requests per second).",
        ),
    ] = None,
    trace: Annotated[
        list[str] | None,
        opt(
            "--trace",
            help="An access log (or shipped name): its service and "
            "inter-arrival times, resampled, are the workload.",
        ),
    ] = None,
    trace_format: TraceFormat = "auto",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    d: Annotated[
        list[int] | None,
        opt(
            "--d",
            help="A choice_count to try (repeatable; default 1, 2, 3, 4, 6, "
            "8, 16, 32 below N, then a bisection between the last d that fails and the first "
            "that qualifies; N, the full scan, always).",
        ),
    ] = None,
    metric: Annotated[str, opt("--metric", help="p99 or mean: what is compared.")] = ("p99"),
    tolerance: Annotated[
        float,
        opt(
            "--tolerance",
            help="Advise the smallest d within this fraction of the full scan's metric (0.1: 10%).",
        ),
    ] = 0.1,
    target: Annotated[
        float | None,
        opt("--target", help="Also: the smallest d meeting this bound on the metric (in --unit)."),
    ] = None,
    unit: Annotated[
        str | None, opt("--unit", help="Times shown in s or ms (with --trace).")
    ] = None,
    precision: Precision = 0.02,
    max_tasks: MaxTasks = 200_000_000,
    seed: Seed = 0,
    fmt: FormatCsv = None,
    out: Out = (None),
    plot: Annotated[
        Path | None, opt("--plot", help="Plot the metric against d (.png, .pdf or .svg).")
    ] = None,
) -> None:
    """Which choice_count? pod(d) with and without replacement against the full scan."""
    check_outputs(out=out, plot=plot, inputs=trace or [])
    from cloudsched.experiments.advise import advise as run_advise

    fmt = resolve_format(fmt, out, FORMATS)
    n = check_int("--servers", servers, low=2, high=10**7)
    kw = {"trace_format": trace_format, "log_format": log_format, "log_service": log_service}
    x, laws, scale, shown_unit = _workload(n, load, rate, trace, unit, kw)
    precision = check_real("--precision", precision, low=0.0, high=1.0, low_open=True)
    bar = LazyProgress(f"advise N={n}", delay=1.0)
    try:
        res = run_advise(
            servers=n,
            load=x,
            ds=d,
            metric=metric,
            tolerance=tolerance,
            target=None if target is None else target / scale,
            seed=seed,
            progress=bar,
            precision=precision,
            max_tasks=max_tasks,
            **laws,
        )
    finally:
        bar.close()
    _emit(res, scale, shown_unit, fmt, out)
    if plot is not None:
        _plot(res, scale, shown_unit, plot)
        wrote(plot)


def _frame(res: Any, scale: float) -> Any:
    import pandas as pd

    df = pd.DataFrame(res.rows)
    for col in (
        "mean_response_time",
        "ci95_low",
        "ci95_high",
        "p99",
        "metric",
        "metric_low",
        "metric_high",
        "theory_mean",
        "recheck_ci95_low",
        "recheck_ci95_high",
    ):
        df[col] = df[col] * scale
    return df


def _emit(res: Any, scale: float, unit: str, fmt: str, out: Path | None) -> None:
    from cloudsched.experiments.advise import theory_off

    df = _frame(res, scale)
    title = (
        f"choice_count on N={res.servers} endpoints, load {res.load:.3g}: {res.metric} "
        f"in {unit} (95% intervals)"
    )
    payload = {
        "servers": res.servers,
        "load": res.load,
        "metric": res.metric,
        "unit": unit,
        "tolerance": res.tolerance,
        "target": None if res.target is None else res.target * scale,
        "recommended": _pick(res.recommended),
        "meets_target": _pick(res.meets_target),
        "rows": df.to_dict(orient="records"),
        "notes": res.notes,
    }
    if fmt != "table":
        emit(format_frame(df, fmt, title, payload), out)
        return
    shown = df.assign(
        sampling=[
            "full scan" if f else ("with repl." if w else "without")
            for f, w in zip(df["full_scan"], df["with_replacement"], strict=True)
        ],
        interval=[
            f"[{lo:.4g}, {hi:.4g}]" if math.isfinite(hi) else "-"
            for lo, hi in zip(df["metric_low"], df["metric_high"], strict=True)
        ],
        theory=[
            f"{row['theory_mean']:.4g} ({row['theory_source']}){'*' if theory_off(row) else ''}"
            if row["theory_source"]
            else "-"
            for row in res.rows
        ],
    )[["d", "sampling", "mean_response_time", "theory", "metric", "interval", "examined"]]
    shown = shown.rename(
        columns={"mean_response_time": "mean", "metric": res.metric, "theory": "mean (theory)"}
    )
    text = format_frame(shown, "table", title, payload)
    text += _verdict(res, scale, unit)
    emit(text, out)


def _pick(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {"d": row["d"], "with_replacement": row["with_replacement"]}


def _name(row: dict[str, Any]) -> str:
    if row["full_scan"]:
        return f"d={row['d']} (the full scan)"
    return f"d={row['d']} {'with' if row['with_replacement'] else 'without'} replacement"


def _verdict(res: Any, scale: float, unit: str) -> str:
    scan = res.full_scan
    lines = [
        f"full scan: {res.metric} {scan['metric'] * scale:.4g} {unit}, "
        f"{scan['examined']} endpoints examined per request"
    ]
    if res.recommended is not None:
        r = res.recommended
        lines.append(
            f"advice: {_name(r)}, {res.metric} {r['metric'] * scale:.4g} {unit} "
            f"(95% interval up to {r['metric_high'] * scale:.4g}), within "
            f"{res.tolerance:.0%} of the full scan, examining {r['examined']} "
            "per request"
        )
    else:
        lines.append(f"advice: no d tried is certified within {res.tolerance:.0%} of the full scan")
    if res.target is not None:
        t = res.meets_target
        lines.append(
            f"target {res.target * scale:.4g} {unit}: "
            + (f"met from {_name(t)}" if t else "met by no d tried")
        )
    lines += [f"note: {n}" for n in res.notes]
    for row in res.rows:
        if row["warnings"]:
            warn(f"d={row['d']}: {row['warnings']}")
    return "".join(line + "\n" for line in lines)


def _plot(res: Any, scale: float, unit: str, path: Path) -> None:
    import numpy as np

    from cloudsched.plotting import plot_lines

    df = _frame(res, scale)
    points = {}
    for label, rep in (("without replacement", False), ("with replacement", True)):
        g = df[(df["with_replacement"] == rep) & ~df["full_scan"]].sort_values("d")
        half = (g["metric_high"] - g["metric_low"]).to_numpy() / 2
        points[f"pod(d), {label}"] = (g["d"].to_numpy(), g["metric"].to_numpy(), half)
    scan = df[df["full_scan"]].iloc[0]
    curves = {
        f"full scan (d = {res.servers})": (
            np.array([1.0, float(res.servers)]),
            np.full(2, scan["metric"]),
        )
    }
    plot_lines(
        curves,
        path,
        xlabel="d: endpoints sampled per request (log scale)",
        ylabel=f"{res.metric} response time ({unit})",
        log_x=True,
        points=points,
        connect=True,
        title=f"{res.metric} against d, N = {res.servers}, load {res.load:.3g}: full scan "
        f"{scan['metric']:.3g}; d = 2: {_at(df, 2)}",
    )


def _at(df: Any, d: int) -> str:
    """``5.1`` (the metric of d without replacement), or ``not tried``."""
    row = df[(df["d"] == d) & ~df["with_replacement"] & ~df["full_scan"]]
    return f"{row['metric'].iloc[0]:.3g}" if len(row) else "not tried"


def register(app: typer.Typer) -> None:
    """Add ``advise`` to ``app``."""
    app.command()(advise)
