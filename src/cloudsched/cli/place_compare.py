"""``cloudsched place compare``: placement policies side by side, beside the static bound."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, emit, format_frame, policies_given, resolve_format
from cloudsched.cli.console import warn
from cloudsched.cli.options import (
    CrossRackCost,
    FluxProperties,
    FluxTraffic,
    FormatCsv,
    Frame,
    Locality,
    Out,
    Precision,
    Racks,
    Seed,
    opt,
)
from cloudsched.cli.results import readable
from cloudsched.errors import check_real

__all__ = ["place_compare"]

_POLICY_HELP = (
    "Policies to run: storm-default, greedy, resource-aware, maxweight, "
    "dgp, dgp-clock (local proposals), or dgp:uniform / dgp-clock:uniform for DGP with "
    "the paper's uniform proposals, or a plug-in file.py:NAME. "
    "Default: storm-default, greedy, resource-aware, maxweight, dgp, dgp:uniform."
)


def place_compare(
    policy_args: Annotated[
        list[str] | None, typer.Argument(metavar="POLICIES", help=_POLICY_HELP)
    ] = None,
    *,
    cluster: Annotated[str, opt("--cluster", help="As for place simulate.")],
    workload: Annotated[Path, opt("--workload", help="Workload YAML (job_types: ...).")],
    policy: Annotated[
        list[str] | None,
        opt("--policy", help="Older form of POLICIES (still accepted; repeatable)."),
    ] = None,
    racks: Racks = None,
    cross_rack_cost: CrossRackCost = None,
    flux_traffic: FluxTraffic = "edges",
    properties: FluxProperties = None,
    horizon: Annotated[
        float | None,
        opt(
            "--horizon",
            help="Simulated time of every run (default: each runs until "
            "its intervals reach --precision).",
        ),
    ] = None,
    precision: Precision = 0.02,
    solver: Annotated[str, opt("--solver", help="MaxWeight: exact, fast or auto.")] = "auto",
    frame: Frame = 1.0,
    locality: Locality = 0.9,
    time_limit: Annotated[
        float, opt("--time-limit", help="Seconds to bound the static optimum.")
    ] = 60.0,
    seed: Seed = 0,
    fmt: FormatCsv = None,
    out: Out = None,
    plot: Annotated[
        Path | None, opt("--plot", help="Draw each policy's slots at the end of its run (.png).")
    ] = None,
) -> None:
    """Run placement policies on one cluster and workload and bound the optimum."""
    from cloudsched.cli.place_model import load_model
    from cloudsched.experiments.place_compare import DEFAULT_POLICIES, compare_placement

    check_outputs(out=out, plot=plot, inputs=[workload, cluster, properties])
    fmt = resolve_format(fmt, out, ("table", "json", "csv"))
    time_limit = check_real("--time-limit", time_limit, low=0.0, high=1e6, low_open=True)
    cl, jobs = load_model(locals())
    bar = LazyProgress(f"place compare {cluster}", delay=1.0)
    names = policies_given(policy_args, policy) or list(DEFAULT_POLICIES)

    try:
        res = compare_placement(
            cl,
            jobs,
            names,
            seed=seed,
            horizon=horizon,
            time_limit=time_limit,
            progress=bar,
            precision=precision,
            solver=solver,
            frame=frame,
            locality=locality,
        )
    finally:
        bar.close()
    for entry, r in res.results.items():
        for note in r.warnings:
            if entry not in res.refused:
                warn(f"{entry}: {note}")
    for entry, why in res.refused.items():
        warn(f"{entry}: {why}", "refused")
    if plot is not None:
        _plot(res, cl, plot, cluster)
    emit(_format(res, cl, cluster, fmt), out)


def _format(res: Any, cl: Any, cluster: str, fmt: str) -> str:
    bound = res.bound
    payload = {
        "cluster": cluster,
        "racks": cl.racks,
        "bound": None if bound is None else bound.to_dict(),
        "bound_note": res.bound_note,
        "policies": {k: r.to_dict() for k, r in res.results.items()},
        "refused": res.refused,
    }
    table = res.table
    shown = table if fmt != "table" else _display(table)
    text = format_frame(shown, fmt, f"placement policies on {cluster}", payload)
    if fmt != "table":
        return text
    if bound is None:
        text += f"static optimum not available: {res.bound_note}\n"
    elif bound.proven:
        text += f"static optimum {bound.value:.6g} (proven; gap = cost above it)\n"
    else:
        text += (
            f"static optimum between {bound.lower_bound:.6g} and {bound.value:.6g} "
            f"(not proven: gap = cost above the lower bound)\n"
        )
    if bound is not None:
        below = table.loc[
            table["gap"].isna() & (table["cost_rate"] < bound.lower_bound), "policy"
        ].tolist()
        if below:
            text += (
                "gap -: cost below the bound, not a long-run rate (run longer): "
                + ", ".join(below)
                + "\n"
            )
    for entry, why in res.refused.items():
        text += f"REFUSED {entry}: {why}\n"
    text += (
        "wall time: "
        + ", ".join(
            f"{p} {readable(float(w), 3)} s"
            for p, w in zip(table["policy"], table["wall_seconds"], strict=True)
        )
        + "\n"
    )
    unsteady = [p for p in table.loc[~table["steady_state"], "policy"] if p not in res.refused]
    if unsteady:
        text += "NOT STEADY (no interval; the cost may still drift): " + ", ".join(unsteady) + "\n"
    return text


def _display(table: Any) -> Any:
    """Return the table for a terminal: short headers, rounded numbers (80 columns).

    The mean wait is in the JSON and CSV output.
    """
    import math

    import pandas as pd

    def num(x: Any, spec: str) -> str:
        return (
            "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)
        )

    return pd.DataFrame(
        {
            "policy": table["policy"],
            "cost": [num(x, ".4g") for x in table["cost_rate"]],
            "±95%": [num(x, ".2g") for x in table["cost_ci95"]],
            "gap": [num(100 * x, ".1f") + "%" if math.isfinite(x) else "-" for x in table["gap"]],
            "queue": [readable(x, 3) for x in table["mean_queue_length"]],
            "served": [num(x, ".3f") for x in table["served_fraction"]],
            "moves": table["migrations"],
            "steady": ["yes" if s else "NO" for s in table["steady_state"]],
        }
    )


def _plot(res: Any, cl: Any, path: Path, cluster: str) -> None:
    """One panel per policy: which job holds each slot at the end of its run."""
    from cloudsched.plotting.placement import plot_snapshots

    panels = {}
    for entry, r in res.results.items():
        end = float(r.warmup_time + r.measured_time)
        panels[f"{entry}: cost rate {r.cost_rate:.4g}"] = (r.final_placement, end)
    plot_snapshots(
        panels,
        cl.slots,
        cl.rack,
        path,
        title=f"{cluster}: slots at the end of each run (machines as rows, coloured "
        "by job type, one shade per job)",
    )
