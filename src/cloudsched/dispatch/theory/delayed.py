"""Mean field with late information: delay-differential equations, solved by the method of steps.

The farm of :mod:`cloudsched.dispatch.delays` in the limit of many servers (N, M -> inf,
r = N/M fixed), with one fixed delay ``tau`` (mean service times):

``jiq`` / ``jiq-pod`` with a ``join`` delay (deletes at once)
    The fluid model of :mod:`.fluid` (busy levels ``q_i``, idle servers listed in an
    I-queue of ``j`` entries ``y_j``) plus ``f``, the idle servers whose join is on its way.
    Such a server gets a fallback task at rate ``lam p0 kappa`` (``kappa`` the pod weight
    of an idle server, 1 for ``jiq``); then its join is void.  A join sent at ``t - tau``
    lands at ``t`` if its server stayed idle: the landing flux is
    ``q_1(t - tau) exp(-(H(t) - H(t - tau)))`` with ``H`` the integral of that hit rate.
    No closure: this is the limit of the simulated model (checked against the simulator in
    ``tests/test_delays.py``).
``pod`` with an ``info`` delay (dispatchers read each server's length ``tau`` ago)
    Here no finite set of equations is exact: a server's arrival rate now depends on its
    own length ``tau`` ago, so each server carries its path.  CLOSURE: a server's path over
    the last ``tau`` is taken as that of the birth-death chain with the current per-length
    arrival rates, so the servers published at ``j`` are now spread as row ``j`` of that
    chain's transition matrix over ``tau`` (exact as ``tau -> 0`` and ``tau -> inf``).  The
    published lengths are the lengths ``tau`` ago (the delayed term).  Measured against the
    simulator at load 0.9, d = 2: within 1.5% up to tau = 0.5, 3% at 1, 8% low at 2 and 16%
    low at 4; the results say ``approximate``.
``jsq`` with an ``info`` delay is refused: its herding (every dispatcher sends to the few
servers that looked shortest, which the closure spreads over all) is what the closure
cannot hold; the simulator shows it.

The method of steps on a uniform grid: the step ``h`` divides ``tau``, so the delayed terms
are values the integration already made (between grid points, for the half steps of the
classical Runge-Kutta scheme, linearly interpolated).  The start is the no-delay fixed
point: for ``pod`` it has held since long before time 0 (the published lengths are the
lengths), for ``jiq`` and ``jiq-pod`` every idle server is listed and no join is on its way
(as the simulator starts).  The integration runs in chunks of ``100 + 20 tau`` time units
until the mean tasks per server of two successive chunks agree to ``tol``; the answer is
the last chunk's average, with its swing (largest minus smallest mean queue, relative): a
delay that makes the farm oscillate shows as a swing that does not die out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from cloudsched.dispatch.theory._delayed_jiq import jiq_rhs
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE

__all__ = ["APPROXIMATE", "DELAYED_POLICIES", "DelayedPrediction", "delayed_meanfield"]

Rhs = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
PolicyRow = tuple[
    Iterator[np.ndarray], float, Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], bool]
]
Outcome = tuple[np.ndarray, np.ndarray, np.ndarray, float, float, bool]

#: Policies with a delayed mean field (the model table's ``delayed``), and the kind of
#: delay each one takes.
DELAYED_POLICIES = {p: m.delayed.split()[0] for p, m in TABLE.items() if m.delayed}
#: Which of them rest on a closure (an approximation; see the module notes).
APPROXIMATE = tuple(p for p, m in TABLE.items() if m.delayed.endswith("closure"))
#: Longest integration (time units) before a run is called unconverged.
MAX_HORIZON = 50_000.0
#: Longest delay accepted (mean service times): the horizon grows with it.
MAX_TAU = 100.0
_MAX_LEVELS = 400


@dataclass(frozen=True)
class DelayedPrediction:
    """The delayed mean field's answer at one delay.

    ``mean_response_time`` (Little's law on the time-averaged tasks per server),
    ``tail[i]`` the time-averaged fraction of servers holding more than ``i`` tasks,
    ``swing`` the largest minus the smallest mean tasks per server over the averaging
    window (relative to their mean), ``t`` / ``queue`` the mean tasks per server over time,
    ``approximate`` whether a closure stands between the model and the answer, ``converged``
    whether two successive chunks agreed before :data:`MAX_HORIZON`.
    """

    policy: str
    load: float
    delay: float
    kind: str
    d: int
    r: float
    mean_response_time: float
    tail: np.ndarray
    swing: float
    t: np.ndarray
    queue: np.ndarray
    approximate: bool
    converged: bool

    @property
    def oscillates(self) -> bool:
        """Whether the mean queue still swings by more than 1% at the end of the horizon."""
        return self.swing > 0.01


def _check(
    policy: str, load: float, delay: float, d: int, r: float
) -> tuple[float, float, int, float]:
    if TABLE[policy].probes == "all":  # jsq
        raise ParameterError(
            "policy",
            policy,
            f"one of {', '.join(DELAYED_POLICIES)}: jsq with late information herds, which "
            "no closure here holds; simulate it (--delay info=...)",
        )
    if policy not in DELAYED_POLICIES:
        raise ParameterError("policy", policy, f"one of {', '.join(DELAYED_POLICIES)}")
    lam = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    tau = check_real("delay", delay, low=0.0, high=MAX_TAU)
    d = check_int("d", d, low=1, high=4096) if TABLE[policy].probes == "d" else 1
    r = check_real("r", r, low=1.0, high=1e4)
    return lam, tau, d, r


def delayed_meanfield(
    policy: str, load: float, delay: float, *, d: int = 2, r: float = 10.0, tol: float = 1e-4
) -> DelayedPrediction:
    """Solve the delayed mean field of ``policy`` at ``load`` with a fixed ``delay``.

    ``delay`` is the ``info`` delay for ``pod`` (``d`` probes) and the ``join`` delay for
    ``jiq`` and ``jiq-pod`` (``r`` servers per dispatcher); 0 gives the no-delay mean
    field.  ``tol``: relative agreement of two successive chunks' mean tasks per server.
    """
    lam, tau, d, r = _check(policy, load, delay, d, r)
    tol = check_real("tol", tol, low=1e-9, high=0.1)
    kind = DELAYED_POLICIES[policy]
    approx = policy in APPROXIMATE and tau > 0.0
    if tau == 0.0:  # the closed forms
        pred = predict(policy, [lam], r=r, d=d)
        mean = float(pred.mean_response_time[0])
        one = np.array([mean * lam])
        return DelayedPrediction(
            policy, lam, 0.0, kind, d, r, mean, pred.tails[0], 0.0, np.zeros(1), one, False, True
        )
    levels = 32
    while True:
        if kind == "info":
            states, h, busy, full = _pod_states(lam, tau, d, levels)
        else:
            states, h, busy, full = _jiq_states(lam, tau, d, r, TABLE[policy].probes == "d", levels)
        out = _drive(states, h, tau, busy, full, tol)
        if out is not None:
            break
        levels *= 2
        if levels > _MAX_LEVELS:
            raise ParameterError(
                "delay", delay, f"small enough that queues stay below {_MAX_LEVELS} tasks"
            )
    t, queue, tail, mean_q, swing, converged = out
    return DelayedPrediction(
        policy, lam, tau, kind, d, r, mean_q / lam, tail, swing, t, queue, approx, converged
    )


def _drive(
    states: Iterator[np.ndarray],
    h: float,
    tau: float,
    busy: Callable[[np.ndarray], np.ndarray],
    full: Callable[[np.ndarray], bool],
    tol: float,
) -> Outcome | None:
    """Run ``states`` chunk by chunk until two chunks agree; None if a top level fills.

    ``busy(x)``: the fraction of servers holding i = 1, 2, ... tasks; ``full(x)``: whether
    the truncation shows (more levels are then needed).  Returns the times and mean tasks
    per server (every tenth step), the last chunk's tail, mean and swing, and whether it
    converged.
    """
    chunk = math.ceil((100.0 + 20.0 * tau) / h)
    kept_t: list[float] = []
    kept_q: list[float] = []
    means: list[float] = []
    acc, low, high = 0.0, math.inf, -math.inf
    acc_tail = np.zeros(0)
    for k, x in enumerate(states):
        q = busy(x)
        mean = float(np.arange(1, q.size + 1) @ q)
        if full(x) or not math.isfinite(mean):
            return None
        acc += mean
        tail_now = np.cumsum(q[::-1])[::-1]
        acc_tail = tail_now if acc_tail.size == 0 else acc_tail + tail_now
        low, high = min(low, mean), max(high, mean)
        if k % 10 == 0:
            kept_t.append((k + 1) * h)
            kept_q.append(mean)
        if (k + 1) % chunk:
            continue
        means.append(acc / chunk)
        done = (
            len(means) >= 3
            and max(abs(means[-1] - means[-2]), abs(means[-2] - means[-3])) <= tol * means[-1]
        )
        if done or (k + 1) * h >= MAX_HORIZON:
            tail = acc_tail / chunk
            swing = (high - low) / max(means[-1], 1e-300)
            return np.array(kept_t), np.array(kept_q), tail, means[-1], swing, done
        acc, low, high = 0.0, math.inf, -math.inf
        acc_tail = np.zeros(0)
    return None  # pragma: no cover - the states never run out


def _grid(tau: float, rate: float) -> tuple[float, int]:
    """Return a step ``h`` dividing ``tau`` (and ``tau / h``), RK4-stable at ``rate``."""
    h_max = min(0.05, 1.0 / rate)  # RK4 is stable to h * rate = 2.78 on a real decay
    steps = max(1, math.ceil(tau / h_max))
    return tau / steps, steps


def _rk4(rhs: Rhs, x: np.ndarray, hist: np.ndarray, h: float, n_steps: int) -> Iterator[np.ndarray]:
    """Integrate ``x' = rhs(x, delayed)``; ``hist`` holds the delayed values of the last delay.

    ``hist`` (``(steps, ...)``, ``steps = tau / h >= 1``): what ``rhs`` reported at the grid
    points ``t - tau, ..., t - h``, oldest first; ``rhs`` returns the derivative and the value
    to keep for later.  Yields each new state.
    """
    ring = hist.copy()
    steps = ring.shape[0]
    head = 0  # the value tau ago
    for _ in range(n_steps):
        old = ring[head]
        k1, now = rhs(x, old)
        nxt = ring[(head + 1) % steps] if steps > 1 else now
        mid = 0.5 * (old + nxt)
        k2, _ = rhs(x + 0.5 * h * k1, mid)
        k3, _ = rhs(x + 0.5 * h * k2, mid)
        k4, _ = rhs(x + h * k3, nxt)
        x = x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        ring[head] = now  # needed again `steps` steps from here
        head = (head + 1) % steps
        yield x


def _pod_rates(b: np.ndarray, lam: float, d: int) -> np.ndarray:
    """Arrival rate per server published at each level: ``lam (B_j^d - B_{j+1}^d) / b_j``."""
    big = np.clip(np.cumsum(b[::-1])[::-1], 0.0, 1.0)
    nxt = np.append(big[1:], 0.0)
    share = big**d - nxt**d
    limit = d * big ** (d - 1)  # the ratio as b_j -> 0
    safe = np.where(b > 1e-12, b, 1.0)
    return lam * np.where(b > 1e-12, share / safe, limit)


def _pod_states(lam: float, tau: float, d: int, levels: int) -> PolicyRow:
    """Return the ``info``-delay model of pod under the path closure (see :func:`_drive`)."""
    from scipy.linalg import expm  # here: it takes 0.2 s to import

    occ = predict("pod", [lam], d=d, tail_tol=1e-300, max_tail=levels).occupancy(0)
    q0 = np.zeros(levels)
    q0[: min(levels, occ.size)] = occ[:levels]
    q0 /= q0.sum()
    state = {"next": _pod_rates(q0, lam, d), "p": np.eye(levels)}

    def rhs(q: np.ndarray, published: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = _pod_rates(published, lam, d)
        x = published[:, None] * state["p"]  # published j, length i now (the closure)
        held = x.sum(axis=0)
        a = np.where(held > 1e-300, (w[:, None] * x).sum(axis=0) / np.maximum(held, 1e-300), w)
        a[-1] = 0.0
        up = a * q
        down = q.copy()
        down[0] = 0.0
        dq = -up - down
        dq[1:] += up[:-1]
        dq[:-1] += down[1:]
        state["next"] = a
        return dq, q

    def stepped() -> Iterator[np.ndarray]:
        h, steps = _grid(tau, lam * d + 1.0)
        hist = np.repeat(q0[None], steps, axis=0)  # the fixed point before time 0
        for k, x in enumerate(_rk4(rhs, q0, hist, h, 1 << 62)):
            if k % 5 == 0:  # the chain's transition matrix over tau, refreshed
                a = state["next"]
                gen = np.diag(a[:-1], 1) + np.diag(np.ones(levels - 1), -1)
                gen -= np.diag(gen.sum(axis=1))
                state["p"] = expm(gen * tau)
            yield x

    h, _ = _grid(tau, lam * d + 1.0)
    return stepped(), h, lambda q: q[1:], lambda q: bool(q[-1] > 1e-9)


def _jiq_states(lam: float, tau: float, d: int, r: float, pod: bool, levels: int) -> PolicyRow:
    """Return the ``join``-delay model (states, step, busy levels, truncation check)."""
    name = "jiq-pod" if pod else "jiq"
    pred = predict(name, [lam], r=r, d=d, tail_tol=1e-300, max_tail=levels)
    occ = pred.occupancy(0)
    j_levels = max(24, int(4 * r) + 16)
    jj = np.arange(1, j_levels + 1, dtype=np.float64)
    iq = pred.iqueue(0)[1 : j_levels + 1]
    y0 = np.zeros(j_levels)
    y0[: iq.size] = jj[: iq.size] * iq / r
    q0 = np.zeros(levels)
    q0[: min(levels, occ.size - 1)] = occ[1 : levels + 1]
    size = levels + j_levels + 2

    def rhs(x: np.ndarray, delayed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dx = np.empty(size)
        jiq_rhs(x, (delayed[0], delayed[1]), dx, lam, r, d, levels, j_levels)
        return dx, np.array([x[0], x[-1]])

    h, steps = _grid(tau, lam * (r + d + j_levels) + 1.0)
    x0 = np.concatenate([q0, y0, [0.0, 0.0]])  # every idle server listed, no join on its way
    hist = np.zeros((steps, 2))  # (as the simulator starts): none was sent before time 0

    def full(x: np.ndarray) -> bool:
        return bool(x[levels - 1] > 1e-9 or x[levels + j_levels - 1] > 1e-9)

    return _rk4(rhs, x0, hist, h, 1 << 62), h, lambda x: x[:levels], full
