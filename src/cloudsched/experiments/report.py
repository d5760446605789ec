"""A small Markdown report: text, tables (also saved as CSV) and figures."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from cloudsched.io import atomic_write_text

__all__ = ["Report", "markdown_table", "software_versions"]


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """Render ``df`` as a GitHub-flavoured Markdown table (no index)."""

    def cell(v: object) -> str:
        if isinstance(v, float):
            return format(v, floatfmt)
        return str(v)

    header = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


def software_versions() -> dict[str, str]:
    """Versions of Python and the libraries that produce the numbers."""
    import matplotlib
    import numba
    import numpy
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
    }


@dataclass
class Report:
    """Collects report sections and writes ``report.md`` plus the CSV behind every table.

    Files are written atomically into ``out_dir``; figures are written by the caller
    (see :mod:`cloudsched.plotting`) and referenced by file name.
    """

    title: str
    out_dir: Path
    parts: list[str] = field(default_factory=list)

    def text(self, markdown: str) -> None:
        """Append a paragraph of Markdown."""
        self.parts.append(markdown.strip())

    def heading(self, text: str) -> None:
        """Append a second-level heading."""
        self.parts.append(f"## {text}")

    def figure(self, filename: str, caption: str) -> None:
        """Add a figure already written to ``out_dir / filename``."""
        self.parts.append(f"![{caption}]({filename})\n\n*{caption}*")

    def table(self, df: pd.DataFrame, csv_name: str, caption: str, floatfmt: str = ".4g") -> None:
        """Append ``df`` as a table and save it as ``csv_name`` in ``out_dir``."""
        atomic_write_text(self.out_dir / csv_name, df.to_csv(index=False))
        self.parts.append(
            f"*{caption}* (data: [{csv_name}]({csv_name}))\n\n" + markdown_table(df, floatfmt)
        )

    def write(self, parameters: dict[str, object]) -> Path:
        """Write ``report.md`` with a closing section of parameters and software versions."""
        lines = [f"# {self.title}", "", *[p + "\n" for p in self.parts], "## Reproducibility", ""]
        lines += [f"- {k}: `{v}`" for k, v in parameters.items()]
        lines += [f"- {k} {v}" for k, v in software_versions().items()]
        path = self.out_dir / "report.md"
        atomic_write_text(path, "\n".join(lines) + "\n")
        return path


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and parents) if needed and return it as a :class:`Path`."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p
