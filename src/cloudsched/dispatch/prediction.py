"""``predict``: the mean field of every built-in policy (closed forms and numerical ones).

The closed forms (random, pod, jsq, jiq, jiq-pod) are in :mod:`cloudsched.dispatch.meanfield`;
the JIQ variants' fixed points and round-robin in :mod:`cloudsched.dispatch.variants`.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from cloudsched.dispatch import meanfield
from cloudsched.dispatch.meanfield import MeanFieldPrediction

__all__ = ["predict"]


def predict(
    policy: str, loads: ArrayLike, *, r: float = 10.0, d: int = 2, tail_tol: float = 1e-9,
    max_tail: int = 1000, z: int = 1,
) -> MeanFieldPrediction:  # fmt: skip
    """Predict the steady state of a dispatch policy in the mean-field limit.

    ``random``, ``pod``, ``jsq``, ``jiq`` and ``jiq-pod`` have closed forms
    (:func:`cloudsched.dispatch.meanfield.predict`, which documents the arguments);
    ``jiq-sq`` (``d`` I-queues sampled), ``jiq-threshold`` (threshold ``z``) and
    ``jiq-original`` are numerical fixed points, and ``round-robin``'s many-dispatcher
    limit is ``random`` (:mod:`cloudsched.dispatch.variants`).
    """
    from cloudsched.dispatch.variants import VARIANT_POLICIES, predict_variant

    if policy in (*VARIANT_POLICIES, "round-robin"):
        out: MeanFieldPrediction = predict_variant(policy, loads, r=r, d=d, z=z,
                                                   tail_tol=tail_tol, max_tail=max_tail)
        return out
    return meanfield.predict(policy, loads, r=r, d=d, tail_tol=tail_tol, max_tail=max_tail)
