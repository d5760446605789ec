"""Figures for graph-job placement: the cost/queue trade-off."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.plotting._mpl import pyplot, save

__all__ = ["plot_tradeoff"]


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
    fig, ax = plt.subplots(figsize=(6.6, 4.4))
    for k, (name, (queue, cost, ci, labels)) in enumerate(curves.items()):
        x, y = np.asarray(queue, dtype=float), np.asarray(cost, dtype=float)
        err = None if ci is None else np.asarray(ci, dtype=float)
        ax.errorbar(x, y, yerr=err, fmt="o-", ms=5, capsize=3, lw=1.6, label=name,
                    color=f"C{(k * 3) % 10}")  # fmt: skip
        for xi, yi, text in zip(x, y, labels, strict=True):
            ax.annotate(text, (xi, yi), textcoords="offset points", xytext=(6, 6), fontsize=7)
    styles = ["--", ":", "-.", (0, (5, 1))]
    for k, (label, level) in enumerate((lines or {}).items()):
        ax.axhline(level, ls=styles[k % len(styles)], lw=1.4, color=f"C{k + 1}", label=label)
    for k, (label, (qx, cy)) in enumerate((points or {}).items()):
        ax.plot([qx], [cy], marker="s", ms=7, ls="none", color=f"C{k + 5}", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("mean queue length (jobs waiting)")
    ax.set_ylabel("partitioning cost per unit time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    save(fig, path)
