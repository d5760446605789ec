"""Task-dispatch commands: ``predict``, ``fluid``, ``simulate`` and ``trace stats``."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import typer

from cloudsched.cli.common import (
    LazyProgress,
    check_outputs,
    emit,
    format_frame,
    one_line,
    render_table,
    to_json,
)
from cloudsched.errors import (
    ParameterError,
    check_choice,
    check_int,
    check_loads,
    check_real,
)

__all__ = ["register"]

FORMATS = ("table", "csv", "json")


#: Most loads one ``predict`` call solves (each is a fixed-point solve, ~1 ms).
MAX_LOADS = 100_000


def _parse_loads(load: Sequence[str] | None, loads: str | None) -> np.ndarray:
    """Combine ``--load`` values and a ``--loads START:STOP:COUNT`` range."""
    if load and loads:
        raise ParameterError(
            "--load/--loads", loads, "given alone: use --load or --loads, not both"
        )
    if loads is not None:
        allowed = (f"START:STOP:COUNT with 0 < START <= STOP < 1 and an integer COUNT in "
                   f"[1, {MAX_LOADS}]")  # fmt: skip
        parts = loads.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise ParameterError("--loads", loads, allowed) from None
        if (
            len(parts) != 3
            or not (0 < start <= stop < 1)
            or not 1 <= count <= MAX_LOADS
            or (count == 1 and start != stop)
        ):
            raise ParameterError("--loads", loads, allowed)
        return np.linspace(start, stop, count)
    if not load:
        raise ParameterError(
            "--load", None, "given at least once (or use --loads START:STOP:COUNT)"
        )
    return check_loads("--load", list(load))


def _parse_speeds(value: str) -> np.ndarray:
    """``--speeds``: a comma-separated list, or the name of a file of numbers."""
    looks_like_list = "," in value or value.replace(".", "", 1).strip().isdigit()
    path = Path(value)
    try:
        text = value if looks_like_list or not path.is_file() else path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError("--speeds", value, f"a readable file of numbers ({exc})") from None
    try:
        return np.array([float(t) for t in text.replace(",", " ").split()])
    except ValueError:
        raise ParameterError(
            "--speeds", value, "positive numbers separated by commas, or a file of numbers"
        ) from None


def predict(
    policy: str = typer.Argument(..., help="random, pod, jsq, jiq or jiq-pod."),
    load: list[str] = typer.Option(
        None, "--load", help="Load (arrival rate per server) in (0, 1); repeatable."
    ),
    loads: str = typer.Option(
        None, "--loads", help="A load range START:STOP:COUNT (evenly spaced)."
    ),
    r: float = typer.Option(10.0, "--r", help="Servers per dispatcher, N/M (> 0)."),
    d: int = typer.Option(2, "--d", help="Servers probed per decision (pod, jiq-pod; >= 1)."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json."),
    tail: int = typer.Option(6, "--tail", help="Tail columns s_1..s_K shown in table/csv output."),
    out: Path = typer.Option(None, "--out", help="Write the output to this file (atomically)."),
    plot: Path = typer.Option(
        None, "--plot", help="Also plot T against load to this file (.png, .pdf or .svg)."
    ),
) -> None:
    """Mean-field prediction of a dispatch policy: p0, response time, tail, message rates."""
    check_outputs(out=out, plot=plot)
    from cloudsched.dispatch.meanfield import predict as mf_predict

    fmt = check_choice("--format", fmt, FORMATS)
    tail = check_int("--tail", tail, low=0, high=1000)
    grid = _parse_loads(load, loads)
    pred = mf_predict(policy, grid, r=r, d=d)
    points = pred.to_dicts()
    df = pd.DataFrame(pred.to_rows(tail=tail)).drop(columns=["policy", "r", "d"])
    payload = {"policy": policy, "params": {"r": pred.r, "d": pred.d}, "points": points}
    title = f"mean field: {policy} (r={pred.r}, d={pred.d})"
    emit(format_frame(df, fmt, title, payload), out)
    if plot is not None:
        from cloudsched.plotting import plot_response_time

        plot_response_time({policy: (pred.loads, pred.mean_response_time)}, plot, title=title)


def fluid(
    policy: str = typer.Argument(..., help="random, pod, jiq or jiq-pod."),
    load: float = typer.Option(..., "--load", help="Load after time 0, in (0, 1)."),
    r: float = typer.Option(10.0, "--r", help="Servers per dispatcher, N/M (> 0)."),
    d: int = typer.Option(2, "--d", help="Servers probed per decision (pod, jiq-pod)."),
    horizon: float = typer.Option(50.0, "--horizon", help="End time, in mean service times."),
    points: int = typer.Option(51, "--points", help="Number of output times."),
    initial_tasks: int = typer.Option(
        0, "--initial-tasks", help="Every server starts with this many tasks."
    ),
    initial_load: float = typer.Option(
        None, "--initial-load", help="Start from the steady state at this load."
    ),
    fmt: str = typer.Option("table", "--format", help="table, csv or json."),
    out: Path = typer.Option(None, "--out", help="Write the output to this file (atomically)."),
    plot: Path = typer.Option(
        None, "--plot", help="Also plot mean tasks per server against time (.png, .pdf, .svg)."
    ),
) -> None:
    """Transient mean-field (fluid ODE) trajectory, e.g. recovery after a burst."""
    check_outputs(out=out, plot=plot)
    from cloudsched.dispatch.fluid import fluid_trajectory

    fmt = check_choice("--format", fmt, FORMATS)
    bar = LazyProgress(f"fluid {policy}")
    try:
        traj = fluid_trajectory(
            policy, load, r=r, d=d, horizon=horizon, num_points=points,
            initial_tasks=initial_tasks, initial_load=initial_load, progress=bar,
        )  # fmt: skip
    finally:
        bar.close()
    df = pd.DataFrame({"t": traj.t, "p0": traj.p0, "mean_tasks": traj.mean_tasks})
    for i in range(min(3, traj.tail.shape[1])):
        df[f"s_{i + 1}"] = traj.tail[:, i]
    payload = {
        "policy": policy,
        "params": {"load": traj.load, "r": traj.r, "d": traj.d},
        "points": df.to_dict(orient="records"),
    }
    emit(format_frame(df, fmt, f"fluid ODE: {policy}", payload), out)
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_trajectory

        plot_trajectory(traj.t, traj.mean_tasks, plot, title=f"fluid ODE: {policy}, load {load:g}")


def simulate(
    policy: str = typer.Argument(
        ...,
        help="random, round-robin, jsq, pod, jiq, jiq-original, jiq-pod, jiq-threshold, jiq-sq.",
    ),
    servers: int = typer.Option(..., "--servers", help="Number of servers N (>= 1)."),
    load: str = typer.Option(
        None,
        "--load",
        help="Offered load per server (> 0; >= 1 has no steady state). With --trace: "
        "rescale its inter-arrival times to this load (default: the trace's own times).",
    ),
    dispatchers: int = typer.Option(
        None, "--dispatchers", help="Number of dispatchers M in [1, N]."
    ),
    r: float = typer.Option(
        None, "--r", help="Servers per dispatcher N/M (alternative to --dispatchers)."
    ),
    d: int = typer.Option(2, "--d", help="Probes (pod, jiq-pod) or I-queues sampled (jiq-sq)."),
    threshold: int = typer.Option(1, "--threshold", help="z of jiq-threshold (>= 0)."),
    with_replacement: bool = typer.Option(
        False, "--with-replacement", help="Probe with replacement (supermarket model)."
    ),
    tasks: int = typer.Option(
        None, "--tasks", help="Fix the run length in arrivals (default: run until --precision)."
    ),
    horizon: float = typer.Option(
        None, "--horizon", help="Fix the run length in time (mean service times)."
    ),
    warmup: str = typer.Option(
        "auto", "--warmup", help="auto (detected by MSER) or a fraction of the run, in [0, 0.9]."
    ),
    precision: float = typer.Option(
        0.01, "--precision", help="Run until the 95% half-width is this fraction of the mean."
    ),
    max_tasks: int = typer.Option(
        5_000_000_000, "--max-tasks", help="Stop a run at this many arrivals in any case."
    ),
    initial: str = typer.Option(
        "auto",
        "--initial",
        help="auto (mean field where a model exists, else empty), meanfield or empty.",
    ),
    seed: int = typer.Option(
        None, "--seed", help="Root seed (default: fresh, reported in the output)."
    ),
    replications: int = typer.Option(
        1, "--replications", help="Independent replications (CI from their means)."
    ),
    batches: int = typer.Option(20, "--batches", help="Batches for the batch-means CI (>= 2)."),
    fmt: str = typer.Option("table", "--format", help="table, csv or json."),
    service: str = typer.Option(
        None,
        "--service",
        help="Service-time law: exp, det, uniform, lognormal:cv=2, h2:cv=3, "
        "pareto:alpha=1.5,max=1000, empirical:FILE (mean 1 unless mean= is given).",
    ),
    arrivals: str = typer.Option(
        None, "--arrivals", help="Inter-arrival law (same SPEC forms); --load sets its rate."
    ),
    trace: list[Path] = typer.Option(
        None, "--trace", help="Replay this log (repeatable: files are read in order, as one log)."
    ),
    trace_format: str = typer.Option(
        "google2011", "--trace-format", help="google2011, swf or csv."
    ),
    unfinished: str = typer.Option(
        "drop", "--unfinished", help="Google trace tasks that never finish: drop or censor."
    ),
    service_scale: float = typer.Option(
        1.0, "--service-scale", help="Multiply trace service times (unit conversion)."
    ),
    engine: str = typer.Option(
        "auto", "--engine", help="auto, exponential (Markov chain) or general (event list)."
    ),
    speeds: str = typer.Option(
        None, "--speeds", help="Server speeds: N comma-separated numbers, or a file of N numbers."
    ),
    tail: int = typer.Option(6, "--tail", help="Tail columns s_1..s_K in table/csv output."),
    out: Path = typer.Option(None, "--out", help="Write the output to this file (atomically)."),
) -> None:
    """Simulate a dispatch policy: Poisson/exp(1) by default, any laws, or a replayed trace."""
    check_outputs(out=out)
    from cloudsched.dispatch.simulation import simulate as run_simulation
    from cloudsched.dispatch.traces import read_trace
    from cloudsched.dispatch.workload import MAX_LOAD

    fmt = check_choice("--format", fmt, FORMATS)
    tail = check_int("--tail", tail, low=0, high=1000)
    lam = None if load is None else check_real("--load", load, low=0.0, high=MAX_LOAD,
                                               low_open=True)  # fmt: skip
    warm: float | str = warmup if warmup == "auto" else check_real(
        "--warmup", warmup, low=0.0, high=0.9)  # fmt: skip
    log = read_trace(trace, trace_format, unfinished=unfinished) if trace else None
    speed = _parse_speeds(speeds) if speeds is not None else None
    bar = LazyProgress(f"{policy} N={servers}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            res = run_simulation(
                policy, servers=servers, load=lam, dispatchers=dispatchers, r=r, d=d,
                threshold=threshold, with_replacement=with_replacement, tasks=tasks,
                horizon=horizon, warmup=warm, replications=replications, batches=batches,
                precision=precision, max_tasks=max_tasks, initial=initial,
                rng=seed, progress=bar, service=service, arrivals=arrivals,
                trace=log.trace if log else None, service_scale=service_scale, engine=engine,
                speeds=speed,
            )  # fmt: skip
        finally:
            bar.close()
    shown = {one_line(str(w.message)) for w in caught}
    for note in [*shown, *(n for n in res.warnings if n not in shown)]:
        sys.stderr.write(f"warning: {note}\n")
    df = pd.DataFrame([res.to_row(tail)])
    if fmt == "table":
        fields = df.T.reset_index().set_axis(["field", "value"], axis=1)
        fields = fields[fields["field"] != "warnings"]
        title = f"simulation: {policy}"
        if not res.steady_state:
            title += " — NOT STEADY: no interval"
        elif res.ci95 is None:
            title += " — interval withheld"
        text = render_table(fields, title)
        text += "".join(f"WARNING: {note}\n" for note in res.warnings)
    else:
        text = format_frame(df, fmt, "", res.to_dict())
    emit(text, out)


def trace_stats(
    files: list[Path] = typer.Argument(..., help="Log files, read in order as one log."),
    trace_format: str = typer.Option(
        "google2011", "--trace-format", help="google2011, swf or csv."
    ),
    unfinished: str = typer.Option("drop", "--unfinished", help="Google trace: drop or censor."),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    plot: Path = typer.Option(
        None, "--plot", help="Histogram of service times to this file (.png, .pdf or .svg)."
    ),
    out: Path = typer.Option(None, "--out", help="Write the output to this file (atomically)."),
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
    """Add the task-dispatch commands to ``app``."""
    app.command()(predict)
    app.command()(fluid)
    app.command()(simulate)
    trace = typer.Typer(help="Inspect workload logs.", no_args_is_help=True)
    trace.command("stats")(trace_stats)
    app.add_typer(trace, name="trace")
