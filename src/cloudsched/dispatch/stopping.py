"""When an open-ended run has measured enough.

:func:`run_until_precise` drives one or several replications in lockstep in two stages.

1. **Pilot.**  Checks come at growing lengths until

   * every replication's warm-up was found and no replication drifts;
   * a single run's interval is certified (20 batches of at least five relaxation times
     each, independent batch means), or, with replications, each replication spans at
     least ten relaxation times after its warm-up; and
   * the 95% half-width is at most ``PILOT_FACTOR`` times the target.

   The pilot then plans a **fresh stretch** (:func:`_plan`): ``PLAN_MARGIN`` times the
   length at which the pilot's variance meets the target, and at least ``PLAN_MARGIN``
   times the span the rule needs, starting one pilot batch after the pilot's end.

2. **Fresh stretch.**  The estimate and interval come from the fresh stretch alone (no
   warm-up cut: the pilot is the warm-up); the stretch's rule is the pilot's with the
   target itself.  When it misses (its batches vary more than the pilot's did), it grows
   by what its own precision predicts and is checked again.

Why two stages: a run that stops at the first check where its own interval looks precise
enough stops when its batch means happen to agree, which for skewed response times is
when they are low: such runs are biased low and their intervals too narrow (jsq, N = 100,
load 0.9, precision 2%, 400 seeds: 89% coverage, estimates 0.0038 low).  The fresh
stretch's length is fixed before any of its data is seen, so its interval is a
fixed-length one; and, measured after the pilot, it needs no MSER cut, whose choice of
cut point also leans low on skewed series.

A run also stops when a replication reaches ``max_tasks`` measured arrivals (reported as
``stop_reason``): the cap, not the data, then sets the length, and the estimate is the
whole run cut by MSER, as for a run of that fixed length (a stretch cut short would
often be too short to certify).  The
short replications of a large farm (:mod:`cloudsched.dispatch.short_run`) have a rule of
their own: no warm-up cut, no drift, their interval plus its bias allowance within the
precision, every replication within its span (else they stop there, ``"span"``).  The
rule is checked on the micro-batches whose tasks have all left; when it holds, the estimate
*is* the one it accepted (those micro-batches, the same cut and batches), so the
precision reported is the precision that stopped the run.  The window then closes and the
tasks still in the system are followed until they leave, for the percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RawRun, Replication
from cloudsched.dispatch.measure import replication_interval
from cloudsched.progress import Progress
from cloudsched.steadystate import MIN_BATCH_RELAXATIONS, analyse_series, batch_widening

if TYPE_CHECKING:
    from cloudsched.dispatch.short_run import ShortRun

__all__ = ["run_until_precise"]

_CHUNK_EVENTS = 1 << 22
#: With replications, each must span this many relaxation times after its warm-up.
REPLICATION_RELAXATIONS = 2 * MIN_BATCH_RELAXATIONS
#: Checkpoints of an open-ended run are this factor apart (in measured arrivals).
CHECK_GROWTH = 1.15
#: The first checkpoint comes after this many micro-batches.
FIRST_CHECK_BATCHES = 64
#: The pilot ends once its half-width is within this factor of the precision target.
PILOT_FACTOR = 2.0
#: 2: pilot and fresh stretch.  1: the earlier rule (stop at the first check that meets the
#: target; its estimate cut by MSER), kept for ``benchmarks/bench_stopping.py`` to compare.
STAGES = 2
#: The fresh stretch is planned this factor longer than the pilot's precision predicts.
PLAN_MARGIN = 1.25


@dataclass
class _Status:
    done: bool
    fraction: float
    precision: float
    prefixes: tuple[int, ...] = ()
    over: bool = False  # short replications past their span
    measured: int = 0  # measured arrivals after the cut (the longest replication's)
    floor: int = 0  # measured arrivals the rule's span needs (at the relaxation seen)
    correction: float = 1.0  # a single run's batch-length widening in ``precision``
    relaxation: float = 0.0  # relaxation time and measured span of a single run
    span: float = 0.0


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
    engines: Sequence[Replication],
    batches: int,
    relaxation: float,
    precision: float,
    start: int | None = None,
) -> _Status:
    """Apply the stopping rule to the complete micro-batches of every replication.

    ``start``: the measured arrival where the fresh stretch begins (the estimate starts at
    the first micro-batch boundary there); None: the pilot, cut by MSER.
    """
    ests = []
    spans = []
    prefixes = []
    measured = 0
    for eng in engines:
        written = (eng.measured - 1) // eng.width + 1  # snapshot rows written so far
        k = min(eng.complete_batches(), written - 1)
        cut = None if start is None else -(-start // eng.width)
        if k - (cut or 0) < max(8, batches):
            return _Status(False, 0.0, math.inf)
        est = analyse_series(
            eng.mt.bsum[:k],
            eng.mt.bcnt[:k],
            eng.mt.snap[: k + 1, K.SN_T],
            batches=batches,
            relaxation=relaxation,
            truncation=cut,
        )
        ests.append(est)
        spans.append(est.batch_span * est.batches)
        prefixes.append(k)
        measured = max(measured, (k - est.truncation) * eng.width)
    relax = max(e.relaxation for e in ests)
    if len(engines) == 1:
        est = ests[0]
        rel = est.relative_half_width
        ok = est.certified and rel <= precision
        need_span = MIN_BATCH_RELAXATIONS * est.relaxation * batches
        have = spans[0]
        correction, relaxation_seen, single_span = est.correction, est.relaxation, have
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
        correction, relaxation_seen, single_span = 1.0, 0.0, 0.0
    need = max(need_span, have * min((rel / precision) ** 2, 1e6)) if math.isfinite(rel) else 0
    fraction = min(0.99, have / need) if need > 0 and math.isfinite(need) else 0.0
    floor = math.ceil(measured * need_span / have) if have > 0 else measured
    return _Status(
        ok,
        fraction,
        rel,
        tuple(prefixes),
        measured=measured,
        floor=floor,
        correction=correction,
        relaxation=relaxation_seen,
        span=single_span,
    )


def _plan(status: _Status, precision: float, batches: int) -> tuple[int, int]:
    """Where the fresh stretch starts (after a gap of one batch) and its planned length.

    Lengths are in measured arrivals.  The half-width falls as one over the square root of
    the length, and a single run's batch-length widening falls as its batches grow: the
    plan is ``PLAN_MARGIN`` times the length at which the pilot's variance, widened for the
    stretch's longer batches, meets the target, and at least ``PLAN_MARGIN`` times the
    span the rule needs (its batches' or replications' minimum).
    """
    have = status.measured
    base = have * (status.precision / status.correction / precision) ** 2 * PLAN_MARGIN
    planned = base * status.correction**2
    if status.span > 0:
        per_arrival = status.span / have
        for _ in range(4):  # the widening of the planned batches (a contraction)
            planned = base * batch_widening(status.relaxation, per_arrival * planned / batches) ** 2
    return -(-have // batches), int(max(status.floor * PLAN_MARGIN, planned))


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
    start: int | None = None  # measured arrivals before the fresh stretch (None: pilot)
    while True:
        check = min(check, max_tasks)
        for i, eng in enumerate(engines):
            eng.set_checkpoint(check)
            while not eng.at_checkpoint:
                if eng.advance(_CHUNK_EVENTS):  # pragma: no cover - open-ended runs never end
                    raise RuntimeError("an open-ended run ended before its window closed")
                if progress is not None and not eng.at_checkpoint:
                    if start is None:
                        progress(-1.0, "")
                    else:  # the stretch's planned length is known: the bar moves with it
                        done = (i + (eng.measured - start) / max(check - start, 1)) / len(engines)
                        progress(*_stretch_shown(done, precision))
        if short is not None:
            status = _check_short(engines, batches, short, precision)
        elif start is None:
            factor = PILOT_FACTOR if STAGES == 2 else 1.0
            status = _check(engines, batches, relaxation, factor * precision)
        else:
            status = _check(engines, batches, relaxation, precision, start)
        if progress is not None:
            progress(*_shown(status, precision, start))
        if short is not None and (status.done or status.over):
            accepted = status.prefixes
            reason = "precision" if status.done else "span"
            break
        if short is None and start is None and status.done and STAGES == 1:
            accepted = status.prefixes
            break
        if check >= max_tasks:
            reason = "max_tasks"
            if start is not None and status.done:
                reason, accepted = "precision", status.prefixes
            else:  # the cap, not the data, ends the run: all of it, cut by MSER
                start = None
            break
        width = engines[0].width
        if short is None and start is None and status.done:  # the pilot ends: plan the stretch
            gap, planned = _plan(status, precision, batches)
            start = check + gap
            check = start + planned
        elif short is None and start is not None:
            if status.done:
                accepted = status.prefixes
                break
            grown = (check - start) * CHECK_GROWTH
            if math.isfinite(status.precision):
                grown = max(grown, (check - start) * (status.precision / precision) ** 2)
            check = start + int(min(grown, 1e18))
        else:
            check += max(width, int(check * (CHECK_GROWTH - 1.0)))
        check = -(-check // width) * width
    # in measured arrivals: closing the window may merge micro-batches (when they are full)
    accepted = tuple(k * eng.width for k, eng in zip(accepted, engines, strict=False))
    runs = []
    for k, eng in enumerate(engines):
        eng.close_window()
        while not eng.advance(_CHUNK_EVENTS):  # the measured tasks still in the system leave
            pass
        raw = eng.result()
        if accepted:  # the estimate is the one the rule accepted
            raw.accepted = accepted[k] // raw.width
        if start is not None:
            raw.measure_from = min(-(-start // raw.width), raw.batches_estimated)
        runs.append(raw)
    return runs, reason


def _stretch_shown(done: float, precision: float) -> tuple[float, str]:
    """Return the progress of a fresh stretch ``done`` (a share) of the way to its check."""
    frac = 1.0 / 6.0 + (5.0 / 6.0) * min(max(done, 0.0), 1.0)
    return (
        min(frac, 0.99),
        f"fresh stretch, {100 * max(done, 0.0):.0f}% of its planned length "
        f"(target {100 * precision:.3g}%)",
    )


def _shown(status: _Status, precision: float, start: int | None) -> tuple[float, str]:
    """Return the progress fraction and text of one check."""
    shown = "—" if not math.isfinite(status.precision) else f"{100 * status.precision:.3g}%"
    if start is None:
        # the pilot is about a sixth of the work (a quarter of the stretch's length)
        pilot = 100 * PILOT_FACTOR * precision
        return (
            status.fraction / 6.0,
            f"pilot: precision {shown} (plans the stretch at {pilot:.3g}%)",
        )
    frac = _stretch_shown(status.fraction, precision)[0]
    return frac, f"precision {shown} (target {100 * precision:.3g}%)"
