"""``cloudsched stale``: what late information does to each policy, against message delay."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, emit, format_frame, resolve_format, wrote
from cloudsched.cli.options import FormatCsv, Out, Precision, Seed, opt
from cloudsched.errors import ParameterError

__all__ = ["register"]

FORMATS = ("table", "csv", "json")


def _delays(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ParameterError(
            "--delays", text, "comma-separated numbers of mean service times"
        ) from None


def stale(
    *,
    servers: Annotated[int, opt("--servers", help="Servers N (>= 2).")] = 100,
    load: Annotated[float, opt("--load", help="Load per server, in (0, 1).")] = 0.9,
    kind: Annotated[
        str,
        opt(
            "--kind",
            help="info: lengths reach the dispatchers late (jsq, pod:D); "
            "join: idle servers reach their I-queue late (jiq, jiq-pod:D).",
        ),
    ] = "info",
    delays: Annotated[
        str, opt("--delays", help="Delays, comma-separated, in mean service times.")
    ] = "0,0.25,0.5,1,2,4",
    policy: Annotated[
        list[str] | None,
        opt(
            "--policy",
            help="A policy to study (repeatable; default jsq and pod:2 for info, "
            "jiq and jiq-pod:2 for join).",
        ),
    ] = None,
    r: Annotated[float, opt("--r", help="Servers per dispatcher (jiq, jiq-pod).")] = 10.0,
    exponential: Annotated[
        bool, opt("--exponential", help="Delays exponential with these means (no theory).")
    ] = False,
    theory: Annotated[
        bool, opt("--theory/--no-theory", help="The delayed mean field beside.")
    ] = True,
    precision: Precision = 0.02,
    seed: Seed = 0,
    fmt: FormatCsv = None,
    out: Out = (None),
    plot: Annotated[
        Path | None, opt("--plot", help="Plot response time against delay (.png, .pdf or .svg).")
    ] = None,
) -> None:
    """Stale information: response time against message delay, simulated and in theory."""
    check_outputs(out=out, plot=plot)
    from cloudsched.experiments.stale import stale_study

    fmt = resolve_format(fmt, out, FORMATS)
    bar = LazyProgress("stale", delay=1.0)
    try:
        study = stale_study(
            servers=servers,
            load=load,
            kind=kind,
            delays=_delays(delays),
            policies=policy,
            r=r,
            exponential=exponential,
            theory=theory,
            seed=seed,
            precision=precision,
            progress=bar,
        )
    finally:
        bar.close()
    _emit(study, fmt, out)
    if plot is not None:
        from cloudsched.plotting import plot_stale

        plot_stale(
            study.rows, study.random_mean, plot, kind=kind, title=_title(study, with_unit=False)
        )
        wrote(plot)


def _title(study: Any, with_unit: bool = True) -> str:
    law = "exponential" if study.exponential else "fixed"
    unit = ", times in mean service times (95% intervals)" if with_unit else ""
    return f"N={study.servers}, load {study.load:g}, {law} {study.kind} delays{unit}"


def _emit(study: Any, fmt: str, out: Path | None) -> None:
    import pandas as pd

    df = pd.DataFrame(study.rows)
    payload = {
        "servers": study.servers,
        "load": study.load,
        "kind": study.kind,
        "exponential": study.exponential,
        "random_mean": study.random_mean,
        "rows": df.to_dict(orient="records"),
        "findings": study.findings,
    }
    if fmt != "table":
        emit(format_frame(df, fmt, _title(study), payload), out)
        return
    shown = pd.DataFrame(
        {
            "policy": df["policy"],
            "delay": df["delay"],
            "mean": df["mean_response_time"],
            "interval": [
                f"[{lo:.4g}, {hi:.4g}]" if math.isfinite(hi) else "-"
                for lo, hi in zip(df["ci95_low"], df["ci95_high"], strict=True)
            ],
            "p99": df["p99"],
            "mean (theory)": [
                f"{v:.4g} ({s}){'*' if inside is False else ''}" if math.isfinite(v) else s
                for v, s, inside in zip(
                    df["theory_mean"], df["theory"], df["theory_in_interval"], strict=True
                )
            ],
        }
    )
    text = format_frame(shown, "table", _title(study), payload)
    lines = [f"random dispatch (reads nothing): {study.random_mean:.4g} at every delay"]
    lines += study.findings or ["no crossing between the policies at these delays"]
    emit(text + "".join(line + "\n" for line in lines), out)


def register(app: typer.Typer) -> None:
    """Add ``stale`` to the main app."""
    app.command()(stale)
