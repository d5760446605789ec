"""The task-dispatch simulator's command: ``simulate`` (the theory's are in :mod:`.theory`)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, resolve_format
from cloudsched.cli.console import print_warnings
from cloudsched.cli.options import (
    Arrivals,
    FormatAll,
    MaxTasks,
    Out,
    Precision,
    Seed,
    Service,
    Slowdown,
    Tail,
    TimeLimit,
    Warmup,
    opt,
)
from cloudsched.cli.trace import LogFormat, LogService, Trace, TraceFormat, Unfinished, trace_log
from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE

if TYPE_CHECKING:  # numpy takes 0.1 s to import: functions import it when they run
    import numpy as np

__all__ = ["parse_speeds", "register"]

FORMATS = ("table", "csv", "json")


def _law_files(*specs: str | None) -> list[str]:
    """Return the files ``empirical:FILE`` laws read (inputs no output may overwrite)."""
    return [
        spec.partition(":")[2].partition(",")[0]
        for spec in specs
        if spec and spec.strip().lower().startswith("empirical:")
    ]


def parse_speeds(value: str, servers: int | None = None) -> np.ndarray:
    """``--speeds``: a comma-separated list, a mix ``F@S,...`` (with ``servers``), or a file."""
    import numpy as np

    if "@" in value and servers is not None:
        from cloudsched.dispatch.workload.slowdown import speed_mix

        return speed_mix(servers, value)

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


def simulate(
    policy: Annotated[
        str,
        typer.Argument(
            help=", ".join(TABLE) + ", or a plug-in FILE.py[:NAME] (the production balancers' "
            "rules and options: cloudsched policies)."
        ),
    ],
    *,
    servers: Annotated[int, opt("--servers", help="Number of servers N (>= 1).")],
    load: Annotated[
        str | None,
        opt(
            "--load",
            help="Offered load per server (> 0; >= 1 has no steady state). With --trace: "
            "rescale its inter-arrival times to this load (default: the trace's own times).",
        ),
    ] = None,
    dispatchers: Annotated[
        int | None, opt("--dispatchers", help="Number of dispatchers M in [1, N].")
    ] = None,
    r: Annotated[
        float | None, opt("--r", help="Servers per dispatcher N/M (alternative to --dispatchers).")
    ] = None,
    d: Annotated[int, opt("--d", help="Probes (pod, jiq-pod) or I-queues sampled (jiq-sq).")] = 2,
    threshold: Annotated[int, opt("--threshold", help="z of jiq-threshold (>= 0).")] = 1,
    with_replacement: Annotated[
        bool, opt("--with-replacement", help="Probe with replacement (supermarket model).")
    ] = False,
    tasks: Annotated[
        int | None,
        opt("--tasks", help="Fix the run length in arrivals (default: run until --precision)."),
    ] = None,
    horizon: Annotated[
        float | None, opt("--horizon", help="Fix the run length in time (mean service times).")
    ] = None,
    warmup: Warmup = "auto",
    precision: Precision = 0.01,
    max_tasks: MaxTasks = 5_000_000_000,
    time_limit: TimeLimit = None,
    unchecked: Annotated[
        bool,
        opt(
            "--unchecked",
            help="Compile a plug-in without bounds checks "
            "(faster; an index outside an array is no longer caught).",
        ),
    ] = False,
    initial: Annotated[
        str,
        opt(
            "--initial",
            help="auto (mean field where a model exists, else empty), meanfield or empty.",
        ),
    ] = "auto",
    seed: Seed = 0,
    replications: Annotated[
        int, opt("--replications", help="Independent replications (CI from their means).")
    ] = 1,
    batches: Annotated[int, opt("--batches", help="Batches for the batch-means CI (>= 2).")] = 20,
    fmt: FormatAll = None,
    service: Service = None,
    arrivals: Arrivals = None,
    trace: Trace = None,
    trace_format: TraceFormat = "auto",
    unfinished: Unfinished = "drop",
    log_format: LogFormat = None,
    log_service: LogService = "upstream",
    service_scale: Annotated[
        float, opt("--service-scale", help="Multiply trace service times (unit conversion).")
    ] = 1.0,
    engine: Annotated[
        str,
        opt(
            "--engine",
            help="auto, servers (every server apart; its Markov clock alone: exponential, "
            "its event list alone: general), counts (occupancy counts; auto from N = "
            "100,000), classes (counts per speed class), delay (with --delay or --view "
            "own; auto then). The card says which ran and why.",
        ),
    ] = "auto",
    speeds: Annotated[
        str | None,
        opt(
            "--speeds",
            help="Server speeds: N comma-separated numbers, a file of N numbers, or a mix "
            "F@S,... (0.9@1,0.1@0.25: a tenth of the servers four times slower, spread evenly).",
        ),
    ] = None,
    delay: Annotated[
        list[str] | None,
        opt(
            "--delay",
            help="Message delay KIND=X or KIND=exp:X in mean service times (repeatable): "
            "info (pod, jsq, jiq-pod read lengths X old), join, delete (jiq, jiq-pod).",
        ),
    ] = None,
    view: Annotated[
        str,
        opt(
            "--view",
            help="shared (published lengths) or own: each of the --dispatchers proxies "
            "reads only its own active requests (pod, jsq).",
        ),
    ] = "shared",
    slowdown: Slowdown = None,
    refresh: Annotated[
        float,
        opt(
            "--refresh",
            help="Polled information: jsq, pod and jiq-pod read the queue lengths published "
            "every T mean service times (a bulletin board; 0: live).",
        ),
    ] = 0.0,
    option: Annotated[
        list[str] | None,
        opt(
            "--option",
            "-o",
            help="A production balancer's option NAME=VALUE (repeatable), e.g. -o decay=10s "
            "for ewma; durations take a unit (10s, 30ms) converted with service-time "
            "(default 10ms). cloudsched policies NAME lists them.",
        ),
    ] = None,
    tail: Tail = 6,
    out: Out = None,
) -> None:
    """Simulate a dispatch policy: Poisson/exp(1) by default, any laws, or a replayed trace."""
    check_outputs(out=out, inputs=[*(trace or []), speeds, *_law_files(service, arrivals)])
    from cloudsched.cli.results import FRAME_FORMATS, emit_simulation, run_inputs
    from cloudsched.dispatch.simulation import simulate as run_simulation
    from cloudsched.dispatch.workload.resolved import MAX_LOAD

    fmt = resolve_format(fmt, out, FRAME_FORMATS)
    tail = check_int("--tail", tail, low=0, high=1000)
    lam = (
        None if load is None else check_real("--load", load, low=0.0, high=MAX_LOAD, low_open=True)
    )
    warm: float | str = (
        warmup if warmup == "auto" else check_real("--warmup", warmup, low=0.0, high=0.9)
    )
    log = trace_log(
        trace, trace_format, unfinished=unfinished, log_format=log_format, log_service=log_service
    )
    speed = parse_speeds(speeds, servers) if speeds is not None else None
    bar = LazyProgress(f"{policy} N={servers}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            res = run_simulation(
                policy,
                servers=servers,
                load=lam,
                dispatchers=dispatchers,
                r=r,
                d=d,
                threshold=threshold,
                with_replacement=with_replacement,
                tasks=tasks,
                horizon=horizon,
                warmup=warm,
                replications=replications,
                batches=batches,
                precision=precision,
                max_tasks=max_tasks,
                time_limit=time_limit,
                initial=initial,
                rng=seed,
                progress=bar,
                service=service,
                arrivals=arrivals,
                trace=log.trace if log else None,
                service_scale=service_scale,
                engine=engine,
                speeds=speed,
                unchecked=unchecked,
                delay=delay,
                view=view,
                options=option,
                slowdown=slowdown,
                refresh=refresh,
            )
        finally:
            bar.close()
    print_warnings(caught, res.warnings)
    inputs = run_inputs(
        service=service,
        arrivals=arrivals,
        speeds=speed,
        log=log,
        service_scale=service_scale,
        load_given=lam is not None,
    )
    emit_simulation(res, inputs, fmt, out, tail)


def register(app: typer.Typer) -> None:
    """Add the task-dispatch commands to ``app``."""
    app.command()(simulate)
