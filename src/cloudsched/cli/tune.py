"""``cloudsched tune``: the cheapest policy, d, r and N that meet a p99 or mean target."""

from __future__ import annotations

import math
from typing import Annotated

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, policies_given, trace_laws
from cloudsched.cli.options import (
    Arrivals,
    BalancerOptions,
    FormatJson,
    Out,
    Precision,
    Seed,
    Service,
    Slowdown,
    opt,
)
from cloudsched.cli.trace import LogFormat, LogService, Trace, TraceFormat, trace_log
from cloudsched.errors import ParameterError, check_real
from cloudsched.policy_table import default_policies

__all__ = ["register"]


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


def tune(
    policy_args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="POLICIES",
            help="Candidate policies (default: random, pod, jiq, "
            "jiq-pod; jsq is ideal: it reads every queue and counts no messages).",
        ),
    ] = None,
    *,
    p99: Annotated[float | None, opt("--p99", help="Target: p99 response time.")] = None,
    mean: Annotated[float | None, opt("--mean", help="Target: mean response time.")] = None,
    unit: Annotated[
        str | None,
        opt(
            "--unit",
            help="Unit of the target: s or ms (with --trace), or service "
            "(mean service times; the default without a trace).",
        ),
    ] = None,
    rate: Annotated[
        float | None,
        opt(
            "--rate",
            help="Arrival rate of the whole farm: tasks per second with "
            "--trace (default: the log's own rate), else per mean service time.",
        ),
    ] = None,
    load: Annotated[
        float | None, opt("--load", help="Or: the load per server at a fixed --servers N.")
    ] = None,
    servers: Annotated[str, opt("--servers", help="N, or a range MIN:MAX to search.")] = "1:10000",
    policy: Annotated[
        list[str] | None,
        opt("--policy", help="Older form of POLICIES (still accepted; repeatable)."),
    ] = None,
    d: Annotated[list[int] | None, opt("--d", help="d values; repeatable.")] = None,
    r: Annotated[
        list[float] | None,
        opt(
            "--r",
            help="r values (servers per dispatcher); repeatable (default: 10 where the policy "
            "needs dispatchers, one proxy for a production balancer).",
        ),
    ] = None,
    threshold: Annotated[
        list[int] | None,
        opt("--threshold", help="z values of jiq-threshold; repeatable (default 1)."),
    ] = None,
    max_messages: Annotated[
        float | None, opt("--max-messages", help="At most this many messages per task.")
    ] = None,
    service: Service = None,
    arrivals: Arrivals = None,
    trace: Trace = None,
    trace_format: TraceFormat = "auto",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    option: BalancerOptions = None,
    slowdown: Slowdown = None,
    precision: Precision = 0.02,
    seed: Seed = 0,
    fmt: FormatJson = None,
    out: Out = None,
) -> None:
    """Find the cheapest policy, d, r and N that meet a p99 or mean target, certified."""
    check_outputs(out=out, inputs=trace or [])
    from cloudsched.cli.common import emit, resolve_format
    from cloudsched.cli.tune_output import explain, log_replay
    from cloudsched.experiments.tune import tune as run_tune

    fmt = resolve_format(fmt, out, ("table", "json"))
    if (p99 is None) == (mean is None):
        raise ParameterError("--p99/--mean", None, "exactly one of --p99 X or --mean X")
    metric, target = ("p99", p99) if p99 is not None else ("mean", mean)
    target = check_real(f"--{metric}", target, low=0.0, low_open=True)
    lo, hi = _servers_range(servers)
    log = trace_log(trace, trace_format, log_format=log_format, log_service=log_service)
    units = ("s", "ms") if log is not None else ("service",)
    unit = unit or units[0]
    if unit not in units:
        raise ParameterError(
            "--unit",
            unit,
            " or ".join(units)
            + (
                " (a trace gives times in seconds)"
                if log is not None
                else " (without a trace, times are in mean service times)"
            ),
        )
    scale, svc_law, arr_law = 1.0, service, arrivals
    if log is not None:
        if service or arrivals:
            raise ParameterError("--service", service or arrivals, "not given with --trace")
        svc_law, arr_law, mean_s, log_rate = trace_laws(log)
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
            rate=rate,
            target=target / scale,
            metric=metric,
            servers=(lo, hi),
            policies=policies_given(policy_args, policy) or default_policies("tune"),
            ds=d or (2, 3),
            rs=r or None,
            thresholds=threshold or (1,),
            max_messages=max_messages if max_messages is not None else math.inf,
            seed=seed,
            service=svc_law,
            arrivals=arr_law,
            precision=precision,
            replay=log_replay(log, metric) if log is not None else None,
            say=lambda line: bar(-1.0, line.strip()[:50]),
            progress=lambda fraction, status: bar(fraction),
            scale=scale,
            unit=unit if log is not None else "mean service times",
            policy_options=option or (),
            slowdown=slowdown,
        )
    finally:
        bar.close()
    emit(explain(res, scale, unit, fmt, trace), out)


def register(app: typer.Typer) -> None:
    """Add ``tune`` to ``app``."""
    app.command()(tune)
