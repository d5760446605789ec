"""From raw runs to steady-state estimates, and when an open-ended run has measured enough.

:func:`estimate` cuts one run's warm-up (MSER on its micro-batches, or a fixed fraction)
and forms its batch-means interval (:mod:`cloudsched.steadystate`); :func:`window` turns
the same cut into time averages, message rates and percentiles.  :func:`run_until_precise`
drives one or several replications in lockstep and stops them when

* every replication's warm-up was found and no replication drifts;
* a single run's interval is certified (20 batches of at least five relaxation times each,
  independent batch means), or, with replications, each replication spans at least ten
  relaxation times after its warm-up; and
* the 95% half-width is at most ``precision`` times the mean;

or when a replication reaches ``max_tasks`` arrivals (reported as ``stop_reason``).  The
short replications of a large farm (:mod:`cloudsched.dispatch.short_run`) have a rule of
their own: no warm-up cut, no drift, their interval plus its bias allowance within the
precision, every replication within its span (else they stop there, ``"span"``).  The
rule is checked on the micro-batches whose tasks have all left; when it holds, the estimate
*is* the one it accepted (those micro-batches, the same warm-up cut and batches), so the
precision reported is the precision that stopped the run.  The window then closes and the
tasks still in the system are followed until they leave, for the percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cloudsched._quantiles import t_quantile
from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RawRun, Replication
from cloudsched.progress import Progress
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS, SeriesEstimate, analyse_series

if TYPE_CHECKING:
    from cloudsched.dispatch.short_run import ShortRun

__all__ = [
    "Window",
    "estimate",
    "histogram_percentiles",
    "replication_interval",
    "run_until_precise",
    "window",
]

_CHUNK_EVENTS = 1 << 22
#: With replications, each must span this many relaxation times after its warm-up.
REPLICATION_RELAXATIONS = 2 * MIN_BATCH_RELAXATIONS
#: Checkpoints of an open-ended run are this factor apart (in measured arrivals).
CHECK_GROWTH = 1.15
#: The first checkpoint comes after this many micro-batches.
FIRST_CHECK_BATCHES = 64


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
    micro-batches instead (no detection).
    """
    used = raw.batches_estimated
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


@dataclass
class _Status:
    done: bool
    fraction: float
    precision: float
    prefixes: tuple[int, ...] = ()
    over: bool = False  # short replications past their span


def _check_short(
    engines: Sequence[Replication], batches: int, short: ShortRun, precision: float
) -> _Status:
    """Apply the short route's rule (:mod:`cloudsched.dispatch.short_run`).

    No warm-up cut, a replication interval plus the bias allowance, every replication
    within its span.
    """
    ests, prefixes, ends = [], [], []
    for eng in engines:
        written = (eng.measured - 1) // eng.width + 1
        k = min(eng.complete_batches(), written - 1)
        if k < 8:
            return _Status(False, 0.0, math.inf)
        ests.append(
            analyse_series(
                eng.mt.bsum[:k],
                eng.mt.bcnt[:k],
                eng.mt.snap[: k + 1, K.SN_T],
                batches=batches,
                truncation=0,
            )
        )
        prefixes.append(k)
        ends.append(float(eng.mt.snap[k, K.SN_T]))
    means = np.array([e.mean for e in ests])
    rel = (replication_interval(means) + short.bias) / abs(means.mean())
    steady = not any(e.drifts(len(ests)) for e in ests)
    ok = steady and rel <= precision and max(ends) <= short.span
    fraction = min(0.99, (precision / rel) ** 2 if rel > 0 else 0.99)
    return _Status(ok, fraction, rel, tuple(prefixes), over=max(ends) > short.span)


def _check(
    engines: Sequence[Replication], batches: int, relaxation: float, precision: float
) -> _Status:
    """Apply the stopping rule to the complete micro-batches of every replication."""
    ests = []
    spans = []
    prefixes = []
    for eng in engines:
        written = (eng.measured - 1) // eng.width + 1  # snapshot rows written so far
        k = min(eng.complete_batches(), written - 1)
        if k < max(8, batches):
            return _Status(False, 0.0, math.inf)
        est = analyse_series(
            eng.mt.bsum[:k],
            eng.mt.bcnt[:k],
            eng.mt.snap[: k + 1, K.SN_T],
            batches=batches,
            relaxation=relaxation,
        )
        ests.append(est)
        spans.append(est.batch_span * est.batches)
        prefixes.append(k)
    relax = max(e.relaxation for e in ests)
    if len(engines) == 1:
        est = ests[0]
        rel = est.relative_half_width
        ok = est.certified and rel <= precision
        need_span = MIN_BATCH_RELAXATIONS * est.relaxation * batches
        have = spans[0]
    else:
        means = np.array([e.mean for e in ests])
        half = replication_interval(means)
        rel = half / abs(means.mean()) if means.mean() != 0 else math.inf
        ok = (
            all(e.warmup_found and not e.drifts(len(ests)) for e in ests)
            and min(spans) >= REPLICATION_RELAXATIONS * relax
            and rel <= precision
        )
        need_span = REPLICATION_RELAXATIONS * relax
        have = min(spans)
    need = max(need_span, have * min((rel / precision) ** 2, 1e6)) if math.isfinite(rel) else 0
    fraction = min(0.99, have / need) if need > 0 and math.isfinite(need) else 0.0
    return _Status(ok, fraction, rel, tuple(prefixes))


def run_until_precise(
    engines: Sequence[Replication],
    *,
    batches: int,
    relaxation: float,
    precision: float,
    max_tasks: int,
    progress: Progress | None = None,
    short: ShortRun | None = None,
) -> tuple[list[RawRun], str]:
    """Run open-ended replications in lockstep until the stopping rule holds.

    Returns the finished runs and the reason they stopped: ``"precision"`` (the rule
    held), ``"max_tasks"`` (a replication reached ``max_tasks`` measured arrivals first) or,
    with ``short`` (the short route's replications), ``"span"`` (they reached their span).
    """
    width = engines[0].width
    check = FIRST_CHECK_BATCHES * width
    reason = "precision"
    accepted: tuple[int, ...] = ()
    while True:
        check = min(check, max_tasks)
        for eng in engines:
            eng.set_checkpoint(check)
            while not eng.at_checkpoint:
                if eng.advance(_CHUNK_EVENTS):  # pragma: no cover - open-ended runs never end
                    raise RuntimeError("an open-ended run ended before its window closed")
                if progress is not None and not eng.at_checkpoint:
                    progress(-1.0, "")
        if short is None:
            status = _check(engines, batches, relaxation, precision)
        else:
            status = _check_short(engines, batches, short, precision)
        if progress is not None:
            shown = "—" if not math.isfinite(status.precision) else f"{100 * status.precision:.3g}%"
            progress(status.fraction, f"precision {shown} (target {100 * precision:.3g}%)")
        if status.done or status.over:
            accepted = status.prefixes
            reason = "precision" if status.done else "span"
            break
        if check >= max_tasks:
            reason = "max_tasks"
            break
        step = max(engines[0].width, int(check * (CHECK_GROWTH - 1.0)))
        check = -(-(check + step) // engines[0].width) * engines[0].width
    runs = []
    for k, eng in enumerate(engines):
        eng.close_window()
        while not eng.advance(_CHUNK_EVENTS):  # the measured tasks still in the system leave
            pass
        raw = eng.result()
        if accepted:  # the estimate is the one the rule accepted
            raw.accepted = accepted[k]
        runs.append(raw)
    return runs, reason
