"""Fluid (mean-field ODE) trajectories for task dispatch.

The state is the vector of fractions of servers in each mean-field state of
``docs/explanation/design/dispatch-meanfield.md``:

* I-queue policies (``jiq``, ``jiq-pod``): ``q_1..q_K`` (busy with i tasks) followed by
  ``y_1..y_J`` with ``y_j = q_{0,j}`` (idle, its I-queue holds j servers).  The I-queue
  size distribution is derived, ``p_j = r * y_j / j`` and ``p_0 = 1 - sum_{j>=1} p_j``.
* ``random`` and ``pod``: ``q_0..q_K``.

The ODE integrates the per-server transition rates of the note with the tail ``s_1(t)``
in place of its stationary value ``lam`` (in ``kappa`` = probability weight with which a
probing dispatcher picks a given idle server).  Its long-run limit is an independent check
of the closed forms in :mod:`cloudsched.dispatch.theory.meanfield`, and it answers transient
questions (how fast does the farm recover after a burst?).

CHOICE: the state is truncated at K busy levels and J I-queue sizes chosen from the
closed-form steady state (mass beyond them below 1e-15).  Flows that would leave the
truncated space are dropped (busy) or folded into the last I-queue level, so the total
mass stays exactly 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from cloudsched.dispatch.theory.meanfield import R_MIN, predict
from cloudsched.errors import ParameterError, check_int, check_loads, check_real
from cloudsched.policy_table import TABLE, with_capability
from cloudsched.progress import Progress

__all__ = ["FluidTrajectory", "fluid_steady_state", "fluid_trajectory"]

#: Policies with a fluid ODE (the model table, :mod:`.models`).
FLUID_POLICIES = with_capability("fluid")

Rhs = Callable[[float, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class FluidTrajectory:
    """Solution of the fluid ODE on a time grid.

    Attributes
    ----------
    policy : str
        Policy name.
    load, r : float
        Arrival rate per server and servers per dispatcher.
    d : int
        Probes per decision (1 for ``random`` and ``jiq``).
    t : numpy.ndarray
        Times, shape ``(n,)``.
    tail : numpy.ndarray
        ``s_i(t)`` for i = 1..K, shape ``(n, K)``.
    p0 : numpy.ndarray
        Fraction of empty I-queues, shape ``(n,)`` (ones without I-queues).
    state : numpy.ndarray
        The raw ODE state at the last time (see the module docstring for its layout).
    """

    policy: str
    load: float
    r: float
    d: int
    t: np.ndarray
    tail: np.ndarray
    p0: np.ndarray
    state: np.ndarray = field(repr=False)

    @property
    def mean_tasks(self) -> np.ndarray:
        """Mean number of tasks per server, ``sum_i s_i(t)``, shape ``(n,)``."""
        return self.tail.sum(axis=1)

    def to_rows(self, tail: int = 6) -> list[dict[str, float]]:
        """One flat row per time for pandas or CSV: ``t``, ``p0``, ``mean_tasks``, ``s_i``."""
        k = min(tail, self.tail.shape[1])
        mean = self.mean_tasks
        return [
            {
                "t": float(self.t[n]),
                "p0": float(self.p0[n]),
                "mean_tasks": float(mean[n]),
                **{f"s_{i + 1}": float(self.tail[n, i]) if i < k else 0.0 for i in range(tail)},
            }
            for n in range(self.t.size)
        ]


def _sizes(policy: str, load: float, r: float, d: int) -> tuple[int, int]:
    """Return truncation levels (K busy levels, J I-queue sizes) with negligible mass beyond."""
    pred = predict(policy, [load], r=r, d=d, tail_tol=1e-16, max_tail=5000)
    k_levels = max(12, pred.tails[0].size + 8)
    if not TABLE[policy].iqueues:
        return k_levels, 0
    j_levels = max(12, pred.iqueue(0).size + 8, int(3 * r) + 8)
    return k_levels, j_levels


def _rhs_iqueue(lam: float, r: float, d: int, k_levels: int, j_levels: int) -> Rhs:
    j = np.arange(1, j_levels + 1, dtype=np.float64)
    powers = np.arange(d, dtype=np.float64)

    def rhs(_t: float, x: np.ndarray) -> np.ndarray:
        q = x[:k_levels]
        y = x[k_levels:]
        s = np.cumsum(q[::-1])[::-1]  # s_1..s_K
        p = r * y / j
        p0 = max(0.0, 1.0 - p.sum())
        kappa = float(np.sum(s[0] ** powers))  # (1 - s_1^d) / (1 - s_1)
        s_ext = np.concatenate([s, [0.0]])
        up = lam * p0 * (s_ext[:-2] ** d - s_ext[1:-1] ** d)  # level i -> i+1, i = 1..K-1
        hit = y * lam * (p0 * kappa + r / j)  # (0, j) -> 1
        grow = y[:-1] * r * q[0]  # (0, j) -> (0, j+1), j = 1..J-1
        shrink = y[1:] * lam * j[:-1] * (p0 * kappa + r / j[1:])  # (0, j+1) -> (0, j)
        dq = np.zeros_like(q)
        dq[:-1] += q[1:] - up
        dq[1:] += up - q[1:]
        dq[0] += hit.sum() - q[0]
        dy = np.zeros_like(y)
        dy += q[0] * np.concatenate([[p0], p[:-1]])  # join an I-queue of size j-1
        dy[-1] += q[0] * p[-1]  # CHOICE: joins beyond J are folded into level J
        dy -= hit
        dy[1:] += grow - shrink
        dy[:-1] += shrink - grow
        return np.concatenate([dq, dy])

    return rhs


def _rhs_plain(lam: float, d: int) -> Rhs:
    def rhs(_t: float, q: np.ndarray) -> np.ndarray:
        s = np.cumsum(q[::-1])[::-1]  # s_0..s_K with s_0 = 1
        up = lam * (s[:-1] ** d - s[1:] ** d)  # level i -> i+1, i = 0..K-1
        dq = np.zeros_like(q)
        dq[:-1] += q[1:] - up
        dq[1:] += up - q[1:]
        return dq

    return rhs


def _initial_state(
    policy: str,
    r: float,
    d: int,
    k_levels: int,
    j_levels: int,
    initial_tasks: int,
    initial_load: float | None,
) -> np.ndarray:
    iq = TABLE[policy].iqueues
    busy = np.zeros(k_levels if iq else k_levels + 1)
    offset = 1 if iq else 0  # index of level 1 in `busy`
    y = np.zeros(j_levels)
    if initial_load is not None:
        pred = predict(policy, [initial_load], r=r, d=d, tail_tol=1e-300, max_tail=k_levels)
        occ = pred.occupancy(0)[: k_levels + 1]
        busy[: occ.size - 1 + (1 - offset)] = occ[offset:]
        if iq:
            p = pred.iqueue(0)[1 : j_levels + 1]
            y[: p.size] = np.arange(1, p.size + 1) * p / r
    elif initial_tasks > 0:
        busy[min(initial_tasks, k_levels) - 1 + (1 - offset)] = 1.0
    elif iq:
        # all idle; I-queue sizes Poisson(r), so y_j = j p_j / r = Poisson(r) pmf at j-1
        log_factorial = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, j_levels)))])
        y = np.exp(np.arange(j_levels) * np.log(r) - r - log_factorial[:j_levels])
    else:
        busy[0] = 1.0
    state = np.concatenate([busy, y])
    return state / state.sum()


def _validate(policy: str, load: float, r: float, d: int) -> tuple[float, float, int]:
    if policy not in FLUID_POLICIES:
        raise ParameterError("policy", policy, "one of " + ", ".join(FLUID_POLICIES))
    lam = float(check_loads("load", load)[0])
    r = check_real("r", r, low=R_MIN)
    d = TABLE[policy].effective_d(check_int("d", d, low=1, high=4096))
    return lam, r, d


def _watched(rhs: Rhs, t0: float, t1: float, progress: Progress) -> Rhs:
    """``rhs`` reporting the share of ``[t0, t1]`` integrated so far (never going back)."""
    done = [0.0]

    def watched(t: float, x: np.ndarray) -> np.ndarray:
        share = min(1.0, max(done[0], (t - t0) / (t1 - t0)))
        if share > done[0]:
            done[0] = share
            progress(share, "")
        return rhs(t, x)

    return watched


def _solve(
    policy: str,
    lam: float,
    r: float,
    d: int,
    x0: np.ndarray,
    k_levels: int,
    t_eval: np.ndarray,
    rtol: float,
    atol: float,
    progress: Progress | None = None,
) -> FluidTrajectory:
    """Integrate from ``x0`` at time ``t_eval[0]`` and convert states to tails and p0."""
    j_levels = x0.size - k_levels if TABLE[policy].iqueues else 0
    rhs = _rhs_iqueue(lam, r, d, k_levels, j_levels) if j_levels else _rhs_plain(lam, d)
    if progress is not None:
        rhs = _watched(rhs, float(t_eval[0]), float(t_eval[-1]), progress)
    from scipy.integrate import solve_ivp  # here: it takes 0.2 s to import

    sol = solve_ivp(
        rhs, (t_eval[0], t_eval[-1]), x0, method="LSODA", t_eval=t_eval, rtol=rtol, atol=atol
    )
    if not sol.success:  # pragma: no cover - LSODA reports its own failure
        raise RuntimeError(f"fluid ODE integration failed: {sol.message}")
    x = sol.y.T
    if j_levels:
        q = x[:, :k_levels]
        jj = np.arange(1, j_levels + 1)
        p0 = np.clip(1.0 - (r * x[:, k_levels:] / jj).sum(axis=1), 0.0, 1.0)
    else:
        q = x[:, 1:]
        p0 = np.ones(x.shape[0])
    tail = np.cumsum(q[:, ::-1], axis=1)[:, ::-1]
    return FluidTrajectory(policy, lam, r, d, sol.t, tail, p0, x[-1].copy())


def _check_state_size(n: int, r: float) -> None:
    """LSODA keeps dense n x n matrices (a Jacobian and its factor): refuse what cannot fit."""
    from cloudsched.resources import check_memory

    check_memory("r", r, 3 * 8.0 * n * n, f"the fluid ODE's {n} equations (dense Jacobian)")


#: Longest integration: far past the slowest relaxation of a stable system (~4e4 time units at
#: load 0.99); longer spans only make LSODA fail.
MAX_HORIZON = 1e7
#: Most output times of one trajectory.
MAX_POINTS = 1_000_000
#: Largest initial backlog per server: the ODE carries one level per task and LSODA a dense
#: Jacobian of that size squared, so 1,000 levels already take seconds per step.
MAX_INITIAL_TASKS = 1000


def fluid_trajectory(
    policy: str,
    load: float,
    *,
    r: float = 10.0,
    d: int = 2,
    horizon: float = 50.0,
    num_points: int = 201,
    initial_tasks: int = 0,
    initial_load: float | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-13,
    progress: Progress | None = None,
) -> FluidTrajectory:
    """Integrate the fluid ODE from an initial state over ``[0, horizon]``.

    Parameters
    ----------
    policy : str
        ``random``, ``pod``, ``jiq`` or ``jiq-pod``.
    load : float
        Arrival rate per server after time 0, in (0, 1).
    r : float
        Servers per dispatcher (I-queue policies).
    d : int
        Probes per decision (``pod``, ``jiq-pod``).
    horizon : float
        End time (> 0); service times have mean 1.
    num_points : int
        Number of output times, evenly spaced (>= 2).
    initial_tasks : int
        Start with every server holding this many tasks (0: all idle, I-queue sizes
        Poisson(r)).  Ignored when ``initial_load`` is given.
    initial_load : float or None
        Start from the mean-field steady state at this load instead, e.g. to study a
        load step.
    rtol, atol : float
        Tolerances passed to :func:`scipy.integrate.solve_ivp` (LSODA).
    progress : callable, optional
        Called with the share of ``[0, horizon]`` integrated so far (large ``r`` takes long:
        about 25 s at r = 613).

    Returns
    -------
    FluidTrajectory
        The trajectory on ``num_points`` evenly spaced times.
    """
    lam, r, d = _validate(policy, load, r, d)
    horizon = check_real("horizon", horizon, low=0.0, high=MAX_HORIZON, low_open=True)
    num_points = check_int("num_points", num_points, low=2, high=MAX_POINTS)
    initial_tasks = check_int("initial_tasks", initial_tasks, low=0, high=MAX_INITIAL_TASKS)
    if initial_load is not None:
        initial_load = float(check_loads("initial_load", initial_load)[0])
    k_levels, j_levels = _sizes(policy, max(lam, initial_load or 0.0), r, d)
    k_levels = max(k_levels, initial_tasks + 8)
    _check_state_size(k_levels + j_levels, r)
    x0 = _initial_state(policy, r, d, k_levels, j_levels, initial_tasks, initial_load)
    t_eval = np.linspace(0.0, horizon, num_points)
    return _solve(policy, lam, r, d, x0, k_levels, t_eval, rtol, atol, progress)


def fluid_steady_state(
    policy: str, load: float, *, r: float = 10.0, d: int = 2, tol: float = 1e-12
) -> FluidTrajectory:
    """Integrate the fluid ODE from an empty system until it stops moving.

    Integrates in chunks of doubling length, each continuing from the last state, until
    the mean number of tasks per server and ``p0`` change by less than ``tol`` over the
    last tenth of a chunk.  Returns that last chunk (its final row is the limit).
    """
    lam, r, d = _validate(policy, load, r, d)
    k_levels, j_levels = _sizes(policy, lam, r, d)
    _check_state_size(k_levels + j_levels, r)
    x = _initial_state(policy, r, d, k_levels, j_levels, 0, None)
    t0, chunk = 0.0, 50.0
    while True:
        t_eval = np.array([t0, t0 + 0.9 * chunk, t0 + chunk])
        traj = _solve(policy, lam, r, d, x, k_levels, t_eval, 1e-10, 1e-13)
        m = traj.mean_tasks
        if abs(m[-1] - m[-2]) < tol and abs(traj.p0[-1] - traj.p0[-2]) < tol:
            return traj
        if t0 > 1e6:
            raise RuntimeError(f"fluid ODE did not settle by t = {t0:g}")
        x, t0, chunk = traj.state, t0 + chunk, 2.0 * chunk
