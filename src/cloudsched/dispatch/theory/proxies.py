"""Mean field of K proxies that each count only their own requests (``view="own"``).

The farm of ``simulate --dispatchers K --view own`` (the delay engine, FIFO servers, exp(1)
service) in the limit of many servers with ``K`` fixed: each proxy receives ``lam N / K``
tasks and sends each to the server where *its own* count of unfinished tasks is least
(``jsq``: over all servers; ``pod``: over ``d`` probes).  This is Envoy's ``LEAST_REQUEST``
or NGINX's ``least_conn`` in K processes without a shared zone.

A server seen by one (tagged) proxy is in state ``(c, m)``: ``c`` tasks of that proxy,
``m`` of the ``K - 1`` others.  In the limit the tagged proxy sends it a task at rate

    a(c) = (lam / K) (F_c^d - F_{c+1}^d) / f_c

(``f`` the law of a proxy's own count at a server, ``F`` its tail; ``jsq``: ``lam / K / f_0``
at ``c = 0`` only), and the others at ``A(m)``, the sum of their rates given that they hold
``m`` tasks there.  CLOSURE: the others' counts are taken as independent draws from ``f``
given their sum (so ``A(m) = (K - 1) E[a(c_1) | c_1 + ... + c_{K-1} = m]``), and a departure
is the tagged proxy's with probability ``c / (c + m)``.  For ``jsq`` both are exact (each
proxy has at most one task at a server, and FIFO serves a uniform one of them by symmetry):
a server is then an Engset queue of ``K`` sources, and the model is the limit of the
simulated farm.  For ``pod`` it is an approximation (a proxy's counts at one server are not
independent of the others', and FIFO is not random order); ``K = 1`` is pod's mean field
exactly, ``K -> inf`` random dispatch.  Measured against the simulator (N = 2000, seed 3,
precision 0.4%): the closure is high by 0.0% (K = 2, load 0.9), 2.4% (K = 4), 3.0% (K = 8),
1.8% (K = 16); at load 0.7 by 1.2% (K = 4) and 1.0% (K = 8); at 0.95 by 2.4% (K = 4) and
3.8% (K = 8); with d = 3, K = 4, load 0.9 by 3.5%; at load 0.5, K = 4 by 0.8%.  Results
say ``approximate``; :data:`POD_CLOSURE_ERROR` is the bound stated with them.

The fixed point in ``f`` is found by iterating (each step the stationary law of the
``(c, m)`` chain, a sparse solve) with Anderson's acceleration; the chain is truncated where
less than ``1e-12`` of the mass is left, doubled until it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import spsolve

from cloudsched.dispatch.theory._accelerate import anderson
from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE, with_capability

__all__ = ["OWN_POLICIES", "POD_CLOSURE_ERROR", "OwnPrediction", "own_meanfield"]

#: Policies with a mean field for proxies with their own counts (the table's ``own_counts``).
OWN_POLICIES = with_capability("own_counts")
#: The pod closure's error bound, from the measurements in the module's text (it was high
#: by at most 3.8% over loads 0.5-0.95, K = 2-16, d = 2-3): stated in results and docs.
POD_CLOSURE_ERROR = 0.05
_MAX_OWN = 2000  # largest own count per proxy and server kept


@dataclass(frozen=True)
class OwnPrediction:
    """Mean field of ``proxies`` proxies with their own counts.

    ``own``: the law of one proxy's count at a server; ``lengths``: the law of a server's
    queue length; ``exact``: the model is the limit of the simulated farm (``jsq``, or one
    proxy), else it rests on the closure.
    """

    policy: str
    load: float
    proxies: int
    d: int
    mean_response_time: float
    mean_tasks: float
    own: np.ndarray
    lengths: np.ndarray
    exact: bool
    iterations: int
    converged: bool


def _own_rates(policy: str, lam: float, k: int, f: np.ndarray, d: int) -> np.ndarray:
    """Rate at which one proxy sends to a server where it holds ``c`` tasks."""
    a = np.zeros_like(f)
    if TABLE[policy].probes == "all":  # jsq: any server where it holds none
        a[0] = lam / k / max(f[0], 1e-300)
        return a
    tail = np.clip(np.cumsum(f[::-1])[::-1], 0.0, 1.0)
    share = tail**d - np.append(tail[1:], 0.0) ** d
    heavy = f > 1e-14
    a[heavy] = lam / k * share[heavy] / f[heavy]
    a[~heavy] = lam / k * d * tail[~heavy] ** (d - 1)  # the limit of the ratio
    return a


def _others_rates(a: np.ndarray, f: np.ndarray, others: int) -> np.ndarray:
    """``A(m)``: the others' total rate given their ``m`` tasks (independent draws from ``f``)."""
    if others == 0:
        return np.zeros(1)
    g_prev = np.array([1.0])  # law of the sum of others - 1 counts
    for _ in range(others - 1):
        g_prev = np.convolve(g_prev, f)
    g_all = np.convolve(g_prev, f)
    weighted = np.convolve(g_prev, a * f)  # sum_c a(c) f(c) g_prev(m - c)
    out = np.zeros_like(g_all)
    ok = g_all > 1e-290
    out[ok] = others * weighted[ok] / g_all[ok]
    last = np.flatnonzero(ok)
    if last.size and last[-1] + 1 < out.size:  # beyond the representable: the last rate
        out[last[-1] + 1 :] = out[last[-1]]
    return out


def _chain(a: np.ndarray, big_a: np.ndarray) -> np.ndarray:
    """Stationary law of the ``(c, m)`` chain, as a ``(c, m)`` array."""
    nc, nm = a.size, big_a.size
    size = nc * nm
    c, m = np.divmod(np.arange(size), nm)
    rows, cols, vals = [], [], []

    def add(mask: np.ndarray, to: np.ndarray, rate: np.ndarray) -> None:
        rows.append(np.flatnonzero(mask))
        cols.append(to[mask])
        vals.append(rate[mask])

    idx = np.arange(size)
    total = np.maximum(c + m, 1).astype(np.float64)
    add(c < nc - 1, idx + nm, a[c])
    add(m < nm - 1, idx + 1, big_a[m])
    add(c > 0, idx - nm, c / total)
    add(m > 0, idx - 1, m / total)
    r, cl, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    out = np.bincount(r, weights=v, minlength=size)
    q = sparse.csr_matrix(
        (np.concatenate([v, -out]), (np.concatenate([r, idx]), np.concatenate([cl, idx]))),
        shape=(size, size),
    )
    a_mat = q.T.tolil()
    a_mat[0, :] = 1.0
    rhs = np.zeros(size)
    rhs[0] = 1.0
    pi = np.clip(spsolve(a_mat.tocsc(), rhs), 0.0, None)
    return (pi / pi.sum()).reshape(nc, nm)


def check_own(policy: str, load: float, proxies: int, d: int) -> tuple[float, int, int]:
    """Validate a setting of proxies with their own counts; return ``(load, K, d)``."""
    if policy not in OWN_POLICIES:
        raise ParameterError("policy", policy, "one of " + ", ".join(OWN_POLICIES))
    lam = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    k = check_int("proxies", proxies, low=1, high=64)
    dd = check_int("d", d, low=1, high=1000) if TABLE[policy].probes == "d" else 1
    return lam, k, dd


def own_meanfield(
    policy: str,
    load: float,
    proxies: int,
    *,
    d: int = 2,
    tol: float = 1e-10,
    max_iterations: int = 2000,
) -> OwnPrediction:
    """Mean field of ``proxies`` proxies running ``policy`` on their own counts (module doc)."""
    lam, k, dd = check_own(policy, load, proxies, d)
    least_of_all = TABLE[policy].probes == "all"  # jsq: at most one task per proxy
    nc = 2 if least_of_all else 24
    f = (1.0 - lam / k) * (lam / k) ** np.arange(nc)
    f /= f.sum()
    hist: list[tuple[np.ndarray, np.ndarray]] = []
    it, done = 0, False
    while not done:
        a = _own_rates(policy, lam, k, f, dd)
        big_a = _others_rates(a, f, k - 1)
        pi = _chain(a, big_a)
        it += 1
        new_f = pi.sum(axis=1)
        top_m = pi.sum(axis=0)[-1] if k > 1 else 0.0
        if not least_of_all and new_f[-1] > 1e-12:  # more own levels
            if 2 * nc > _MAX_OWN:
                raise ParameterError("load", lam, "low enough for a truncated chain")
            f = np.append(f, np.zeros(nc))
            nc *= 2
            hist.clear()
            continue
        if (
            not least_of_all and top_m > 1e-12
        ):  # the others' sum is truncated at (K - 1)(nc - 1): more own levels
            raise ParameterError("load", lam, "low enough for a truncated chain")
        new_f /= new_f.sum()
        done = float(np.abs(new_f - f).sum()) < tol or it >= max_iterations
        f = new_f if done else anderson(hist, f, new_f)
    c_idx = np.arange(pi.shape[0])[:, None]
    m_idx = np.arange(pi.shape[1])[None, :]
    lengths = np.bincount((c_idx + m_idx).ravel(), weights=pi.ravel())
    mean_tasks = float((lengths * np.arange(lengths.size)).sum())
    return OwnPrediction(
        policy,
        lam,
        k,
        dd,
        mean_tasks / lam,
        mean_tasks,
        f,
        lengths,
        TABLE[policy].own_counts == "exact" or k == 1,
        it,
        it < max_iterations,
    )
