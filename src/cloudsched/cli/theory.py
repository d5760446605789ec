"""The theory's commands: ``predict`` and ``fluid``.

``predict`` gives the mean field, or at N servers the refined and exact values beside it;
``fluid`` the fluid ODE's trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import (
    check_outputs,
    emit,
    format_frame,
    parse_loads,
    resolve_format,
    wrote,
)
from cloudsched.cli.console import warn
from cloudsched.cli.dispatch import parse_speeds
from cloudsched.cli.options import FormatCsv, Out, Tail, opt
from cloudsched.errors import ParameterError, check_int
from cloudsched.policy_table import TABLE

if TYPE_CHECKING:
    import numpy as np

__all__ = ["register"]

FORMATS = ("table", "csv", "json")


def predict(
    policy: Annotated[
        str,
        typer.Argument(
            help="A built-in policy: random, round-robin, jsq, "
            "pod, jiq, jiq-pod, jiq-original, jiq-threshold, jiq-sq."
        ),
    ],
    *,
    load: Annotated[
        list[str] | None,
        opt("--load", help="Load (arrival rate per server) in (0, 1); repeatable."),
    ] = None,
    servers: Annotated[
        int | None, opt("--servers", help="Predict at N servers: mean field, refined, exact.")
    ] = None,
    method: Annotated[
        str, opt("--method", help="With --servers: auto, meanfield, refined or exact.")
    ] = "auto",
    with_replacement: Annotated[
        bool, opt("--with-replacement", help="With --servers: probe with replacement.")
    ] = False,
    threshold: Annotated[
        int, opt("--threshold", help="jiq-threshold: listed while <= z tasks.")
    ] = 1,
    speeds: Annotated[
        str | None, opt("--speeds", help="Server speeds (a list or file); classes by frequency.")
    ] = None,
    loads: Annotated[
        str | None, opt("--loads", help="A load range START:STOP:COUNT (evenly spaced).")
    ] = None,
    r: Annotated[float, opt("--r", help="Servers per dispatcher, N/M (> 0).")] = 10.0,
    d: Annotated[int, opt("--d", help="Servers probed per decision (pod, jiq-pod; >= 1).")] = 2,
    refresh: Annotated[
        float | None,
        opt(
            "--refresh",
            help="pod, jsq: lengths read from a board published every T mean service "
            "times (the bulletin-board mean field).",
        ),
    ] = None,
    proxies: Annotated[
        int | None,
        opt(
            "--proxies",
            help="pod, jsq: K proxies, each choosing on its own counts (simulate "
            "--dispatchers K --view own); jsq exact, pod a closure.",
        ),
    ] = None,
    fmt: FormatCsv = None,
    tail: Tail = 4,
    out: Out = None,
    plot: Annotated[
        Path | None,
        opt("--plot", help="Also plot T against load to this file (.png, .pdf or .svg)."),
    ] = None,
) -> None:
    """Predict a dispatch policy: mean field, or at --servers N also refined and exact.

    The mean field gives p0, the response time, the tail and message rates; at N servers
    the table has the mean field, the refined 1/N value and the exact chain side by side.
    """
    check_outputs(out=out, plot=plot, inputs=[speeds])
    from cloudsched.dispatch.theory.prediction import predict as mf_predict

    fmt = resolve_format(fmt, out, FORMATS)
    tail = check_int("--tail", tail, low=0, high=1000)
    grid = parse_loads(load, loads)
    if refresh is not None or proxies is not None:
        _polled_predict(
            policy, grid, refresh, proxies, d, given=(speeds, servers), fmt=fmt, out=out
        )
        return
    if speeds is not None:
        from cloudsched.cli.finite_output import heterogeneous_predict

        heterogeneous_predict(policy, parse_speeds(speeds), grid, r=r, d=d, fmt=fmt, out=out)
        return
    if servers is not None:
        from cloudsched.cli.finite_output import finite_predict

        finite_predict(
            policy,
            servers,
            grid,
            r=r,
            d=d,
            replace=with_replacement,
            method=method,
            fmt=fmt,
            out=out,
            plot=plot,
            z=threshold,
        )
        return
    if method != "auto" or with_replacement:
        raise ParameterError(
            "--method" if method != "auto" else "--with-replacement",
            method if method != "auto" else True,
            "given with --servers N",
        )
    pred = mf_predict(policy, grid, r=r, d=d, z=check_int("--threshold", threshold, low=0))
    points = pred.to_dicts()
    import pandas as pd

    df = pd.DataFrame(pred.to_rows(tail=tail)).drop(columns=["policy", "r", "d"])
    payload = {"policy": policy, "params": {"r": pred.r, "d": pred.d}, "points": points}
    r_text = "-" if pred.r is None else f"{pred.r:g}"  # r=10, not r=10.0
    title = f"mean field: {policy} (r={r_text}, d={pred.d})"
    if TABLE[policy].threshold:
        title = f"mean field: {policy} (r={r_text}, z={threshold})"
    if fmt == "table":  # short headers: the table fits 80 columns
        df = df.rename(
            columns={
                "mean_response_time": "T",
                "join_rate": "join",
                "delete_rate": "delete",
                "probe_rate": "probe",
            }
        )
    emit(format_frame(df, fmt, title, payload), out)
    if plot is not None:
        from cloudsched.plotting import plot_response_time

        plot_response_time({policy: (pred.loads, pred.mean_response_time)}, plot, title=title)
        wrote(plot)


def _polled_predict(
    policy: str,
    grid: Sequence[float] | np.ndarray,
    refresh: float | None,
    proxies: int | None,
    d: int,
    *,
    given: tuple[object, object],
    fmt: str,
    out: Path | None,
) -> None:
    """``predict --refresh T`` or ``--proxies K``: one row per load."""
    import pandas as pd

    if refresh is not None and proxies is not None:
        raise ParameterError("--proxies", proxies, "not given with --refresh (one model at a time)")
    if given[0] is not None or given[1] is not None:
        name = "--speeds" if given[0] is not None else "--servers"
        raise ParameterError(name, "given", "without --refresh and --proxies")
    rows: list[dict[str, object]] = []
    if refresh is not None:
        from cloudsched.dispatch.theory.board import board_meanfield

        for x in grid:
            p = board_meanfield(policy, float(x), refresh, d=d)
            rows.append(
                {
                    "load": x,
                    "T": p.mean_response_time,
                    "tasks": p.mean_tasks,
                    "idle at publication": float(p.published[0]),
                    "converged": p.converged,
                }
            )
        title = f"mean field, board refreshed every {refresh:g}: {policy}"
    else:
        from cloudsched.dispatch.theory.proxies import POD_CLOSURE_ERROR, own_meanfield

        for x in grid:
            own = own_meanfield(policy, float(x), int(proxies or 0), d=d)
            rows.append(
                {
                    "load": x,
                    "T": own.mean_response_time,
                    "tasks": own.mean_tasks,
                    "model": "exact limit"
                    if own.exact
                    else f"closure (<= {POD_CLOSURE_ERROR:.0%} high)",
                    "converged": own.converged,
                }
            )
        title = f"mean field, {proxies} proxies with their own counts: {policy}"
    if TABLE[policy].probes == "d":
        title += f" (d={d})"
    df = pd.DataFrame(rows)
    payload = {"policy": policy, "refresh": refresh, "proxies": proxies, "d": d, "points": rows}
    emit(format_frame(df, fmt, title, payload), out)


def fluid(
    policy: Annotated[
        str, typer.Argument(help="random, pod, jiq, jiq-pod, or wlr (a slow-start transient).")
    ],
    *,
    load: Annotated[float, opt("--load", help="Load after time 0, in (0, 1).")],
    r: Annotated[float, opt("--r", help="Servers per dispatcher, N/M (> 0).")] = 10.0,
    d: Annotated[int, opt("--d", help="Servers probed per decision (pod, jiq-pod).")] = 2,
    horizon: Annotated[
        float | None,
        opt(
            "--horizon",
            help="End time, in mean service times (default 50; wlr: join-time + twice the "
            "window + 50).",
        ),
    ] = None,
    points: Annotated[int, opt("--points", help="Number of output times.")] = 51,
    initial_tasks: Annotated[
        int, opt("--initial-tasks", help="Every server starts with this many tasks.")
    ] = 0,
    initial_load: Annotated[
        float | None, opt("--initial-load", help="Start from the steady state at this load.")
    ] = None,
    servers: Annotated[
        int | None, opt("--servers", help="wlr: servers N (>= 2), the last join-count join.")
    ] = None,
    option: Annotated[
        list[str] | None,
        opt(
            "--option",
            "-o",
            help="wlr: an option NAME=VALUE as simulate takes it (repeatable): join-count, "
            "join-time, slow-start-window, aggression, min-weight-percent, "
            "active-request-bias, choice-count.",
        ),
    ] = None,
    fmt: FormatCsv = None,
    out: Out = None,
    plot: Annotated[
        Path | None,
        opt("--plot", help="Also plot mean tasks per server against time (.png, .pdf, .svg)."),
    ] = None,
) -> None:
    """Transient mean-field (fluid ODE) trajectory, e.g. recovery after a burst.

    With wlr: servers joining mid-run under Envoy's slow start (--servers, --option).
    """
    check_outputs(out=out, plot=plot)
    row = TABLE.get(policy)
    if row is not None and any(o.name == "slow-start-window" for o in row.options):
        _slow_start(load, servers, option, horizon, points, fmt=fmt, out=out, plot=plot)
        return
    for name, given in (("--servers", servers), ("--option", option)):
        if given is not None:
            raise ParameterError(name, "given", "only with wlr (the slow-start transient)")
    horizon = 50.0 if horizon is None else horizon
    from cloudsched.dispatch.theory.fluid import fluid_trajectory

    fmt = resolve_format(fmt, out, FORMATS)
    bar = LazyProgress(f"fluid {policy}")
    try:
        traj = fluid_trajectory(
            policy,
            load,
            r=r,
            d=d,
            horizon=horizon,
            num_points=points,
            initial_tasks=initial_tasks,
            initial_load=initial_load,
            progress=bar,
        )
    finally:
        bar.close()
    import pandas as pd

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
        wrote(plot)


def _slow_start(
    load: float,
    servers: int | None,
    option: list[str] | None,
    horizon: float | None,
    points: int,
    *,
    fmt: str | None,
    out: Path | None,
    plot: Path | None,
) -> None:
    """``fluid wlr``: the slow-start transient (:mod:`cloudsched.dispatch.theory.slowstart`)."""
    from cloudsched.dispatch.options import options_by_name
    from cloudsched.dispatch.theory.slowstart import SLOW_START_NOTE, slow_start_trajectory

    if servers is None:
        raise ParameterError("--servers", "missing", "an integer >= 2 with wlr")
    fmt = resolve_format(fmt, out, FORMATS)
    opts = options_by_name("wlr", option or [])
    traj = slow_start_trajectory(load, servers, opts, horizon=horizon, num_points=points)
    fine = traj  # the settling time and the curve from a fine grid, whatever the table's
    if points < 2001:
        fine = slow_start_trajectory(load, servers, opts, horizon=horizon, num_points=2001)
    import pandas as pd

    df = pd.DataFrame(traj.to_rows())
    payload = {
        "policy": "wlr",
        "params": {"load": load, "servers": servers, "options": option or []},
        "settle_time": fine.settle_time(),
        "points": df.to_dict(orient="records"),
    }
    title = (
        f"slow-start transient (fluid ODE): {traj.joining} of {servers} join at "
        f"{traj.join_time:g}, window {traj.window:g}; the response time is within 5% of its "
        f"final value from t = {fine.settle_time():.4g}"
    )
    payload["model"] = SLOW_START_NOTE
    emit(format_frame(df, fmt, title, payload), out)
    warn(SLOW_START_NOTE, "model")
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_slow_start

        plot_slow_start(fine, plot)
        wrote(plot)


def register(app: typer.Typer) -> None:
    """Add the theory's commands to ``app``."""
    app.command()(predict)
    app.command()(fluid)
