"""The one place that imports matplotlib (headless backend) and saves figures atomically."""

from __future__ import annotations

import os
from typing import Any

from cloudsched.io import atomic_path

__all__ = ["pyplot", "save"]


def pyplot() -> Any:
    """Return ``matplotlib.pyplot`` with the non-interactive Agg backend selected."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | os.PathLike[str]) -> None:
    """Save ``fig`` to ``path`` atomically and close it; the extension picks the format.

    ``.pdf`` and ``.svg`` give those formats, anything else PNG.
    """
    plt = pyplot()
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    fmt = ext if ext in ("pdf", "svg") else "png"
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
