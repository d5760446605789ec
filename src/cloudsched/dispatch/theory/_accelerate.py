"""Anderson's acceleration of a fixed point on the simplex (the mean fields' iterations)."""

from __future__ import annotations

import numpy as np

__all__ = ["anderson"]

#: Steps remembered by the mixing.
DEPTH = 6


def anderson(hist: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Return the next iterate of ``x = g(x)`` from the history ``hist`` (updated in place).

    Near saturation the plain iteration contracts slowly (thousands of steps at load 0.99);
    Anderson's type-II mixing of the last :data:`DEPTH` steps takes tens.  The mixed step is
    kept a probability vector (clipped, renormalised); the history restarts when the step
    would leave the simplex by more than rounding.
    """
    hist.append((x, g))
    del hist[: -(DEPTH + 1)]
    if len(hist) < 2:
        return g
    f = np.array([gg - xx for xx, gg in hist])
    gs = np.array([gg for _, gg in hist])
    gamma, *_ = np.linalg.lstsq(np.diff(f, axis=0).T, f[-1], rcond=None)
    mixed = g - np.diff(gs, axis=0).T @ gamma
    if not np.all(np.isfinite(mixed)) or mixed.min() < -1e-6:
        hist.clear()
        return g
    mixed = np.clip(mixed, 0.0, None)
    return np.asarray(mixed / mixed.sum())
