"""The one place that imports matplotlib (headless backend) and saves figures atomically."""

from __future__ import annotations

import os
from typing import Any

from cloudsched.io import atomic_path


def pyplot() -> Any:
    """Return ``matplotlib.pyplot`` with the non-interactive Agg backend selected."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | os.PathLike[str]) -> None:
    """Save ``fig`` as PNG to ``path`` atomically and close it."""
    plt = pyplot()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    finally:
        plt.close(fig)
