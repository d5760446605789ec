"""The JIQ paper's tables and figures, one function each, appended to a report.

:func:`jiq_sections` runs them in the paper's order at a size of
:data:`~cloudsched.experiments.common.LEVELS`.  Every function takes the report, the output
folder and a :class:`Setting` (sizes, workers, root seed), writes its figure and CSV files
and says in the caption what the data show.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.experiments import jiq_data as d
from cloudsched.experiments.common import (
    CITATIONS,
    Setting,
    ci_half,
    mean_points,
    run_grid,
    size_of,
)
from cloudsched.experiments.jiq_captions import (
    error_vs_n_caption,
    figure4_caption,
    figure5_caption,
    figure6_caption,
    figure8_caption,
    table2_note,
)
from cloudsched.experiments.jiq_trace_figures import figure9, figure10
from cloudsched.experiments.report import Report
from cloudsched.io import atomic_write_text

__all__ = ["JIQ_VARIANTS", "Setting", "jiq_sections"]

#: (label, policy) of the five JIQ variants of Figures 7 and 8.
JIQ_VARIANTS = (
    ("JIQ-Original", "jiq-original"),
    ("JIQ", "jiq"),
    ("JIQ-Threshold(z=1)", "jiq-threshold"),
    ("JIQ-SQ(2)", "jiq-sq"),
    ("JIQ-Pod(2)", "jiq-pod"),
)
R = 10.0


def figure4(report: Report, out_dir: Path, _s: Setting) -> None:
    """Figure 4: mean-field response time against load, and its table."""
    from cloudsched.plotting import plot_response_time

    report.heading("Task dispatch: mean-field response time (Figure 4)")
    data = d.figure4_data(R)
    atomic_write_text(out_dir / "figure4.csv", data.to_csv(index=False))
    curves = {
        str(k): (g["load"].to_numpy(), g["mean_response_time"].to_numpy())
        for k, g in data.groupby("policy", sort=False)
    }
    plot_response_time(curves, out_dir / "figure4.png", title=f"Mean field, r = {R:g}")
    report.figure("figure4.png", figure4_caption(data))
    report.table(d.figure4_table(R), "figure4_table.csv", "Mean-field values, r = 10, d = 2")


def table2(report: Report, _out_dir: Path, s: Setting) -> None:
    """Table II: occupancy q_i, predicted and simulated."""
    report.heading("Task dispatch: occupancy q_i (Table II)")
    table = d.table2_data(s.seed + 1, **s.run)
    report.table(
        table,
        "table2.csv",
        f"Fraction of servers with i tasks, N = 500, r = 10, load 0.9; {s.length}. "
        + table2_note(table, 500),
    )


def figure5(report: Report, out_dir: Path, s: Setting) -> None:
    """Figure 5: prediction against simulation for JIQ and JIQ-Pod(2)."""
    from cloudsched.plotting import plot_response_time

    report.heading("Task dispatch: prediction against simulation (Figure 5)")
    fig5 = d.figure5_data(s.seed, **s.run)
    grid = np.linspace(0.05, 0.96, 60)
    curves = {
        f"{lab} (mean field)": (grid, predict(p, grid, r=R, d=2).mean_response_time)
        for lab, p in (("JIQ", "jiq"), ("JIQ-Pod(2)", "jiq-pod"))
    }
    points = {
        f"{lab} (simulation)": (g["load"].to_numpy(), g["simulated"].to_numpy(), ci_half(g))
        for lab, g in fig5.groupby("policy", sort=False)
    }
    plot_response_time(
        curves,
        out_dir / "figure5.png",
        points=points,
        log_y=False,
        title="N = 1000, r = 10: simulation (95% CI) against mean field",
    )
    report.figure("figure5.png", figure5_caption(fig5))
    report.table(fig5, "figure5.csv", f"N = 1000; {s.length}")


def jiq_variants(out_dir: Path, s: Setting) -> pd.DataFrame:
    """Run the five JIQ variants over the loads (the data of Figures 6 to 8)."""
    fixed = {"servers": 1000, "r": R, "d": 2, "threshold": 1, **s.run}
    grid = {"policy": [p for _, p in JIQ_VARIANTS], "load": s.size["loads"]}
    df = run_grid(out_dir, "jiq-variants", s.offset(10), "simulate", fixed, grid)
    df["variant"] = df["policy"].map({p: lab for lab, p in JIQ_VARIANTS})
    return df.sort_values(["policy", "load"], ignore_index=True)


def figure6(report: Report, out_dir: Path, variants: pd.DataFrame) -> None:
    """Figure 6: join and delete messages, mean field and simulation."""
    from cloudsched.plotting import plot_lines

    report.heading("Task dispatch: request messages (Figure 6)")
    lam = np.linspace(0.05, 0.98, 60)
    mf = predict("jiq", lam, r=R)
    curves = {
        "JIQ join (mean field)": (lam, mf.join_rate),
        "JIQ delete (mean field)": (lam, mf.delete_rate),
    }
    pts = {}
    for pol, label in (("jiq", "JIQ"), ("jiq-original", "JIQ-Original")):
        g = variants[variants["policy"] == pol]
        zero = np.zeros(len(g))
        pts[f"{label} join (simulation)"] = (g["load"].to_numpy(), g["msg_join"].to_numpy(), zero)
        if pol == "jiq":
            pts["JIQ delete (simulation)"] = (
                g["load"].to_numpy(),
                g["msg_delete"].to_numpy(),
                zero,
            )
    plot_lines(
        curves,
        out_dir / "figure6.png",
        points=pts,
        xlabel="load λ (arrival rate per server)",
        ylabel="requests per server per mean service time",
        title="N = 1000, r = 10: join and delete requests",
    )
    report.figure("figure6.png", figure6_caption(variants, lam, mf.join_rate))
    fig6 = variants[variants["policy"].isin(["jiq", "jiq-original"])][
        ["variant", "load", "msg_join", "msg_delete", "msg_stale"]
    ].copy()
    fig6["delete share"] = fig6["msg_delete"] / (fig6["msg_join"] + fig6["msg_delete"])
    report.table(fig6, "figure6.csv", "Simulated message rates per server per unit time")


def figure7(report: Report, out_dir: Path, variants: pd.DataFrame) -> None:
    """Figure 7: tails s_i of three JIQ variants at the heaviest load."""
    from cloudsched.plotting import plot_lines

    report.heading("Task dispatch: tails of three JIQ variants (Figure 7)")
    heavy = variants["load"].max()
    tails = variants[
        (variants["load"] == heavy)
        & variants["policy"].isin(["jiq-pod", "jiq-threshold", "jiq-sq"])
    ]
    i = np.arange(1, 7)
    curves = {
        str(row.variant): (i, np.array([getattr(row, f"s_{k}") for k in i]))
        for row in tails.itertuples()
    }
    plot_lines(
        curves,
        out_dir / "figure7.png",
        xlabel="i (tasks at a server)",
        ylabel="s_i (fraction of servers with >= i tasks)",
        log_y=True,
        title=f"N = 1000, r = 10, load {heavy:g}, d = 2, z = 1",
    )
    unseen = [
        f"{lab} from s_{int(np.argmax(y <= 0)) + 1}"
        for lab, (_, y) in curves.items()
        if (y <= 0).any()
    ]
    s2 = ", ".join(f"{lab} {y[1]:.3g}" for lab, (_, y) in curves.items())
    report.figure(
        "figure7.png",
        f"Tail s_i at load {heavy:g}: the fraction of servers with two or more tasks is {s2} "
        "(Figure 7)"
        + (
            "; s_i = 0 (no server ever seen with that many tasks) is not drawn on the log axis: "
            + ", ".join(unseen)
            if unseen
            else ""
        ),
    )
    report.table(
        tails[["variant", "load", *[f"s_{k}" for k in i]]],
        "figure7.csv",
        "Simulated tails s_1..s_6",
    )


def figure8(report: Report, out_dir: Path, variants: pd.DataFrame) -> None:
    """Figure 8: mean response time of the five JIQ variants."""
    from cloudsched.plotting import plot_lines

    report.heading("Task dispatch: mean response time of the JIQ variants (Figure 8)")
    pts = mean_points(variants, "variant")
    plot_lines(
        {},
        out_dir / "figure8.png",
        points=pts,
        xlabel="load λ (arrival rate per server)",
        connect=True,
        ylabel="mean response time (mean service times)",
        log_y=True,
        title="N = 1000, r = 10, simulation (95% CI)",
    )
    report.figure("figure8.png", figure8_caption(variants))
    report.table(
        variants[["variant", "load", "mean_response_time", "ci95_low", "ci95_high"]],
        "figure8.csv",
        "Simulated mean response time, N = 1000, r = 10",
    )


def error_vs_n(report: Report, out_dir: Path, s: Setting) -> None:
    """Not in the paper: the simulated mean against the mean field as N grows."""
    from cloudsched.plotting import plot_lines

    report.heading("Task dispatch: simulation error against N (new)")
    fixed = {"r": R, "d": 2, "load": 0.9, **s.run}
    grid = {"policy": ["jiq", "jiq-pod"], "servers": s.size["ns"]}
    err = run_grid(out_dir, "error-vs-n", s.offset(20), "simulate", fixed, grid)
    err = err.sort_values(["policy", "servers"], ignore_index=True)
    theory = {
        p: float(predict(p, [0.9], r=R, d=2).mean_response_time[0]) for p in ("jiq", "jiq-pod")
    }
    err["mean_field"] = err["policy"].map(theory)
    err["relative_error"] = err["mean_response_time"] / err["mean_field"] - 1
    err["ci_half_relative"] = ci_half(err) / err["mean_field"]
    pts = {
        str(lab): (
            g["servers"].to_numpy(),
            100 * g["relative_error"].to_numpy(),
            100 * g["ci_half_relative"].to_numpy(),
        )
        for lab, g in err.groupby("policy", sort=False)
    }
    ns = np.array(s.size["ns"])
    refined = _refined_lines(ns)
    lines = {"mean field (zero error)": (ns, np.zeros(ns.size)), **refined}
    plot_lines(
        lines,
        out_dir / "error_vs_n.png",
        points=pts,
        xlabel="servers N",
        ylabel="simulated / mean field - 1 (%)",
        log_x=True,
        title="Load 0.9, r = 10: finite-N error (95% CI)",
    )
    report.figure("error_vs_n.png", error_vs_n_caption(err, refined))
    report.table(
        err[
            [
                "policy",
                "servers",
                "measured_tasks",
                "mean_response_time",
                "mean_field",
                "relative_error",
                "ci_half_relative",
            ]
        ],
        "error_vs_n.csv",
        f"Simulation against mean field; {s.length}",
    )


def _refined_lines(ns: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``100 (refined / mean field - 1)`` for jiq and jiq-pod at load 0.9 over N (r = R)."""
    from cloudsched.dispatch.theory.finite_models import population_model
    from cloudsched.dispatch.theory.population import refine

    grid = np.geomspace(max(float(ns.min()), R), float(ns.max()), 40)
    out = {}
    for policy in ("jiq", "jiq-pod"):
        ref = refine(*population_model(policy, 0.9, r=R, d=2))
        mf = ref.tasks()
        out[f"refined {policy}"] = (grid, np.array([100 * (ref.tasks(n) / mf - 1) for n in grid]))
    return out


def jiq_sections(report: Report, out_dir: Path, level: str, workers: int, seed: int) -> None:
    """Append the JIQ paper's tables and figures to ``report``, at size ``level``."""
    s = Setting(size_of(level), workers, seed)
    report.text(
        f"Task dispatch reproduces {CITATIONS['jiq']}; figure and table numbers are that paper's."
    )
    figure4(report, out_dir, s)
    table2(report, out_dir, s)
    figure5(report, out_dir, s)
    report.step("Task dispatch: simulations of the JIQ variants")
    variants = jiq_variants(out_dir, s)
    figure6(report, out_dir, variants)
    figure7(report, out_dir, variants)
    figure8(report, out_dir, variants)
    error_vs_n(report, out_dir, s)
    report.heading("Task dispatch: trace-driven simulation (Figures 9 and 10)")
    part = d.find_google_part()
    from cloudsched.data import DATASETS

    _, _, digest, what = DATASETS[d.GOOGLE_PART]
    report.text(
        f"Replayed log: `{d.GOOGLE_PART}` ({what}; ships with the package), sha256 "
        f"`{digest}`; tasks that never finish are dropped."
    )
    figure9(report, out_dir, s, part)
    figure10(report, out_dir, s, part)
