"""The five-policy replay of a trace, shared by the CDF figure and the load figure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from cloudsched.dispatch.result import SimulationResult
from cloudsched.dispatch.simulation import simulate
from cloudsched.dispatch.workload.resolved import Trace

__all__ = ["TRACE_POLICIES", "replay"]

#: (label, policy) of the policies replayed, as in the JIQ paper's trace figures.
TRACE_POLICIES = (
    ("Random", "random"),
    ("Pod(2)", "pod"),
    ("JIQ", "jiq"),
    ("JIQ-Pod(2)", "jiq-pod"),
    ("JSQ", "jsq"),
)


def replay(
    trace: Trace,
    loads: Sequence[float],
    *,
    seed: int,
    servers: int = 4000,
    r: float = 10.0,
    keep_response_times: bool = False,
) -> Iterator[tuple[str, float, SimulationResult]]:
    """Replay ``trace`` under each of :data:`TRACE_POLICIES` at each load (d = 2).

    Yields ``(label, load, result)``, policy by policy; run ``k`` uses stream ``k`` of
    ``SeedSequence(seed).spawn``.
    """
    streams = iter(np.random.SeedSequence(seed).spawn(len(TRACE_POLICIES) * len(loads)))
    for label, policy in TRACE_POLICIES:
        for lam in loads:
            res = simulate(
                policy,
                servers=servers,
                r=r,
                load=lam,
                d=2,
                trace=trace,
                keep_response_times=keep_response_times,
                rng=np.random.default_rng(next(streams)),
            )
            yield label, lam, res
