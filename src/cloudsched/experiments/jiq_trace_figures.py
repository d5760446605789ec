"""The JIQ paper's Google trace replays (Figures 9 and 10), appended to a report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cloudsched.experiments import jiq_data as d
from cloudsched.experiments.common import Setting, mean_points
from cloudsched.experiments.jiq_captions import figure9_caption, figure10_caption
from cloudsched.experiments.report import Report
from cloudsched.io import atomic_write_text

__all__ = ["figure9", "figure10"]


def figure9(report: Report, out_dir: Path, s: Setting, part: Path) -> None:
    """Figure 9: response-time CDF per policy on the replayed Google trace."""
    from cloudsched.plotting import plot_cdf

    samples, summary, native = d.trace_cdf_data(s.seed + 2, part)
    plot_cdf(
        samples,
        out_dir / "figure9.png",
        xlabel="response time (s)",
        title="Google 2011 part 0, N = 4000, r = 10, load 0.88",
    )
    report.figure("figure9.png", figure9_caption(summary))
    report.table(
        summary,
        "figure9.csv",
        f"Trace replay, N = 4000, r = 10, load 0.88 (the part's own times would give {native:.2f})",
    )
    probs = np.linspace(0.0, 1.0, 501)
    cdf = pd.concat(
        [
            pd.DataFrame({"policy": k, "fraction": probs, "response_time": np.quantile(v, probs)})
            for k, v in samples.items()
        ],
        ignore_index=True,
    )
    atomic_write_text(out_dir / "figure9_cdf.csv", cdf.to_csv(index=False))
    report.text("The curves of Figure 9 as quantiles (501 per policy): `figure9_cdf.csv`.")


def figure10(report: Report, out_dir: Path, s: Setting, part: Path) -> None:
    """Figure 10: mean response time against load on the rescaled trace."""
    from cloudsched.plotting import plot_lines

    fig10 = d.trace_load_data(s.seed + 3, part, s.size["trace_loads"])
    pts = mean_points(fig10, "policy")
    plot_lines(
        {},
        out_dir / "figure10.png",
        points=pts,
        xlabel="load λ (rescaled trace, per unit of capacity)",
        ylabel="mean response time (s)",
        log_y=True,
        connect=True,
        title="Google 2011 part 0, N = 4000, r = 10",
    )
    certified = int(fig10["ci95_low"].notna().sum())
    span = f"{fig10['log_span'].min():.3g} to {fig10['log_span'].max():.3g}"
    bars = (
        f"error bars: 95% intervals of the {certified} of {len(fig10)} replays certified"
        if certified
        else f"no error bars: each point is one replay of a log spanning {span} mean service "
        "times, too short for a certified interval (steady_state false in "
        "figure10.csv)"
    )
    report.figure("figure10.png", figure10_caption(fig10, bars))
    report.table(
        fig10,
        "figure10.csv",
        "Trace replay at several loads (inter-arrival times rescaled by one factor per load)",
    )
