"""Confidence intervals shared by the simulators."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["batch_means_half_width", "t_half_width"]


def t_half_width(samples: np.ndarray, level: float = 0.95) -> float:
    """Half-width of the Student-t interval for the mean of ``samples`` (NaN if fewer than 2)."""
    k = samples.size
    if k < 2:
        return math.nan
    return float(stats.t.ppf(0.5 + level / 2, k - 1) * samples.std(ddof=1) / math.sqrt(k))


def batch_means_half_width(means: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Half-width of the interval for the mean of correlated batch means, and the lag-1 r used.

    Batch means of one run are correlated when the batches are short against the system's
    relaxation time (a large system run for few time units).  When their lag-1
    autocorrelation ``r`` is significantly positive (``r > 2 / sqrt(k)``), the Student-t
    half-width is widened by ``sqrt((1 + rho) / (1 - rho))``, the AR(1) variance factor, with
    ``rho = min(0.95, r + (1 + 3 r) / k)`` (``r`` corrected for its small-sample bias).
    Otherwise the plain t half-width is returned and ``rho`` is 0.
    """
    half = t_half_width(means, level)
    k = means.size
    if k < 4 or not math.isfinite(half):
        return half, 0.0
    x = means - means.mean()
    denom = float(x @ x)
    r = float(x[1:] @ x[:-1]) / denom if denom > 0 else 0.0
    if r <= 2.0 / math.sqrt(k):
        return half, 0.0
    rho = min(0.95, r + (1.0 + 3.0 * r) / k)
    return half * math.sqrt((1.0 + rho) / (1.0 - rho)), rho
