"""The mirror's batch bookkeeping, rebuilt after the run from per-task records.

The compiled kernel merges micro-batches as they fill and bins response times as they
come; the mirror (:mod:`.mirror`) keeps every record and forms both at the end with these.
"""

from __future__ import annotations

import math

from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RunSpec

__all__ = ["final_width", "hist_bin"]


def final_width(spec: RunSpec, measured: int) -> int:
    """Micro-batch width at the end of a run: the kernel doubles it whenever it fills up."""
    width = spec.width
    if width <= 0:
        expected = spec.expected_tasks()
        width = 1 if not math.isfinite(expected) else max(1, -(-int(expected) // spec.micro))
    power = 1
    while power < width:  # the kernel's widths are powers of two
        power *= 2
    width = power
    while measured >= width * spec.micro:
        width *= 2
    return width


def hist_bin(x: float) -> int:
    """Return the histogram bin of response time ``x`` (the kernel's, by ``frexp``)."""
    if not x > 0.0:
        return 0
    mant, expo = math.frexp(x)
    k = (expo - K.H_EMIN) * K.H_SUB + int((mant - 0.5) * (2 * K.H_SUB))
    return min(max(k, 0), K.H_BINS - 1)
