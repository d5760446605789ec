"""The one place that imports matplotlib (headless backend) and saves figures atomically."""

from __future__ import annotations

import os
from typing import Any

from cloudsched.io import atomic_path
from cloudsched.policy_table import TABLE

__all__ = [
    "NEUTRAL_COLORS",
    "POLICY_COLORS",
    "Styles",
    "finish",
    "policy_color",
    "pyplot",
    "readable_y",
    "save",
]


#: One colour per policy, the same in every figure (matplotlib's tab10 and tab20 colours):
#: the dispatch policies' from their rows of :mod:`cloudsched.policy_table`, then the
#: placement schedulers' and the live proxies'.
POLICY_COLORS = {
    **{name: row.colour for name, row in TABLE.items()},
    "dgp": "#1f77b4",
    "fmw": "#ff7f0e",
    "frame-maxweight": "#ff7f0e",
    "storm-default": "#7f7f7f",
    "storm": "#7f7f7f",
    "even": "#7f7f7f",
    "ras": "#9467bd",
    "resource-aware": "#9467bd",
    "greedy": "#8c564b",
    "maxweight": "#ff7f0e",
    "static": "#2ca02c",
    "static-optimum": "#2ca02c",
    "nginx": "#17becf",
    "haproxy": "#e377c2",
}


def policy_color(label: str) -> str | None:
    """Return the colour of the policy a legend label names (the longest name it holds).

    ``pod(2), with replacement``, ``refined jiq-pod`` and ``JSQ`` all find theirs; a label
    naming no known policy gets None (matplotlib's next colour).
    """
    import re

    names = [w for w in re.findall(r"[a-z][a-z-]*", label.lower()) if w in POLICY_COLORS]
    return POLICY_COLORS[max(names, key=len)] if names else None


#: Colours for series that name no policy (bounds, references, settings): none is a policy's.
NEUTRAL_COLORS = ("#000000", "#393b79", "#8c6d31", "#843c39", "#5254a3", "#637939")
_DASHES = ("-", "--", ":", "-.")


class Styles:
    """Colour and line style per series of one figure.

    A policy keeps its colour (:data:`POLICY_COLORS`), other series take
    :data:`NEUTRAL_COLORS` in turn, and a colour used again in the same figure changes its
    line style.
    """

    def __init__(self) -> None:
        self._uses: dict[str, int] = {}
        self._neutral = 0

    def __call__(self, label: str) -> tuple[str, str]:
        """Return (colour, line style) for the series named ``label``."""
        color = policy_color(label)
        if color is None:
            color = NEUTRAL_COLORS[self._neutral % len(NEUTRAL_COLORS)]
            self._neutral += 1
        k = self._uses.get(color, 0)
        self._uses[color] = k + 1
        return color, _DASHES[k % len(_DASHES)]


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


def finish(
    fig: Any,
    ax: Any,
    path: str | os.PathLike[str],
    title: str,
    *,
    which: str = "major",
    legend: float | None = None,
) -> None:
    """Grid lines at ``which`` ticks, a legend in ``legend`` points if asked, the title; save."""
    ax.grid(True, which=which, alpha=0.3)
    if legend is not None:
        ax.legend(fontsize=legend)
    if title:
        ax.set_title(title)
    save(fig, path)


def readable_y(ax: Any, values: Any) -> None:
    """Give ``ax`` a readable y axis: linear, or logarithmic for data spanning over 20x.

    A logarithmic axis gets plain labels at 1, 2 and 5 times the powers of ten.  ``values``
    are the plotted y values (non-positive and non-finite ones are ignored).
    """
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    y = np.asarray(values, dtype=float).ravel()
    y = y[np.isfinite(y) & (y > 0)]
    if y.size == 0 or y.max() / y.min() <= 20:
        return
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
