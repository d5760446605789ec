"""``cloudsched policies``: the dispatch policies, the balancers they model, their options."""

from __future__ import annotations

import textwrap
from typing import Annotated

import typer

from cloudsched.cli.common import emit, render_table
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE

__all__ = ["register"]


def _overview() -> str:
    rows: dict[str, list[str]] = {"policy": [], "what it models": [], "engines": [], "theory": []}
    for name, row in TABLE.items():
        rows["policy"].append(name)
        what = row.balancer.split(":")[0] if row.balancer else (row.nginx or "").strip(";")
        rows["what it models"].append(what or "the papers' policy")
        rows["engines"].append(", ".join(row.engines))
        rows["theory"].append(row.meanfield if row.meanfield != "none" else "none (simulated)")
    text = render_table(rows, "dispatch policies (cloudsched policies NAME: rule and options)")
    return text


def _detail(name: str) -> str:
    row = TABLE.get(name)
    if row is None:
        raise ParameterError("policy", name, "one of " + ", ".join(TABLE))
    lines = [f"{name}: engines {', '.join(row.engines)}"]
    if row.balancer:
        lines += textwrap.wrap("models: " + row.balancer, 78, subsequent_indent="  ")
    model = row.meanfield if row.meanfield != "none" else f"none ({row.why})"
    lines += textwrap.wrap("theory: " + model, 78, subsequent_indent="  ")
    if row.options:
        lines.append("options (-o NAME=VALUE; durations as 10s, 30ms or in mean service times):")
        for opt in row.options:
            choices = f" ({' | '.join(opt.choices)})" if opt.choices else ""
            lines += textwrap.wrap(
                f"{opt.name}={opt.default}{choices}: {opt.help}",
                76,
                initial_indent="  ",
                subsequent_indent="      ",
            )
    return "\n".join(lines)


def policies(
    name: Annotated[
        str | None, typer.Argument(help="A policy: its rule, source and options.")
    ] = None,
) -> None:
    """List the dispatch policies, the balancers they model and their options."""
    emit(_overview() if name is None else _detail(name), None)


def register(app: typer.Typer) -> None:
    """Add ``policies`` to ``app``."""
    app.command()(policies)
