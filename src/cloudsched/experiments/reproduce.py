"""``cloudsched reproduce jiq|dgp``: every table and figure of a seed paper, in one command.

Three sizes: ``demo`` (inside ``cloudsched demo``, seconds), ``quick`` (``--quick``, under
five minutes on 2 cores) and ``full``.  Simulation grids run through
:func:`cloudsched.experiments.sweep.run_sweep` into ``OUT/sweeps/<name>/`` (one Parquet file
per run), so an interrupted reproduction resumes where it stopped, and every run's seed
follows from the root seed and its parameters.

Task dispatch (seed 000): Figure 4 and its table (mean field), Table II (occupancy,
N = 500), Figure 5 (prediction against simulation, N = 1000), Figure 6 (request messages of
JIQ-Original and JIQ), Figure 7 (tails of JIQ-Pod(2), JIQ-Threshold(z = 1), JIQ-SQ(2)),
Figure 8 (mean response time of the five JIQ variants), Figures 9 and 10 (Google trace
replay), and the simulation error against N (100 to 100,000) for JIQ and JIQ-Pod(2).

Graph placement (seed 002): DGP's cost/queue trade-off over beta for several alpha, Storm
default, greedy and the static optimum, and MaxWeight's migrations against its frame length.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.dispatch.meanfield import predict
from cloudsched.errors import check_choice
from cloudsched.experiments.report import Report, ensure_dir
from cloudsched.experiments.sweep import parse_spec, run_sweep
from cloudsched.io import atomic_write_text

__all__ = ["LEVELS", "dgp_sections", "jiq_sections", "reproduce_dgp", "reproduce_jiq"]

LEVELS = ("demo", "quick", "full")

_SIZES: dict[str, dict[str, Any]] = {
    "demo": {"precision": 0.03, "max_tasks": 20_000_000, "loads": [0.3, 0.6, 0.8, 0.9, 0.95],
             "ns": [100, 1000, 10_000], "trace_loads": [0.58, 0.78, 0.96],
             "dgp_horizon": 50_000.0, "mw_horizon": 500.0, "frames": [0.2, 1.0, 5.0],
             "alphas": [0.002], "betas": [0.8, 0.4, 0.2, 0.1, 0.05]},
    "quick": {"precision": 0.015, "max_tasks": 20_000_000,
              "loads": [0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95],
              "ns": [100, 300, 1000, 3000, 10_000, 30_000, 100_000],
              "trace_loads": [0.58, 0.68, 0.78, 0.88, 0.96], "dgp_horizon": 200_000.0,
              "mw_horizon": 2000.0, "frames": [0.1, 0.3, 1.0, 3.0, 10.0],
              "alphas": [0.001, 0.002, 0.004], "betas": [0.8, 0.4, 0.2, 0.1, 0.05]},
    "full": {"precision": 0.005, "max_tasks": 500_000_000,
             "loads": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98],
             "ns": [100, 300, 1000, 3000, 10_000, 30_000, 100_000],
             "trace_loads": [0.58, 0.64, 0.7, 0.76, 0.82, 0.88, 0.92, 0.96],
             "dgp_horizon": 1_000_000.0, "mw_horizon": 20_000.0,
             "frames": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0], "alphas": [0.001, 0.002, 0.004],
             "betas": [1.6, 0.8, 0.4, 0.2, 0.1, 0.05, 0.025]},
}  # fmt: skip

JIQ_VARIANTS = (
    ("JIQ-Original", "jiq-original"), ("JIQ", "jiq"), ("JIQ-Threshold(z=1)", "jiq-threshold"),
    ("JIQ-SQ(2)", "jiq-sq"), ("JIQ-Pod(2)", "jiq-pod"),
)  # fmt: skip


def _sweep(out_dir: Path, name: str, doc: dict[str, Any], workers: int) -> pd.DataFrame:
    """Run (or resume) one sweep under ``out_dir/sweeps/name`` and return its rows."""
    spec = parse_spec(doc, f"reproduce:{name}", str(out_dir))
    target = out_dir / "sweeps" / name
    df = run_sweep(spec, target, workers=workers, resume=True)
    for c in [c for c in df.columns if c.startswith("param.")]:
        name = c[len("param.") :]
        # a result column of the same name (policy, load, horizon, ...) holds the same value
        df = df.drop(columns=c) if name in df.columns else df.rename(columns={c: name})
    return df


def _ci_half(df: pd.DataFrame) -> np.ndarray:
    return ((df["ci95_high"] - df["ci95_low"]) / 2).to_numpy(dtype=float)


def jiq_sections(report: Report, out_dir: Path, level: str, workers: int, seed: int) -> None:
    """Append the task-dispatch seed's tables and figures to ``report``."""
    from cloudsched.experiments import demo as d
    from cloudsched.plotting import plot_cdf, plot_lines, plot_response_time

    size = _SIZES[check_choice("level", level, LEVELS)]
    r = 10.0
    report.heading("Task dispatch: mean-field response time (Figure 4)")
    data = d.figure4_data(r)
    atomic_write_text(out_dir / "figure4.csv", data.to_csv(index=False))
    curves = {str(k): (g["load"].to_numpy(), g["mean_response_time"].to_numpy())
              for k, g in data.groupby("policy", sort=False)}  # fmt: skip
    plot_response_time(curves, out_dir / "figure4.png", title=f"Mean field, r = {r:g}")
    report.figure("figure4.png", "Mean response time against load, mean field, r = 10 "
                  "(data: figure4.csv)")  # fmt: skip
    report.table(d.figure4_table(r), "figure4_table.csv", "Mean-field values, r = 10, d = 2")

    report.heading("Task dispatch: occupancy q_i (Table II)")
    run = {"precision": size["precision"], "max_tasks": size["max_tasks"]}
    length = (f"each run until its 95% interval is within {size['precision']:.1%} of the mean "
              f"(at most {size['max_tasks']:,} tasks)")  # fmt: skip
    report.table(
        d.table2_data(seed + 1, **run),
        "table2.csv",
        f"Fraction of servers with i tasks, N = 500, r = 10, load 0.9; {length}",
    )

    report.heading("Task dispatch: prediction against simulation (Figure 5)")
    fig5 = d.figure5_data(seed, **run)
    grid = np.linspace(0.05, 0.96, 60)
    curves5 = {f"{lab} (mean field)": (grid, predict(p, grid, r=r, d=2).mean_response_time)
               for lab, p in (("JIQ", "jiq"), ("JIQ-Pod(2)", "jiq-pod"))}  # fmt: skip
    points5 = {f"{lab} (simulation)": (g["load"].to_numpy(), g["simulated"].to_numpy(),
                                       _ci_half(g))
               for lab, g in fig5.groupby("policy", sort=False)}  # fmt: skip
    plot_response_time(curves5, out_dir / "figure5.png", points=points5, log_y=False,
                       title="N = 1000, r = 10: simulation (95% CI) against mean field",
                       )  # fmt: skip
    report.figure("figure5.png", "Mean response time, simulated (N = 1000) and predicted")
    report.table(fig5, "figure5.csv", f"N = 1000; {length}")

    grid_df = _sweep(out_dir, "jiq-variants", {
        "kind": "simulate", "seed": seed + 10, "replications": 1,
        "fixed": {"servers": 1000, "r": r, "d": 2, "threshold": 1, **run},
        "grid": {"policy": [p for _, p in JIQ_VARIANTS], "load": size["loads"]},
    }, workers)  # fmt: skip
    names = dict((p, lab) for lab, p in JIQ_VARIANTS)
    grid_df["variant"] = grid_df["policy"].map(names)
    grid_df = grid_df.sort_values(["policy", "load"], ignore_index=True)

    report.heading("Task dispatch: request messages (Figure 6)")
    lam = np.linspace(0.05, 0.98, 60)
    mf = predict("jiq", lam, r=r)
    curves6 = {"JIQ join (mean field)": (lam, mf.join_rate),
               "JIQ delete (mean field)": (lam, mf.delete_rate)}  # fmt: skip
    pts6 = {}
    for pol, label in (("jiq", "JIQ"), ("jiq-original", "JIQ-Original")):
        g = grid_df[grid_df["policy"] == pol]
        zero = np.zeros(len(g))
        pts6[f"{label} join (simulation)"] = (g["load"].to_numpy(), g["msg_join"].to_numpy(), zero)
        if pol == "jiq":
            pts6["JIQ delete (simulation)"] = (g["load"].to_numpy(), g["msg_delete"].to_numpy(),
                                               zero)  # fmt: skip
    plot_lines(curves6, out_dir / "figure6.png", points=pts6, xlabel="load λ",
               ylabel="request messages per server per unit time",
               title="N = 1000, r = 10: join and delete requests")  # fmt: skip
    report.figure("figure6.png", "Request messages per server per unit time (Figure 6)")
    fig6 = grid_df[grid_df["policy"].isin(["jiq", "jiq-original"])][
        ["variant", "load", "msg_join", "msg_delete", "msg_stale"]
    ].copy()
    fig6["delete share"] = fig6["msg_delete"] / (fig6["msg_join"] + fig6["msg_delete"])
    report.table(fig6, "figure6.csv", "Simulated message rates per server per unit time")

    report.heading("Task dispatch: tails of three JIQ variants (Figure 7)")
    heavy = max(size["loads"])
    tails = grid_df[(grid_df["load"] == heavy)
                    & grid_df["policy"].isin(["jiq-pod", "jiq-threshold", "jiq-sq"])]  # fmt: skip
    i = np.arange(1, 7)
    curves7 = {str(row.variant): (i, np.array([getattr(row, f"s_{k}") for k in i]))
               for row in tails.itertuples()}  # fmt: skip
    plot_lines(curves7, out_dir / "figure7.png", xlabel="i",
               ylabel="s_i (fraction with >= i tasks)", log_y=True,
               title=f"N = 1000, r = 10, load {heavy:g}, d = 2, z = 1")  # fmt: skip
    report.figure("figure7.png", f"Tail s_i at load {heavy:g} (Figure 7)")
    report.table(tails[["variant", "load", *[f"s_{k}" for k in i]]], "figure7.csv",
                 "Simulated tails s_1..s_6")  # fmt: skip

    report.heading("Task dispatch: mean response time of the JIQ variants (Figure 8)")
    pts8 = {str(lab): (g["load"].to_numpy(), g["mean_response_time"].to_numpy(), _ci_half(g))
            for lab, g in grid_df.groupby("variant", sort=False)}  # fmt: skip
    plot_lines({}, out_dir / "figure8.png", points=pts8, xlabel="load λ",
               ylabel="mean response time T", log_y=True,
               title="N = 1000, r = 10, simulation (95% CI)")  # fmt: skip
    report.figure("figure8.png", "Mean response time of five JIQ variants (Figure 8)")
    report.table(grid_df[["variant", "load", "mean_response_time", "ci95_low", "ci95_high"]],
                 "figure8.csv", "Simulated mean response time, N = 1000, r = 10")  # fmt: skip

    report.heading("Task dispatch: simulation error against N (new)")
    err = _sweep(out_dir, "error-vs-n", {
        "kind": "simulate", "seed": seed + 20, "replications": 1,
        "fixed": {"r": r, "d": 2, "load": 0.9, **run},
        "grid": {"policy": ["jiq", "jiq-pod"], "servers": size["ns"]},
    }, workers)  # fmt: skip
    err = err.sort_values(["policy", "servers"], ignore_index=True)
    theory = {
        p: float(predict(p, [0.9], r=r, d=2).mean_response_time[0]) for p in ("jiq", "jiq-pod")
    }
    err["mean_field"] = err["policy"].map(theory)
    err["relative_error"] = err["mean_response_time"] / err["mean_field"] - 1
    err["ci_half_relative"] = _ci_half(err) / err["mean_field"]
    pts = {str(lab): (g["servers"].to_numpy(), 100 * g["relative_error"].to_numpy(),
                 100 * g["ci_half_relative"].to_numpy())
           for lab, g in err.groupby("policy", sort=False)}  # fmt: skip
    plot_lines({"0": (np.array(size["ns"]), np.zeros(len(size["ns"])))}, out_dir / "error_vs_n.png",
               points=pts, xlabel="servers N", ylabel="simulated / mean field - 1 (%)",
               log_x=True, title="Load 0.9, r = 10: finite-N error (95% CI)")  # fmt: skip
    report.figure("error_vs_n.png", "Relative error of the simulated mean response time "
                  "against the mean field, as N grows")  # fmt: skip
    report.table(err[["policy", "servers", "measured_tasks", "mean_response_time", "mean_field",
                      "relative_error", "ci_half_relative"]], "error_vs_n.csv",
                 f"Simulation against mean field; {length}")  # fmt: skip

    part = d.find_google_part()
    report.heading("Task dispatch: trace-driven simulation (Figures 9 and 10)")
    if part is None:
        report.text(f"Skipped: the Google trace part `{d.GOOGLE_PART}` was not found.")
        return
    samples, summary, native = d.trace_cdf_data(seed + 2, part)
    plot_cdf(samples, out_dir / "figure9.png", xlabel="response time (s)",
             title="Google 2011 part 0, N = 4000, r = 10, load 0.88")  # fmt: skip
    report.figure("figure9.png", "Response-time CDF per policy, replayed Google trace (Figure 9)")
    report.table(summary, "figure9.csv", f"Trace replay, N = 4000, r = 10, load 0.88 (the "
                 f"part's own times would give {native:.2f})")  # fmt: skip
    probs = np.linspace(0.0, 1.0, 501)
    cdf = pd.concat([pd.DataFrame({"policy": k, "fraction": probs,
                                   "response_time": np.quantile(v, probs)})
                     for k, v in samples.items()], ignore_index=True)  # fmt: skip
    atomic_write_text(out_dir / "figure9_cdf.csv", cdf.to_csv(index=False))
    report.text("The curves of Figure 9 as quantiles (501 per policy): `figure9_cdf.csv`.")
    fig10 = trace_load_data(seed + 3, part, size["trace_loads"])
    pts10 = {str(lab): (g["load"].to_numpy(), g["mean_response_time"].to_numpy(),
                   np.zeros(len(g)))
             for lab, g in fig10.groupby("policy", sort=False)}  # fmt: skip
    plot_lines({}, out_dir / "figure10.png", points=pts10, xlabel="load λ (rescaled trace)",
               ylabel="mean response time (s)", log_y=True,
               title="Google 2011 part 0, N = 4000, r = 10")  # fmt: skip
    report.figure("figure10.png", "Mean response time against load, replayed trace (Figure 10)")
    report.table(fig10, "figure10.csv", "Trace replay at several loads (inter-arrival times "
                 "rescaled by one factor per load)")  # fmt: skip


def trace_load_data(seed: int, part: Path, loads: list[float], servers: int = 4000) -> pd.DataFrame:
    """Mean response time of five policies on the replayed trace at several loads."""
    from cloudsched.dispatch.simulation import simulate
    from cloudsched.dispatch.traces import read_trace

    trace = read_trace(part, "google2011").trace
    policies = (("Random", "random"), ("Pod(2)", "pod"), ("JIQ", "jiq"),
                ("JIQ-Pod(2)", "jiq-pod"), ("JSQ", "jsq"))  # fmt: skip
    streams = iter(np.random.SeedSequence(seed).spawn(len(policies) * len(loads)))
    rows = []
    for label, policy in policies:
        for lam in loads:
            res = simulate(policy, servers=servers, r=10.0, load=lam, d=2, trace=trace,
                           rng=np.random.default_rng(next(streams)))  # fmt: skip
            rows.append({"policy": label, "load": lam, "mean_response_time": res.mean_response_time,
                         "p99": res.percentiles.get("p99", float("nan")),
                         "steady_state": res.steady_state,
                         "log_span": res.log_span})  # fmt: skip
    return pd.DataFrame(rows)


def _workload_file(out_dir: Path) -> str:
    from cloudsched.experiments.placement_demo import demo_workload_yaml

    atomic_write_text(out_dir / "placement-workload.yaml", demo_workload_yaml())
    return "placement-workload.yaml"


def dgp_sections(report: Report, out_dir: Path, level: str, workers: int, seed: int) -> None:
    """Append the graph-placement seed's figures to ``report``."""
    from cloudsched.experiments.placement_demo import DGP_PARAMS, demo_instance
    from cloudsched.placement.optimize import static_optimum
    from cloudsched.plotting import plot_lines, plot_tradeoff

    size = _SIZES[check_choice("level", level, LEVELS)]
    cluster, jobs = demo_instance()
    optimum = static_optimum(cluster, jobs).cost_rate
    model = {"cluster": "3x3", "workload": _workload_file(out_dir)}
    dgp = _sweep(out_dir, "dgp-beta-alpha", {
        "kind": "place", "seed": seed, "replications": 1,
        "fixed": {**model, "policy": "dgp", "f": DGP_PARAMS["f"], "h": DGP_PARAMS["h"],
                  "horizon": size["dgp_horizon"]},
        "grid": {"alpha": size["alphas"], "beta": size["betas"]},
    }, workers)  # fmt: skip
    base = _sweep(out_dir, "baselines", {
        "kind": "place", "seed": seed + 1, "replications": 1,
        "fixed": {**model, "horizon": size["dgp_horizon"] / 10},
        "grid": {"policy": ["storm-default", "greedy"]},
    }, workers)  # fmt: skip
    default = _sweep(out_dir, "dgp-default", {
        "kind": "place", "seed": seed + 3, "replications": 1,
        "fixed": {**model, "horizon": size["dgp_horizon"]},
        "grid": {"policy": ["dgp"]},
    }, workers)  # fmt: skip
    mw = _sweep(out_dir, "maxweight-frames", {
        "kind": "place", "seed": seed + 2, "replications": 1,
        "fixed": {**model, "policy": "maxweight", "horizon": size["mw_horizon"]},
        "grid": {"frame": size["frames"]},
    }, workers)  # fmt: skip
    report.heading("Graph placement: DGP's cost/queue trade-off over beta and alpha")
    curves = {}
    for alpha, g in dgp.sort_values(["alpha", "beta"], ascending=[True, False]).groupby("alpha"):
        curves[f"DGP, alpha = {alpha:g}"] = (
            g["mean_queue_length"].to_numpy(), g["cost_rate"].to_numpy(),
            g["cost_rate_ci"].to_numpy(dtype=float), [f"β={b:g}" for b in g["beta"]],
        )  # fmt: skip
    by = base.set_index("policy")
    mw1 = mw.iloc[(mw["frame"] - 1.0).abs().argsort()[:1]]
    t1 = float(mw1["frame"].iloc[0])
    points = {
        "Storm default": (float(by.loc["storm-default", "mean_queue_length"]),
                          float(by.loc["storm-default", "cost_rate"])),
        "greedy": (float(by.loc["greedy", "mean_queue_length"]),
                   float(by.loc["greedy", "cost_rate"])),
        f"MaxWeight, T = {t1:g} (preempts)": (float(mw1["mean_queue_length"].iloc[0]),
                                              float(mw1["cost_rate"].iloc[0])),
        "DGP, default parameters": (float(default["mean_queue_length"].iloc[0]),
                                    float(default["cost_rate"].iloc[0])),
    }  # fmt: skip
    plot_tradeoff(
        curves, out_dir / "placement_tradeoff.png", lines={"static optimum": optimum},
        points=points, title="3 machines x 3 slots: chain-3 (rho 1) + star-4 (rho 0.5)",
    )  # fmt: skip
    report.figure("placement_tradeoff.png", tradeoff_caption(dgp, points, optimum))
    cols = ["policy", "alpha", "beta", "cost_rate", "cost_rate_ci", "bound_gap",
            "mean_queue_length", "mean_queue_length_ci", "served_fraction", "steady_state",
            "mean_wait", "utilization", "proposals_tried", "proposals_failed",
            "horizon"]  # fmt: skip
    table = pd.concat([dgp, default, base], ignore_index=True)
    report.table(table.reindex(columns=cols), "placement_tradeoff.csv",
                 f"DGP over alpha and beta, DGP with its default (calibrated) parameters, and "
                 f"the baselines that never move a running job; static optimum {optimum:.4g} "
                 f"per unit time. Mean queue lengths range from "
                 f"{table['mean_queue_length'].min():.3g} to "
                 f"{table['mean_queue_length'].max():.4g}.")  # fmt: skip
    report.heading("Graph placement: MaxWeight's migrations against its frame length")
    mw = mw.sort_values("frame", ignore_index=True)
    window = mw["horizon"] - mw["warmup"]
    mw["migrations_per_unit_time"] = mw["migrations"] / window
    mw["preemptions_per_unit_time"] = mw["preemptions"] / window
    t = mw["frame"].to_numpy()
    zero = np.zeros(len(mw))
    plot_lines({}, out_dir / "maxweight_frames.png", points={
        "migrations per unit time": (t, mw["migrations_per_unit_time"].to_numpy(), zero),
        "preemptions per unit time": (t, mw["preemptions_per_unit_time"].to_numpy(), zero),
        "cost per unit time": (t, mw["cost_rate"].to_numpy(),
                               mw["cost_rate_ci"].to_numpy(dtype=float)),
        "mean queue length": (t, mw["mean_queue_length"].to_numpy(),
                              mw["mean_queue_length_ci"].to_numpy(dtype=float)),
    }, xlabel="frame length T", ylabel="per unit time / jobs", log_x=True, log_y=True,
        title="Frame-based MaxWeight (alpha = 1, f = log), 3x3")  # fmt: skip
    report.figure("maxweight_frames.png", maxweight_caption(mw, optimum))
    report.table(mw.reindex(columns=["frame", "migrations_per_unit_time",
                                     "preemptions_per_unit_time", "cost_rate", "bound_gap",
                                     "mean_queue_length", "frames", "frames_not_optimal",
                                     "solver_seconds"]), "maxweight_frames.csv",
                 "Exact max-weight configurations (HiGHS) at every frame boundary")  # fmt: skip


def tradeoff_caption(
    dgp: pd.DataFrame, points: dict[str, tuple[float, float]], optimum: float
) -> str:
    """Describe the trade-off figure from its numbers (direction of change, ends, baselines)."""
    parts = [f"Partitioning cost per unit time (95% CI) against mean queue length; static "
             f"optimum {optimum:.3g}."]  # fmt: skip
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
        f"MaxWeight against its frame length T (log scales): from T = {a['frame']:g} to "
        f"{b['frame']:g}, migrations per unit time go from {a['migrations_per_unit_time']:.3g} "
        f"to {b['migrations_per_unit_time']:.3g} and preemptions from "
        f"{a['preemptions_per_unit_time']:.3g} to {b['preemptions_per_unit_time']:.3g}; the "
        f"cost goes from {a['cost_rate']:.3g} to {b['cost_rate']:.3g} (optimum {optimum:.3g}) "
        f"and the mean queue from {a['mean_queue_length']:.3g} to "
        f"{b['mean_queue_length']:.3g}. Zero counts are not drawn on the log scale."
    )


def _reproduce(which: str, out: str | os.PathLike[str], quick: bool, workers: int,
               seed: int, log: Callable[[str], None] | None) -> Path:  # fmt: skip
    level = "quick" if quick else "full"
    out_dir = ensure_dir(out)
    title = {"jiq": "Task dispatch (JIQ, JIQ-Pod(d))", "dgp": "Graph placement (DGP)"}[which]
    report = Report(f"cloudsched reproduce {which}: {title}", out_dir, log=log)
    report.text(f"Size `{level}`; every run's seed follows from the root seed {seed} and its "
                "parameters; simulation grids are stored run by run under `sweeps/`.")  # fmt: skip
    sections = jiq_sections if which == "jiq" else dgp_sections
    sections(report, out_dir, level, workers, seed)
    cmd = f"cloudsched reproduce {which}{' --quick' if quick else ''} --seed {seed}"
    return report.write({"size": level, "seed": seed, "workers": workers, "command": cmd})


def reproduce_jiq(out: str | os.PathLike[str], *, quick: bool = False, workers: int = 2,
                  seed: int = 2026, log: Callable[[str], None] | None = None) -> Path:  # fmt: skip
    """Reproduce the task-dispatch seed into ``out``; return the path of ``report.md``."""
    return _reproduce("jiq", out, quick, workers, seed, log)


def reproduce_dgp(out: str | os.PathLike[str], *, quick: bool = False, workers: int = 2,
                  seed: int = 2026, log: Callable[[str], None] | None = None) -> Path:  # fmt: skip
    """Reproduce the graph-placement seed into ``out``; return the path of ``report.md``."""
    return _reproduce("dgp", out, quick, workers, seed, log)
