"""Figures for graph-job placement: the cost/queue trade-off, MaxWeight's frames, snapshots."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.plotting._mpl import NEUTRAL_COLORS, policy_color, pyplot, save

__all__ = ["plot_maxweight_frames", "plot_snapshots", "plot_tradeoff"]


def plot_tradeoff(
    curves: Mapping[str, tuple[ArrayLike, ArrayLike, ArrayLike | None, list[str]]],
    path: str | os.PathLike[str],
    *,
    lines: Mapping[str, float] | None = None,
    points: Mapping[str, tuple[float, float]] | None = None,
    title: str = "",
) -> None:
    """Plot partitioning cost against mean queue length and save a PNG.

    Parameters
    ----------
    curves : mapping of label to (queue, cost, cost CI half-widths or None, point labels)
        One curve per setting (e.g. per alpha), one point per value of the swept parameter
        (e.g. ``beta = 0.1``), joined in order.
    path : path-like
        Output PNG file (written atomically).
    lines : mapping of label to cost, optional
        Horizontal reference lines (baselines, the static optimum).
    points : mapping of label to (queue, cost), optional
        Single reference points (other policies).
    title : str
        Figure title.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.6))
    ax.set_xscale("log")
    placed = []
    for k, (name, (queue, cost, ci, labels)) in enumerate(curves.items()):
        x, y = np.asarray(queue, dtype=float), np.asarray(cost, dtype=float)
        err = None if ci is None else np.asarray(ci, dtype=float)
        color = policy_color(name) if len(curves) == 1 else None  # settings of one policy
        ax.errorbar(
            x,
            y,
            yerr=err,
            fmt="o-",
            ms=5,
            capsize=3,
            lw=1.6,
            label=name,
            color=color or f"C{(k * 3) % 10}",
        )
        placed.append((x, y, list(labels)))
    styles = ["--", ":", "-.", (0, (5, 1))]
    for k, (label, level) in enumerate((lines or {}).items()):
        color = policy_color(label) or "0.35"
        ax.axhline(level, ls=styles[k % len(styles)], lw=1.4, color=color, label=label)
    markers = ["s", "D", "^", "v", "P"]
    for k, (label, (qx, cy)) in enumerate((points or {}).items()):
        ax.plot(
            [max(qx, 1e-2)],
            [cy],
            marker=markers[k % len(markers)],
            ms=8,
            ls="none",
            color=policy_color(label) or NEUTRAL_COLORS[k % len(NEUTRAL_COLORS)],
            label=f"{label}: queue {qx:.3g}, cost {cy:.3g}",
        )
    ax.autoscale_view()
    for x, y, labels in placed:
        _annotate_groups(ax, x, y, labels)
    ax.set_xlabel("mean queue length (jobs waiting, log scale)")
    ax.set_ylabel("partitioning cost per unit time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7.5, loc="best")
    if title:
        ax.set_title(title, fontsize=10)
    save(fig, path)


def _annotate_groups(
    ax, x: np.ndarray, y: np.ndarray, labels: list[str], min_px: float = 22.0
) -> None:
    """Label points, merging runs of points closer than ``min_px`` into one label.

    ``beta=0.1`` and ``beta=0.05`` that land on top of each other become one label
    ``beta=0.1, 0.05`` instead of two overprinted ones.
    """
    if not labels:
        return
    xy = ax.transData.transform(np.column_stack([np.maximum(x, 1e-12), y]))
    groups: list[list[int]] = [[0]]
    for i in range(1, len(labels)):
        if np.hypot(*(xy[i] - xy[groups[-1][0]])) < min_px:
            groups[-1].append(i)
        else:
            groups.append([i])
    for n, g in enumerate(groups):
        first = labels[g[0]]
        if len(g) > 1 and "=" in first:
            key = first.split("=", 1)[0]
            text = key + "=" + ", ".join(labels[i].split("=", 1)[1] for i in g)
        else:
            text = ", ".join(labels[i] for i in g)
        dy = 8 if n % 2 == 0 else -14
        ax.annotate(
            text, (x[g[0]], y[g[0]]), textcoords="offset points", xytext=(7, dy), fontsize=7
        )


def plot_maxweight_frames(
    frames: ArrayLike,
    rates: Mapping[str, tuple[ArrayLike, ArrayLike | None]],
    queue: tuple[ArrayLike, ArrayLike | None],
    path: str | os.PathLike[str],
    *,
    cost: tuple[ArrayLike, ArrayLike | None] | None = None,
    optimum: float | None = None,
    title: str = "",
) -> None:
    """Panels against the frame length: event rates, cost beside the optimum, mean queue.

    ``rates`` maps a label to (values per unit time, 95% half-widths or None), drawn on a log
    axis (zeros left out); ``cost`` and ``queue`` are (values, half-widths or None), each on
    its own linear axis, the cost with the static ``optimum`` as a dashed line.  The x ticks
    are the frame lengths measured.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

    from cloudsched.plotting._mpl import readable_y

    t = np.asarray(frames, dtype=float)
    plt = pyplot()
    count = 3 if cost is not None else 2
    fig, axes = plt.subplots(1, count, figsize=(4.2 * count, 4.0))
    left, right = axes[0], axes[-1]
    shown: list[float] = []
    for label, (y, err) in rates.items():
        yy = np.asarray(y, dtype=float)
        keep = yy > 0  # a rate of 0 has no place on a log axis: listed in the table
        e = None if err is None else np.asarray(err, dtype=float)[keep]
        left.errorbar(t[keep], yy[keep], yerr=e, fmt="o-", ms=4, capsize=3, lw=1.2, label=label)
        shown.extend(yy[keep])
    left.set_ylabel("events per unit time")
    readable_y(left, shown)
    panels = [(right, queue, "mean queue length (jobs)", "tab:red", "mean queue length")]
    if cost is not None:
        panels.insert(0, (axes[1], cost, "cost (traffic per unit time)", "tab:green", "cost"))
    for ax, (y, err), ylabel, color, label in panels:
        ax.errorbar(
            t,
            np.asarray(y, dtype=float),
            yerr=None if err is None else np.asarray(err, dtype=float),
            fmt="o-",
            ms=4,
            capsize=3,
            lw=1.2,
            color=color,
            label=f"{label} (95% CI)" if err is not None else label,
        )
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
    if cost is not None and optimum is not None:
        axes[1].axhline(
            optimum, color="black", ls="--", lw=1, label=f"static optimum {optimum:.3g}"
        )
        axes[1].set_ylim(top=max(axes[1].get_ylim()[1], 1.1 * optimum))
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(t)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("frame length T (time units)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    save(fig, path)


def plot_snapshots(
    panels: Mapping[str, tuple[Any, float]],
    slots: ArrayLike,
    racks: ArrayLike,
    path: str | os.PathLike[str],
    *,
    title: str = "",
) -> None:
    """Draw which job holds each slot at one moment, one panel per run, and save a PNG.

    Parameters
    ----------
    panels : mapping of label to (rows, time)
        The nodes running at one moment (rows of
        :func:`cloudsched.placement.assignments.final_table`, or of an assignment table cut
        by :func:`~cloudsched.placement.assignments.snapshot`) and that moment.
    slots : array-like of int
        Slots of each machine (machines are rows, their slots columns; empty: white).
    racks : array-like of int
        Rack of each machine (a line separates racks).
    path : path-like
        Output PNG file (written atomically).
    title : str
        Figure title.
    """
    import matplotlib.colors as mcolors

    plt = pyplot()
    slots = np.asarray(slots, dtype=int)
    racks = np.asarray(racks, dtype=int)
    nm, width = slots.size, int(slots.max())
    types = sorted({str(t) for table, _ in panels.values() for t in table["type"]})
    base = {t: mcolors.to_rgb(f"C{k % 10}") for k, t in enumerate(types)}
    height = max(3.0, 0.2 * nm + 1.8)  # room for two-line titles in 11 pt
    ncols = min(2, len(panels))  # two wide: legible where a report scales it to a page
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(max(3.6, 0.32 * width + 1.6) * ncols, height * nrows), squeeze=False
    )
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (label, (now, t)) in zip(axes.flat, panels.items(), strict=False):
        img = np.ones((nm, width, 3))
        for m in range(nm):
            img[m, slots[m] :] = 0.93  # no such slot
        for k, (_, rows) in enumerate(now.groupby("job", sort=True)):
            shade = 0.55 + 0.45 * ((k * 0.618) % 1.0)  # tell neighbouring jobs apart
            colour = np.asarray(base[str(rows["type"].iloc[0])]) * shade + (1 - shade)
            img[rows["machine"].to_numpy(), rows["slot"].to_numpy()] = colour
        ax.imshow(
            img, aspect="auto", interpolation="nearest", extent=(-0.5, width - 0.5, nm - 0.5, -0.5)
        )
        for m in np.flatnonzero(np.diff(racks)) + 0.5:
            ax.axhline(m, color="0.2", lw=1.2)
        cost = float(now.groupby("job")["cost"].first().sum()) if len(now) else 0.0
        jobs = now["job"].nunique()
        ax.set_title(
            f"{label}\n{jobs} job{'' if jobs == 1 else 's'} running, cost {cost:.4g} "
            f"at t = {t:,.0f}",
            fontsize=11,
        )
        ax.set_xlabel("slot")
        ax.set_ylabel("machine")
        ax.set_xticks(range(0, width, max(1, width // 6)))
        ax.set_yticks(range(0, nm, max(1, nm // 12)))
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in base.values()]
    fig.legend(
        handles, list(base), loc="lower center", ncol=min(len(base), 5), fontsize=11, frameon=False
    )
    if title:
        fig.suptitle(title, fontsize=12)
    inches = height * nrows
    fig.tight_layout(rect=(0, 0.35 / inches, 1, 1 - (0.45 / inches if title else 0.0)))
    save(fig, path)
