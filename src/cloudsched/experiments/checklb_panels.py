"""The tested arrivals cut by whose counts they saw: one panel per worker or proxy.

With the shared counts there is one panel, every upstream a candidate.  Per worker or per
proxy (:func:`~cloudsched.experiments.checklb_counts.tested_counts`) each group balances
over its own subset of the upstreams (the ones its requests went to: a gRPC or Envoy
subset, or all of them) with its own counts, so each panel holds its arrivals' counts over
its subset only, and every law is applied within it: the level transform's values are
pooled, the draws' chi-square statistics and degrees of freedom add (the groups' terms
are martingale differences of their own), and log-likelihoods add.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cloudsched.experiments.checklb_counts import Tested
from cloudsched.experiments.checklb_laws import choice_probabilities, level_probs, loglik, ranks

__all__ = ["Panel", "draws_p", "least_share", "panels", "total_loglik", "transform"]

Law = tuple[str, int, bool]


@dataclass(frozen=True)
class Panel:
    """One group's tested arrivals: their rows among all tested, counts over its subset."""

    rows: np.ndarray
    cols: np.ndarray
    levels: np.ndarray
    chosen: np.ndarray  # the column (in ``cols``) each arrival chose
    rk: tuple[np.ndarray, np.ndarray, np.ndarray]  # ranks(levels, chosen level), once

    @property
    def k(self) -> int:
        """The upstreams this group balances over."""
        return int(self.cols.size)

    def law(self, law: Law) -> Law:
        """``law`` within this group: D distinct draws of at least its size scan it all."""
        kind, d, replace = law
        if kind == "pod" and not replace and d >= self.k:
            return "least-request", 1, False
        return law

    def ranks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per arrival: its subset's upstreams below and at the chosen level, the least."""
        return self.rk


def _panel(rows: np.ndarray, cols: np.ndarray, levels: np.ndarray, chosen: np.ndarray) -> Panel:
    rk = ranks(levels, levels[np.arange(rows.size), chosen])
    return Panel(rows, cols, levels, chosen, rk)


def panels(tc: Tested) -> list[Panel]:
    """Cut the tested arrivals by group (one panel of every upstream for shared counts)."""
    n, k = tc.levels.shape
    if tc.group is None:
        return [_panel(np.arange(n), np.arange(k), tc.levels, tc.upstream)]
    out = []
    for g in np.unique(tc.group):
        rows = np.flatnonzero(tc.group == g)
        cols = tc.subsets[int(g)]
        where = np.full(k, -1)
        where[cols] = np.arange(cols.size)
        out.append(_panel(rows, cols, tc.levels[np.ix_(rows, cols)], where[tc.upstream[rows]]))
    return out


def total_loglik(law: Law, parts: list[Panel]) -> float:
    """Mean log-likelihood per arrival of ``law`` over every panel."""
    n = sum(p.rows.size for p in parts)
    return sum(p.rows.size * loglik(p.law(law), p.ranks(), p.k) for p in parts) / n


def transform(law: Law, parts: list[Panel], u: np.ndarray) -> np.ndarray:
    """Return the randomised transform of every tested arrival (``u``: its uniforms)."""
    f = np.empty(u.size)
    for p in parts:
        below, at, low = p.ranks()
        lo, eq = level_probs(p.law(law), below, at, low == 0, p.k)
        f[p.rows] = lo + u[p.rows] * eq
    return f


def least_share(parts: list[Panel]) -> float:
    """Return the share of tested arrivals that chose a least-loaded upstream of their subset."""
    n = sum(p.rows.size for p in parts)
    return sum(int(np.sum(p.ranks()[0] == 0)) for p in parts) / max(n, 1)


def draws_p(law: Law, parts: list[Panel]) -> float:
    """Return the p-value of how often each upstream was chosen, given the counts seen.

    Under the law each arrival chooses upstream ``u`` with probability ``p_t(u)``
    (:func:`~cloudsched.experiments.checklb_laws.choice_probabilities`); the chosen counts
    less their expectation sum martingale differences with covariance ``sum_t diag(p_t) -
    p_t p_t'``, so the quadratic form in its pseudo-inverse is chi-square with its rank as
    degrees of freedom (martingale central limit); the panels' forms and ranks add.  It
    sees what the level transform cannot: draws with unequal probability (one upstream
    sampled twice as often) that keep the chosen levels' law nearly intact.
    """
    from scipy import stats

    x, dof = 0.0, 0
    for p in parts:
        stat, rank = _draws_stat(p.law(law), p.levels, p.chosen)
        x, dof = x + stat, dof + rank
    return 1.0 if dof == 0 else float(stats.chi2.sf(x, dof))


def _draws_stat(law: Law, levels: np.ndarray, chosen: np.ndarray) -> tuple[float, int]:
    n, k = levels.shape
    expected = np.zeros(k)
    gram = np.zeros((k, k))
    step = max(1, 2**18 // max(k, 1))  # rows a chunk: bounded memory (about 25 MB)
    for lo in range(0, n, step):
        p = choice_probabilities(law, levels[lo : lo + step])
        expected += p.sum(axis=0)
        gram += p.T @ p
    dev = np.bincount(chosen, minlength=k) - expected
    cov = np.diag(expected) - gram
    rank = int(np.linalg.matrix_rank(cov, hermitian=True))
    if rank == 0:
        return 0.0, 0
    return float(dev @ np.linalg.pinv(cov, hermitian=True) @ dev), rank
