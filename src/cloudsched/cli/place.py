"""``cloudsched place``: simulate graph-job placement policies and solve the static optimum."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Annotated

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import (
    check_outputs,
    emit,
    policies_given,
    render_table,
    resolve_format,
    to_json,
)
from cloudsched.cli.console import print_warnings
from cloudsched.cli.options import (
    FluxProperties,
    FormatJson,
    Frame,
    Locality,
    Precision,
    Seed,
    Warmup,
    opt,
)
from cloudsched.cli.place_model import load_model
from cloudsched.cli.place_output import check_tables, plot_end, simulate_text, write_tables
from cloudsched.errors import ParameterError, check_choice, check_real

__all__ = ["register"]


_CLUSTER_HELP = (
    "MACHINESxSLOTS (50x12), groups of machines (10x4,5x8), or a cluster file "
    "(.yaml: slots, cpu, memory and rack per group)."
)


_FLUX_SLOTS_HELP = (
    "What takes a slot in a Flux topology: executors (one node each) or workers "
    "(config topology.workers, Storm's EvenScheduler packing)."
)
_PER_SLOT_HELP = "Pack this many consecutive executors of a Flux topology into one slot."

# The options both place commands take (the model and the output), declared once.
_Cluster = Annotated[str, opt("--cluster", help=_CLUSTER_HELP)]
_Workload = Annotated[Path, opt("--workload", help="Workload YAML (job_types: ...).")]
_Racks = Annotated[int | None, opt("--racks", help="Racks (machines split evenly, in order; 1).")]
_CrossRackCost = Annotated[
    float | None,
    opt("--cross-rack-cost", help="Cost of an edge broken across racks, in [1, 1e6]; 2."),
]
_FluxTraffic = Annotated[
    str,
    opt(
        "--flux-traffic",
        help="Traffic of a Flux topology's edges: edges (1 each) or "
        "grouping (from the groupings and parallelism).",
    ),
]
_FluxSlots = Annotated[str, opt("--flux-slots", help=_FLUX_SLOTS_HELP)]
_PerSlot = Annotated[int | None, opt("--executors-per-slot", help=_PER_SLOT_HELP)]
_Out = Annotated[Path | None, opt("--out", help="Write the output to this file (atomically).")]


def place_simulate(
    policy_arg: Annotated[
        str | None,
        typer.Argument(
            metavar="POLICY",
            help="storm-default, greedy, "
            "resource-aware, maxweight, dgp or dgp-clock (default dgp), or a plug-in "
            "file.py:NAME.",
        ),
    ] = None,
    *,
    cluster: _Cluster,
    workload: _Workload,
    policy_opt: Annotated[
        str | None, opt("--policy", help="Older form of POLICY (still accepted).")
    ] = None,
    racks: _Racks = None,
    cross_rack_cost: _CrossRackCost = None,
    flux_slots: _FluxSlots = "executors",
    executors_per_slot: _PerSlot = None,
    flux_traffic: _FluxTraffic = "edges",
    properties: FluxProperties = None,
    beta: Annotated[
        float | None,
        opt("--beta", help="DGP temperature (> 0; default: a tenth of the cost unit)."),
    ] = None,
    alpha: Annotated[
        float | None,
        opt(
            "--alpha",
            help="Weight scale (> 0; DGP default: calibrated against the bound, MaxWeight 1).",
        ),
    ] = None,
    h: Annotated[
        float | None,
        opt("--h", help="DGP bias added to the queues (>= 0; default: per type, from greedy)."),
    ] = None,
    epsilon: Annotated[float | None, opt("--epsilon", help="DGP epsilon, in (0, 1); 0.5.")] = None,
    f: Annotated[
        str | None,
        opt(
            "--f",
            help="Concave weight function: log (log(1+x)) or identity "
            "(DGP identity, MaxWeight log).",
        ),
    ] = None,
    virtual_clock: Annotated[
        bool,
        opt(
            "--virtual-clock/--no-virtual-clock",
            help="DGP: empty templates get keep decisions at the service rate "
            "(exact product form).",
        ),
    ] = True,
    clock_rate: Annotated[
        float | None,
        opt("--clock-rate", help="dgp-clock: rate of each queue's clock (default: arrival rate)."),
    ] = None,
    proposal: Annotated[
        str,
        opt(
            "--proposal",
            help="DGP: local (machine by machine, corrected to keep the product form) "
            "or uniform (the paper's Random Partition Procedure).",
        ),
    ] = "local",
    locality: Locality = 0.9,
    frame: Frame = 1.0,
    solver: Annotated[
        str,
        opt(
            "--solver",
            help="MaxWeight: exact (MILP), fast (packing with a bound) or "
            "auto (up to 32 slots and 8-node graphs the packing where it proves its "
            "frame optimal, else exact; fast above).",
        ),
    ] = "auto",
    solver_time_limit: Annotated[
        float, opt("--solver-time-limit", help="MaxWeight: seconds per frame for HiGHS.")
    ] = 10.0,
    horizon: Annotated[
        float | None,
        opt(
            "--horizon", help="Simulated time (default: run until the intervals reach --precision)."
        ),
    ] = None,
    precision: Precision = 0.02,
    compare_bound: Annotated[
        bool | None,
        opt(
            "--compare-bound/--no-compare-bound",
            help="Solve the static optimum and show the gap (default: on up to 32 slots, 8 nodes).",
        ),
    ] = None,
    target_gap: Annotated[
        float, opt("--target-gap", help="Gap to the bound that DGP's default alpha aims at.")
    ] = 0.15,
    warmup: Warmup = "auto",
    seed: Seed = 0,
    fmt: FormatJson = None,
    out: _Out = None,
    assignments: Annotated[
        Path | None,
        opt(
            "--assignments",
            help="Write which slot each node of each job held, and when (.parquet).",
        ),
    ] = None,
    frames: Annotated[
        Path | None,
        opt("--frames", help="MaxWeight: write each frame's weight, bound and gap (.parquet)."),
    ] = None,
    plot: Annotated[
        Path | None,
        opt("--plot", help="Draw which job holds each slot at the end of the run (.png)."),
    ] = None,
) -> None:
    """Simulate one placement policy on a cluster and workload."""
    tables = {"--assignments": assignments, "--frames": frames}
    check_outputs(out=out, plot=plot, inputs=[workload, cluster, properties], others=tables)
    check_tables([workload, cluster], assignments=assignments, frames=frames)
    from cloudsched.placement.plugin import is_plugin_ref
    from cloudsched.placement.policies import PLACEMENT_POLICIES
    from cloudsched.placement.simulation import simulate_placement

    fmt = resolve_format(fmt, out, ("table", "json"))
    given = policies_given(
        [policy_arg] if policy_arg else None, [policy_opt] if policy_opt else None
    )
    policy = given[0] if given else "dgp"
    if not is_plugin_ref(policy) and policy not in PLACEMENT_POLICIES:
        raise ParameterError(
            "--policy" if policy_opt else "POLICY",
            policy,
            "one of " + ", ".join(PLACEMENT_POLICIES) + ", or a plug-in file.py:NAME",
        )
    warm: float | str = (
        warmup if warmup == "auto" else check_real("--warmup", warmup, low=0.0, high=0.9)
    )
    cl, jobs = load_model(locals())
    bar = LazyProgress(f"place {policy} {cluster}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            res = simulate_placement(
                policy,
                cl,
                jobs,
                horizon=horizon,
                warmup=warm,
                beta=beta,
                alpha=alpha,
                h=h,
                epsilon=epsilon,
                f=f,
                virtual_clock=virtual_clock,
                clock_rate=clock_rate,
                frame=frame,
                solver_time_limit=solver_time_limit,
                solver=solver,
                proposal=proposal,
                locality=locality,
                record=assignments is not None,
                precision=precision,
                compare_bound=compare_bound,
                target_gap=target_gap,
                rng=seed,
                progress=bar,
            )
        finally:
            bar.close()
    write_tables(res, assignments, frames)
    if plot is not None:
        plot_end(res, cl, plot, f"{policy} on {cluster}")
    print_warnings(caught, res.warnings)
    payload = {"cluster": cluster, "racks": cl.racks, "workload": str(workload), **res.to_dict()}
    if fmt == "json":
        emit(to_json(payload), out)
        return
    emit(simulate_text(res, payload, f"placement: {policy} on {cluster}"), out)


def place_bound(
    *,
    cluster: _Cluster,
    workload: _Workload,
    racks: _Racks = None,
    cross_rack_cost: _CrossRackCost = None,
    flux_slots: _FluxSlots = "executors",
    executors_per_slot: _PerSlot = None,
    flux_traffic: _FluxTraffic = "edges",
    properties: FluxProperties = None,
    solver: Annotated[
        str,
        opt(
            "--solver",
            help="exact (MILP pricing, proves the optimum at small sizes), "
            "fast (packing pricing with bounds) or auto (exact up to 32 slots and "
            "8-node graphs).",
        ),
    ] = "auto",
    time_limit: Annotated[
        float, opt("--time-limit", help="Seconds for the whole search (> 0).")
    ] = 60.0,
    seed: Annotated[int, opt("--seed", help="Seed for random graphs in the workload.")] = 0,
    fmt: FormatJson = None,
    out: _Out = None,
) -> None:
    """Bound the static optimum: the least average cost that serves every type's load."""
    check_outputs(out=out, inputs=[workload, cluster, properties])
    from cloudsched.placement.configuration import SOLVERS
    from cloudsched.placement.optimize import static_optimum

    fmt = resolve_format(fmt, out, ("table", "json"))
    solver = check_choice("--solver", solver, SOLVERS)
    time_limit = check_real("--time-limit", time_limit, low=0.0, high=1e6, low_open=True)
    cl, jobs = load_model(locals())
    bar = LazyProgress(f"place bound {cluster}")
    try:
        opt = static_optimum(cl, jobs, solver=solver, time_limit=time_limit, progress=bar)
    finally:
        bar.close()
    payload = {
        "cluster": cluster,
        "racks": cl.racks,
        "workload": str(workload),
        "loads": {j.name: j.load for j in jobs},
        **opt.to_dict([j.name for j in jobs]),
    }
    configs = payload["configurations"]
    if fmt == "json":
        emit(to_json(payload), out)
        return
    fields = [
        "value",
        "lower_bound",
        "gap",
        "proven",
        "hit_time_limit",
        "solver",
        "cost_per_job",
        "columns",
        "solve_time",
    ]
    import pandas as pd

    shown = {  # tables show a gap in percent and a time in seconds (JSON: fraction, float)
        **payload,
        "gap": f"{100 * payload['gap']:.1f}%" if math.isfinite(payload["gap"]) else "-",
        "solve_time": f"{payload['solve_time']:.2f} s",
    }
    head = pd.DataFrame({"field": fields, "value": [shown[k] for k in fields]})
    title = f"static optimum on {cluster}" + ("" if opt.proven else " — NOT PROVEN")
    text = render_table(head, title)
    if opt.note:
        text += f"note: {opt.note}\n"
    text += render_table(pd.DataFrame(configs), "configurations used (time share, templates, cost)")
    emit(text, out)


def register(app: typer.Typer) -> None:
    """Add the ``place`` group (``simulate``, ``bound``, ``compare``, ``static``, ``flink``)."""
    group = typer.Typer(
        help="Graph-job placement (Storm topologies, Flink jobs): simulate policies, solve the "
        "optimum.",
        no_args_is_help=True,
    )
    from cloudsched.cli.place_compare import place_compare
    from cloudsched.cli.place_flink import place_flink
    from cloudsched.cli.place_static import place_static, place_storm_scheduler

    group.command("simulate")(place_simulate)
    group.command("bound")(place_bound)
    group.command("compare")(place_compare)
    group.command("static")(place_static)
    group.command("storm-scheduler")(place_storm_scheduler)
    group.command("flink")(place_flink)
    app.add_typer(group, name="place")
