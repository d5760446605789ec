"""Predictions at a finite number of servers: mean field, refined mean field, exact chain.

``predict_finite(policy, servers, loads)`` gives, for each load, the mean-field response
time, the refined one (``T + V / N``: :mod:`cloudsched.dispatch.theory.population` on the exact
population models of :mod:`cloudsched.dispatch.theory.finite_models`) and, where the state space is
small enough, the exact one (:mod:`cloudsched.dispatch.theory.exact`).  ``method`` says which of
them is *the* answer (``value``): ``auto`` takes the exact chain when it is cheap (at most
:data:`AUTO_EXACT_STATES` states at the cap the mean field suggests), else the refined
value where the policy has one, else the mean field.

The number of dispatchers is ``M = max(1, round(N / r))``; the refined and exact models use
``r = N / M`` so that both describe the same system.  Pod(d) and JIQ-Pod(d) probe ``d``
distinct servers unless ``replace`` (the simulator's default is the same).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from cloudsched.errors import ParameterError, check_choice, check_int, check_loads, check_real
from cloudsched.policy_table import PolicyRow, get_row
from cloudsched.progress import Progress

if TYPE_CHECKING:
    from cloudsched.dispatch.theory.population import Refined

__all__ = [
    "AUTO_EXACT_STATES",
    "MAX_REFINED_EQUATIONS",
    "METHODS",
    "FinitePrediction",
    "as_arrays",
    "check_finite",
    "predict_finite",
    "refined_mean",
]

METHODS = ("auto", "meanfield", "refined", "exact")
#: Largest I-queue population model the refined mean field solves (its memory grows as the
#: square of its equations, about 200 bytes each pair, and its time as the cube: 581
#: equations take 1.6 s and 60 MB, so 1500 about 30 s and 450 MB; jiq with r = 10^6 would
#: need tens of GB).
MAX_REFINED_EQUATIONS = 1500
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


def _refined(
    policy: str, n: int, lam: float, r: float, d: int, replace: bool, strict: bool = True
) -> float | None:
    """Return the refined mean response time (None without a model).

    An I-queue model of more than :data:`MAX_REFINED_EQUATIONS` equations is refused
    (``strict``) or skipped (None).
    """
    model = get_row(policy)
    if not model.refined:
        return None
    if model.iqueues:
        from cloudsched.dispatch.theory.finite_models import population_size

        size = population_size(policy, lam, r, d)
        if size > MAX_REFINED_EQUATIONS:
            if not strict:
                return None
            raise ParameterError(
                "r",
                r,
                f"small enough for the refined mean field's equations ({size} at load {lam:g}, "
                f"at most {MAX_REFINED_EQUATIONS}; they grow with r's I-queue lengths): use "
                "--method meanfield, or exact on a small farm",
            )
    return _refinement(policy, lam, r, d, replace).tasks(n) / lam


@lru_cache(maxsize=32)
def _refinement(policy: str, lam: float, r: float, d: int, replace: bool) -> Refined:
    """Return the refined mean field of one setting (cached: every N reads the same one)."""
    from cloudsched.dispatch.theory.finite_models import population_model
    from cloudsched.dispatch.theory.population import refine

    model, pi = population_model(policy, lam, r=r, d=d, replace=replace)
    return refine(model, pi)


def refined_mean(policy: str, n: int, lam: float, r: float, d: int, *, replace: bool) -> float:
    """Refined (1/N) mean response time of ``policy`` on ``n`` servers (a model with one)."""
    value = _refined(policy, n, lam, r, d, replace)
    if value is None:
        raise ValueError(f"{policy} has no refined mean field")
    return value


def _exact_cheap(policy: str, n: int, m: int) -> bool:
    from cloudsched.dispatch.theory.exact import state_count

    return state_count(policy, n, m, 24) <= AUTO_EXACT_STATES


def _check_method(model: PolicyRow, method: str, m: int) -> None:
    """Refuse a method the model table says the policy lacks, naming the ones it has."""
    has = (
        ["meanfield"]
        + (["refined"] if model.refined else [])
        + (["exact"] if model.exact_at(m) else [])
    )
    if method == "auto" or method in has:
        return
    why = model.why or "no such model for it"
    if method == "exact" and model.exact == "one dispatcher":
        why = "exact with one dispatcher: --r >= --servers"
    raise ParameterError("method", method, f"{' or '.join(has)} for {model.policy} ({why})")


def check_finite(
    policy: str,
    servers: int,
    loads: ArrayLike,
    *,
    r: float,
    d: int,
    replace: bool,
    method: str,
    tol: float,
) -> tuple[int, np.ndarray, float, int, float, int]:
    """Check the arguments of :func:`predict_finite`; return N, loads, r, d, tol and M."""
    model = get_row(policy)
    method = check_choice("method", method, METHODS)
    n = check_int("servers", servers, low=1, high=10**9)
    lam = check_loads("load", loads)
    r = check_real("r", r, low=1e-6, high=1e8)
    d = check_int("d", d, low=1, high=n if model.probes == "d" and not replace else 4096)
    tol = check_real("tol", tol, low=0.0, high=0.1, low_open=True)
    dispatched = model.iqueues or model.exact == "one dispatcher"  # M matters
    m = max(1, round(n / r)) if dispatched else 1
    _check_method(model, method, m)
    return n, lam, r, d, tol, m


def predict_finite(
    policy: str,
    servers: int,
    loads: ArrayLike,
    *,
    r: float = 10.0,
    d: int = 2,
    replace: bool = False,
    method: str = "auto",
    tol: float = 1e-6,
    z: int = 1,
    progress: Progress | None = None,
) -> list[FinitePrediction]:
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
    from cloudsched.dispatch.theory.exact import solve_exact
    from cloudsched.dispatch.theory.limit import meanfield_limit

    model = get_row(policy)
    n, lam, r, d, tol, m = check_finite(
        policy, servers, loads, r=r, d=d, replace=replace, method=method, tol=tol
    )
    r_eff = n / m if model.iqueues or model.exact == "one dispatcher" else r
    rr_exact = model.exact == "one dispatcher" and m == 1  # round-robin: E_N/M/1
    mf = meanfield_limit(policy, lam, r=r_eff, d=d, z=z).mean_response_time
    out = []
    for x, t_mf in zip(lam, mf, strict=True):
        ref = (
            _refined(policy, n, float(x), r_eff, d, replace, strict=method == "refined")
            if method != "meanfield"
            else None
        )
        exact = trunc = None
        want_exact = method == "exact" or (
            method == "auto" and model.exact == "any" and _exact_cheap(policy, n, m)
        )
        if rr_exact and method != "meanfield":
            from cloudsched.dispatch.theory.variants import round_robin_one_dispatcher

            exact, trunc = round_robin_one_dispatcher(float(x), n), 0.0
        elif want_exact:
            sol = solve_exact(
                policy, n, float(x), m=m, d=d, replace=replace, tol=tol, progress=progress
            )
            exact, trunc = sol.mean_response_time, sol.truncation
        if exact is not None:
            source, value = "exact", exact
        elif ref is not None:
            source, value = "refined", ref
        else:
            source, value = "meanfield", float(t_mf)
        out.append(
            FinitePrediction(
                policy, n, m, float(x), d, replace, float(t_mf), ref, exact, trunc, source, value
            )
        )
    return out


def as_arrays(preds: list[FinitePrediction]) -> dict[str, np.ndarray]:
    """Columns of a list of predictions (NaN where a method was not run)."""
    keys = ("load", "meanfield", "refined", "exact", "truncation", "value")
    return {
        k: np.array([np.nan if getattr(p, k) is None else getattr(p, k) for p in preds])
        for k in keys
    }
