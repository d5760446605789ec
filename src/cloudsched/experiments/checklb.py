"""Is my load balancer doing what its config says?  A conformance test on its access log.

From a log with the upstream and the timing of every request
(:mod:`cloudsched.dispatch.workload.upstreams`), each upstream's outstanding requests are
rebuilt at every arrival, as the proxy saw them (its own requests only: a least-request
proxy counts its own).  A load-aware selection law is a law of the *level* (outstanding
count) of the chosen upstream given the counts:

* ``random``: a uniform upstream;
* ``pod:D`` / ``pod:Dr``: the least loaded of D upstreams sampled without / with
  replacement (``random two least_conn``, ``random(2)``, Envoy's ``choice_count``);
* ``least-request``: the least loaded of all (ties uniform);
* ``jiq``: join the idle queue with one dispatcher: an idle upstream (uniform among the
  idle) whenever the proxy's counts show one, else a uniform upstream.

Under the law, with ``P(<c)`` and ``P(=c)`` the probabilities that the chosen upstream's
level is below / equal to the level ``c`` of the one actually chosen, the randomised
probability integral transform ``F = P(<c) + V P(=c)`` (``V`` uniform, from the seed) is
uniform on (0, 1) at every request given the past; a Kolmogorov-Smirnov test of the ``F``
values gives the p-value, and their mean (0.5 under the law; lower: the balancer picks
less-loaded upstreams than the law would, higher: more-loaded) the direction.  Each law's
mean log-likelihood per request names the best fit among random, pod:2..8 (both
samplings), least-request and jiq.  ``round-robin`` is a law of the sequence, not of the
levels: the share of requests after which the upstreams' counts so far are within 2 of
each other is reported (round robin with equal weights keeps them within 1; requests the
log cannot order make 2), and it conforms when that share is at least
:data:`ROUND_ROBIN_SHARE`.

CHOICE: the verdict says *consistent* when ``p >= alpha`` (default 0.01), or when the
departure the test detects is small: ``|mean F - 0.5|`` within :data:`MARGIN` and the
largest gap between the distribution of ``F`` and the uniform (the KS statistic) within
twice that.  A long log detects departures too small to matter (a proxy whose counts lag
the log's times by a fraction of a millisecond shifts ``F`` a little), and the note says
so; a balancer that sends some requests to the least loaded upstream and the rest to the
most loaded can keep the mean of ``F`` at 0.5, but not its distribution.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from math import comb
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError

__all__ = [
    "MARGIN",
    "ROUND_ROBIN_SHARE",
    "Conformance",
    "check_lb",
    "levels_at_arrivals",
    "parse_law",
    "unresolved_arrivals",
]

#: A departure with ``|mean F - 0.5|`` within this is too small to matter (CHOICE: live
#: NGINX and HAProxy logs of 5,000 requests depart from their own law by up to 0.012,
#: and pod:2 and pod:2r, the closest two laws, differ by 0.03 to 0.05 on them).
MARGIN = 0.015
#: Weight of a uniform choice mixed into each law for the best fit (see ``_loglik``).
SLIP = 1e-3
#: Round robin conforms when the counts stay within 2 after at least this share of requests.
ROUND_ROBIN_SHARE = 0.99
_LAW = re.compile(r"^(random|least-request|round-robin|jiq|pod:(\d{1,3})(r?))$")


def parse_law(text: str) -> tuple[str, int, bool]:
    """``pod:2`` -> ("pod", 2, False); ``pod:2r`` -> with replacement; others (kind, 1, _)."""
    m = _LAW.match(str(text).strip().lower())
    if m is None or (m[2] is not None and int(m[2]) < 1):
        raise ParameterError(
            "expect", text, "random, least-request, round-robin, jiq, pod:D or pod:Dr (D >= 1)"
        )
    if m[2] is not None:
        return "pod", int(m[2]), m[3] == "r"
    return m[1], 1, False


def levels_at_arrivals(
    sent: np.ndarray, end: np.ndarray, upstream: np.ndarray, k: int, end_slack: float = 0.0
) -> np.ndarray:
    """Outstanding requests of each upstream at each arrival, shape ``(n, k)`` (int32).

    A request counts from its send time until ``end_slack`` after its logged end (see
    :class:`~cloudsched.dispatch.workload.upstreams.UpstreamLog`); one that ended by then
    has left before an arrival at that time.  Requests sent at the same logged time (a
    millisecond cannot order them) do not count each other: counted in log order, they
    would make the upstreams *not* chosen look busier than they were, and every law would
    seem to prefer less-loaded upstreams.
    """
    n = sent.size
    order = np.argsort(sent, kind="stable")
    by_end = np.argsort(end, kind="stable")
    end_t, end_u = end[by_end], upstream[by_end]
    counts = np.zeros(k, dtype=np.int32)
    out = np.empty((n, k), dtype=np.int32)
    j = g = 0
    while g < n:
        t = sent[order[g]]
        h = g
        while h < n and sent[order[h]] == t:
            h += 1
        while j < n and end_t[j] + end_slack <= t:
            counts[end_u[j]] -= 1
            j += 1
        group = order[g:h]
        out[group] = counts
        np.add.at(counts, upstream[group], 1)
        g = h
    return out


def unresolved_arrivals(sent: np.ndarray, end: np.ndarray, resolution: float) -> np.ndarray:
    """Which arrivals a log with times truncated to ``resolution`` cannot order (bool mask).

    A request sent at logged time ``s`` was sent in ``[s, s + resolution)`` and one that
    ended at logged ``e`` ended in ``[e, e + 2 resolution)`` (its start and its duration
    both truncated).  An arrival is unresolved when another request's send falls within one
    resolution of it, or an end within ``(s - 2 resolution, s + resolution)``: whether that
    request counted at the arrival is unknown.  Leaving such arrivals out keeps the test
    exact: which arrivals are left out depends on the other requests' times, not on the
    choice made at the arrival.
    """
    if resolution <= 0:
        return np.zeros(sent.size, dtype=bool)
    eps = 4 * float(np.spacing(np.max(np.abs(sent))))  # rounding of the logged times
    ends, sends = np.sort(end), np.sort(sent)
    r = resolution - eps
    near_end = np.searchsorted(ends, sent + r, "left") - np.searchsorted(
        ends, sent - 2 * resolution + eps, "right"
    )
    near_end -= end < sent + r  # its own end (a request shorter than the resolution)
    near_send = np.searchsorted(sends, sent + r, "left") - np.searchsorted(sends, sent - r, "right")
    return (near_end > 0) | (near_send > 1)


def _level_probs(
    kind: str, d: int, replace: bool, levels: np.ndarray, chosen: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``P(<c)`` and ``P(=c)`` of every request under the law (vectorised over requests)."""
    k = levels.shape[1]
    c = chosen[:, None]
    below = (levels < c).sum(axis=1)
    at = (levels == c).sum(axis=1)
    if kind == "random":
        return below / k, at / k
    if kind in ("least-request", "jiq"):
        low = levels.min(axis=1)
        least = (chosen > low).astype(float), (chosen == low).astype(float)
        if kind == "least-request":
            return least
        idle = low == 0  # jiq: the least loaded when one is idle, else uniform
        return np.where(idle, least[0], below / k), np.where(idle, least[1], at / k)
    above_eq = k - below  # upstreams with level >= c
    above = above_eq - at  # level >= c + 1
    if replace:
        ge_c, ge_c1 = (above_eq / k) ** d, (above / k) ** d
    else:
        table = np.array([comb(a, d) for a in range(k + 1)], dtype=float) / comb(k, d)
        ge_c, ge_c1 = table[above_eq], table[above]
    return 1.0 - ge_c, ge_c - ge_c1


def _loglik(kind: str, d: int, replace: bool, levels: np.ndarray, chosen: np.ndarray) -> float:
    """Mean log-probability per request of choosing the upstream chosen.

    Each law is mixed with a uniform choice of weight :data:`SLIP`, so that a handful of
    requests the log cannot order (two sent within its time step) do not rule a law out.
    """
    _, at_p = _level_probs(kind, d, replace, levels, chosen)
    at = (levels == chosen[:, None]).sum(axis=1)
    p = (1.0 - SLIP) * at_p / np.maximum(at, 1) + SLIP / levels.shape[1]
    return float(np.mean(np.log(p)))


@dataclass
class Conformance:
    """The test of one expected law on one log (see the module notes)."""

    expect: str
    requests: int
    upstreams: int
    dropped: int
    p_value: float | None
    statistic: float
    mean_f: float | None
    share_least_loaded: float
    consistent: bool
    best_fit: str
    fits: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    left_out: int = 0
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """One sentence for the report."""
        what = f"{self.requests} requests over {self.upstreams} upstreams"
        if self.expect == "round-robin":
            share = (
                f"the upstreams' running counts are within 2 of each other at "
                f"{self.statistic:.1%} of the requests "
                f"(round robin: {ROUND_ROBIN_SHARE:.0%} or more)"
            )
            return (
                f"consistent with round-robin: {share} ({what})"
                if self.consistent
                else f"NOT round-robin: {share}; best fit among the load-aware laws: "
                f"{self.best_fit} ({what})"
            )
        assert self.p_value is not None and self.mean_f is not None
        side = "less" if self.mean_f < 0.5 else "more"
        if self.consistent:
            return (
                f"consistent with {self.expect} (KS p = {self.p_value:.3g}, mean F "
                f"{self.mean_f:.3f}; {what})"
            )
        p = f"{self.p_value:.2g}" if self.p_value > 0 else "< 1e-300"
        return (
            f"NOT {self.expect} (KS p = {p}): it picks {side}-loaded "
            f"upstreams than {self.expect} would (mean F {self.mean_f:.3f}, 0.5 under "
            f"the law); best fit: {self.best_fit} ({what})"
        )


def _candidates(k: int) -> list[tuple[str, str, int, bool]]:
    out = [("random", "random", 1, False)]
    for d in range(2, min(k, 8) + 1):  # pod:k without replacement is least-request
        out += [(f"pod:{d}", "pod", d, False)] if d < k else []
        out += [(f"pod:{d}r", "pod", d, True)]
    return [*out, ("least-request", "least-request", 1, False), ("jiq", "jiq", 1, False)]


def _small(mean_f: float, statistic: float, margin: float) -> bool:
    """Whether a departure is too small to matter (see the module notes)."""
    return abs(mean_f - 0.5) <= margin and statistic <= 2 * margin


def _round_robin_share(upstream: np.ndarray, sent: np.ndarray, k: int) -> float:
    """Share of requests after which no upstream has more than 2 requests more than another.

    Round robin with equal weights keeps the counts within 1; a log that cannot order the
    requests sent within its time step shows 2 at times; any load-aware or random choice
    drifts apart like a random walk.
    """
    seq = upstream[np.argsort(sent, kind="stable")]
    counts = np.zeros((seq.size, k), dtype=np.int32)
    counts[np.arange(seq.size), seq] = 1
    counts = np.cumsum(counts, axis=0)
    return float(np.mean(counts.max(axis=1) - counts.min(axis=1) <= 2))


def check_lb(
    log: Any, expect: str, *, alpha: float = 0.01, margin: float = MARGIN, seed: int = 0
) -> Conformance:
    """Test whether the choices in ``log`` (an :class:`UpstreamLog`) follow ``expect``.

    Consistent when the p-value is at least ``alpha``, or when the departure it detects is
    small (``|mean F - 0.5|`` within ``margin`` and KS D within twice it; a note then says
    so).
    """
    from scipy import stats

    kind, d, replace = parse_law(expect)
    k = len(log.names)
    if k < 2:
        raise ParameterError("log", log.source, "a log of requests to two upstreams or more")
    if kind == "pod" and not replace and d > k:
        raise ParameterError("expect", expect, f"pod:D with D <= {k} (the upstreams in the log)")
    from cloudsched.resources import check_memory

    n = int(log.upstream.size)
    check_memory("log", log.source, n * k * 12.0, "the counts of every upstream at every arrival")
    levels = levels_at_arrivals(log.sent, log.end, log.upstream, k, log.end_slack)
    chosen = levels[np.arange(log.upstream.size), log.upstream]
    keep = ~unresolved_arrivals(log.sent, log.end, log.resolution)
    left_out = n - int(keep.sum())
    if kind != "round-robin" and n - left_out < 2:
        raise ParameterError(
            "log",
            log.source,
            f"requests that its {log.resolution * 1e3:g} ms clock can order (every arrival "
            "has another request's start or end within it)",
        )
    if left_out:
        levels, chosen = levels[keep], chosen[keep]
    fits = {name: _loglik(kd, dd, rr, levels, chosen) for name, kd, dd, rr in _candidates(k)}
    best = max(fits, key=lambda name: fits[name])
    least = float(np.mean(chosen == levels.min(axis=1)))
    counts = np.bincount(log.upstream, minlength=k)
    shares = dict(zip(log.names, (counts / counts.sum()).tolist(), strict=True))
    if kind == "round-robin":
        share = _round_robin_share(log.upstream, log.sent, k)
        rr = share >= ROUND_ROBIN_SHARE
        return Conformance(
            expect, n, k, log.dropped, None, share, None, least, rr, best, fits, shares=shares
        )
    below, at = _level_probs(kind, d, replace, levels, chosen)
    n -= left_out
    v = np.random.default_rng(seed).random(n)
    f = below + v * at
    ks = stats.kstest(f, "uniform")
    out = Conformance(
        expect,
        n,
        k,
        log.dropped,
        float(ks.pvalue),
        float(ks.statistic),
        float(f.mean()),
        least,
        bool(ks.pvalue >= alpha or _small(f.mean(), ks.statistic, margin)),
        best,
        fits,
        left_out=left_out,
        shares=shares,
    )
    _add_notes(out, kind, counts, log.resolution, alpha, margin)
    return out


def _add_notes(
    out: Conformance, kind: str, counts: np.ndarray, resolution: float, alpha: float, margin: float
) -> None:
    """Add what the verdict alone does not say: arrivals left out, small departures, shares."""
    from scipy import stats

    assert out.p_value is not None and out.mean_f is not None
    if out.left_out:
        out.notes.append(
            f"{out.left_out} of {out.requests + out.left_out} arrivals left out: another "
            f"request started or ended within the log's {resolution * 1e3:g} ms resolution of "
            "them, so the counts they saw are unknown"
        )
    if out.p_value < alpha and out.consistent:
        out.notes.append(
            f"the test detects a departure (p = {out.p_value:.2g}) but a small one: mean F "
            f"{out.mean_f:.3f} is within {margin:g} of 0.5 and KS D {out.statistic:.3f} within "
            f"{2 * margin:g} (pod:2 and pod:2r, the closest laws, differ by about 0.03 to 0.05 "
            "in mean F)"
        )
    if kind == "random" and not out.consistent:  # the draws themselves may be unequal
        p = float(stats.chisquare(counts).pvalue)
        if p < alpha:
            low, high = counts.min() / counts.sum(), counts.max() / counts.sum()
            out.notes.append(
                f"upstreams are not chosen equally often: {low:.1%} to {high:.1%} of requests "
                f"each (chi-square p = {p:.2g}): the balancer draws them with unequal "
                "probability"
            )
    if out.requests < 200:
        out.notes.append(f"only {out.requests} requests: the test has little power")
    if math.isclose(out.share_least_loaded, 1.0) and kind != "least-request":
        out.notes.append(
            "every request went to a least-loaded upstream: a light load cannot tell the laws apart"
        )
