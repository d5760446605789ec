"""A small report: text, tables (also saved as CSV) and figures, as Markdown and HTML."""

from __future__ import annotations

import base64
import html
import math
import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from cloudsched.io import atomic_write_text

__all__ = [
    "Report",
    "ensure_dir",
    "html_table",
    "markdown_table",
    "software_versions",
    "with_intervals",
]


def _cell(v: object, floatfmt: str) -> str:
    """Format a table cell: numbers in ``floatfmt``, a missing value (None, NaN) as a dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return format(v, floatfmt)
    return str(v)


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """Render ``df`` as a GitHub-flavoured Markdown table (no index; missing values as -)."""

    def cell(v: object) -> str:
        return _cell(v, floatfmt)

    header = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def software_versions() -> dict[str, str]:
    """Versions of Python and the libraries that produce the numbers."""
    import matplotlib
    import networkx
    import numba
    import numpy
    import pyarrow
    import scipy

    from cloudsched import __version__

    return {
        "cloudsched": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "pandas": pd.__version__,
        "matplotlib": matplotlib.__version__,
        "networkx": networkx.__version__,
        "pyarrow": pyarrow.__version__,
    }


def with_intervals(df: pd.DataFrame, floatfmt: str = ".4g") -> pd.DataFrame:
    """Show each ``X`` beside its ``X_ci95_low``/``X_ci95_high`` as one ``X [95% CI]`` column.

    ``v [low, high]`` where both ends are known, ``v`` alone where they are not; the other
    columns are kept as they are (a table of three intervals loses four columns).
    """
    out = df.copy()
    for c in list(df.columns):
        low, high = f"{c}_ci95_low", f"{c}_ci95_high"
        if low not in df.columns or high not in df.columns:
            continue
        cells = []
        for v, lo, hi in zip(df[c], df[low], df[high], strict=True):
            known = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (lo, hi))
            interval = f" [{_cell(lo, floatfmt)}, {_cell(hi, floatfmt)}]" if known else ""
            cells.append(_cell(v, floatfmt) + interval)
        out[c] = cells
        out = out.drop(columns=[low, high]).rename(columns={c: f"{c} [95% CI]"})
    return out


def _inline_html(text: str) -> str:
    """Escape ``text`` and render Markdown's inline `code` and [label](link)."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', out)


def html_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """Render ``df`` as an HTML table (no index; missing values as -).

    Column names may break after an underscore (``cost_rate_<wbr>ci95_<wbr>low``), so that a
    table of many long names fits a 1280-pixel window.
    """
    head = "".join(f"<th>{html.escape(str(c)).replace('_', '_<wbr>')}</th>" for c in df.columns)
    rows = []
    for row in df.itertuples(index=False):
        cells = (_cell(v, floatfmt) for v in row)
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


_CSS = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;"
    "padding:0.2em 0.4em;text-align:right}th{font-size:0.9em}img{max-width:100%}"
    "figcaption{font-style:italic}"
)


@dataclass
class Report:
    """Collects report sections; writes ``report.md`` and ``report.html``, and the CSVs.

    Files are written atomically into ``out_dir``; figures are written by the caller
    (see :mod:`cloudsched.plotting`) and referenced by file name.
    """

    title: str
    out_dir: Path
    parts: list[tuple[str, str]] = field(default_factory=list)  # (markdown, html)
    figures: list[str] = field(default_factory=list)
    log: Callable[[str], None] | None = None  # told each section's start and end (progress)
    _open: tuple[str, float] | None = field(default=None, repr=False)
    _start: float = field(default_factory=time.perf_counter, repr=False)

    def _close_section(self) -> None:
        if self._open is not None and self.log is not None:
            name, began = self._open
            self.log(f"done: {name} ({time.perf_counter() - began:.1f} s)")
        self._open = None

    def text(self, markdown: str) -> None:
        """Append a paragraph (Markdown with inline code and links)."""
        self.parts.append((markdown.strip(), f"<p>{_inline_html(markdown.strip())}</p>"))

    def bullets(self, items: list[str]) -> None:
        """Append a bulleted list (each item Markdown with inline code and links)."""
        md = "\n".join(f"- {item.strip()}" for item in items)
        li = "".join(f"<li>{_inline_html(item.strip())}</li>" for item in items)
        self.parts.append((md, f"<ul>{li}</ul>"))

    def step(self, text: str) -> None:
        """Tell ``log`` that a piece of work starts, without a heading in the report."""
        self._close_section()
        if self.log is not None:
            self.log(f"start: {text} (at {time.perf_counter() - self._start:.0f} s)")
        self._open = (text, time.perf_counter())

    def heading(self, text: str) -> None:
        """Append a second-level heading (and tell ``log`` that a section starts)."""
        self.step(text)
        self.parts.append((f"## {text}", f"<h2>{html.escape(text)}</h2>"))

    def figure(self, filename: str, caption: str) -> None:
        """Add a figure already written to ``out_dir / filename``."""
        self.figures.append(filename)
        self.parts.append(
            (
                f"![{caption}]({filename})\n\n*{caption}*",
                f'<figure><img src="{html.escape(filename)}" alt="{html.escape(caption)}">'
                f"<figcaption>{_inline_html(caption)}</figcaption></figure>",
            )
        )

    def table(
        self,
        df: pd.DataFrame,
        csv_name: str,
        caption: str,
        floatfmt: str = ".4g",
        shown: list[str] | None = None,
    ) -> None:
        """Append ``df`` as a table and save it as ``csv_name`` in ``out_dir``.

        The CSV has every column; the report shows ``shown`` (default: all), each value
        beside its 95% interval in one column (:func:`with_intervals`).
        """
        atomic_write_text(self.out_dir / csv_name, df.to_csv(index=False))
        view = df
        if shown is not None:
            keep = [c for c in df.columns if c in shown or c.removesuffix("_ci95_low") in shown
                    or c.removesuffix("_ci95_high") in shown]  # fmt: skip
            view = df[keep]
        view = with_intervals(view, floatfmt)
        more = f", all {df.shape[1]} columns" if view.shape[1] < df.shape[1] else ""
        link = f"(data{more}: [{csv_name}]({csv_name}))"
        self.parts.append(
            (
                f"*{caption}* {link}\n\n" + markdown_table(view, floatfmt),
                f"<p><em>{_inline_html(caption)}</em> {_inline_html(link)}</p>"
                + html_table(view, floatfmt),
            )
        )

    def write(self, parameters: dict[str, object]) -> Path:
        """Write ``report.md`` and ``report.html``, closing with parameters and versions.

        ``report.html`` is self-contained: its figures are embedded (PNG as data URIs), so
        the one file can be mailed or opened anywhere; ``report.md`` links the PNG files.
        """
        self._close_section()
        versions = software_versions()
        lines = [f"# {self.title}", "", *[md + "\n" for md, _ in self.parts]]
        lines += ["## Reproducibility", ""]
        lines += [f"- {k}: `{v}`" for k, v in parameters.items()]
        lines += [f"- {k} {v}" for k, v in versions.items()]
        path = self.out_dir / "report.md"
        atomic_write_text(path, "\n".join(lines) + "\n")
        items = [
            f"<li>{html.escape(k)}: <code>{html.escape(str(v))}</code></li>"
            for k, v in parameters.items()
        ]
        items += [f"<li>{html.escape(k)} {html.escape(v)}</li>" for k, v in versions.items()]
        body = "\n".join(h for _, h in self.parts)
        for name in self.figures:  # embed each figure written next to the report
            data = base64.b64encode((self.out_dir / name).read_bytes()).decode("ascii")
            kind = "svg+xml" if name.endswith(".svg") else "png"
            body = body.replace(
                f'src="{html.escape(name)}"', f'src="data:image/{kind};base64,{data}"'
            )
        page = (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}"
            f"</title><style>{_CSS}</style></head><body><h1>{html.escape(self.title)}</h1>\n"
            f"{body}\n<h2>Reproducibility</h2><ul>{''.join(items)}</ul></body></html>\n"
        )
        atomic_write_text(self.out_dir / "report.html", page)
        return path


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and parents) if needed and return it as a :class:`Path`.

    A path that exists and is not a directory, or a folder that cannot be written, is a
    :class:`~cloudsched.errors.ParameterError` naming ``--out``.
    """
    from cloudsched.io import check_output_dir

    p = check_output_dir(path, "--out")
    p.mkdir(parents=True, exist_ok=True)
    return p
