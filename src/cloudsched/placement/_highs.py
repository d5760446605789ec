"""One way to call HiGHS's MILP solver, with tolerances that make "optimal" mean optimal.

With HiGHS's defaults a configuration of weight up to about 1e-6 is not told from the
empty one: the max-weight MILP returned weight 0, "optimal", where the best was 3e-7 (one
to three copies of a topology of value 1e-7 placed on one machine).  What decides it is the
MIP feasibility tolerance (default 1e-6; here 1e-10, the least HiGHS accepts), with the
absolute gap (default 1e-6) tightened too: the weights found are then within 3e-9 of the
best on every small case of ``tests/test_placement_optimize.py``'s shapes (values 1e-10 to
1e-7 against traffic costs of 1 to 3).

The MILPs go to HiGHS through ``highspy`` (1.16 or later), not the older HiGHS inside
scipy: on a 6x4 max-weight configuration (three chains of 4, two stars of 4 and three
trees of 5 waiting, values ``3 log(1 + Q)``) scipy 1.17.1's HiGHS answered "optimal" at
weight 18.79 where a packing of weight 19.07 exists (its symmetry handling; with
``mip_detect_symmetry`` off it found 19.07), and HiGHS 1.16 finds 19.07 with every option
(``tests/test_placement_optimize.py``; HiGHS has fixed several such wrong-optimum reports
since, e.g. ERGO-Code/HiGHS#3094).  The result has the fields of
:func:`scipy.optimize.milp`'s that callers read (``x``, ``fun``, ``status``,
``mip_dual_bound``, ``success``, ``message``).
"""

from __future__ import annotations

from typing import Any

import highspy
import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult

from cloudsched._quiet import solve_quietly

__all__ = ["MIP_ABS_GAP", "MIP_FEASIBILITY_TOLERANCE", "MIP_REL_GAP", "solve_milp"]

MIP_REL_GAP = 1e-9
MIP_ABS_GAP = 1e-12
MIP_FEASIBILITY_TOLERANCE = 1e-10

_S = highspy.HighsModelStatus
# scipy.optimize.milp's status codes: 0 optimal, 1 a limit, 2 infeasible, 3 unbounded, 4 other
_STATUS = {
    _S.kOptimal: 0,
    _S.kTimeLimit: 1,
    _S.kIterationLimit: 1,
    _S.kSolutionLimit: 1,
    _S.kInterrupt: 1,
    _S.kInfeasible: 2,
    _S.kUnbounded: 3,
    _S.kUnboundedOrInfeasible: 3,
}


def _milp(
    c: np.ndarray,
    *,
    constraints: LinearConstraint,
    integrality: np.ndarray,
    bounds: Bounds,
    options: dict[str, Any],
) -> OptimizeResult:
    """Minimise ``c @ x`` with highspy; the result reads as :func:`scipy.optimize.milp`'s."""
    c = np.asarray(c, dtype=float)
    n = c.size
    a = sparse.csc_array(constraints.A)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, a.shape[0]
    lp.col_cost_ = c
    lp.col_lower_ = np.broadcast_to(np.asarray(bounds.lb, dtype=float), (n,)).copy()
    lp.col_upper_ = np.broadcast_to(np.asarray(bounds.ub, dtype=float), (n,)).copy()
    lp.row_lower_ = np.broadcast_to(np.asarray(constraints.lb, dtype=float), (a.shape[0],)).copy()
    lp.row_upper_ = np.broadcast_to(np.asarray(constraints.ub, dtype=float), (a.shape[0],)).copy()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr
    lp.a_matrix_.index_ = a.indices
    lp.a_matrix_.value_ = a.data
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[int(i != 0)] for i in np.asarray(integrality)]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for key, value in options.items():
        h.setOptionValue(key, value)
    h.passModel(lp)
    h.run()
    status = _STATUS.get(h.getModelStatus(), 4)
    info = h.getInfo()
    feasible = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if feasible else None
    return OptimizeResult(
        x=x,
        fun=float(info.objective_function_value) if feasible else None,
        status=status,
        success=status == 0,
        message=h.modelStatusToString(h.getModelStatus()),
        mip_dual_bound=float(info.mip_dual_bound),
        mip_gap=float(info.mip_gap),
    )


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
    options: dict[str, float | bool] = {"mip_rel_gap": MIP_REL_GAP}
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
