"""The fluid (mean-field ODE) transient of servers that join mid-run under Envoy's slow start.

The setting is ``simulate wlr --option join-count=J --option join-time=T0 --option
slow-start-window=W``: N servers of speed 1, Poisson arrivals at ``load * N``, the last J
servers unknown to the balancer before T0 and empty when they join.  The state is, for each
class c (old, joining), the fractions ``x[c, k]`` of its servers holding k requests; a server
of class c at level k receives requests at a rate ``a[c, k](t)`` and serves at rate 1:

* before T0, and after it when there is no slow start, Envoy draws ``choice-count`` hosts
  with replacement and takes the least active (``unweightedHostPick``): the level of the
  chosen server is the minimum of c draws, ``P(level k) = S_k^c - S_{k+1}^c`` with ``S``
  the tail over the hosts known then, split over the classes by their share of level k;
* after T0 with a window, Envoy's EDF schedule of ``weight = g_c(t) / (k + 1)^bias``
  (``hostWeight`` with ``applySlowStartFactor``): a host is picked at a rate proportional to
  its weight, ``a[c, k] = load * N * w[c, k] / sum over servers of w``, where ``g`` is 1 for
  the old servers and ``max((age / W)^(1 / aggression), min-weight-percent / 100)`` for a
  joining one until its age reaches W.

The ODE is the N -> infinity limit of a dispatcher that picks with these probabilities
independently per request.  Envoy's EDF picks deterministically in proportion to the
weights: the share of each class is the same, but a server's arrivals are more regular than
Poisson, so its queue is shorter than the ODE's at moderate load.  In a scale-up after
overload (the usual reason servers join) the backlogs are many requests long and both laws
follow the same fluid: ``tests/test_slow_start_fluid.py`` measures the agreement there and
the gap at moderate load.

CHOICE: levels are truncated at K, chosen from the overload the run can build and doubled
until the mass at level K is below 1e-9 at every output time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE

__all__ = ["SLOW_START_NOTE", "SlowStartTrajectory", "slow_start_trajectory"]

#: What the model is and where it is off, as the command line prints it.
SLOW_START_NOTE = (
    "The ODE picks servers independently in proportion to Envoy's weights; Envoy's EDF gives "
    "each server its share more regularly: the same share, and the same values while "
    "backlogs are many requests long (a scale-up after overload), but shorter queues once "
    "they are a few (measured 14% below the ODE at load 0.7; with active-request-bias=0 EDF "
    "is a weighted round robin and the ODE's long-run value is random's, far above it)."
)

_POLICY = "wlr"
_MASS_TOL = 1e-9


@dataclass(frozen=True)
class SlowStartTrajectory:
    """The slow-start transient on a time grid (times in mean service times).

    ``share_joining``: the fraction of requests sent to the joining servers at t;
    ``mean_old`` / ``mean_joining``: mean requests per old / joining server;
    ``response``: mean response time of a request sent at t (FCFS, exponential service);
    ``weight``: a joining server's slow-start factor g(t) (0 before it joins).
    """

    load: float
    servers: int
    joining: int
    join_time: float
    window: float
    t: np.ndarray
    share_joining: np.ndarray
    mean_old: np.ndarray
    mean_joining: np.ndarray
    response: np.ndarray
    weight: np.ndarray
    levels: int = field(repr=False)

    def to_rows(self) -> list[dict[str, float]]:
        """One flat row per time for pandas, CSV or JSON."""
        cols = ("share_joining", "mean_old", "mean_joining", "response", "weight")
        return [
            {"t": float(self.t[i]), **{c: float(getattr(self, c)[i]) for c in cols}}
            for i in range(self.t.size)
        ]

    def settle_time(self, tol: float = 0.05) -> float:
        """Return when the response time settles after the join.

        The first time after the join from which it stays within ``tol`` (relative) of its
        value at the end of the grid (``inf`` if it never settles on the grid).
        """
        after = self.t >= self.join_time
        end = self.response[-1]
        off = np.abs(self.response - end) > tol * end
        idx = np.flatnonzero(after & off)
        if idx.size == 0:
            return float(self.join_time)
        last = int(idx[-1])
        return float(self.t[last + 1]) if last + 1 < self.t.size else math.inf


class _Model:
    """Rates of the ODE for two classes (old, joining) truncated at ``k`` levels."""

    def __init__(self, load: float, n: int, j: int, opt: dict[str, float], k: int) -> None:
        self.load, self.n, self.j, self.k = load, n, j, k
        self.p = np.array([(n - j) / n, j / n])
        self.choices = int(opt["choice-count"])
        self.bias = opt["active-request-bias"]
        self.t0, self.window = opt["join-time"], opt["slow-start-window"]
        self.aggression, self.floor = opt["aggression"], opt["min-weight-percent"] / 100.0
        self.one_ms = 0.001 / opt["service-time"]
        self.inv = (np.arange(k) + 1.0) ** -self.bias

    def factor(self, t: float) -> float:
        """Return Envoy's applySlowStartFactor of a joining server at t (0 before it joins)."""
        if self.j == 0 or t < self.t0:
            return 0.0
        age = t - self.t0
        if self.window <= 0.0 or age >= self.window:
            return 1.0
        f = max(self.one_ms, age) / self.window
        if self.aggression != 1.0:
            f = f ** (1.0 / self.aggression)
        return max(f, self.floor)

    def arrival_flux(self, t: float, x: np.ndarray) -> np.ndarray:
        """Return ``a[c, k] * p_c * x[c, k]``, shape (2, k).

        The rate (per server of the farm) of requests sent to class c at level k.
        """
        known = self.p.copy()
        if self.j > 0 and t < self.t0:
            known[1] = 0.0
        mass = known[:, None] * x
        total = self.load  # requests per server of the farm
        if self.j > 0 and t >= self.t0 and self.window > 0.0:
            w = mass * self.inv[None, :]
            w[1] *= self.factor(t)
            return total * w / w.sum()
        frac = mass / known.sum()
        level = frac.sum(axis=0)  # X_k over the known hosts
        tail = np.concatenate([np.cumsum(level[::-1])[::-1], [0.0]])
        tail = np.clip(tail, 0.0, 1.0)
        pick = tail[:-1] ** self.choices - tail[1:] ** self.choices
        with np.errstate(invalid="ignore", divide="ignore"):
            split = np.where(level > 0.0, frac / level, 0.0)
        return total * pick[None, :] * split

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        x = y.reshape(2, self.k)
        flux = self.arrival_flux(t, np.clip(x, 0.0, None))
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(self.p[:, None] > 0.0, flux / self.p[:, None], 0.0)
        dx = -rate.copy()
        dx[:, 1:] += rate[:, :-1]
        dx[:, -1] += rate[:, -1]  # CHOICE: arrivals at level K stay there (checked small)
        dx[:, 1:] -= x[:, 1:]
        dx[:, :-1] += x[:, 1:]
        return dx.ravel()


def _options(options: Mapping[str, float]) -> dict[str, float]:
    names = [o.name for o in TABLE[_POLICY].options]
    missing = [n for n in names if n not in options]
    if missing:
        raise ParameterError(
            "options", ", ".join(missing), "given: every option of wlr, as options_by_name gives"
        )
    return {n: float(options[n]) for n in names}


def slow_start_trajectory(
    load: float,
    servers: int,
    options: Mapping[str, float],
    *,
    horizon: float | None = None,
    num_points: int = 201,
) -> SlowStartTrajectory:
    """Solve the slow-start transient of ``wlr`` (see the module notes).

    Parameters
    ----------
    load : float
        Arrival rate per server of the whole farm, in (0, 1) (before the join the old
        servers carry it all: ``load * N / (N - J)`` each, overloaded when above 1).
    servers : int
        N (>= 2).
    options : mapping
        Every option of wlr by name, resolved (durations in mean service times):
        ``cloudsched.dispatch.options.options_by_name("wlr", ["join-count=4", ...])``.
        ``join-count`` must be in 1 .. N - 1; ``join-time``, ``slow-start-window``,
        ``aggression``, ``min-weight-percent``, ``active-request-bias``, ``choice-count``
        and ``service-time`` are read; ``subset`` and ``weights=speed`` are refused.
    horizon : float
        End time (default: join-time + twice the window + 50).
    num_points : int
        Output times, evenly spaced on [0, horizon].
    """
    load = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    n = check_int("servers", servers, low=2)
    opt = _options(options)
    j = int(opt["join-count"])
    if not 1 <= j <= n - 1:
        raise ParameterError("join-count", j, f"in [1, {n - 1}] (servers that join mid-run)")
    if opt["subset"] != 0.0:
        raise ParameterError("subset", int(opt["subset"]), "0 (the fluid has no subsets)")
    if opt["weights"] != 0.0:
        raise ParameterError("weights", "speed", "equal (the fluid has equal speeds)")
    t0, window = opt["join-time"], opt["slow-start-window"]
    if horizon is None:
        horizon = t0 + 2.0 * window + 50.0
    horizon = check_real("horizon", horizon, low=0.0, low_open=True, high=1e7)
    points = check_int("num_points", num_points, low=2, high=100_000)
    over = max(0.0, load * n / (n - j) - 1.0)
    k = int(64 + 1.5 * over * min(t0, horizon) + 8.0 * math.sqrt(horizon))
    while True:
        traj = _solve(load, n, j, opt, k, horizon, points)
        if traj is not None:
            return traj
        k *= 2


def _solve(
    load: float, n: int, j: int, opt: dict[str, float], k: int, horizon: float, points: int
) -> SlowStartTrajectory | None:
    model = _Model(load, n, j, opt, k)
    t_eval = np.linspace(0.0, horizon, points)
    y = np.zeros((2, k))
    y[:, 0] = 1.0
    cuts = sorted({0.0, horizon, *(c for c in (model.t0, model.t0 + model.window) if c < horizon)})
    states = np.empty((points, 2 * k))
    for a, b in itertools.pairwise(cuts):  # the weight has kinks at the cuts
        inside = (t_eval >= a) & ((t_eval < b) | (b == horizon))
        t_seg = t_eval[inside]
        m = t_seg.size
        if m == 0 or t_seg[-1] < b:
            t_seg = np.append(t_seg, b)
        sol = solve_ivp(
            model.rhs, (a, b), y.ravel(), t_eval=t_seg, rtol=1e-8, atol=1e-11, method="RK45"
        )
        if not sol.success:
            raise RuntimeError(f"slow-start ODE failed: {sol.message}")
        states[inside] = sol.y[:, :m].T
        y = sol.y[:, -1].reshape(2, k)
    x = np.clip(states.reshape(points, 2, k), 0.0, None)
    if x[:, :, -1].max() > _MASS_TOL:
        return None
    levels = np.arange(k, dtype=float)
    share, resp, weight = (np.empty(points) for _ in range(3))
    for i, t in enumerate(t_eval):
        flux = model.arrival_flux(float(t), x[i])
        share[i] = flux[1].sum() / flux.sum()
        resp[i] = float((flux * (levels + 1.0)[None, :]).sum() / flux.sum())
        weight[i] = model.factor(float(t))
    return SlowStartTrajectory(
        load=load,
        servers=n,
        joining=j,
        join_time=model.t0,
        window=model.window,
        t=t_eval,
        share_joining=share,
        mean_old=x[:, 0, :] @ levels,
        mean_joining=x[:, 1, :] @ levels,
        response=resp,
        weight=weight,
        levels=k,
    )
