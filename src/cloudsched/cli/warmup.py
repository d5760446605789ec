"""``cloudsched warmup``: compile the kernels ahead of their first use."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import render_table
from cloudsched.cli.options import opt
from cloudsched.errors import ParameterError

__all__ = ["register"]


def warmup(
    policies: Annotated[
        list[str] | None,
        typer.Argument(
            help="Dispatch or placement policies (a plug-in file.py:NAME too); none: every "
            "kernel built in.",
            show_default=False,
        ),
    ] = None,
    *,
    every: Annotated[
        bool, opt("--all", help="Every kernel built in (the same as naming no policy).")
    ] = False,
    workers: Annotated[
        int | None, opt("--workers", help="Processes compiling at once (default: the cores).")
    ] = None,
) -> None:
    """Compile the simulator's kernels now, in parallel, instead of at their first use.

    Each kernel compiles once for a machine and version of cloudsched (seconds to a
    minute), then loads from the disk cache in a fraction of a second.
    """
    from cloudsched.warmup import targets, warmup

    if every and policies:
        raise ParameterError("--all", "given", "left out when policies are named")
    if workers is not None and workers < 1:
        raise ParameterError("--workers", workers, "an integer >= 1")
    found = targets(policies)
    bar = LazyProgress("warmup", delay=0.0)
    sys.stderr.write(f"warmup: {len(found)} targets\n")
    try:
        done = warmup(found, workers, bar)
    finally:
        bar.close()
    compiled = [w for w in done if w.compiled]
    table = {
        "target": [w.target.label for w in done],
        "kernels compiled": [len(w.compiled) for w in done],
        "compile s": [round(w.seconds, 1) for w in done],
    }
    sys.stdout.write(render_table(table, "compiled ahead of use (0: already cached)"))
    total = sum(w.seconds for w in done)
    sys.stdout.write(
        f"{len(compiled)} of {len(done)} targets compiled ({total:.0f} s of compiling); "
        "every one is now loaded from the cache\n"
    )


def register(app: typer.Typer) -> None:
    """Attach ``warmup`` to ``app``."""
    app.command("warmup")(warmup)
