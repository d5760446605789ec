"""Figures.  matplotlib is imported lazily, inside the functions, so the core imports fast."""

from cloudsched.plotting.dispatch import (
    plot_cdf,
    plot_histogram,
    plot_response_time,
    plot_trajectory,
)

__all__ = ["plot_cdf", "plot_histogram", "plot_response_time", "plot_trajectory"]
