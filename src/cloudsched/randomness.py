"""Random streams: the one way a root seed becomes generators, for every simulator.

Every function that draws random numbers takes a keyword ``rng``: None (fresh entropy,
drawn here and recorded in the result so the run can be regenerated), an int seed, or a
``numpy.random.Generator`` (used as it is; the result then records no seed).  Independent
replications get independent streams from ``SeedSequence(seed).spawn(k)`` (or
``Generator.spawn``).
"""

from __future__ import annotations

import numpy as np

from cloudsched.errors import check_seed

__all__ = ["Seed", "streams"]

#: What an ``rng`` argument accepts.
Seed = int | np.random.Generator | None


def streams(rng: Seed, k: int = 1) -> tuple[int | None, list[np.random.Generator]]:
    """Return the root seed (None for a given generator) and ``k`` independent generators.

    With ``k = 1`` the generator is the root's own stream (``default_rng(SeedSequence(seed))``,
    the same as ``default_rng(seed)``); with more, the streams of ``SeedSequence.spawn(k)``.
    """
    if isinstance(rng, np.random.Generator):
        return None, [rng] if k == 1 else list(rng.spawn(k))
    root = np.random.SeedSequence(check_seed("seed", rng))
    seed = int(root.entropy)  # type: ignore[arg-type]
    if k == 1:
        return seed, [np.random.default_rng(root)]
    return seed, [np.random.default_rng(s) for s in root.spawn(k)]
