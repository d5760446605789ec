"""``cloudsched demo``: a short report on built-in defaults.

Contents: the task-dispatch seed's Figure 4 (mean response time against load for Random,
Pod(2), JIQ and JIQ-Pod(2) at r = 10, mean field) and its table of values.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from cloudsched.dispatch.meanfield import predict
from cloudsched.experiments.report import Report, ensure_dir
from cloudsched.io import atomic_write_text
from cloudsched.plotting import plot_response_time

__all__ = ["DEFAULT_OUT", "run_demo"]

DEFAULT_OUT = Path("cloudsched-report")

#: (label, policy, d) of the curves of the seed's Figure 4.
FIGURE4_CURVES = (
    ("Random", "random", 1),
    ("Pod(2)", "pod", 2),
    ("JIQ", "jiq", 1),
    ("JIQ-Pod(2)", "jiq-pod", 2),
)


def figure4_data(r: float = 10.0, loads: np.ndarray | None = None) -> pd.DataFrame:
    """Mean-field T against load for the four policies of Figure 4 (tidy frame)."""
    grid = np.linspace(0.02, 0.98, 49) if loads is None else np.asarray(loads, dtype=float)
    frames = []
    for label, policy, d in FIGURE4_CURVES:
        pred = predict(policy, grid, r=r, d=d)
        frames.append(
            pd.DataFrame(
                {
                    "policy": label,
                    "load": pred.loads,
                    "p0": pred.p0,
                    "mean_response_time": pred.mean_response_time,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def figure4_table(r: float = 10.0, loads: ArrayLike = (0.5, 0.9, 0.98)) -> pd.DataFrame:
    """Tabulate p0 and T per policy at a few loads (the design note's table)."""
    jiq = predict("jiq", loads, r=r)
    jiq_pod = predict("jiq-pod", loads, r=r, d=2)
    pod = predict("pod", loads, d=2)
    rnd = predict("random", loads)
    share = jiq.delete_rate / (jiq.delete_rate + jiq.join_rate)
    return pd.DataFrame(
        {
            "load": jiq.loads,
            "JIQ p0": jiq.p0,
            "JIQ T": jiq.mean_response_time,
            "JIQ-Pod(2) T": jiq_pod.mean_response_time,
            "Pod(2) T": pod.mean_response_time,
            "Random T": rnd.mean_response_time,
            "JIQ delete share": share,
        }
    )


def run_demo(out: str | os.PathLike[str] = DEFAULT_OUT) -> Path:
    """Write the demo report (Markdown, PNG figures, CSV data) into ``out``.

    Returns
    -------
    pathlib.Path
        Path of ``report.md``.
    """
    out_dir = ensure_dir(out)
    r = 10.0
    report = Report("cloudsched demo report", out_dir)
    report.text(
        "Built-in defaults; regenerate with `cloudsched demo`. Service times have mean 1, "
        "so response times are in units of the mean service time."
    )

    report.heading("Task dispatch: mean-field response time (seed Figure 4)")
    data = figure4_data(r)
    atomic_write_text(out_dir / "figure4.csv", data.to_csv(index=False))
    curves = {
        str(label): (g["load"].to_numpy(), g["mean_response_time"].to_numpy())
        for label, g in data.groupby("policy", sort=False)
    }
    plot_response_time(
        curves, out_dir / "figure4.png", title=f"Mean field, r = N/M = {r:g} (Figure 4)"
    )
    report.figure(
        "figure4.png",
        f"Mean response time against load, mean-field limit, r = {r:g} (data: figure4.csv)",
    )
    report.table(
        figure4_table(r),
        "figure4_table.csv",
        f"Mean-field values at r = {r:g}, d = 2; 'JIQ delete share' is delete requests "
        "among join + delete messages",
    )
    return report.write({"r": r, "d": 2, "command": "cloudsched demo"})
