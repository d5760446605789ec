"""Which law a balancer's log follows, and with what parameters, when its config is unknown.

``check-lb LOG`` without ``--expect``: every law of
:func:`~cloudsched.experiments.checklb_laws.candidates` (random; pod:D without and with
replacement, D = 2 .. 8; least request; jiq) is scored by its log-likelihood on the
arrivals whose counts the log fixes, and the largest names the law (its choice count and
sampling).  The evidence is the difference of total log-likelihoods between the best and
the runner-up (a likelihood ratio of ``e`` to that power; CHOICE: :data:`CLEAR`, the
usual "decisive" for a likelihood ratio, calls it clear).  Round robin is a law of the
sequence, not of the loads: it is named when the upstreams' running counts stay within 2
(:data:`~cloudsched.experiments.checklb.ROUND_ROBIN_SHARE` of the requests).

Draws with unequal probability (a parameter of the random and with-replacement laws): the
chance of each upstream in a draw, ``q``, is fitted by maximum likelihood (under pod:Dr
the chosen level is ``c`` with probability ``Q(>=c)^D - Q(>c)^D``, ``Q`` summing ``q``
over the upstreams at those levels, and the upstream at ``c`` is the first drawn there,
``u`` with probability ``q_u / Q(=c)``), and equal draws are tested against it by the
likelihood ratio (chi-square, ``k - 1`` degrees of freedom).

Per-worker counts (NGINX without a shared ``zone``): from ``$pid`` where the log names
the worker (both views are scored and the likelier named), else, for an NGINX log, the
number of workers is inferred by likelihood
(:func:`~cloudsched.experiments.checklb_workers.infer_workers`) and named when it beats one
worker by :data:`CLEAR`.  What it does not identify, and says so: Envoy's weights and
slow start, and NGINX ``least_time``'s averages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.experiments.checklb_counts import tested_counts
from cloudsched.experiments.checklb_laws import SLIP, candidates
from cloudsched.experiments.checklb_panels import panels, total_loglik

__all__ = ["CLEAR", "Identified", "drawn_loglik", "fit_draws", "identify"]

#: A best law whose total log-likelihood beats the runner-up's by this much is clear.
CLEAR = 10.0
#: Lines of a log that peak EWMA's decay is fitted on (the first ones; bounded memory).
EWMA_LINES = 200_000
#: Arrivals used to fit the draws (the first ones tested; the fit is a parameter estimate).
FIT_ARRIVALS = 20_000


@dataclass
class Identified:
    """The most likely law of a log, its evidence and its parameters."""

    law: str
    runner_up: str
    evidence: float  # total log-likelihood of the best over the runner-up
    requests: int
    per_request: dict[str, float] = field(default_factory=dict)
    draws: dict[str, float] | None = None  # fitted draw weights (mean 1), when unequal
    draws_p: float | None = None  # likelihood-ratio p-value of equal draws
    round_robin: float = 0.0
    notes: list[str] = field(default_factory=list)
    view: str = "shared"  # whose counts the choices follow (see tested_counts)
    workers: int = 1
    total: float = -math.inf  # total log-likelihood of the law named
    inferred: Any = None  # a Workers: per-worker counts inferred without $pid
    options: list[str] = field(default_factory=list)  # the law's options found (ewma's decay)
    decays: dict[float, float] = field(default_factory=dict)  # ewma: total by decay (s)

    def summary(self) -> dict[str, Any]:
        """Return what was found, for JSON."""
        return {
            "law": self.law,
            "runner_up": self.runner_up,
            "evidence": self.evidence,
            "draws": self.draws,
            "draws_p": self.draws_p,
            "round_robin": self.round_robin,
            "view": self.view,
            "workers": self.workers,
            "inferred_workers": None if self.inferred is None else self.inferred.best,
            "options": self.options,
            "ewma_loglik_by_decay": self.decays or None,
            "workers_loglik": None if self.inferred is None else self.inferred.total,
            "sentence": self.sentence,
        }

    @property
    def sentence(self) -> str:
        """One line for the report."""
        if self.law == "round-robin":
            return (
                f"most likely: round-robin (the upstreams' running counts within 2 at "
                f"{self.round_robin:.1%} of the requests)"
            )
        how = "clearly" if self.evidence >= CLEAR else "not clearly"
        if self.inferred is not None:
            return f"most likely: {self.inferred.sentence}"
        if self.law == "ewma":
            best = max(self.decays, key=lambda d: self.decays[d])
            by = ", ".join(f"{d:g} s: {v - self.decays[best]:+.1f}" for d, v in self.decays.items())
            return (
                f"most likely: ewma (peak EWMA behind power of two choices) with decay "
                f"{best:g} s, {how} (its log-likelihood exceeds {self.runner_up}'s by "
                f"{self.evidence:.1f} over {self.requests} requests; by decay: {by})"
            )
        text = (
            f"most likely: {self.law}, {how} (its log-likelihood exceeds {self.runner_up}'s by "
            f"{self.evidence:.1f} over {self.requests} requests)"
        )
        draws = self.draws
        if self.view == "worker":
            text += (
                f"; each of its {self.workers} worker processes counts its own requests (no "
                "shared zone): the counts are per worker"
            )
        elif self.view == "proxy":
            text += f"; each of the {self.workers} proxies (one a file) counts its own requests"
        if draws is not None and self.draws_p is not None:
            top = max(draws, key=lambda u: draws[u])
            text += (
                f"; draws unequal (p = {self.draws_p:.2g}): {top} drawn "
                f"{draws[top]:.2f}x as often as the average upstream"
            )
        return text


def _infer_workers(out: Identified, log: Any, whole_run: bool) -> None:
    """Name the number of workers when more than one is clearly likelier (module notes)."""
    from cloudsched.experiments.checklb_workers import MAX_UPSTREAMS, infer_workers

    if len(log.names) > MAX_UPSTREAMS:
        out.notes.append(
            f"the number of workers is not inferred over more than {MAX_UPSTREAMS} upstreams "
            "(the filter's cost grows with them): log $pid to check per worker"
        )
        return
    found = infer_workers(log, whole_run=whole_run)
    if found.best > 1 and found.total[found.best] - found.total[1] >= CLEAR:
        out.inferred, out.workers = found, found.best
        out.notes.append(
            f"the check below is of shared counts, which {found.best} workers do not keep: "
            "add $pid to the log_format and --view worker checks each worker's own counts"
        )


def _try_ewma(out: Identified, log: Any, whole_run: bool) -> None:
    """Name peak EWMA (and its decay) when it beats every count law on the same arrivals."""
    from cloudsched.experiments.checklb_counts import window_edges
    from cloudsched.experiments.checklb_ewma import ewma_fits

    if log.upstream.size > EWMA_LINES:  # its first lines: a window of the run, as a log is
        import dataclasses

        keep = slice(0, EWMA_LINES)
        log = dataclasses.replace(
            log, sent=log.sent[keep], end=log.end[keep], upstream=log.upstream[keep]
        )
        whole_run = False
    edges = np.zeros(log.upstream.size, dtype=bool)
    if not whole_run:
        edges = window_edges(log.sent, log.end, log.resolution, log.end_slack)
    counts, by_decay, n = ewma_fits(log, edges, whole_run, candidates(len(log.names)))
    if not by_decay:
        return
    best = max(by_decay, key=lambda d: by_decay[d])
    rival = max(counts, key=lambda name: counts[name])
    if by_decay[best] - counts[rival] >= CLEAR:
        out.law, out.runner_up, out.requests = "ewma", rival, n
        out.evidence = by_decay[best] - counts[rival]
        out.options, out.decays, out.draws = [f"decay={best:g}s"], by_decay, None


def drawn_loglik(q: np.ndarray, levels: np.ndarray, upstream: np.ndarray, d: int) -> float:
    """Total log-likelihood of the choices under pod:Dr (D = 1: random) with draw chances ``q``.

    Each choice is mixed with a uniform one of weight :data:`SLIP`, as in ``loglik``.
    """
    k = levels.shape[1]
    c = levels[np.arange(upstream.size), upstream][:, None]
    ge = (levels >= c) @ q
    gt = (levels > c) @ q
    p = (ge**d - gt**d) * q[upstream] / np.maximum(ge - gt, 1e-300)
    return float(np.sum(np.log((1.0 - SLIP) * p + SLIP / k)))


def fit_draws(levels: np.ndarray, upstream: np.ndarray, d: int) -> tuple[np.ndarray, float]:
    """Fit the chance of each upstream in a draw by maximum likelihood.

    Returns the chances and the likelihood-ratio p-value of equal chances (chi-square with
    ``k - 1`` degrees of freedom).
    """
    from scipy import optimize, stats

    k = levels.shape[1]
    levels, upstream = levels[:FIT_ARRIVALS], upstream[:FIT_ARRIVALS]

    def chances(theta: np.ndarray) -> np.ndarray:
        w = np.exp(np.concatenate([[0.0], theta]))
        return w / w.sum()

    res = optimize.minimize(
        lambda th: -drawn_loglik(chances(th), levels, upstream, d),
        np.zeros(k - 1),
        method="L-BFGS-B",
        bounds=[(-5.0, 5.0)] * (k - 1),
    )
    q = chances(res.x)
    equal = drawn_loglik(np.full(k, 1.0 / k), levels, upstream, d)
    stat = max(0.0, 2.0 * (-float(res.fun) - equal))
    return q, float(stats.chi2.sf(stat, k - 1))


def identify(
    log: Any,
    *,
    whole_run: bool = False,
    alpha: float = 0.01,
    view: str | None = None,
    workers: bool = False,
) -> Identified:
    """Name the most likely law of ``log`` (an :class:`UpstreamLog`) and its parameters.

    ``view``: whose counts the choices saw (``shared`` or ``worker``); None: both, where the
    log names each request's worker, and the likelier is named.  ``workers``: with
    ``view`` None and no worker in the log, infer how many workers balance it (an NGINX
    log; see the module notes).
    """
    if view is None:
        named = getattr(log, "worker", None) is not None
        views = ["shared", "worker"] if named else ["shared"]
        found = [identify(log, whole_run=whole_run, alpha=alpha, view=v) for v in views]
        top = max(found, key=lambda f: (f.law == "round-robin", f.total))
        if top.law != "round-robin":
            _try_ewma(top, log, whole_run)
        if workers and not named and top.law not in ("round-robin", "random", "ewma"):
            _infer_workers(top, log, whole_run)
        return top
    from cloudsched.experiments.checklb import ROUND_ROBIN_SHARE, round_robin_share

    k = len(log.names)
    tc = tested_counts(log, whole_run, view=view)
    parts = panels(tc)
    n = int(tc.upstream.size)
    scan = ("least-request", 1, False)
    laws = [
        c
        for c in candidates(k)  # pod:D of D distinct at least a subset's size: a full scan
        if c[0] == "least-request" or any(p.law(c[1:]) != scan for p in parts)
    ]
    fits = {name: total_loglik((kd, dd, rr), parts) for name, kd, dd, rr in laws}
    order = sorted(fits, key=lambda name: -fits[name])
    best, second = order[0], order[1]
    out = Identified(best, second, n * (fits[best] - fits[second]), n, fits)
    out.view, out.total = view, n * fits[best]
    if view in ("worker", "proxy"):
        out.workers = len(log.workers) if view == "worker" else len(log.files)
    inside = ~tc.edges
    out.round_robin = round_robin_share(log.upstream[inside], log.sent[inside], k)
    if out.round_robin >= ROUND_ROBIN_SHARE:
        out.law = "round-robin"
        return out
    kind, d, replace = next((kd, dd, rr) for name, kd, dd, rr in candidates(k) if name == best)
    if view == "shared" and (kind == "random" or (kind == "pod" and replace)):
        q, p = fit_draws(tc.levels, tc.upstream, d)
        if p < alpha:
            out.draws = dict(zip(log.names, (q * k).tolist(), strict=True))
            out.draws_p = p
    out.notes.append(
        "not identified from a log: weights and slow start (Envoy; check them with --expect "
        "wlr --weights), least_time's averages"
    )
    return out
