"""The mean-field limit of every built-in policy, as the model table says it is solved.

Closed forms (:mod:`.meanfield`) for the policies whose ``meanfield`` is ``"closed"``; the
numerical fixed points of the JIQ variants and round-robin's many-dispatcher limit
(:mod:`.variants`) for the others.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from cloudsched.dispatch.theory import meanfield as closed
from cloudsched.dispatch.theory.meanfield import MeanFieldPrediction
from cloudsched.policy_table import check_has_model, get_row

__all__ = ["meanfield_limit"]


def meanfield_limit(
    policy: str,
    loads: ArrayLike,
    *,
    r: float = 10.0,
    d: int = 2,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
    z: int = 1,
) -> MeanFieldPrediction:
    """Return the mean-field limit of ``policy`` at each load (arguments as :func:`predict`)."""
    model = get_row(policy)
    check_has_model(policy)
    if model.closed_form:
        return closed.predict(policy, loads, r=r, d=d, tail_tol=tail_tol, max_tail=max_tail)
    from cloudsched.dispatch.theory.variants import predict_variant

    out: MeanFieldPrediction = predict_variant(
        policy, loads, r=r, d=d, z=z, tail_tol=tail_tol, max_tail=max_tail
    )
    return out
