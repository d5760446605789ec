"""The speed-class engine's records: the occupancy counts of each class of equal speed.

``State``
    ``cnt`` (float64, ``(L,)``): servers holding at least ``i`` tasks, all classes.
    ``ccnt`` (float64, ``(K, L)``): servers of class ``c`` holding at least ``i`` tasks.
    ``speed`` (float64, ``(K,)``): the classes' speeds, increasing.
    ``iq`` (float64, ``(1,)``): ``[M]`` (no I-queues: the policies here list none).
    ``ist``, ``fst``, ``msg``: the shared scalars and message counters
    (:mod:`cloudsched.dispatch.engines.records`).

The parameters are the counts engine's (:class:`cloudsched.dispatch.engines.counts.records.Params`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["State"]


class State(NamedTuple):
    """The farm as occupancy counts per speed class (see the module notes)."""

    cnt: np.ndarray
    ccnt: np.ndarray
    speed: np.ndarray
    iq: np.ndarray
    ist: np.ndarray
    fst: np.ndarray
    msg: np.ndarray
