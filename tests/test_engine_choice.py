"""The engine chosen for a simulation can run it, by what the engine says of itself.

Each engine declares what it runs (:class:`~cloudsched.dispatch.engines.choice.Engine`:
policies, laws, speeds, delays, views, per-task records); :func:`choose` decides in code.
Across a grid of requests (every built-in policy, every ``engine=`` value, Markov and other
laws, equal speeds, two and seventeen speed classes, delays, both views, records kept or
not, small and large N) every spec that builds must have gone to an engine whose
declaration covers it, and every engine must be chosen somewhere.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cloudsched.dispatch.engines.choice import ASKED, AUTO_COUNTS_SERVERS, MAX_SPEED_CLASSES
from cloudsched.dispatch.engines.registry import ENGINES
from cloudsched.dispatch.spec import SimulationSpec
from cloudsched.dispatch.workload.resolved import markov_laws
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE


def _speeds(n: int, classes: int) -> np.ndarray | None:
    if classes == 1:
        return None
    return np.resize(np.arange(1.0, classes + 1.0), n)


def _covered(spec: SimulationSpec) -> list[str]:
    """What about ``spec`` its chosen engine does not declare it runs (empty: all covered)."""
    engine, work = ENGINES[spec.choice.engine], spec.work
    gaps = []
    if spec.model.name not in engine.policies:
        gaps.append("policy")
    markov = work.trace is None and markov_laws(work.service, work.interarrival)
    if engine.laws == "markov" and not markov:
        gaps.append("laws")
    if work.speeds is not None:
        classes = np.unique(work.speeds).size
        if engine.speeds == "equal" or (engine.speeds == "classes" and classes > MAX_SPEED_CLASSES):
            gaps.append("speeds")
    if spec.delays.any and not engine.delays:
        gaps.append("delays")
    if spec.view not in engine.views:
        gaps.append("view")
    if spec.keep_response_times and not engine.records:
        gaps.append("records")
    if spec.choice.clock == "markov" and not (
        markov and (work.speeds is None or engine.speeds == "classes")
    ):
        gaps.append("clock")
    return gaps


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_every_chosen_engine_declares_what_it_is_given():
    chosen: dict[str, int] = {}
    refused: dict[str, int] = {}
    grid = itertools.product(
        TABLE,
        ASKED,
        (None, "lognormal:cv=2"),
        (1, 2, MAX_SPEED_CLASSES + 1),
        (None, "info=0.2", "join=0.2"),
        ("shared", "own"),
        (False, True),
        (40, AUTO_COUNTS_SERVERS),
    )
    for policy, asked, service, classes, delay, view, keep, n in grid:
        try:
            spec = SimulationSpec(
                policy,
                servers=n,
                load=0.8,
                r=10,
                tasks=10_000,
                engine=asked,
                service=service,
                speeds=_speeds(n, classes),
                delay=delay,
                view=view,
                keep_response_times=keep,
            )
        except ParameterError:
            refused[asked] = refused.get(asked, 0) + 1
            continue
        assert _covered(spec) == [], (policy, asked, service, classes, delay, view, keep, n)
        chosen[spec.choice.engine] = chosen.get(spec.choice.engine, 0) + 1
        if asked in ("counts", "classes"):  # the one at the given speeds: classes or counts
            assert spec.choice.engine == ("counts" if spec.work.speeds is None else "classes")
        elif asked in ENGINES:
            assert spec.choice.engine == asked
    assert set(chosen) == set(ENGINES)
    assert set(refused) == set(ASKED)  # each engine= value refuses what it cannot run
