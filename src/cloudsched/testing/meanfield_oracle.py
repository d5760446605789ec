"""Slow, obviously-correct reference implementations for differential tests.

Nothing here is vectorised or clever: the series is summed term by term in plain Python
and the root is found with :func:`scipy.optimize.brentq`, one load at a time.  Use only for
moderate ``r`` (up to a few hundred), where the series converges in a few thousand terms.
"""

from __future__ import annotations

import math

from scipy import optimize

__all__ = ["reference_p0", "reference_response_time"]


def _series(p0: float, lam: float, r: float, d: int) -> float:
    kappa = sum(lam**k for k in range(d))
    b = r / (p0 * kappa)
    a = r * (1.0 - p0 * lam**d) / (p0 * kappa)
    total, term, j = 1.0, 1.0, 0
    while True:
        j += 1
        term *= a / (b + j)
        total += term
        if term < 1e-18 * total:
            return total


def reference_p0(lam: float, r: float, d: int = 1) -> float:
    """Root in (0, 1) of ``p0 * S(p0) = 1`` by Brent's method on the raw series."""
    return float(
        optimize.brentq(
            lambda p: p * _series(p, lam, r, d) - 1.0, 1e-9, 1.0, xtol=1e-15, rtol=1e-15
        )
    )


def reference_response_time(policy: str, lam: float, r: float = 10.0, d: int = 2) -> float:
    """Mean response time ``(1/lam) * sum_i s_i`` by summing the tail recursion term by term."""
    if policy == "jsq":
        return 1.0
    d = 1 if policy in ("random", "jiq") else d
    p0 = reference_p0(lam, r, d) if policy in ("jiq", "jiq-pod") else 1.0
    s, total = lam, 0.0
    while s > 1e-300:
        total += s
        s = lam * p0 * s**d
        if total > 0 and s < 1e-17 * total:
            total += s
            break
    return total / lam if math.isfinite(total) else math.inf
