"""Figures for task dispatch: response time against load."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.plotting._mpl import Styles, finish, policy_color, pyplot, readable_y, save

__all__ = [
    "plot_cdf",
    "plot_compare",
    "plot_histogram",
    "plot_lines",
    "plot_response_time",
    "plot_slow_start",
    "plot_stale",
    "plot_trajectory",
    "plot_verdict",
]


def plot_response_time(
    curves: Mapping[str, tuple[ArrayLike, ArrayLike]],
    path: str | os.PathLike[str],
    *,
    title: str = "",
    points: Mapping[str, tuple[ArrayLike, ArrayLike, ArrayLike]] | None = None,
    log_y: bool = True,
) -> None:
    """Plot mean response time against load and save a PNG (see :func:`plot_lines`)."""
    plot_lines(
        curves,
        path,
        title=title,
        points=points,
        log_y=log_y,
        xlabel="load λ (arrival rate per server)",
        ylabel="mean response time (mean service times)",
    )


def plot_lines(
    curves: Mapping[str, tuple[ArrayLike, ArrayLike]],
    path: str | os.PathLike[str],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    points: Mapping[str, tuple[ArrayLike, ArrayLike, ArrayLike]] | None = None,
    log_x: bool = False,
    log_y: bool = False,
    connect: bool = False,
) -> None:
    """Plot lines (predictions) and markers with error bars (simulations); save a PNG.

    Parameters
    ----------
    curves : mapping of label to (x, y)
        Lines.
    path : path-like
        Output PNG file (written atomically).
    xlabel, ylabel, title : str
        Axis labels and title.
    points : mapping of label to (x, y, half-width of the 95% CI), optional
        Markers with error bars; a series takes the colour of the curve whose label ends
        with its own (``refined jiq`` for ``jiq``), else the k-th series the k-th curve's.
    log_x, log_y : bool
        Logarithmic axes (``log_y``: only where the data span more than 20x, with plain
        labels; values <= 0 are then left out, the curve ending at the last positive one).
    connect : bool
        Join each series of points with a thin line.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    style = Styles()
    colors = []
    ys: list[float] = []
    for label, (x, y) in curves.items():
        xx, yy = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        keep = yy > 0 if log_y else np.ones(yy.size, dtype=bool)
        color, dash = style(label)
        ax.plot(
            xx[keep],
            yy[keep],
            label=label,
            lw=1.8,
            marker="." if log_y else "",
            color=color,
            ls=dash,
        )
        colors.append(color)
        ys.extend(yy[keep])
    marks: dict[str, int] = {}
    for k, (label, (x, y, err)) in enumerate((points or {}).items()):
        # a series of points takes its policy's colour; else the k-th series the k-th
        # curve's (when each series has its curve), or the curve whose label ends with its own
        paired = colors[k] if len(colors) == len(points or {}) else None
        named = [c for lab, c in zip(curves, colors, strict=True) if lab.split()[-1] == label]
        chosen = policy_color(label) or (named[0] if named else paired) or style(label)[0]
        # two series of one colour (pod with and without replacement) differ by marker
        again = marks.get(chosen, 0)
        marks[chosen] = again + 1
        # an interval that was withheld (None or NaN) draws no bar
        yerr = None if err is None else np.asarray(err, dtype=float)
        ax.errorbar(
            x,
            y,
            yerr=yerr,
            fmt="os^Dv"[again % 5],
            ls=("-", "--", ":", "-.")[again % 4] if connect else "none",
            ms=4,
            capsize=3,
            label=label,
            color=chosen,
            lw=0.8,
        )
        ys.extend(np.asarray(y, dtype=float))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_x:
        from matplotlib.ticker import NullFormatter, ScalarFormatter

        ax.set_xscale("log")
        xs = sorted({float(v) for line in ax.get_lines() for v in np.ravel(line.get_xdata())})
        if 0 < len(xs) <= 8:  # few x values: label exactly those (minor labels overprint)
            ax.set_xticks(xs)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
    if log_y:
        readable_y(ax, ys)
    finish(fig, ax, path, title, legend=8)


def plot_trajectory(
    t: ArrayLike, mean_tasks: ArrayLike, path: str | os.PathLike[str], *, title: str = ""
) -> None:
    """Plot the mean number of tasks per server against time and save a PNG."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(np.asarray(t), np.asarray(mean_tasks), lw=1.8)
    ax.set_xlabel("time (mean service times)")
    ax.set_ylabel("mean tasks per server")
    finish(fig, ax, path, title)


def plot_histogram(
    values: ArrayLike, path: str | os.PathLike[str], *, xlabel: str, title: str = ""
) -> None:
    """Histogram on logarithmic bins (values > 0) saved as PNG."""
    x = np.asarray(values, dtype=np.float64)
    x = x[x > 0]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    bins = np.geomspace(x.min(), x.max(), 60) if x.min() < x.max() else 10
    ax.hist(x, bins=bins)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    finish(fig, ax, path, title)


def plot_cdf(
    samples: Mapping[str, ArrayLike],
    path: str | os.PathLike[str],
    *,
    xlabel: str = "response time",
    title: str = "",
) -> None:
    """Empirical CDFs of several samples (logarithmic x axis) saved as PNG."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    style = Styles()
    for label, values in samples.items():
        x = np.sort(np.asarray(values, dtype=np.float64))
        color, dash = style(label)
        ax.plot(x, np.arange(1, x.size + 1) / x.size, label=label, lw=1.6, color=color, ls=dash)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of tasks")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    save(fig, path)


def plot_compare(
    rows: list[dict], path: str | os.PathLike[str], *, title: str = "", ylabel: str = ""
) -> None:
    """Plot response time against load, one colour per setting, and save it.

    Simulated means carry their 95% intervals (markers); the mean-field prediction, where
    there is one, is a dashed line of the same colour.

    ``rows`` are :func:`cloudsched.experiments.compare.compare` rows.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    series: dict[str, list[dict]] = {}
    for row in rows:
        label = (
            row["policy"]
            + (f" d={row['d']}" if row.get("d") else "")
            + (f" z={row['threshold']}" if row.get("threshold") is not None else "")
        )
        label += f" r={row['r']:g}" if len({r["r"] for r in rows}) > 1 else ""
        series.setdefault(label, []).append(row)
    style = Styles()
    for label, group in series.items():
        color, dash = style(label)
        group = sorted(group, key=lambda r: r["load"])
        x = np.array([r["load"] for r in group], dtype=float)
        y = np.array([r["mean_response_time"] for r in group], dtype=float)
        lo = np.array([r["ci95_low"] for r in group], dtype=float)
        hi = np.array([r["ci95_high"] for r in group], dtype=float)
        err = np.vstack([y - lo, hi - y])
        bars = ax.errorbar(
            x,
            y,
            yerr=np.where(np.isfinite(err), err, 0),
            fmt="o",
            ms=4,
            capsize=3,
            lw=1.2,
            ls=dash,
            color=color,
            label=f"{label} (simulated, 95% CI)",
        )
        mf = [(r["load"], r["meanfield_T"]) for r in group if r.get("meanfield_T") is not None]
        if mf:
            mx, my = zip(*mf, strict=True)
            ax.plot(
                mx,
                my,
                "--",
                color=bars[0].get_color(),
                lw=1,
                alpha=0.8,
                label=f"{label} (mean field)",
            )
    ax.set_xlabel("load (arrival rate per unit of capacity)")
    ax.set_ylabel(ylabel or "mean response time")
    readable_y(ax, [r["mean_response_time"] for r in rows])
    finish(fig, ax, path, title, which="both", legend=7)


def plot_stale(
    rows: list[dict[str, object]],
    random_mean: float,
    path: str | os.PathLike[str],
    *,
    kind: str,
    title: str = "",
) -> None:
    """Plot mean response time against message delay and save the figure.

    Simulated means with their 95% intervals, the delayed mean field as lines (dotted
    where it rests on a closure), random dispatch as the line not to cross.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    labels = list(dict.fromkeys(str(r["policy"]) for r in rows))
    delays = sorted({float(r["delay"]) for r in rows})  # type: ignore[arg-type]
    ys: list[float] = [random_mean]
    for label in labels:
        mine = sorted((r for r in rows if r["policy"] == label), key=lambda r: r["delay"])  # type: ignore[arg-type, return-value]
        x = np.array([r["delay"] for r in mine], dtype=float)
        y = np.array([r["mean_response_time"] for r in mine], dtype=float)
        lo = np.array([r["ci95_low"] for r in mine], dtype=float)
        hi = np.array([r["ci95_high"] for r in mine], dtype=float)
        color = policy_color(label)
        ax.errorbar(
            x,
            y,
            yerr=np.vstack([y - lo, hi - y]),
            fmt="o-",
            ms=4,
            capsize=3,
            lw=1.0,
            color=color,
            label=f"{label}, simulated",
        )
        theory = np.array([r["theory_mean"] for r in mine], dtype=float)
        if np.isfinite(theory).any():
            approx = any("approximate" in str(r["theory"]) for r in mine)
            ax.plot(
                x,
                theory,
                ls=":" if approx else "--",
                lw=1.6,
                color=color,
                label=f"{label}, mean field" + (" (closure)" if approx else ""),
            )
            ys.extend(theory[np.isfinite(theory)])
        ys.extend(hi)
    ax.plot(
        [delays[0], delays[-1]],
        [random_mean] * 2,
        color=policy_color("random"),
        lw=1.2,
        label="random (reads nothing)",
    )
    ax.set_xlabel(f"{kind} delay (mean service times)")
    ax.set_ylabel("mean response time (mean service times)")
    readable_y(ax, ys)
    finish(fig, ax, path, title, legend=8)


def plot_verdict(study: Any, path: str | os.PathLike[str]) -> None:
    """Draw the verdict map: one cell per (regime, balancer), coloured by its verdict.

    Each cell holds the metric that decides (``study.metric``: mean or p99 response time)
    and its ratio to least request's, coloured by the verdict against least request.
    """
    from cloudsched.experiments.verdict import BASELINE

    plt = pyplot()
    regimes = list(dict.fromkeys(r["regime"] for r in study.rows))
    policies = list(dict.fromkeys(r["policy"] for r in study.rows))
    colours = {
        "baseline": "#d9d9d9",
        "better": "#74c476",
        "tie": "#f0f0f0",
        "worse": "#fb6a4a",
        "unknown": "#ffffff",
    }
    fig, ax = plt.subplots(figsize=(1.7 * len(policies) + 1.5, 0.62 * len(regimes) + 1.2))
    for i, regime in enumerate(regimes):
        for j, policy in enumerate(policies):
            row = study.row(regime, policy)
            ax.add_patch(
                plt.Rectangle((j, i), 1, 1, facecolor=colours[row["vs"]], edgecolor="white")
            )
            text = f"{row[study.metric]:.3g}"
            if row["half_width" if study.metric == "mean" else "p99_half_width"] is None:
                text += "\nno interval"
            elif row["vs"] != "baseline":
                text += f"\n{row['ratio']:.2f}x {row['vs']}"
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, len(policies))
    ax.set_ylim(len(regimes), 0)
    ax.set_xticks([j + 0.5 for j in range(len(policies))])
    ax.set_xticklabels(["least request" if p == BASELINE else p for p in policies])
    ax.set_yticks([i + 0.5 for i in range(len(regimes))])
    ax.set_yticklabels(regimes)
    ax.tick_params(length=0)
    ax.set_title(
        f"{study.metric} response time against least request, N = {study.servers}, load "
        f"{study.load:g}\n(green: better, red: worse, grey: the 95% interval of the "
        "difference holds 0; white: a run without an interval)",
        fontsize=9,
    )
    save(fig, path)


def plot_slow_start(traj: Any, path: str | os.PathLike[str]) -> None:
    """Plot the slow-start transient and save it.

    Top: the response time of a request sent at t and the requests per server of each class;
    bottom: the joining servers' share of requests against their share of capacity.
    """
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True)
    ax.plot(traj.t, traj.response, lw=1.8, label="response time of a request sent at t")
    ax.plot(traj.t, traj.mean_old, lw=1.2, ls="--", label="requests per old server")
    ax.plot(traj.t, traj.mean_joining, lw=1.2, ls=":", label="requests per joining server")
    ax.axvline(traj.join_time, color="grey", lw=0.8)
    ax.set_ylabel("mean service times / requests")
    ax.legend(fontsize=8)
    bx.plot(traj.t, traj.share_joining, lw=1.8, label="joining servers' share of requests")
    bx.plot(traj.t, traj.weight, lw=1.2, ls="--", label="slow-start factor of a joining server")
    bx.axhline(
        traj.joining / traj.servers, color="grey", lw=0.8, ls=":", label="their share of capacity"
    )
    bx.set_xlabel("time (mean service times)")
    bx.set_ylim(0.0, 1.05)
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=8)
    title = (
        f"wlr slow start (ODE): {traj.joining} of {traj.servers} join at t={traj.join_time:g},\n"
        f"window {traj.window:g}, load {traj.load:g}"
    )
    finish(fig, ax, path, title)
