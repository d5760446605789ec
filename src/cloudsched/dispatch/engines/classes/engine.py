"""The speed-class engine: occupancy counts per class of equal speed (random, pod, jsq).

:class:`ClassesRun` runs :func:`cloudsched.dispatch.engines.classes.kernel.run_classes` in
the shared status loop: the count engine's replication
(:class:`~cloudsched.dispatch.engines.counts.engine.CountsRun`) with the counts kept per
class.  It runs the policies whose table row lists ``classes`` (those that choose by queue
length alone and list no idle servers), with at most
:data:`~cloudsched.dispatch.engines.choice.MAX_SPEED_CLASSES` distinct speeds; the farm
starts empty.  Response times: Erlang mixtures per class, scaled by the class's speed
(:func:`cloudsched.dispatch.engines.erlang.erlang_histogram`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cloudsched.dispatch.engines import records as R
from cloudsched.dispatch.engines.choice import MAX_SPEED_CLASSES, EngineInfo, speed_classes
from cloudsched.dispatch.engines.classes import records as K
from cloudsched.dispatch.engines.classes.kernel import run_classes
from cloudsched.dispatch.engines.counts.engine import CountsRun, grow_levels
from cloudsched.dispatch.engines.erlang import erlang_histogram
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.policy_table import with_capability

if TYPE_CHECKING:
    from cloudsched.dispatch.spec import SimulationSpec

__all__ = ["ENGINE", "ClassesRun"]


class ClassesRun(CountsRun):
    """One replication on the occupancy counts of each speed class (see the module notes).

    ``speeds``: each server's speed (at most ``MAX_SPEED_CLASSES`` distinct values).
    """

    engine = "classes"

    def __init__(self, spec: RunSpec, rng: np.random.Generator, speeds: np.ndarray) -> None:
        speed, sizes = speed_classes(speeds)
        if speed.size > MAX_SPEED_CLASSES:
            raise ValueError(
                f"the classes engine runs {', '.join(with_capability('classes'))} with at "
                f"most {MAX_SPEED_CLASSES} speeds"
            )
        if sizes.sum() != spec.n:
            raise ValueError("speed classes start empty, with one speed per server")
        self._classes = speed.size
        super().__init__(spec, rng)
        ccnt = np.zeros((speed.size, self.st.cnt.size))
        ccnt[:, 0] = sizes
        st = self.st
        self.st = K.State(st.cnt, ccnt, speed, st.iq, st.ist, st.fst, st.msg)

    def _joins(self, levels: int) -> np.ndarray:
        return np.zeros((R.H_SEGMENTS, self._classes, levels))

    def _step(self) -> int:
        return int(self._call(run_classes, self.st, self.mt, self.ctl, self.par, self.rng))

    def _more_levels(self, new: int) -> None:
        super()._more_levels(new)
        self.st = self.st._replace(ccnt=grow_levels(self.st.ccnt, new, 0.0))

    def _histogram(self) -> np.ndarray:
        return erlang_histogram(self.mt.hist, self.st.speed)


def _start(spec: SimulationSpec, run: RunSpec, rng: np.random.Generator, clock: str) -> ClassesRun:
    """One replication of ``spec`` (speed classes start empty)."""
    assert spec.work.speeds is not None
    return ClassesRun(run, rng, spec.work.speeds)


#: What the classes engine keeps, and what that buys.
SUMMARY = "occupancy counts per class of equal speed (at most 16 classes), at any N"
#: The classes engine: name, summary, laws, speeds, delays, views, records, start.
ENGINE = EngineInfo("classes", SUMMARY, "markov", "classes", False, ("shared",), False, _start)
