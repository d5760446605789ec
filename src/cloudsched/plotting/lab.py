"""Figures of the live lab: one run over time, and theory / simulation / live side by side."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.plotting._mpl import pyplot, save

__all__ = ["plot_lab_compare", "plot_lab_run"]


def _over_time(
    ax: Any, frame: pd.DataFrame, unit: float, warmup: float, kills: list[dict[str, Any]]
) -> None:
    ok = frame[frame["measured"] & (frame["status"] == "ok")]
    t = ok["scheduled"].to_numpy() - warmup
    lat = ok["latency"].to_numpy() / unit
    if t.size:
        edges = np.arange(0.0, max(t.max(), 1.0) + 1.0, 1.0)
        idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, edges.size - 2)
        groups = pd.Series(lat).groupby(idx)
        mid = edges[:-1][groups.mean().index] + 0.5
        ax.plot(mid, groups.mean().to_numpy(), label="mean per second")
        ax.plot(mid, groups.quantile(0.99).to_numpy(), label="p99 per second", alpha=0.7)
    for k in kills:
        ax.axvline(k["killed_at"], color="black", linestyle="--", linewidth=1)
        ax.annotate(
            f"server {k['server']} killed",
            (k["killed_at"], ax.get_ylim()[1]),
            fontsize=8,
            ha="left",
            va="top",
        )
    ax.set_xlabel("seconds of the measurement")
    ax.set_ylabel("response time (mean service times)")
    ax.legend(fontsize=8)


def plot_lab_run(result: Any, path: str | os.PathLike[str]) -> None:
    """Latency over time (faults marked), each server's share, and the I-queues if any."""
    plt = pyplot()
    iq = [s for s in result.series.get("iqueue", []) if s]
    fig, axes = plt.subplots(1, 3 if iq else 2, figsize=(13 if iq else 9, 3.6))
    lab, rec = result.lab, result.record
    warmup = rec.warmup_time * lab["unit_seconds"]
    _over_time(axes[0], result.frame, lab["unit_seconds"], warmup, lab["faults"]["killed"])
    per = lab["faults"]["per_server"]
    colors = ["tab:red" if p["slowdown"] > 1 else "tab:blue" for p in per]
    killed = {k["server"] for k in lab["faults"]["killed"]}
    colors = ["tab:gray" if p["server"] in killed else c for p, c in zip(per, colors, strict=True)]
    axes[1].bar([p["server"] for p in per], [p["share"] for p in per], color=colors)
    axes[1].axhline(1 / max(len(per), 1), color="black", linewidth=0.8, linestyle=":")
    axes[1].set_xlabel("server (red: slow, gray: killed)")
    axes[1].set_ylabel("share of requests")
    if iq:
        for k, series in enumerate(iq):
            arr = np.asarray(series, dtype=float)
            keep = arr[:, 0] >= warmup
            axes[2].step(
                arr[keep, 0] - warmup,
                arr[keep, 1],
                where="post",
                label=f"dispatcher {k}",
                linewidth=0.8,
            )
        axes[2].set_xlabel("seconds of the measurement")
        axes[2].set_ylabel("I-queue length")
        axes[2].legend(fontsize=8)
    fig.suptitle(
        f"{rec.policy} live ({lab['balancer']}), N={rec.servers}, M={rec.dispatchers}, "
        f"load {rec.load:g}",
        fontsize=10,
    )
    fig.tight_layout()
    save(fig, path)


def plot_lab_compare(
    rows: list[dict[str, Any]], cdfs: dict[str, dict[str, np.ndarray]], path: str | os.PathLike[str]
) -> None:
    """Mean response time by source for each policy (95% bars), and live vs simulated tails."""
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.8))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    sources = list(dict.fromkeys(r["source"] for r in rows))
    width = 0.8 / max(len(sources), 1)
    for j, src in enumerate(sources):
        xs, ys, errs = [], [], []
        for i, p in enumerate(policies):
            row = next((r for r in rows if r["policy"] == p and r["source"] == src), None)
            if row is None or row["mean"] is None or not np.isfinite(row["mean"]):
                continue
            xs.append(i + (j - (len(sources) - 1) / 2) * width)
            ys.append(row["mean"])
            errs.append(row["half_width"] if row["half_width"] is not None else 0.0)
        a.errorbar(xs, ys, yerr=errs, fmt="o", capsize=3, label=src)
    a.set_xticks(range(len(policies)), policies)
    a.set_xlim(-0.6, len(policies) - 0.4)
    a.set_ylabel("mean response time (mean service times)")
    a.legend(fontsize=8)
    for p, curves in cdfs.items():
        for name, values in curves.items():
            v = np.sort(values)
            if v.size:
                tail = 1.0 - np.arange(v.size) / v.size
                b.step(
                    v,
                    tail,
                    where="post",
                    label=f"{p} {name}",
                    linestyle="-" if "live" in name else "--",
                )
    b.set_yscale("log")
    b.set_xlim(left=0)
    b.set_xlabel("response time t (mean service times)")
    b.set_ylabel("fraction of requests longer than t")
    b.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)
