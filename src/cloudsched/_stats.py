"""Confidence intervals shared by the simulators."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["t_half_width"]


def t_half_width(samples: np.ndarray, level: float = 0.95) -> float:
    """Half-width of the Student-t interval for the mean of ``samples`` (NaN if fewer than 2)."""
    k = samples.size
    if k < 2:
        return math.nan
    return float(stats.t.ppf(0.5 + level / 2, k - 1) * samples.std(ddof=1) / math.sqrt(k))
