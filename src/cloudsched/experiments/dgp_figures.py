"""The graph-placement paper's figures, one function each, appended to a report.

The paper: Javad Ghaderi, Sanjay Shakkottai and R. Srikant, "Scheduling Storms and Streams
in the Cloud" (under ``shared/seeds`` in the checkout).  :func:`dgp_sections` runs the
grids (DGP over alpha and beta, the baselines, DGP with its defaults, MaxWeight over its
frame length) on the demo instance and draws the trade-off and MaxWeight figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cloudsched.experiments.common import CITATIONS, half_width, run_grid, size_of
from cloudsched.experiments.report import Report
from cloudsched.io import atomic_write_text

__all__ = ["dgp_sections", "maxweight_caption", "snapshot_caption", "tradeoff_caption"]


@dataclass(frozen=True)
class PlacementGrids:
    """The rows of the four placement grids, and the static optimum they are measured by."""

    dgp: pd.DataFrame
    base: pd.DataFrame
    default: pd.DataFrame
    mw: pd.DataFrame
    optimum: float


def _workload_file(out_dir: Path) -> str:
    from cloudsched.experiments.placement_demo import demo_workload_yaml

    atomic_write_text(out_dir / "placement-workload.yaml", demo_workload_yaml())
    return "placement-workload.yaml"


def run_grids(out_dir: Path, level: str, workers: int, seed: int) -> PlacementGrids:
    """Run (or resume) the four placement grids at size ``level``."""
    from cloudsched.experiments.common import Setting
    from cloudsched.experiments.placement_demo import DGP_PARAMS, demo_instance
    from cloudsched.placement.optimize import static_optimum

    s = Setting(size_of(level), workers, seed)
    cluster, jobs = demo_instance()
    optimum = static_optimum(cluster, jobs).cost_rate
    model = {"cluster": "3x3", "workload": _workload_file(out_dir)}
    size = s.size

    def place(name: str, k: int, fixed: dict[str, Any], grid: dict[str, Any]) -> pd.DataFrame:
        return run_grid(out_dir, name, s.offset(k), "place", {**model, **fixed}, grid)

    dgp_args = {"policy": "dgp", "f": DGP_PARAMS["f"], "h": DGP_PARAMS["h"], "proposal": "uniform"}
    dgp = place(
        "dgp-beta-alpha",
        0,
        {**dgp_args, "horizon": size["dgp_horizon"]},
        {"alpha": size["alphas"], "beta": size["betas"]},
    )
    base_grid = {"policy": ["storm-default", "greedy"]}
    base = place("baselines", 1, {"horizon": size["dgp_horizon"] / 10}, base_grid)
    default = place("dgp-default", 3, {"horizon": size["dgp_horizon"]}, {"policy": ["dgp"]})
    mw_args = {"policy": "maxweight", "alpha": 1.0, "f": "log", "horizon": size["mw_horizon"]}
    mw = place("maxweight-frames", 2, mw_args, {"frame": size["frames"]})
    return PlacementGrids(dgp, base, default, mw, optimum)


def tradeoff_figure(report: Report, out_dir: Path, g: PlacementGrids) -> None:
    """DGP's cost against its queue over beta and alpha, beside the baselines and the bound."""
    from cloudsched.plotting import plot_tradeoff

    dgp, base, default, mw, optimum = g.dgp, g.base, g.default, g.mw, g.optimum
    report.heading("Graph placement: DGP's cost/queue trade-off over beta and alpha")
    curves = {}
    for alpha, gg in dgp.sort_values(["alpha", "beta"], ascending=[True, False]).groupby("alpha"):
        curves[f"DGP, alpha = {alpha:g}"] = (
            gg["mean_queue_length"].to_numpy(),
            gg["cost_rate"].to_numpy(),
            half_width(gg, "cost_rate"),
            [f"β={b:g}" for b in gg["beta"]],
        )
    by = base.set_index("policy")
    mw1 = mw.iloc[(mw["frame"] - 1.0).abs().argsort()[:1]]
    t1 = float(mw1["frame"].iloc[0])
    points = {
        "Storm default": (
            float(by.loc["storm-default", "mean_queue_length"]),
            float(by.loc["storm-default", "cost_rate"]),
        ),
        "greedy": (
            float(by.loc["greedy", "mean_queue_length"]),
            float(by.loc["greedy", "cost_rate"]),
        ),
        f"MaxWeight, T = {t1:g} (preempts)": (
            float(mw1["mean_queue_length"].iloc[0]),
            float(mw1["cost_rate"].iloc[0]),
        ),
        "DGP, default parameters": (
            float(default["mean_queue_length"].iloc[0]),
            float(default["cost_rate"].iloc[0]),
        ),
    }
    plot_tradeoff(
        curves,
        out_dir / "placement_tradeoff.png",
        lines={"static optimum": optimum},
        points=points,
        title="3 machines x 3 slots: chain-3 (rho 1) + star-4 (rho 0.5)",
    )
    report.figure("placement_tradeoff.png", tradeoff_caption(dgp, points, optimum))
    cols = [
        "policy",
        "alpha",
        "beta",
        "cost_rate",
        "cost_rate_ci95_low",
        "cost_rate_ci95_high",
        "bound_gap",
        "mean_queue_length",
        "mean_queue_length_ci95_low",
        "mean_queue_length_ci95_high",
        "served_fraction",
        "steady_state",
        "mean_wait",
        "utilization",
        "proposals_tried",
        "proposals_failed",
        "horizon",
    ]
    grid = dgp.sort_values(["alpha", "beta"], ignore_index=True)
    table = pd.concat([grid, default, base], ignore_index=True)
    report.table(
        table.reindex(columns=cols),
        "placement_tradeoff.csv",
        f"DGP over alpha and beta, DGP with its default (calibrated) parameters, and "
        f"the baselines that never move a running job; static optimum {optimum:.4g} "
        f"per unit time. Mean queue lengths range from "
        f"{table['mean_queue_length'].min():.3g} to "
        f"{table['mean_queue_length'].max():.4g}.",
        shown=[
            "policy",
            "alpha",
            "beta",
            "cost_rate",
            "bound_gap",
            "mean_queue_length",
            "served_fraction",
            "steady_state",
        ],
    )


def maxweight_figure(report: Report, out_dir: Path, g: PlacementGrids) -> None:
    """MaxWeight's migrations, preemptions, cost and queue against its frame length."""
    from cloudsched.plotting.placement import plot_maxweight_frames

    optimum = g.optimum
    report.heading("Graph placement: MaxWeight's migrations against its frame length")
    mw = g.mw.sort_values("frame", ignore_index=True)
    window = mw["measured_time"]
    mw["migrations_per_unit_time"] = mw["migrations"] / window
    mw["preemptions_per_unit_time"] = mw["preemptions"] / window
    plot_maxweight_frames(
        mw["frame"].to_numpy(),
        {
            "migrations": (mw["migrations_per_unit_time"].to_numpy(), None),
            "preemptions": (mw["preemptions_per_unit_time"].to_numpy(), None),
        },
        (mw["mean_queue_length"].to_numpy(), half_width(mw, "mean_queue_length")),
        out_dir / "maxweight_frames.png",
        cost=(mw["cost_rate"].to_numpy(), half_width(mw, "cost_rate")),
        optimum=optimum,
        title="Frame-based MaxWeight (alpha = 1, f = log), 3 machines x 3 slots",
    )
    report.figure("maxweight_frames.png", maxweight_caption(mw, optimum))
    report.table(
        mw.reindex(
            columns=[
                "frame",
                "migrations_per_unit_time",
                "preemptions_per_unit_time",
                "cost_rate",
                "bound_gap",
                "mean_queue_length",
                "frames",
                "frames_not_optimal",
                "solver_seconds",
            ]
        ),
        "maxweight_frames.csv",
        "Exact max-weight configurations (HiGHS) at every frame boundary",
    )


def dgp_sections(report: Report, out_dir: Path, level: str, workers: int, seed: int) -> None:
    """Append the placement paper's figures to ``report``, at size ``level``."""
    report.text(f"Graph placement reproduces {CITATIONS['dgp']}.")
    report.step("Graph placement: simulation grids")
    grids = run_grids(out_dir, level, workers, seed)
    tradeoff_figure(report, out_dir, grids)
    maxweight_figure(report, out_dir, grids)
    snapshot_figure(report, out_dir, level, seed)


#: The snapshot section's instance: two storm-starter topologies and a pipeline filling about
#: 60% of a 10 x 12 cluster in 2 racks (Flux files shipped in ``cloudsched/data``).
SNAPSHOT_WORKLOAD = (("exclamation", 0.1, 20.0), ("rolling-top-words", 0.1, 20.0))


def _snapshot_instance() -> tuple[Any, list[Any]]:
    from cloudsched.data import flux_path
    from cloudsched.placement import JobType, chain, load_flux, parse_cluster

    jobs = [
        JobType(name, rate, dur, load_flux(flux_path(name)))
        for name, rate, dur in SNAPSHOT_WORKLOAD
    ]
    jobs.append(JobType("pipeline", 1.0, 4.0, chain(4)))
    return parse_cluster("10x12", racks=2), jobs


def snapshot_figure(report: Report, out_dir: Path, level: str, seed: int) -> None:
    """Each policy's slots at the end of a run on a busy 10 x 12 cluster, and its cost."""
    from cloudsched.experiments.place_compare import DEFAULT_POLICIES, compare_placement
    from cloudsched.plotting.placement import plot_snapshots

    report.heading("Graph placement: where each policy puts the jobs")
    cluster, jobs = _snapshot_instance()
    horizon = {"demo": 2000.0, "quick": 8000.0}.get(level, 40_000.0)
    res = compare_placement(
        cluster, jobs, DEFAULT_POLICIES, seed=seed, horizon=horizon, time_limit=30.0
    )
    panels = {
        f"{k}: cost rate {r.cost_rate:.3g}"
        + (
            f" [{r.cost_rate_ci95[0]:.3g}, {r.cost_rate_ci95[1]:.3g}]" if r.cost_rate_ci95 else ""
        ): (r.final_placement, horizon)
        for k, r in res.results.items()
    }
    plot_snapshots(
        panels,
        cluster.slots,
        cluster.rack,
        out_dir / "placement_snapshot.png",
        title="10 machines x 12 slots in 2 racks: the slots at the end of each run",
    )
    report.figure("placement_snapshot.png", snapshot_caption(res.table, res.bound, horizon))
    report.table(
        res.table,
        "placement_policies.csv",
        "Every policy on this instance: cost per unit time (95% half-width), gap to "
        "the static optimum, mean queue, share served, migrations",
    )


def snapshot_caption(table: pd.DataFrame, bound: Any, horizon: float) -> str:
    """Describe the snapshot figure from the runs' numbers."""
    order = table.sort_values("cost_rate")
    parts = [
        f"Machines as rows, their slots as columns, each job in a shade of its type's "
        f"colour, at the end of a run of {horizon:g} time units (exclamation and rolling "
        f"top words, 15 and 14 executors, on machines of 12 slots; a 4-node pipeline)."
    ]
    if bound is not None:
        state = "proven" if bound.proven else f"lower bound {bound.lower_bound:.4g}"
        parts.append(f"Static optimum {bound.value:.4g} ({state}).")
    parts.append(
        "Cost per unit time over the run: "
        + ", ".join(
            f"{r.policy} {r.cost_rate:.3g}" + ("" if r.steady_state else " (not steady)")
            for r in order.itertuples()
        )
        + "."
    )
    waiting = order[order["mean_queue_length"] > 1]
    if len(waiting):
        parts.append(
            "Jobs wait under "
            + ", ".join(
                f"{r.policy} (mean queue {r.mean_queue_length:.3g})" for r in waiting.itertuples()
            )
            + "; the others place every job on arrival."
        )
    short = order[order["served_fraction"] < 0.98]
    if len(short):
        parts.append(
            "Served fewer jobs than arrived: "
            + ", ".join(f"{r.policy} ({100 * r.served_fraction:.0f}%)" for r in short.itertuples())
            + "; a cost below the optimum there is the cost of the jobs it did place, not a "
            "better placement (DGP needs far longer runs than this demo's)."
        )
    if bound is not None:
        from cloudsched.placement.beside_bound import short_of

        def below(r: Any) -> bool:
            h = r.cost_ci95
            ci = None if h is None or h != h else (r.cost_rate - h, r.cost_rate + h)
            return short_of(r.cost_rate, bound.lower_bound, ci) and r.served_fraction >= 0.98

        lucky = order[[below(r) for r in order.itertuples()]]
        if len(lucky):
            parts.append(
                "Below the optimum while serving every job: "
                + ", ".join(f"{r.policy} ({r.cost_rate:.3g})" for r in lucky.itertuples())
                + f"; no policy does that in the long run, so over {horizon:g} time units "
                "this is chance, not a better placement (no gap is given for it)."
            )
    return " ".join(parts)


def tradeoff_caption(
    dgp: pd.DataFrame, points: dict[str, tuple[float, float]], optimum: float
) -> str:
    """Describe the trade-off figure from its numbers (direction of change, ends, baselines)."""
    parts = [
        f"Partitioning cost per unit time (95% CI) against mean queue length; static "
        f"optimum {optimum:.3g}."
    ]
    for alpha, g in dgp.sort_values("beta", ascending=False).groupby("alpha"):
        hi, lo = g.iloc[0], g.iloc[-1]
        dc = "falls" if lo["cost_rate"] < hi["cost_rate"] else "rises"
        dq = "falls" if lo["mean_queue_length"] < hi["mean_queue_length"] else "rises"
        together = "together" if dc == dq else "in opposite directions"
        parts.append(
            f"DGP (f = identity, h = 0, alpha = {alpha:g}): as beta goes from {hi['beta']:g} "
            f"to {lo['beta']:g} the cost {dc} from {hi['cost_rate']:.3g} to "
            f"{lo['cost_rate']:.3g} and the queue {dq} from {hi['mean_queue_length']:.3g} to "
            f"{lo['mean_queue_length']:.3g} ({together})."
        )
    for name, (q, c) in points.items():
        parts.append(f"{name}: cost {c:.3g}, queue {q:.3g}.")
    return " ".join(parts)


def maxweight_caption(mw: pd.DataFrame, optimum: float) -> str:
    """Describe the MaxWeight figure from its numbers."""
    a, b = mw.iloc[0], mw.iloc[-1]
    return (
        f"MaxWeight against its frame length T (T and the event rates on log scales): "
        f"from T = {a['frame']:g} to "
        f"{b['frame']:g}, migrations per unit time go from {a['migrations_per_unit_time']:.3g} "
        f"to {b['migrations_per_unit_time']:.3g} and preemptions from "
        f"{a['preemptions_per_unit_time']:.3g} to {b['preemptions_per_unit_time']:.3g}; the "
        f"cost goes from {a['cost_rate']:.3g} to {b['cost_rate']:.3g} (optimum {optimum:.3g}) "
        f"and the mean queue from {a['mean_queue_length']:.3g} to "
        f"{b['mean_queue_length']:.3g}. Zero counts are not drawn on the log scale."
    )
