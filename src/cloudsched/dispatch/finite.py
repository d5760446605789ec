"""Predictions at a finite number of servers: mean field, refined mean field, exact chain.

``predict_finite(policy, servers, loads)`` gives, for each load, the mean-field response
time, the refined one (``T + V / N``: :mod:`cloudsched.dispatch.population` on the exact
population models of :mod:`cloudsched.dispatch.finite_models`) and, where the state space is
small enough, the exact one (:mod:`cloudsched.dispatch.exact`).  ``method`` says which of
them is *the* answer (``value``): ``auto`` takes the exact chain when it is cheap (at most
:data:`AUTO_EXACT_STATES` states at the cap the mean field suggests), else the refined
value where the policy has one, else the mean field.

The number of dispatchers is ``M = max(1, round(N / r))``; the refined and exact models use
``r = N / M`` so that both describe the same system.  Pod(d) and JIQ-Pod(d) probe ``d``
distinct servers unless ``replace`` (the simulator's default is the same).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.errors import ParameterError, check_choice, check_int, check_loads, check_real
from cloudsched.progress import Progress

__all__ = ["AUTO_EXACT_STATES", "METHODS", "FinitePrediction", "as_arrays", "predict_finite"]

METHODS = ("auto", "meanfield", "refined", "exact")
#: ``auto`` solves the exact chain up to about this many states (a few seconds).
AUTO_EXACT_STATES = 20_000


@dataclass(frozen=True)
class FinitePrediction:
    """One load's predictions; ``value`` is the one ``method`` chose (``source`` names it)."""

    policy: str
    servers: int
    dispatchers: int
    load: float
    d: int
    with_replacement: bool
    meanfield: float
    refined: float | None
    exact: float | None
    truncation: float | None
    source: str
    value: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def _refined(policy: str, n: int, lam: float, r: float, d: int, replace: bool) -> float | None:
    from cloudsched.dispatch.finite_models import REFINED_POLICIES, population_model
    from cloudsched.dispatch.population import refine

    if policy not in REFINED_POLICIES:
        return None
    model, pi = population_model(policy, lam, r=r, d=d, replace=replace)
    return refine(model, pi).tasks(n) / lam


def _exact_cheap(policy: str, n: int, m: int) -> bool:
    from cloudsched.dispatch.exact import state_count

    return state_count(policy, n, m, 24) <= AUTO_EXACT_STATES


def predict_finite(
    policy: str, servers: int, loads: ArrayLike, *, r: float = 10.0, d: int = 2,
    replace: bool = False, method: str = "auto", tol: float = 1e-6, z: int = 1,
    progress: Progress | None = None,
) -> list[FinitePrediction]:  # fmt: skip
    """Mean response time of ``policy`` on ``servers`` servers at each load.

    Parameters
    ----------
    policy : str
        ``random``, ``pod``, ``jsq``, ``jiq`` or ``jiq-pod`` (refined: all but ``jsq``,
        whose drift is not smooth; exact: all five); ``round-robin`` (exact with one
        dispatcher: ``E_N/M/1``); the JIQ variants (mean field only).
    servers : int
        N >= 1.
    loads : float or array_like
        Arrival rate per server, each in (0, 1).
    r : float
        Servers per dispatcher (JIQ family); ``M = max(1, round(N / r))``.
    d : int
        Probes (pod, jiq-pod).
    replace : bool
        Probe with replacement.
    method : str
        ``auto``, ``meanfield``, ``refined`` or ``exact``.
    tol : float
        Truncation of the exact chain: largest fraction of arrivals dropped.
    z : int
        Threshold of ``jiq-threshold``.
    progress : callable, optional
        ``progress(-1, text)`` (:mod:`cloudsched.progress`): what the exact chain is doing
        (its size at each truncation level).
    """
    from cloudsched.dispatch.exact import EXACT_POLICIES, solve_exact
    from cloudsched.dispatch.prediction import predict as mf_predict

    method = check_choice("method", method, METHODS)
    n = check_int("servers", servers, low=1, high=10**9)
    lam = check_loads("load", loads)
    r = check_real("r", r, low=1e-6, high=1e8)
    d = check_int("d", d, low=1, high=n if policy in ("pod", "jiq-pod") and not replace else 4096)
    tol = check_real("tol", tol, low=0.0, high=0.1, low_open=True)
    iq = policy in ("jiq", "jiq-pod", "round-robin")
    m = max(1, round(n / r)) if iq else 1
    r_eff = n / m if iq else r
    if method == "refined" and policy not in ("random", "pod", "jiq", "jiq-pod"):
        why = ("its drift is not smooth, so there is no 1/N expansion" if policy == "jsq"
               else "no finite-N population model for it")
        exact_ok = policy == "jsq" or (policy == "round-robin" and m == 1)
        allowed = "meanfield or exact" if exact_ok else "meanfield"
        raise ParameterError("method", method, f"{allowed} for {policy} ({why})")
    rr_exact = policy == "round-robin" and m == 1  # E_N/M/1
    if method == "exact" and policy not in EXACT_POLICIES and not rr_exact:
        allowed = "meanfield or refined" if policy in ("random", "pod", "jiq", "jiq-pod") \
            else "meanfield"
        raise ParameterError("method", method, f"{allowed} for " + policy
                             + (" (exact with one dispatcher: --r >= --servers)"
                                if policy == "round-robin" else ""))  # fmt: skip
    mf = mf_predict(policy, lam, r=r_eff, d=d, z=z).mean_response_time
    out = []
    for x, t_mf in zip(lam, mf, strict=True):
        ref = _refined(policy, n, float(x), r_eff, d, replace) if method != "meanfield" else None
        exact = trunc = None
        want_exact = method == "exact" or (
            method == "auto" and policy in EXACT_POLICIES and _exact_cheap(policy, n, m))
        if rr_exact and method != "meanfield":
            from cloudsched.dispatch.variants import round_robin_one_dispatcher

            exact, trunc = round_robin_one_dispatcher(float(x), n), 0.0
        elif want_exact:
            sol = solve_exact(policy, n, float(x), m=m, d=d, replace=replace, tol=tol,
                              progress=progress)  # fmt: skip
            exact, trunc = sol.mean_response_time, sol.truncation
        if exact is not None:
            source, value = "exact", exact
        elif ref is not None:
            source, value = "refined", ref
        else:
            source, value = "meanfield", float(t_mf)
        out.append(FinitePrediction(policy, n, m, float(x), d, replace, float(t_mf), ref,
                                    exact, trunc, source, value))  # fmt: skip
    return out


def as_arrays(preds: list[FinitePrediction]) -> dict[str, np.ndarray]:
    """Columns of a list of predictions (NaN where a method was not run)."""
    keys = ("load", "meanfield", "refined", "exact", "truncation", "value")
    return {k: np.array([np.nan if getattr(p, k) is None else getattr(p, k) for p in preds])
            for k in keys}  # fmt: skip
