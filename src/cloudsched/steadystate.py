"""Steady-state output analysis shared by the simulators.

A simulation measures a series of *micro-batches*: consecutive stretches of the run, each
with a sum (of response times, of a time integral, ...) and a weight (a count of tasks, a
duration).  From that series this module

* cuts the warm-up with MSER (White 1997; the batched form MSER-m of White, Cobb and
  Spratt 2000): the truncation point ``d`` minimises the squared standard error of the mean
  of the remaining micro-batch means, ``sum_{i>=d} w_i (y_i - ybar_d)^2 / W_d^2``, searched
  over the first half of the series.  A minimum at the end of that half means the series
  still trends: no truncation point is found and the run is not (yet) steady;
* estimates the integrated autocorrelation time of the remaining series (Sokal's
  self-consistent window), in the units of the series' time axis;
* forms ``batches`` batches of consecutive micro-batches (their numbers differ by at most
  one) from the remaining micro-batches and computes a
  Student-t interval for the mean (ratio estimator ``sum / weight``, its variance from the
  residuals ``s_b - mean * w_b``).  Batch means are biased low in variance when batches are
  short against the relaxation time ``R`` of the process: for a process whose
  autocorrelation decays like ``exp(-t/R)`` the batch-means variance is
  ``(1 - R/b (1 - e^(-b/R)))`` times the true one.  The interval is widened by that first-order
  factor, and it is *certified* only when every batch spans at least ``MIN_BATCH_RELAXATIONS``
  relaxation times and the batch means show no significant lag-1 autocorrelation (von
  Neumann's test, 1% level).  The half-width is the larger of that interval and the one of
  the same data in half as many batches, twice as long (Student's t on their own degrees of
  freedom): correlations longer than the estimated relaxation time, which queues near
  saturation have, show in the coarser batches (measured: without this look, 200 runs of
  Pod(2) at N = 1000, load 0.99 covered the reference 184 times, with standard errors 20%
  too small);
* tests for drift: the first and second half of the batches differ by more standard errors
  than a false-alarm probability of ``DRIFT_LEVEL`` allows (Student's t; the batch variance
  taken from successive differences, which a trend does not inflate; with several
  replications the level is shared among them).

The relaxation time is the larger of a model value (given by the caller) and the
integrated autocorrelation time estimated from the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cloudsched._quantiles import normal_quantile, t_quantile

__all__ = [
    "DRIFT_LEVEL",
    "MIN_BATCH_RELAXATIONS",
    "SeriesEstimate",
    "analyse_series",
    "batch_widening",
    "drift_limit",
    "integrated_time",
    "mser",
    "von_neumann_ratio",
]

#: Batches must each span at least this many relaxation times for a certified interval.
MIN_BATCH_RELAXATIONS = 5.0
#: False-alarm probability of the drift test (for one series, or for all replications).
DRIFT_LEVEL = 1e-3
#: Significance level of the lag-1 independence test of the batch means.
INDEPENDENCE_LEVEL = 0.01
#: The coarse look (half as many batches) is taken when it has at least this many batches.
COARSE_MIN_BATCHES = 5


def mser(means: np.ndarray, weights: np.ndarray | None = None) -> tuple[int, bool]:
    """Return the MSER truncation point of a series of batch means and whether it was found.

    Parameters
    ----------
    means : numpy.ndarray
        Batch means ``y_i``, shape ``(n,)``.
    weights : numpy.ndarray, optional
        Batch weights ``w_i`` (counts or durations); equal by default.

    Returns
    -------
    (int, bool)
        The number of leading batches to drop, and False when the minimum lies at the end
        of the searched first half (the series is still trending).
    """
    y = np.asarray(means, dtype=np.float64)
    n = y.size
    if n < 4:
        return 0, False
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    half = n // 2
    # suffix sums, centred on the overall mean for accuracy
    c = y - float(np.average(y, weights=w))
    wsum = np.cumsum(w[::-1])[::-1][: half + 1]
    s1 = np.cumsum((w * c)[::-1])[::-1][: half + 1]
    s2 = np.cumsum((w * c * c)[::-1])[::-1][: half + 1]
    stat = (s2 - s1 * s1 / wsum) / (wsum * wsum)
    d = int(np.argmin(stat))
    return d, d < half


def integrated_time(means: np.ndarray, window: float = 6.0) -> float:
    """Integrated autocorrelation time ``1 + 2 sum_k rho_k`` of a series, in its steps.

    Sokal's self-consistent window: the sum runs to the first lag ``M >= window * tau``.
    Returns 1 for a series too short or constant.
    """
    x = np.asarray(means, dtype=np.float64)
    n = x.size
    if n < 8:
        return 1.0
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[:n]
    if acov[0] <= 0:
        return 1.0
    rho = acov / acov[0]
    tau = 1.0
    for lag in range(1, n // 4):
        tau += 2.0 * rho[lag]
        if lag >= window * tau:
            break
    return max(1.0, float(tau))


def drift_limit(batches: int, series: int = 1) -> float:
    """|z| above which the two halves of ``batches`` batches differ, for ``series`` series.

    Two-sided, family-wise false-alarm probability :data:`DRIFT_LEVEL` over ``series``
    independent series (Bonferroni), Student's t with ``batches - 1`` degrees of freedom.
    """
    return float(t_quantile(1.0 - DRIFT_LEVEL / (2 * series), max(batches - 1, 1)))


def von_neumann_ratio(means: np.ndarray) -> float:
    """Standardised von Neumann statistic: about N(0, 1) for independent batch means.

    Large positive values mean positive lag-1 autocorrelation.
    """
    y = np.asarray(means, dtype=np.float64)
    k = y.size
    x = y - y.mean()
    ss = float(x @ x)
    if k < 3 or ss <= 0:
        return 0.0
    c = 1.0 - float(np.sum(np.diff(y) ** 2)) / (2.0 * ss)
    return c / math.sqrt((k - 2) / (k * k - 1))


@dataclass(frozen=True)
class SeriesEstimate:
    """Mean of a steady-state series, its interval and how it was obtained.

    Attributes
    ----------
    mean : float
        Ratio estimate ``sum / weight`` over the kept micro-batches.
    half_width : float
        Half-width of the interval (``nan`` when fewer than two batches are available).
    truncation : int
        Micro-batches dropped at the start.
    warmup_found : bool
        Whether MSER found a truncation point in the first half of the series.
    batches : int
        Batches of the interval.
    batch_span : float
        Span of one batch on the series' time axis.
    relaxation : float
        Relaxation time used: max(model value, integrated autocorrelation time of the data).
    correction : float
        Factor by which the batch-means half-width was widened (>= 1).
    independence_z : float
        Von Neumann statistic of the batch means.
    drift_z : float
        Standardised difference between the two halves of the batches.
    """

    mean: float
    half_width: float
    truncation: int
    warmup_found: bool
    batches: int
    batch_span: float
    relaxation: float
    correction: float
    independence_z: float
    drift_z: float

    @property
    def long_enough(self) -> bool:
        """Every batch spans at least ``MIN_BATCH_RELAXATIONS`` relaxation times."""
        return self.batch_span >= MIN_BATCH_RELAXATIONS * self.relaxation

    @property
    def independent(self) -> bool:
        """The batch means pass the lag-1 independence test."""
        return self.independence_z <= normal_quantile(1.0 - INDEPENDENCE_LEVEL)

    @property
    def drifting(self) -> bool:
        """The two halves of the batches differ significantly (one series alone)."""
        return self.drifts(1)

    def drifts(self, series: int) -> bool:
        """Drift, when this series is one of ``series`` tested together."""
        return abs(self.drift_z) > drift_limit(self.batches, series)

    @property
    def certified(self) -> bool:
        """Warm-up found, batches long and independent, no drift: the interval is trusted."""
        return (
            self.warmup_found
            and self.long_enough
            and self.independent
            and not self.drifting
            and math.isfinite(self.half_width)
        )

    @property
    def relative_half_width(self) -> float:
        """``half_width / |mean|`` (``inf`` when undefined)."""
        if not math.isfinite(self.half_width) or self.mean == 0:
            return math.inf
        return self.half_width / abs(self.mean)


def batch_widening(relax: float, span: float) -> float:
    """First-order factor for batch means of batches spanning ``span`` (relaxation ``relax``)."""
    ratio = min(relax / span, 0.9) if span > 0 else 0.9
    shortfall = ratio * (1.0 - math.exp(-1.0 / ratio)) if ratio > 0 else 0.0
    return 1.0 / math.sqrt(1.0 - shortfall)


def _half_width(resid: np.ndarray, level: float) -> float:
    """Student-t half-width of the mean of batch residuals ``resid`` (one per batch)."""
    k = resid.size
    return float(t_quantile(0.5 + level / 2, k - 1)) * float(resid.std(ddof=1)) / math.sqrt(k)


def _batch_sums(values: np.ndarray, batches: int) -> np.ndarray:
    """Sum ``batches`` consecutive groups of nearly equal size (sizes differ by at most one)."""
    edges = np.round(np.linspace(0, values.size, batches + 1)).astype(np.int64)
    return np.add.reduceat(values, edges[:-1])


def analyse_series(
    sums: np.ndarray,
    weights: np.ndarray,
    times: np.ndarray,
    *,
    batches: int = 20,
    relaxation: float = 0.0,
    truncation: int | None = None,
    level: float = 0.95,
) -> SeriesEstimate:
    """Cut the warm-up, batch the rest and return the mean with its interval.

    Parameters
    ----------
    sums, weights : numpy.ndarray
        Per micro-batch sum and weight, shape ``(n,)``; weights > 0.
    times : numpy.ndarray
        Start of each micro-batch and the end of the last, shape ``(n + 1,)`` (the axis on
        which ``relaxation`` is measured: simulated time).
    batches : int
        Batches of the interval (>= 2).
    relaxation : float
        Model relaxation time (0 if unknown); the data's integrated time is used when larger.
    truncation : int, optional
        Micro-batches to drop at the start; default MSER.
    level : float
        Confidence level of the interval.

    Returns
    -------
    SeriesEstimate
    """
    s = np.asarray(sums, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    n = s.size
    keep = w > 0
    y = np.where(keep, s / np.where(keep, w, 1.0), 0.0)
    if truncation is None:
        d, found = mser(y[keep], w[keep]) if keep.sum() >= 4 else (0, False)
        # map the index among kept micro-batches back to the full series
        d = int(np.flatnonzero(keep)[d]) if keep.any() and d < keep.sum() else 0
    else:
        d, found = min(max(int(truncation), 0), n), True
    rest = n - d
    k = min(batches, rest)
    if k < 2 or w[d:].sum() <= 0:
        mean = float(s[d:].sum() / w[d:].sum()) if w[d:].sum() > 0 else math.nan
        return SeriesEstimate(
            mean, math.nan, d, found, max(k, 0), math.nan, relaxation, 1.0, 0.0, 0.0
        )
    s, w, t = s[d:], w[d:], t[d:]
    mean = float(s.sum() / w.sum())
    step = float(t[-1] - t[0]) / s.size  # mean span of a micro-batch
    ydata = y[d:]
    relax = max(relaxation, integrated_time(ydata) * step)
    bs, bw = _batch_sums(s, k), _batch_sums(w, k)
    resid = (bs - mean * bw) / bw.mean()
    span = float(t[-1] - t[0]) / k
    correction = batch_widening(relax, span)
    half = _half_width(resid, level) * correction
    if k >= 2 * COARSE_MIN_BATCHES:  # the same data in half as many, twice as long batches
        cw = _batch_sums(w, k // 2)
        coarse = (_batch_sums(s, k // 2) - mean * cw) / cw.mean()
        half = max(half, _half_width(coarse, level) * batch_widening(relax, 2 * span))
    halves = k // 2
    w_first, w_second = bw[:halves].sum(), bw[-halves:].sum()
    # batch variance from successive differences: a trend does not inflate it
    batch_var = float(np.sum(np.diff(resid) ** 2)) / (2 * (k - 1))
    drift_se = correction * math.sqrt(batch_var * 2.0 / halves)
    drift = 0.0
    if drift_se > 0 and w_first > 0 and w_second > 0:  # a half with no weight has no mean
        drift = (bs[-halves:].sum() / w_second - bs[:halves].sum() / w_first) / drift_se
    return SeriesEstimate(
        mean=mean,
        half_width=half,
        truncation=d,
        warmup_found=found,
        batches=k,
        batch_span=span,
        relaxation=relax,
        correction=correction,
        independence_z=von_neumann_ratio(np.where(bw > 0, bs / np.where(bw > 0, bw, 1.0), mean)),
        drift_z=float(drift),
    )
