"""Exact response-time distributions without per-task records (exponential FCFS service).

A task that joins a server holding ``k`` tasks stays an Erlang(``k + 1``) time (divided by
the server's speed), so the histogram of the levels measured tasks joined gives their
response-time distribution as a mixture of Erlang laws.  :func:`erlang_histogram` spreads
it over the percentile bins the per-server engine fills with measured times (512 per
octave), by the exact probability of each bin.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from cloudsched.dispatch.engines import records as S

__all__ = ["erlang_histogram"]


def _bin_edges() -> np.ndarray:
    """Lower edges of the response-time histogram's bins, and the top edge of the last."""
    k = np.arange(S.H_BINS + 1)
    octave, sub = np.divmod(k, S.H_SUB)
    return np.ldexp(0.5 + sub / (2.0 * S.H_SUB), octave + S.H_EMIN)


def erlang_histogram(joins: np.ndarray, speeds: np.ndarray | None = None) -> np.ndarray:
    """Spread joins at each level over the response-time bins, by Erlang(level + 1) mass.

    ``joins`` (``(segments, L)``): how many measured tasks joined a server holding ``k``
    tasks; with ``speeds`` (``(K,)``), ``(segments, K, L)`` per speed class, a class-``c``
    time being Erlang(``k + 1``) / ``speeds[c]``.  Returns the expected bin counts (float64,
    ``(segments, H_BINS)``): the exact response-time distribution of those tasks, binned as
    the per-server engine bins its measured times (mass below the first bin goes to it,
    above the last to the last).
    """
    if speeds is not None:
        return sum(
            (_erlang_bins(joins[:, c, :], float(s)) for c, s in enumerate(speeds)),
            np.zeros((joins.shape[0], S.H_BINS)),
        )
    return _erlang_bins(joins, 1.0)


def _erlang_bins(joins: np.ndarray, speed: float) -> np.ndarray:
    """Spread ``joins`` (``(segments, L)``) over the bins, a block of levels at a time."""
    out = np.zeros((joins.shape[0], S.H_BINS))
    used = np.flatnonzero(joins.sum(axis=0))
    for block in np.unique(used // BLOCK):
        k0 = int(block) * BLOCK
        lo, hi, mass = _block_mass(int(block), speed)
        part = joins[:, k0 : k0 + BLOCK]
        out[:, lo:hi] += part @ mass[: part.shape[1]]
    return out


#: Levels whose bin masses are computed (and cached) together.
BLOCK = 64
#: Mass of each Erlang law left outside its block's bins, on each side (it goes to the
#: block's first or last bin, so no mass is lost).
TAIL = 1e-13


@lru_cache(maxsize=512)
def _block_mass(block: int, speed: float) -> tuple[int, int, np.ndarray]:
    """Bins ``lo:hi`` and the mass of Erlang(k + 1) / speed in each, for k in the block.

    The bins span the block's levels from the first's lower ``TAIL`` quantile to the last's
    upper one, so the table is narrow at high levels (about 400 bins at k = 1000) and the
    cost and memory of a histogram grow with the levels joined, not with their square.
    Cached (read-only): the replications of one run join nearly the same levels.
    """
    from scipy import special  # (0.15 s to import: only when a run ends)

    edges = _bin_edges()
    k = np.arange(block * BLOCK, (block + 1) * BLOCK, dtype=np.float64)
    first = float(special.gammaincinv(k[0] + 1.0, TAIL)) / speed
    last = float(special.gammainccinv(k[-1] + 1.0, TAIL)) / speed
    lo = max(int(np.searchsorted(edges, first, side="right")) - 1, 0)
    hi = min(int(np.searchsorted(edges, last)) + 1, S.H_BINS)
    lo = min(lo, hi - 1)
    x = edges[lo : hi + 1] * speed
    cdf = special.gammainc(k[:, None] + 1.0, x[None, :])  # (levels, edges)
    mass = np.diff(cdf, axis=1)
    mass[:, 0] += cdf[:, 0]  # below the first edge kept
    mass[:, -1] += 1.0 - cdf[:, -1]  # above the last
    mass.flags.writeable = False
    return lo, hi, mass
