"""Density-dependent population processes: fixed point and the refined (1/N) mean field.

A model on ``n`` coordinates has transitions ``t = 0..T-1``: at rate ``N * beta_t(x)``
(``+ gamma_t(x)``, a rate correction of order 1, for the finite-N effect of sampling without
replacement) the state jumps by ``L[:, t] / N``.  The drift is ``f(x) = L beta(x)``.  For
such a process the stationary mean satisfies (Gast and Van Houdt, "A refined mean field
approximation", SIGMETRICS 2018, Theorem 3.1, and the rate correction of their Section 5)

    E[X^N] = pi + V / N + o(1/N),   V = -A^{-1} (B:W / 2 + L gamma(pi)),

where ``f(pi) = 0``, ``A = Df(pi)``, ``(B:W)_i = sum_kl d2f_i/dx_k dx_l W_kl`` and ``W``
solves the Lyapunov equation ``A W + W A^T + Q = 0`` with ``Q = L diag(beta(pi)) L^T``
(``W / N`` is the covariance of the state).  The rmf_tool of Gast implements the same
expansion; the test suite checks against its published value for Pod(2) (2.8045 tasks per
server at N = 10, load 0.9) and against the exact chain (:mod:`cloudsched.dispatch.theory.exact`).

Derivatives are numerical but accurate to about 1e-10: the Jacobian by the complex step
(rates must be analytic: polynomials and quotients, evaluated on complex arrays), the second
derivatives along the eigenvectors of ``W`` by a Richardson-extrapolated central difference.
Rates take ``x`` with the state on the first axis and any trailing axes (batches).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["PopulationModel", "Refined", "fixed_point", "refine"]

Rates = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class PopulationModel:
    """Jumps ``L`` (shape ``(n, T)``) and rates; the observable is ``weights @ x + offset``.

    ``weights``/``offset`` give the mean number of tasks per server, so the mean response
    time is the observable over the arrival rate per server (Little's law).
    """

    jumps: np.ndarray
    rates: Rates
    weights: np.ndarray
    offset: float = 0.0
    correction: Rates | None = None

    def drift(self, x: np.ndarray) -> np.ndarray:
        """``f(x) = L beta(x)`` (trailing axes of ``x`` are kept)."""
        return np.tensordot(self.jumps, self.rates(x), axes=(1, 0))

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """``Df(x)`` by the complex step (exact to rounding for analytic rates)."""
        n = x.size
        h = 1e-30
        pert = x[:, None] + 1j * h * np.eye(n)
        return np.asarray(self.drift(pert).imag / h)

    def observe(self, x: np.ndarray) -> float:
        """Mean tasks per server in state ``x``."""
        return float(self.weights @ x + self.offset)


@dataclass(frozen=True)
class Refined:
    """Fixed point ``pi``, the 1/N term ``v`` and the scaled covariance ``w``."""

    pi: np.ndarray
    v: np.ndarray
    w: np.ndarray
    model: PopulationModel

    def tasks(self, n: float | None = None) -> float:
        """Mean tasks per server: the mean field, or refined at ``N = n``."""
        value = self.model.observe(self.pi)
        if n is not None:
            value += float(self.model.weights @ self.v) / n
        return value


def fixed_point(
    model: PopulationModel, x0: np.ndarray, *, tol: float = 1e-13, max_iter: int = 100
) -> np.ndarray:
    """Solve ``f(x) = 0`` by damped Newton from ``x0`` (which must be close, e.g. from an ODE).

    Raises ``ArithmeticError`` when Newton does not converge.
    """
    x = np.asarray(x0, dtype=np.float64).copy()
    res = float(np.abs(model.drift(x)).max())
    for _ in range(max_iter):
        if res <= tol:
            return x
        step = np.linalg.solve(model.jacobian(x), -model.drift(x))
        t = 1.0
        while t > 1e-6:
            trial = x + t * step
            new = float(np.abs(model.drift(trial)).max())
            if new < res:
                break
            t /= 2
        else:
            break
        x, res = trial, new
    if res <= max(tol, 1e-10):
        return x
    raise ArithmeticError(f"the fixed point did not converge (residual {res:.2e})")


def _second_directional(model: PopulationModel, x: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """``d2 f(x)[v, v]`` for each column ``v`` of ``dirs`` (unit vectors)."""

    def central(h: float) -> np.ndarray:
        plus = model.drift(x[:, None] + h * dirs)
        minus = model.drift(x[:, None] - h * dirs)
        return (plus - 2.0 * model.drift(x)[:, None] + minus) / (h * h)

    h = 1e-2 * max(1.0, float(np.abs(x).max()))
    return (4.0 * central(h / 2) - central(h)) / 3.0


def refine(model: PopulationModel, pi: np.ndarray) -> Refined:
    """Return the refined mean field at the fixed point ``pi`` (see the module notes)."""
    from scipy.linalg import solve_continuous_lyapunov

    a = model.jacobian(pi)
    beta = model.rates(pi)
    q = (model.jumps * beta) @ model.jumps.T
    w = solve_continuous_lyapunov(a, -q)
    w = (w + w.T) / 2
    sig, vecs = np.linalg.eigh(w)
    bw = _second_directional(model, pi, vecs) @ sig
    rhs = bw / 2
    if model.correction is not None:
        rhs = rhs + model.jumps @ model.correction(pi)
    v = -np.linalg.solve(a, rhs)
    return Refined(pi, v, w, model)
