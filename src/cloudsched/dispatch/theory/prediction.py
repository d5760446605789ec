"""``predict``: what the theory says about a built-in policy, from one entry point.

Which model answers is read from the model table (:mod:`.models`):

* the mean field (no ``servers``, no ``speeds``): the closed forms (random, pod, jsq, jiq,
  jiq-pod; :mod:`.meanfield`), the numerical fixed points of the JIQ variants and
  round-robin's many-dispatcher limit (:mod:`.variants`);
* at ``servers = N``: mean field, refined (1/N) mean field and exact chain side by side,
  ``method`` choosing which is the answer (:mod:`.finite`);
* with ``speeds``: the mean field with speed classes (:mod:`.speeds`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.dispatch.theory import meanfield as closed
from cloudsched.dispatch.theory.limit import meanfield_limit
from cloudsched.errors import ParameterError
from cloudsched.policy_table import check_has_model, get_row
from cloudsched.progress import Progress

__all__ = ["check_predict", "meanfield_limit", "predict"]  # meanfield_limit: from .limit


def check_predict(
    policy: str,
    loads: ArrayLike,
    *,
    servers: int | None = None,
    speeds: ArrayLike | None = None,
    method: str = "auto",
    r: float = 10.0,
    d: int = 2,
    z: int = 1,
    replace: bool = False,
    tol: float = 1e-6,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
) -> None:
    """Raise the :class:`ParameterError` :func:`predict` would, without solving anything."""
    model = get_row(policy)
    check_has_model(policy)
    if servers is not None and speeds is not None:
        raise ParameterError(
            "speeds", "given", "without servers (the finite-N models have equal speeds)"
        )
    if servers is not None:
        from cloudsched.dispatch.theory.finite import check_finite

        check_finite(policy, servers, loads, r=r, d=d, replace=replace, method=method, tol=tol)
        return
    if method != "auto" or replace:
        raise ParameterError(
            "method" if method != "auto" else "replace",
            method if method != "auto" else replace,
            "given with servers",
        )
    if speeds is not None:
        from cloudsched.dispatch.theory.speeds import HETEROGENEOUS_POLICIES, speed_classes

        if not model.speed_classes:
            raise ParameterError(
                "policy", policy, "one of " + ", ".join(HETEROGENEOUS_POLICIES) + " with speeds"
            )
        speed_classes(np.asarray(speeds, dtype=np.float64))
    if model.closed_form:
        closed.check_prediction(policy, loads, r=r, d=d, tail_tol=tail_tol, max_tail=max_tail)
    else:
        from cloudsched.dispatch.theory.variants import check_variant

        check_variant(loads, r=r, d=d, z=z)


def predict(
    policy: str,
    loads: ArrayLike,
    *,
    servers: int | None = None,
    speeds: ArrayLike | None = None,
    method: str = "auto",
    r: float = 10.0,
    d: int = 2,
    z: int = 1,
    replace: bool = False,
    tol: float = 1e-6,
    tail_tol: float = 1e-9,
    max_tail: int = 1000,
    progress: Progress | None = None,
) -> Any:
    """Predict the steady state of a built-in dispatch policy.

    Parameters
    ----------
    policy : str
        A built-in policy (:data:`~cloudsched.policy_table.TABLE` says what each
        one has).
    loads : float or array_like
        Arrival rate per server (relative to capacity with ``speeds``), each in (0, 1).
    servers : int, optional
        Predict at N servers: mean field, refined and exact side by side.
    speeds : array_like, optional
        Server speeds (a per-server list or a pattern): the mean field with speed classes.
    method : str
        With ``servers``: ``auto``, ``meanfield``, ``refined`` or ``exact``.
    r : float
        Servers per dispatcher ``N / M`` (policies with I-queues; round-robin at N).
    d : int
        Servers probed per decision (pod, jiq-pod) or I-queues sampled (jiq-sq).
    z : int
        Threshold of ``jiq-threshold``.
    replace : bool
        With ``servers``: probe with replacement.
    tol : float
        With ``servers``: truncation of the exact chain (largest fraction of arrivals lost).
    tail_tol, max_tail : float, int
        Mean field: the reported tail stops below ``tail_tol`` or after ``max_tail`` entries.
    progress : callable, optional
        ``progress(fraction, status)`` (:mod:`cloudsched.progress`), for the exact chain.

    Returns
    -------
    MeanFieldPrediction
        The mean field (vectorised over the loads), without ``servers`` and ``speeds``;
    list of FinitePrediction
        With ``servers``: one per load (:mod:`cloudsched.dispatch.theory.finite`);
    list of HeterogeneousPrediction
        With ``speeds``: one per load (:mod:`cloudsched.dispatch.theory.speeds`).
    Each has ``mean_response_time`` per load.
    """
    check_predict(
        policy,
        loads,
        servers=servers,
        speeds=speeds,
        method=method,
        r=r,
        d=d,
        z=z,
        replace=replace,
        tol=tol,
        tail_tol=tail_tol,
        max_tail=max_tail,
    )
    if servers is not None:
        from cloudsched.dispatch.theory.finite import predict_finite

        return predict_finite(
            policy,
            servers,
            loads,
            r=r,
            d=d,
            replace=replace,
            method=method,
            tol=tol,
            z=z,
            progress=progress,
        )
    if speeds is not None:
        from cloudsched.dispatch.theory.speeds import predict_heterogeneous
        from cloudsched.errors import check_loads

        mu = np.asarray(speeds, dtype=np.float64)
        return [
            predict_heterogeneous(policy, float(x), mu, r=r, d=d)
            for x in check_loads("load", loads)
        ]
    return meanfield_limit(policy, loads, r=r, d=d, tail_tol=tail_tol, max_tail=max_tail, z=z)
