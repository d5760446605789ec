"""Slow pure-Python mirror of the speed-class engine, for differential tests.

The class kernel is the count kernel with each class's counts kept apart, so its mirror is
the count engine's (:func:`cloudsched.dispatch.engines.counts.mirror.mirror_counts`) with
each server's speed: the same draws in the same order as
:mod:`cloudsched.dispatch.engines.classes.kernel`, from a plain list of N queue lengths and
their classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cloudsched.dispatch.engines.counts.mirror import mirror_counts
from cloudsched.dispatch.engines.replication import RunSpec

__all__ = ["mirror_classes"]


def mirror_classes(spec: RunSpec, rng: np.random.Generator, speeds: list[float]) -> dict[str, Any]:
    """Run ``spec`` from an empty farm of servers of these ``speeds`` (see ``mirror_counts``)."""
    return mirror_counts(spec, rng, speeds=speeds)
