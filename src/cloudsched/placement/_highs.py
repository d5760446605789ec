"""One way to call HiGHS's MILP solver, with tolerances that make "optimal" mean optimal.

With HiGHS's defaults a configuration of weight up to about 1e-6 is not told from the
empty one: the max-weight MILP returned weight 0, "optimal", where the best was 3e-7 (one
to three copies of a topology of value 1e-7 placed on one machine).  What decides it is the
MIP feasibility tolerance (default 1e-6; here 1e-10, the least HiGHS accepts), with the
absolute gap (default 1e-6) tightened too: the weights found are then within 3e-9 of the
best on every small case of ``tests/test_placement_optimize.py``'s shapes (values 1e-10 to
1e-7 against traffic costs of 1 to 3).  :func:`scipy.optimize.milp` names neither option
but passes what it does not know to HiGHS verbatim (scipy 1.11 to 1.17), with a warning
that this module expects and silences for these calls alone.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

from cloudsched._quiet import solve_quietly

__all__ = ["MIP_ABS_GAP", "MIP_FEASIBILITY_TOLERANCE", "MIP_REL_GAP", "solve_milp"]

MIP_REL_GAP = 1e-9
MIP_ABS_GAP = 1e-12
MIP_FEASIBILITY_TOLERANCE = 1e-10
# scipy's warning for exactly the two options above (a set: either order)
_PASSED_VERBATIM = r"Unrecognized options detected: \{'mip_[a-z_]+', 'mip_[a-z_]+'\}"


def _milp(*args: Any, **kwargs: Any) -> OptimizeResult:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PASSED_VERBATIM, category=RuntimeWarning)
        return milp(*args, **kwargs)


def solve_milp(
    label: str,
    c: np.ndarray,
    *,
    constraints: LinearConstraint,
    integrality: np.ndarray,
    bounds: Bounds,
    time_limit: float | None = None,
    fine: bool = True,
) -> OptimizeResult:
    """Minimise ``c @ x`` as :func:`scipy.optimize.milp` does, to both gaps above, quietly.

    ``label`` names the solve in the ``cloudsched.solver`` log; ``time_limit`` in seconds
    (None: none).  ``fine=False`` keeps HiGHS's default feasibility tolerance and absolute
    gap: for the least-cost template cover (:mod:`cloudsched.placement.shapes`), whose
    objective is traffic of order one and whose solve ran to its 10 s limit, not in 0.1 s,
    with the fine ones; the max-weight MILP took as long with either (0.4 s to 18 s on 4x4
    to 8x4 clusters of ``benchmarks/bench_placement.py``'s part 2).
    """
    options: dict[str, float | bool] = {"disp": False, "mip_rel_gap": MIP_REL_GAP}
    if fine:
        options["mip_abs_gap"] = MIP_ABS_GAP
        options["mip_feasibility_tolerance"] = MIP_FEASIBILITY_TOLERANCE
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    return solve_quietly(
        label,
        _milp,
        c,
        constraints=constraints,
        integrality=integrality,
        bounds=bounds,
        options=options,
    )
