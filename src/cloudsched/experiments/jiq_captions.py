"""Captions of the JIQ figures, computed from the numbers each figure plots.

Each function takes the figure's data and returns one sentence that says what the figure
shows, with the numbers (so a caption cannot outlive its data: a different size, seed or
code change rewrites it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = [
    "error_vs_n_caption",
    "figure4_caption",
    "figure5_caption",
    "figure6_caption",
    "figure8_caption",
    "figure9_caption",
    "figure10_caption",
    "table2_note",
]


def _secs(v: float) -> str:
    """Format a time in seconds readably: 1,168 s, 27.4 s."""
    return f"{v:,.0f} s" if abs(v) >= 100 else f"{v:.3g} s"


def _at(df: pd.DataFrame, load: float, col: str) -> pd.Series:
    """Each policy's ``col`` at the plotted load nearest ``load``."""
    near = df.loc[(df["load"] - load).abs().groupby(df["policy"]).idxmin()]
    return near.set_index("policy")[col].sort_values()


def figure4_caption(data: pd.DataFrame) -> str:
    """Mean field against load: the order of the policies, at load 0.9 and the heaviest."""
    top = float(data["load"].max())
    parts = []
    for load in (0.9, top):
        vals = _at(data, load, "mean_response_time")
        parts.append(f"at load {load:.3g}: " + ", ".join(f"{p} {v:.3g}" for p, v in vals.items()))
    return (
        "Mean field, r = 10, mean response time in mean service times; "
        + "; ".join(parts)
        + " (data: figure4.csv)"
    )


def figure5_caption(fig5: pd.DataFrame) -> str:
    """Describe simulation against the mean field: the largest gap, the intervals that hold it."""
    gap = (fig5["simulated"] / fig5["predicted"] - 1).abs()
    worst = fig5.loc[gap.idxmax()]
    inside = int(
        ((fig5["ci95_low"] <= fig5["predicted"]) & (fig5["predicted"] <= fig5["ci95_high"])).sum()
    )
    return (
        f"Mean response time, simulated (N = 1000, 95% intervals) and the mean field (lines): "
        f"the largest gap is {gap.max():.2%} ({worst['policy']} at load {worst['load']:.3g}, "
        f"{worst['simulated']:.3g} against {worst['predicted']:.3g}); {inside} of {len(fig5)} "
        "intervals hold the mean field"
    )


def figure6_caption(variants: pd.DataFrame, lam: np.ndarray, join: np.ndarray) -> str:
    """Messages: JIQ's joins against the mean field, and the share of deletes."""
    g = variants[variants["policy"] == "jiq"].sort_values("load")
    heavy = g.iloc[-1]
    mf = float(np.interp(heavy["load"], lam, join))
    share = heavy["msg_delete"] / (heavy["msg_join"] + heavy["msg_delete"])
    orig = variants[(variants["policy"] == "jiq-original") & (variants["load"] == heavy["load"])]
    tail = ""
    if len(orig):
        tail = f"; JIQ-Original sends {orig['msg_join'].iloc[0]:.3g} joins"
    return (
        f"Request messages per server per mean service time: at load {heavy['load']:.3g} JIQ "
        f"sends {heavy['msg_join']:.3g} joins (mean field {mf:.3g}) and "
        f"{heavy['msg_delete']:.3g} deletes, {share:.0%} of its requests{tail} (Figure 6)"
    )


def figure8_caption(variants: pd.DataFrame) -> str:
    """Rank the JIQ variants at the heaviest load, best to worst."""
    heavy = float(variants["load"].max())
    vals = variants[variants["load"] == heavy].set_index("variant")["mean_response_time"]
    vals = vals.sort_values()
    return (
        f"Mean response time of five JIQ variants (simulated, N = 1000, r = 10, 95% "
        f"intervals); at load {heavy:.3g}, best to worst: "
        + ", ".join(f"{k} {v:.3g}" for k, v in vals.items())
        + " (Figure 8)"
    )


def error_vs_n_caption(err: pd.DataFrame, refined: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """Give the finite-N error at the smallest N (simulated and refined) and at the largest."""
    small, large = int(err["servers"].min()), int(err["servers"].max())
    parts = []
    for policy, g in err.groupby("policy", sort=False):
        row = g[g["servers"] == small].iloc[0]
        grid, line = refined[f"refined {policy}"]
        ref = float(np.interp(small, grid, line))
        last = g[g["servers"] == large].iloc[0]
        parts.append(
            f"{policy} {100 * row['relative_error']:+.2f}% simulated against "
            f"{ref:+.2f}% refined at N = {small}, {100 * last['relative_error']:+.2f}% "
            f"(± {100 * last['ci_half_relative']:.2f}) at N = {large:,}"
        )
    return (
        "Relative error of the simulated mean response time against the mean field as N "
        "grows (points, 95% intervals) and the refined 1/N prediction's (lines): "
        + "; ".join(parts)
        + _refined_misses(err, refined)
        + "; the exact chain is out of reach at these sizes (N <= 4)"
    )


def _refined_misses(err: pd.DataFrame, refined: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """Say how many intervals hold the refined line, and name those that do not."""
    held, misses, total = 0, [], 0
    for row in err.itertuples(index=False):
        half = float(row.ci_half_relative)
        if not np.isfinite(half):
            continue
        grid, line = refined[f"refined {row.policy}"]
        ref = float(np.interp(row.servers, grid, line))
        sim = 100 * float(row.relative_error)
        total += 1
        if abs(sim - ref) <= 100 * half:
            held += 1
        else:
            misses.append(
                f"{row.policy} at N = {int(row.servers):,} ({sim:+.2f}% ± {100 * half:.2f} "
                f"against {ref:+.2f}%)"
            )
    text = f"; {held} of {total} intervals hold the refined line"
    if misses:
        text += " (missed: " + ", ".join(misses) + "; a 95% interval misses one time in 20)"
    return text


def figure9_caption(summary: pd.DataFrame) -> str:
    """Trace replay: each policy's mean and p99, best to worst."""
    rows = summary.sort_values("mean (s)")
    p99 = "p99 (s)" if "p99 (s)" in rows else None
    parts = [
        f"{r['policy']} mean {_secs(r['mean (s)'])}"
        + (f", p99 {_secs(r[p99])}" if p99 and math.isfinite(r[p99]) else "")
        for _, r in rows.iterrows()
    ]
    return (
        "Response-time CDF per policy on the replayed Google trace (N = 4000, r = 10, load "
        "0.88): " + "; ".join(parts) + " (Figure 9)"
    )


def figure10_caption(fig10: pd.DataFrame, bars: str) -> str:
    """Trace replay against load: the order of the policies at the heaviest load."""
    vals = _at(fig10, float(fig10["load"].max()), "mean_response_time")
    heavy = float(fig10["load"].max())
    return (
        f"Mean response time (s) against load on the replayed trace; at load {heavy:.3g}: "
        + ", ".join(f"{p} {_secs(v)}" for p, v in vals.items())
        + f" (Figure 10); {bars}"
    )


def table2_note(table: pd.DataFrame, servers: int) -> str:
    """Say where Table II's relative errors are large and what they amount to."""
    big = table[table["q_i predicted"] >= 0.01]
    worst = float(big["relative_error"].abs().max()) if len(big) else math.nan
    tail = table[(table["q_i predicted"] < 0.01) & (table["relative_error"].abs() > 0.2)]
    text = f"Where q_i is at least 0.01 the simulation is within {worst:.1%} of the prediction."
    if len(tail):
        rows = "; ".join(
            f"{r['policy']} i = {int(r['i'])}: {r['relative_error']:+.0%} "
            f"({r['q_i simulated']:.2g} simulated against {r['q_i predicted']:.2g})"
            for _, r in tail.iterrows()
        )
        diff = float((tail["q_i simulated"] - tail["q_i predicted"]).abs().max())
        text += (
            f" The large relative errors are in the tail, where few servers are: {rows}, "
            f"differences of at most {diff:.2g} of the servers. The mean field is the limit "
            f"N = inf"
        )
        if bool((tail["relative_error"] > 0).all()):
            text += f", whose tail falls off faster than that of a farm of {servers} servers"
        text += " (the 1/N effect that `cloudsched predict --servers N` refines for the mean)."
    return text
