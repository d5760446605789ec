"""The options several commands share, declared once (a command's own options stay with it).

Each is an ``Annotated`` type for a command's signature: ``out: Out = None``.  Their help
text is the command reference's (``docs/reference/cli.md``).  :func:`opt` is
``typer.Option`` under a short name, so that a command's own options keep to a line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "Arrivals",
    "BalancerOptions",
    "CrossRackCost",
    "FluxProperties",
    "FluxTraffic",
    "FormatAll",
    "FormatCsv",
    "FormatJson",
    "Frame",
    "Locality",
    "MaxTasks",
    "Out",
    "Precision",
    "Racks",
    "Seed",
    "Service",
    "Slowdown",
    "Tail",
    "TimeLimit",
    "Warmup",
    "opt",
]

_FROM_OUT = "(default: from --out's extension)"

# output
Out = Annotated[
    Path | None, typer.Option("--out", help="Write the output to this file (atomically).")
]
FormatJson = Annotated[str | None, typer.Option("--format", help=f"table or json {_FROM_OUT}.")]
FormatCsv = Annotated[str | None, typer.Option("--format", help=f"table, csv or json {_FROM_OUT}.")]
FormatAll = Annotated[
    str | None, typer.Option("--format", help=f"table, csv, json or parquet {_FROM_OUT}.")
]
Tail = Annotated[int, typer.Option("--tail", help="Tail columns s_1..s_K (table, csv).")]
# randomness and run length
Seed = Annotated[
    int,
    typer.Option(
        "--seed",
        help="Root seed (every command: 0 unless given, so the same command gives the same "
        "output): run k of the command uses stream k of it.",
    ),
]
Precision = Annotated[
    float, typer.Option("--precision", help="A run stops when its 95% half-width / mean is this.")
]
MaxTasks = Annotated[
    int, typer.Option("--max-tasks", help="Stop a run at this many arrivals in any case.")
]
TimeLimit = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        help="Stop a run after this many seconds (an error, exit 1; default: none). Ctrl-C "
        "stops any run at once.",
    ),
]
Warmup = Annotated[
    str,
    typer.Option("--warmup", help="auto (detected by MSER) or a fraction of the run, in [0, 0.9]."),
]
# laws
Service = Annotated[
    str | None,
    typer.Option(
        "--service",
        help="Service-time law: exp, det, uniform, lognormal:cv=2, h2:cv=3, "
        "pareto:alpha=1.5,max=1000, empirical:FILE (mean 1 unless mean= is given).",
    ),
]
Arrivals = Annotated[
    str | None,
    typer.Option("--arrivals", help="Inter-arrival law (same SPEC forms); --load sets its rate."),
]
# placement
Racks = Annotated[int | None, typer.Option("--racks", help="Racks (even split; 1).")]
CrossRackCost = Annotated[
    float | None, typer.Option("--cross-rack-cost", help="Cost across racks; 2.")
]
FluxTraffic = Annotated[
    str,
    typer.Option(
        "--flux-traffic", help="edges (1 each) or grouping (from the groupings and parallelism)."
    ),
]
FluxProperties = Annotated[
    Path | None,
    typer.Option(
        "--properties",
        help="A Java properties file filling the Flux files' ${name} (what Flux's "
        "--filter gives storm jar; a workload's own properties: entry wins).",
    ),
]
Frame = Annotated[float, typer.Option("--frame", help="MaxWeight frame length T (> 0).")]
Locality = Annotated[
    float,
    typer.Option(
        "--locality",
        help="DGP local proposals: chance in [0, 1] that a node goes next to the one before it.",
    ),
]


def opt(*flags: str, help: str = "", **kwargs: Any) -> Any:
    """``typer.Option(*flags, help=help, ...)``, short enough to keep an option on one line."""
    return typer.Option(*flags, help=help, **kwargs)


# production balancers and workloads several commands run
BalancerOptions = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="A production balancer's option NAME=VALUE (repeatable), given to every "
        "policy here that has it, e.g. -o decay=1s (cloudsched policies NAME lists them).",
    ),
]
Slowdown = Annotated[
    str | None,
    typer.Option(
        "--slowdown",
        help="F:X@T0-T1[/P]: a fraction F of the servers runs at X times its speed from time "
        "T0 to T1 (mean service times; again every P), then recovers, e.g. "
        "0.1:0.2@2000-4000 (the event list; a service keeps the speed it started at).",
    ),
]
