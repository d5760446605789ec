"""The slow reference of Envoy's EDF check: a linear program over the deadlines.

Independent of :mod:`cloudsched.experiments.checklb_edf`'s difference-bound matrix: the
same question asked of HiGHS (through scipy) over every pick's schedule time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["edf_feasible"]


def edf_feasible(upstream: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Return whether an EDF schedule makes these picks (the slow reference, a linear program).

    Picks in a known order (one a time step), no restart.  Variables: the schedule's time
    ``t_q`` at each pick and each increment ``x_q`` in ``[lo_q, hi_q]``.  Constraints: the
    times never decrease; a host's next pick comes at its last plus the increment; a host
    not picked again keeps a deadline (its last pick plus the increment) at or after every
    later pick.
    """
    from scipy.optimize import linprog
    from scipy.sparse import lil_matrix

    n = upstream.size
    rows_ub: list[dict[int, float]] = []
    rows_eq: list[dict[int, float]] = []
    for q in range(n - 1):  # t_q - t_{q+1} <= 0
        rows_ub.append({q: 1.0, q + 1: -1.0})
    last: dict[int, int] = {}
    for q in range(n):
        h = int(upstream[q])
        if h in last:  # t_q = t_last + x_last
            rows_eq.append({q: 1.0, last[h]: -1.0, n + last[h]: -1.0})
        last[h] = q
    for _h, q in last.items():  # t_{n-1} <= t_q + x_q
        if q < n - 1:
            rows_ub.append({n - 1: 1.0, q: -1.0, n + q: -1.0})

    def matrix(rows: list[dict[int, float]]) -> Any:
        out = lil_matrix((max(len(rows), 1), 2 * n))
        for r, row in enumerate(rows):
            for c, v in row.items():
                out[r, c] += v
        return out.tocsr()

    bounds = [(None, None)] * n + [
        (float(a), None if not math.isfinite(b) else float(b)) for a, b in zip(lo, hi, strict=True)
    ]
    res = linprog(
        np.zeros(2 * n),
        A_ub=matrix(rows_ub),
        b_ub=np.zeros(max(len(rows_ub), 1)),
        A_eq=matrix(rows_eq) if rows_eq else None,
        b_eq=np.zeros(len(rows_eq)) if rows_eq else None,
        bounds=bounds,
        method="highs",
    )
    return bool(res.status == 0)
