"""``cloudsched verdict``: when a production balancer beats least request, regime by regime."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, emit, format_frame, resolve_format, wrote
from cloudsched.cli.options import FormatCsv, Out, Seed, opt

__all__ = ["register"]

FORMATS = ("table", "csv", "json")


def verdict(
    *,
    servers: Annotated[int, opt("--servers", help="Servers N (>= 2).")] = 16,
    load: Annotated[float, opt("--load", help="Load per unit of capacity, in (0, 1).")] = 0.8,
    policy: Annotated[
        list[str] | None,
        opt(
            "--policy",
            help="A balancer beside least request (repeatable; default ewma, least-time, "
            "prequal and wrr).",
        ),
    ] = None,
    regime: Annotated[
        list[str] | None,
        opt(
            "--regime",
            help="A regime (repeatable; default all: equal, 'mixed speeds', 'slow 10%', "
            "slowdowns, 'heavy tail', '8 proxies', 'polled 2'), or a point of an axis: "
            "half=X (half the servers at speed X), slow=F (a fraction F 4x slower), cv=C "
            "(log-normal service), proxies=K, refresh=T (load reports polled every T).",
        ),
    ] = None,
    axis: Annotated[
        list[str] | None,
        opt(
            "--axis",
            help="An axis NAME=V1,V2,... (repeatable): its points as regimes, e.g. "
            "--axis proxies=1,2,8,16 or --axis cv=1,2,4,8.",
        ),
    ] = None,
    precision: Annotated[
        float,
        opt("--precision", help="Each run stops at this relative 95% half-width of its mean."),
    ] = 0.03,
    metric: Annotated[
        str,
        opt(
            "--metric",
            help="What decides each verdict: mean or p99 response time (both are shown, "
            "each with its 95% interval).",
        ),
    ] = "mean",
    seed: Seed = 0,
    fmt: FormatCsv = None,
    out: Out = None,
    plot: Annotated[
        Path | None, opt("--plot", help="Draw the verdict map (.png, .pdf or .svg).")
    ] = None,
) -> None:
    """When does a production balancer beat least request? Every balancer, every regime."""
    check_outputs(out=out, plot=plot)
    from cloudsched.experiments.verdict import (
        BASELINE,
        DEFAULT_POLICIES,
        REGIMES,
        axis_regimes,
        verdict_study,
    )

    fmt = resolve_format(fmt, out, FORMATS)
    regimes = list(regime or [])
    for a in axis or []:
        regimes += axis_regimes(a)
    chosen = [BASELINE, *(policy or DEFAULT_POLICIES)]
    bar = LazyProgress("verdict", delay=1.0)
    try:
        study = verdict_study(
            servers=servers,
            load=load,
            policies=list(dict.fromkeys(chosen)),
            regimes=regimes or list(REGIMES),
            precision=precision,
            seed=seed,
            progress=bar,
            metric=metric,
        )
    finally:
        bar.close()
    _emit(study, fmt, out)
    if plot is not None:
        from cloudsched.plotting.dispatch import plot_verdict

        plot_verdict(study, plot)
        wrote(plot)


def _emit(study: Any, fmt: str, out: Path | None) -> None:
    import pandas as pd

    from cloudsched.experiments.verdict import BASELINE

    df = pd.DataFrame(study.rows)
    title = (
        f"against least request (wlr; P2C on a board where reports are polled) by "
        f"{study.metric}: N = {study.servers}, load {study.load:g}, response times in mean "
        "service times (+- 95% half-widths; '-': none), ratio to least request's"
    )
    payload = {
        "servers": study.servers,
        "load": study.load,
        "precision": study.precision,
        "metric": study.metric,
        "rows": df.to_dict(orient="records"),
        "findings": study.findings,
    }
    if fmt != "table":
        emit(format_frame(df, fmt, title, payload), out)
        return
    shown = pd.DataFrame(
        {
            "regime": df["regime"],
            "policy": ["least request" if p == BASELINE else p for p in df["policy"]],
            "mean": [_with_half(v, h) for v, h in zip(df["mean"], df["half_width"], strict=True)],
            "p99": [_with_half(v, h) for v, h in zip(df["p99"], df["p99_half_width"], strict=True)],
            "ratio": df["ratio"],
            "verdict": df["vs"],
        }
    )
    text = format_frame(shown, "table", title, payload)
    emit(text + "".join(line + "\n" for line in study.findings), out)


def _with_half(value: float, half: float | None) -> str:
    """``value +- half`` (4 significant digits), or ``value -`` without an interval."""
    return f"{value:.4g} " + ("-" if half is None else f"+- {half:.2g}")


def register(app: typer.Typer) -> None:
    """Add ``verdict`` to the main app."""
    app.command()(verdict)
