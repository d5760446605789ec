"""From raw runs to steady-state estimates, and when an open-ended run has measured enough.

:func:`estimate` cuts one run's warm-up (MSER on its micro-batches, or a fixed fraction)
and forms its batch-means interval (:mod:`cloudsched.steadystate`); :func:`window` turns
the same cut into time averages, message rates and percentiles.
The stopping rule of open-ended runs is :mod:`cloudsched.dispatch.stopping`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cloudsched._quantiles import t_quantile
from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RawRun
from cloudsched.steadystate import SeriesEstimate, analyse_series

__all__ = ["Window", "estimate", "histogram_percentiles", "replication_interval", "window"]


def _times(raw_snap: np.ndarray, rows: int, end: float) -> np.ndarray:
    return np.append(raw_snap[:rows, K.SN_T], end)


def estimate(
    raw: RawRun,
    *,
    batches: int,
    relaxation: float,
    warmup: float | None = None,
    level: float = 0.95,
) -> SeriesEstimate:
    """Steady-state estimate of the mean response time from one finished run.

    ``warmup=None`` cuts the warm-up by MSER; a fraction in [0, 1) drops that share of the
    micro-batches instead (no detection).  An open-ended run that reached its fresh stretch
    (``raw.measure_from``) is estimated from that stretch alone, whatever ``warmup`` says.
    """
    used = raw.batches_estimated
    if raw.measure_from is not None:
        truncation: int | None = raw.measure_from
    else:
        truncation = None if warmup is None else math.ceil(warmup * used - 1e-9)
    end = raw.t_end if used == raw.batches_used else float(raw.snap[used, K.SN_T])
    return analyse_series(
        raw.batch_sum[:used],
        raw.batch_count[:used],
        _times(raw.snap, used, end),
        batches=batches,
        relaxation=relaxation,
        truncation=truncation,
        level=level,
    )


@dataclass(frozen=True)
class Window:
    """Time averages over a run's measurement window after its warm-up.

    ``tail_area[i]`` integrates the number of servers with at least i tasks, ``p0_area``
    the number of empty I-queues, ``messages`` counts join, delete, probe and stale
    messages; all over ``[start, end]``.  ``hist`` counts the response times of the tasks
    that arrived in whole histogram segments after the warm-up.
    """

    start: float
    end: float
    tail_area: np.ndarray
    p0_area: float
    messages: np.ndarray
    hist: np.ndarray

    @property
    def duration(self) -> float:
        """Length of the window."""
        return self.end - self.start


def window(raw: RawRun, truncation: int) -> Window:
    """Time averages of ``raw`` from micro-batch ``truncation`` to the end of the estimate.

    The end is the close of the window, or, for an open-ended run, the boundary of the last
    micro-batch the stopping rule accepted.
    """
    if truncation <= 0 or raw.batches_used == 0:
        start, area0, p0, msg0 = raw.t_warm, 0.0, 0.0, np.zeros(4)
    else:
        row = min(truncation, raw.batches_used - 1)
        start = float(raw.snap[row, K.SN_T])
        area0 = raw.snap_area[row]
        p0 = float(raw.snap[row, K.SN_P0])
        msg0 = raw.snap[row, K.SN_MSG : K.SN_MSG + 4]
    if raw.accepted is None:
        end, area, p_end, msg_end = raw.t_end, raw.tail_area.copy(), raw.p0_area, raw.messages
    else:
        end = float(raw.snap[raw.accepted, K.SN_T])
        area = raw.snap_area[raw.accepted].copy()
        p_end = float(raw.snap[raw.accepted, K.SN_P0])
        msg_end = raw.snap[raw.accepted, K.SN_MSG : K.SN_MSG + 4]
    area[: np.size(area0)] -= area0
    first_segment = -(-truncation // raw.segment_batches) if truncation > 0 else 0
    hist = raw.hist[first_segment:].sum(axis=0)
    if hist.sum() == 0:  # the run is shorter than one segment past the warm-up
        hist = raw.hist.sum(axis=0)
    return Window(
        start=start,
        end=end,
        tail_area=np.maximum(area, 0.0),
        p0_area=p_end - p0,
        messages=np.asarray(msg_end, dtype=np.float64) - msg0,
        hist=hist,
    )


def histogram_percentiles(
    hist: np.ndarray, quantiles: Sequence[float], low: float = 0.0, high: float = math.inf
) -> list[float]:
    """Percentiles (in %) of the response times counted in ``hist`` (0.1% relative error).

    Each value is the middle of the bin holding the order statistic of rank ``ceil(q n)``,
    moved into ``[low, high]`` (the smallest and largest value counted) when it falls
    outside: never further from the order statistic, and exact when all values are equal.
    """
    total = int(hist.sum())
    if total == 0:
        return [math.nan for _ in quantiles]
    cum = np.cumsum(hist)
    out = []
    for q in quantiles:
        rank = max(1, math.ceil(q / 100.0 * total))
        k = int(np.searchsorted(cum, rank))
        octave, sub = divmod(k, K.H_SUB)
        mant = 0.5 + (sub + 0.5) / (2 * K.H_SUB)
        out.append(min(max(math.ldexp(mant, octave + K.H_EMIN), low), high))
    return out


def replication_interval(means: np.ndarray, level: float = 0.95) -> float:
    """Student-t half-width for the mean of independent replication means."""
    k = means.size
    if k < 2:
        return math.nan
    return float(t_quantile(0.5 + level / 2, k - 1) * means.std(ddof=1) / math.sqrt(k))
