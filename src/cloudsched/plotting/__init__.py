"""Figures.  matplotlib is imported lazily, inside the functions, so the core imports fast."""

from cloudsched.plotting.dispatch import (
    plot_cdf,
    plot_histogram,
    plot_lines,
    plot_response_time,
    plot_stale,
    plot_trajectory,
)
from cloudsched.plotting.placement import plot_tradeoff

__all__ = [
    "plot_cdf",
    "plot_histogram",
    "plot_lines",
    "plot_response_time",
    "plot_stale",
    "plot_tradeoff",
    "plot_trajectory",
]
