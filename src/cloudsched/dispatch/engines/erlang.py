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
    out = np.zeros((joins.shape[0], S.H_BINS))
    used = np.flatnonzero(joins.sum(axis=0))
    if used.size == 0:
        return out
    top = -(-(int(used.max()) + 1) // 64) * 64  # a multiple of 64: one table for many runs
    lo, hi, mass = _level_mass(top, speed)
    out[:, lo:hi] = joins[:, used] @ mass[used]
    return out


@lru_cache(maxsize=16)
def _level_mass(top: int, speed: float) -> tuple[int, int, np.ndarray]:
    """Bins ``lo:hi`` and the mass of Erlang(k + 1) / speed in each, for k < ``top``.

    Cached (read-only): the replications of one run join nearly the same levels.
    """
    from scipy import special  # (0.15 s to import: only when a run ends)

    edges = _bin_edges()
    # bins outside [1e-9 (k+1), 60 + 4 (k+1)] / speed hold < 1e-12 of every level's mass
    lo = int(np.searchsorted(edges, 1e-9 / speed))
    hi = min(int(np.searchsorted(edges, (60.0 + 4.0 * top) / speed)) + 1, S.H_BINS)
    x = edges[lo : hi + 1] * speed
    cdf = special.gammainc(np.arange(top)[:, None] + 1.0, x[None, :])  # (levels, edges)
    mass = np.diff(cdf, axis=1)
    mass[:, 0] += cdf[:, 0]  # below the first edge kept
    mass[:, -1] += 1.0 - cdf[:, -1]  # above the last
    mass.flags.writeable = False
    return lo, hi, mass
