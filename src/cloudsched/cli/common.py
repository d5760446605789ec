"""Helpers shared by the command modules: output, tables and a lazy progress bar."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from cloudsched.cli.console import printable
from cloudsched.errors import ParameterError, check_loads
from cloudsched.io import atomic_write_text

if TYPE_CHECKING:
    import numpy as np

    # pandas takes 0.3 s to import: commands import it when they use it
    import pandas as pd

__all__ = [
    "check_distinct",
    "check_not_input",
    "check_outputs",
    "emit",
    "format_frame",
    "parse_loads",
    "policies_given",
    "render_table",
    "resolve_format",
    "to_json",
    "trace_laws",
    "wrote",
]

#: Output formats an ``--out`` file's extension implies.
EXTENSION_FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "table"}


def policies_given(positional: list[str] | None, option: list[str] | None) -> list[str] | None:
    """Return the policies named as arguments, or with the older ``--policy`` option.

    Arguments are how ``simulate`` and ``compare`` take them; ``--policy`` still works;
    both at once are refused.
    """
    if positional and option:
        raise ParameterError(
            "--policy",
            option[0],
            "left out when the policies are given as "
            "arguments (the arguments are the current form)",
        )
    return list(positional or option or []) or None


def resolve_format(fmt: str | None, out: Path | None, allowed: tuple[str, ...]) -> str:
    """Return the output format: ``--format`` if given, else the one ``--out``'s extension implies.

    A file named ``x.csv`` gets CSV, ``x.json`` JSON, ``x.parquet`` Parquet; another name,
    or none, gets the table.  ``--format`` and an extension that disagree are an error, and
    so is an extension implying a format the command cannot write.
    """
    from cloudsched.errors import check_choice

    inferred = EXTENSION_FORMATS.get(out.suffix.lower()) if out is not None else None
    if fmt is None:
        if inferred is not None and inferred not in allowed:
            raise ParameterError(
                "--out",
                str(out),
                "a file whose extension is one of "
                + ", ".join(e for e, f in EXTENSION_FORMATS.items() if f in allowed),
            )
        return inferred or "table"
    fmt = check_choice("--format", fmt, allowed)
    if inferred is not None and inferred != fmt:
        raise ParameterError(
            "--out",
            str(out),
            f"a file whose extension agrees with --format {fmt} (the name says {inferred})",
        )
    return fmt


def wrote(path: Path | str, what: str = "") -> None:
    """Say on standard error where a file was written (a successful --out or --plot)."""
    sys.stderr.write(printable(f"wrote {path}{f' ({what})' if what else ''}") + "\n")


def check_outputs(
    out: Path | None = None,
    plot: Path | None = None,
    out_dir: str | Path | None = None,
    inputs: Sequence[Any] = (),
    others: Mapping[str, Path | None] | None = None,
) -> None:
    """Check ``--out`` (a file or, for reports and sweeps, a folder) and ``--plot`` first.

    Run at the start of every command, so that a bad path fails before the work, not after.
    An output that is one of the command's ``inputs`` (the same file, by any path or link)
    is refused: writing it would destroy what is being read; so are two outputs that are
    one file (``others``: the command's other outputs by option, checked by the caller),
    since one of them would be lost.
    """
    from cloudsched.io import PLOT_FORMATS, check_output_dir, check_output_file

    if out is not None:
        check_output_file(out, "--out")
    if plot is not None:
        check_output_file(plot, "--plot", PLOT_FORMATS)
    if out_dir is not None:
        check_output_dir(out_dir, "--out")
    for option, path in (("--out", out), ("--plot", plot)):
        check_not_input(option, path, inputs)
    check_distinct({"--out": out, "--plot": plot, **(others or {})})


def check_distinct(outputs: Mapping[str, Path | None]) -> None:
    """Refuse two of a command's outputs that name one file (by any path or link)."""
    given = [(option, path) for option, path in outputs.items() if path is not None]
    for i, (option, path) in enumerate(given):
        for other, earlier in given[:i]:
            if _same_path(path, earlier):
                raise ParameterError(
                    option, str(path), f"a file other than {other}'s (one output would be lost)"
                )


def _same_path(a: Any, b: Any) -> bool:
    """Whether paths ``a`` and ``b`` name one file, existing or still to be written."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, TypeError, ValueError):
        return False


def check_not_input(option: str, path: Path | None, inputs: Sequence[Any]) -> None:
    """Refuse an output ``path`` that is one of ``inputs`` (the same file, by any name)."""
    if path is not None and any(_same_file(path, x) for x in inputs if x is not None):
        raise ParameterError(
            option,
            str(path),
            "a file other than the command's inputs and the files they include "
            "(it would overwrite what it reads)",
        )


def _same_file(a: Any, b: Any) -> bool:
    """Whether paths ``a`` and ``b`` name one existing file (names that are not paths: no)."""
    try:
        return os.path.samefile(os.fspath(a), os.fspath(b))
    except (OSError, TypeError, ValueError):
        return False


def to_json(payload: Any) -> str:
    """Strict JSON (``allow_nan=False``): NaN and infinities become ``null``.

    Results say why a value is missing (``steady_state``, ``warnings``, ``bound_note``,
    ``notes``); a mapping that had such values also gets ``"undefined"``: each nulled
    field's path and what it was (``infinite`` or ``not a number``).
    """
    from cloudsched.results import finite_or_none  # (numpy: not for --help)

    undefined: dict[str, str] = {}
    clean = finite_or_none(payload, undefined)
    if undefined and isinstance(clean, dict) and "undefined" not in clean:
        clean["undefined"] = undefined
    return json.dumps(clean, indent=2, allow_nan=False)


def emit(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` atomically, or print it to standard output."""
    text = printable(text if text.endswith("\n") else text + "\n")
    if out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(out, text)
        wrote(out)


def render_table(df: pd.DataFrame | dict[str, list[Any]], title: str, digits: int = 4) -> str:
    """Render ``df`` (a data frame, or columns by name) as a rich table (text) under ``title``.

    Numbers show ``digits`` significant digits (CSV and JSON keep them all); the table is as
    wide as the terminal, at least 80 columns.
    """
    from rich import box
    from rich.text import Text

    def cell(v: Any) -> Text:  # plain text: a value from a log is never read as markup
        return Text(printable(f"{v:.{digits}g}" if isinstance(v, float) else str(v)))

    table = Table(title=cell(title), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    if isinstance(df, dict):
        columns, rows = list(df), list(zip(*df.values(), strict=True))
    else:
        columns, rows = list(df.columns), list(df.itertuples(index=False))
    for col in columns:
        table.add_column(cell(col), justify="right")
    for row in rows:
        table.add_row(*[cell(v) for v in row])
    buf = io.StringIO()
    import shutil

    width = max(80, shutil.get_terminal_size((80, 24)).columns)  # rich wraps beyond it
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(table)
    return buf.getvalue()


def format_frame(df: pd.DataFrame, fmt: str, title: str, payload: dict[str, Any]) -> str:
    """Format a command's output: ``payload`` as JSON, or ``df`` as CSV or a table."""
    if fmt == "json":
        return to_json(payload)
    if fmt == "csv":
        return df.to_csv(index=False)
    return render_table(df, title)


#: Most loads one ``predict`` call solves (each is a fixed-point solve, ~1 ms).
MAX_LOADS = 100_000


def parse_loads(load: Sequence[str] | None, loads: str | None) -> np.ndarray:
    """Combine ``--load`` values and a ``--loads START:STOP:COUNT`` range."""
    import numpy as np

    if load and loads:
        raise ParameterError(
            "--load/--loads", loads, "given alone: use --load or --loads, not both"
        )
    if loads is not None:
        allowed = (
            f"START:STOP:COUNT with 0 < START <= STOP < 1 and an integer COUNT in [1, {MAX_LOADS}]"
        )
        parts = loads.split(":")
        try:
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise ParameterError("--loads", loads, allowed) from None
        if (
            len(parts) != 3
            or not (0 < start <= stop < 1)
            or not 1 <= count <= MAX_LOADS
            or (count == 1 and start != stop)
        ):
            raise ParameterError("--loads", loads, allowed)
        return np.linspace(start, stop, count)
    if not load:
        raise ParameterError(
            "--load", None, "given at least once (or use --loads START:STOP:COUNT)"
        )
    return check_loads("--load", list(load))


def trace_laws(log: Any) -> tuple[Any, Any, float, float]:
    """Service and inter-arrival laws resampled from a log, its mean service and its rate.

    Equal arrival times (a gap of 0 at the log's resolution) become half the smallest
    positive gap, so that every resampled gap is positive.
    """
    import numpy as np

    from cloudsched.dispatch.workload.distributions import Empirical

    s = log.trace.services
    gaps = np.diff(log.trace.arrivals)
    positive = gaps[gaps > 0]
    if positive.size == 0:
        raise ParameterError("--trace", log.trace.source, "a log whose arrivals are not all equal")
    gaps = np.where(gaps > 0, gaps, positive.min() / 2)
    return Empirical(s), Empirical(gaps), float(s.mean()), float(gaps.size / log.trace.span)
