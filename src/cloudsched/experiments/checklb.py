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
:data:`ROUND_ROBIN_SHARE`.  ``wlr`` is Envoy's least request as configured (``weights``,
its ``-o`` options): with equal weights Envoy samples (``pod:Cr``, C its
``choice_count``), with unequal ones (or slow start) it keeps an EDF schedule, a law of
the sequence too (:mod:`~cloudsched.experiments.checklb_edf`): it conforms when an EDF
schedule makes at least that share of the choices it checks.

A second test reads how often each upstream was chosen given the counts each arrival saw
(:func:`~cloudsched.experiments.checklb_panels.draws_p`): it finds draws with unequal
probability (Envoy's host list with a host twice in it, HAProxy's hash ring), which keep
the law of the chosen level nearly intact.  Each test runs at ``alpha / 2`` and the
p-value is the smaller doubled (Bonferroni).  The transform's uniforms come from the seed
and the log's content (:func:`~cloudsched.experiments.checklb_laws.uniforms`), so
p-values are uniform over conforming logs.

CHOICE: the verdict says *consistent* when ``p >= alpha``, and *close to* the law (not
NOT) when the departure the transform detects is small: ``|mean F - 0.5|`` within
:data:`MARGIN`, the largest gap between the distribution of ``F`` and the uniform (the KS
statistic) within twice that, and the draws pass.  A long log detects departures too
small to matter (a proxy whose counts lag the log's times by a fraction of a millisecond
shifts ``F`` a little), and the note says so; a balancer that sends some requests to the
least loaded upstream and the rest to the most loaded can keep the mean of ``F`` at 0.5,
but not its distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.experiments.checklb_counts import InFlight, in_flight, tested_counts
from cloudsched.experiments.checklb_edf import check_edf, wlr_law
from cloudsched.experiments.checklb_ewma import ewma_options, ewma_tested
from cloudsched.experiments.checklb_laws import candidates, parse_law, uniforms
from cloudsched.experiments.checklb_ltime import check_least_time, least_time_law
from cloudsched.experiments.checklb_panels import (
    draws_p,
    least_share,
    panels,
    total_loglik,
    transform,
)

__all__ = ["MARGIN", "ROUND_ROBIN_SHARE", "Conformance", "check_lb", "round_robin_share"]

#: A departure with ``|mean F - 0.5|`` within this is too small to matter (CHOICE: live
#: NGINX and HAProxy logs of 5,000 requests depart from their own law by up to 0.012,
#: and pod:2 and pod:2r, the closest two laws, differ by 0.03 to 0.05 on them).
MARGIN = 0.015
#: Round robin conforms when the counts stay within 2 after at least this share of requests.
ROUND_ROBIN_SHARE = 0.99


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
    edges: int = 0  # of left_out: arrivals at the edges of a window
    load: InFlight | None = None
    transform_p: float | None = None  # the level transform's KS p-value
    draws_p: float | None = None  # the draws' chi-square p-value
    small: bool = False  # consistent only because the departure is within the margin
    alpha: float = 0.01  # the level of the two tests together
    view: str = "shared"  # whose counts each choice saw
    schedule: str = ""  # a law of the sequence (wlr's EDF, least_time): what was checked
    inconsistent: int = 0  # a law of the sequence: choices it cannot make

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
        if self.schedule:
            share = (
                f"{self.schedule} makes {self.statistic:.2%} of the {self.requests} choices "
                "it can check"
            )
            return (
                f"consistent with {self.expect}: {share} ({ROUND_ROBIN_SHARE:.0%} or more; "
                f"{self.upstreams} upstreams)"
                if self.consistent
                else f"NOT {self.expect}: {share}, {self.inconsistent} not; best fit among the "
                f"load-aware laws: {self.best_fit} ({what})"
            )
        assert self.p_value is not None and self.mean_f is not None
        side = "less" if self.mean_f < 0.5 else "more"
        p = f"= {self.p_value:.2g}" if self.p_value > 0 else "< 1e-300"
        if self.small:
            return (
                f"close to {self.expect}, not exactly it: a small departure (p {p}, mean F "
                f"{self.mean_f:.3f} within the margin of 0.5; {what})"
            )
        if self.consistent:
            return (
                f"consistent with {self.expect} (p = {self.p_value:.3g}, mean F "
                f"{self.mean_f:.3f}; {what})"
            )
        half = self.alpha / 2  # each test's level
        why = []
        if self.transform_p is None or self.transform_p < half or self.draws_p is None:
            why.append(
                f"it picks {side}-loaded upstreams than {self.expect} would (mean F "
                f"{self.mean_f:.3f}, 0.5 under the law)"
            )
        if self.draws_p is not None and self.draws_p < half:
            spread = f"{min(self.shares.values()):.1%} to {max(self.shares.values()):.1%}"
            why.append(
                f"the upstreams are not drawn as {self.expect} draws them (chosen {spread} of "
                "requests each)"
            )
        return (
            f"NOT {self.expect} (p {p}): {', and '.join(why)}; best fit: {self.best_fit} ({what})"
        )


def _small(mean_f: float, statistic: float, margin: float) -> bool:
    """Whether a departure is too small to matter (see the module notes)."""
    return abs(mean_f - 0.5) <= margin and statistic <= 2 * margin


def round_robin_share(upstream: np.ndarray, sent: np.ndarray, k: int) -> float:
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
    log: Any,
    expect: str,
    *,
    alpha: float = 0.01,
    margin: float = MARGIN,
    seed: int = 0,
    whole_run: bool = False,
    view: str = "shared",
    weights: str | None = None,
    options: Sequence[str] | None = None,
) -> Conformance:
    """Test whether the choices in ``log`` (an :class:`UpstreamLog`) follow ``expect``.

    Two tests, each at ``alpha / 2``: the level transform (KS) and the draws (how often
    each upstream was chosen); the p-value is the smaller, doubled (Bonferroni).
    Consistent when it is at least ``alpha``, or when the departure the transform detects
    is small (``|mean F - 0.5|`` within ``margin`` and KS D within twice it) and the draws
    pass; the verdict then says so.  ``view``: whose counts each choice saw, ``shared`` or
    ``worker`` (see :func:`~cloudsched.experiments.checklb_counts.tested_counts`).
    ``whole_run``: the log holds every request of the
    proxy's run, from its start until all ended (else it is read as a window, see
    :func:`~cloudsched.experiments.checklb_counts.window_edges`).  ``weights``
    (``HOST=W,...``) and ``options`` (``NAME=VALUE``): ``wlr``'s configuration.
    """
    from scipy import stats

    law = parse_law(expect)
    kind, d, replace = law
    k = len(log.names)
    if k < 2:
        raise ParameterError("log", log.source, "a log of requests to two upstreams or more")
    _configured_only(kind, weights, options)
    wlr = wlr_law(weights, options, log.names) if kind == "wlr" else None
    if wlr is not None and not wlr.edf:  # Envoy's unweightedHostPickNChoices
        sampled = f"pod:{wlr.choice_count}r"
        out = check_lb(log, sampled, alpha=alpha, margin=margin, seed=seed, whole_run=whole_run)
        out.expect = "wlr"
        out.notes.insert(0, f"wlr with equal weights is Envoy's P2C: tested as {sampled}")
        return out
    if kind == "pod" and not replace and d > k:
        raise ParameterError("expect", expect, f"pod:D with D <= {k} (the upstreams in the log)")
    sequence = kind in ("round-robin", "wlr", "least-time")
    tc = tested_counts(log, whole_run, need=0 if sequence else 2, view=view)
    n, left_out, edges = int(log.upstream.size), tc.left_out, tc.edges
    every = tc.every if view == "shared" else None  # the shared counts, for the laws below
    levels = tc.levels
    parts = panels(tc)
    fits = {name: total_loglik((kd, dd, rr), parts) for name, kd, dd, rr in candidates(k)}
    best = max(fits, key=lambda name: fits[name])
    counts = np.bincount(log.upstream, minlength=k)
    load = in_flight(levels, log.upstream, log.end - log.sent, log.names)
    out = Conformance(
        expect,
        n - left_out,
        k,
        log.dropped,
        p_value=None,
        statistic=0.0,
        mean_f=None,
        share_least_loaded=least_share(parts),
        consistent=False,
        best_fit=best,
        fits=fits,
        left_out=left_out,
        edges=int(edges.sum()),
        alpha=alpha,
        view=view,
        shares=dict(zip(log.names, load.share.tolist(), strict=True)),
        load=load,
    )
    _log_notes(out, log)
    workers: tuple[str, ...] = tuple(getattr(log, "workers", ()))
    if view == "shared" and workers:
        out.notes.append(
            f"the log names {len(workers)} worker processes: without a shared zone each "
            "counts its own requests (--view worker)"
        )
    if wlr is not None:
        _check_sequence(out, n, check_edf(log, wlr, whole_run, every))
        return out
    if kind == "least-time":
        found = check_least_time(log, least_time_law(options), whole_run, every)
        _check_sequence(out, n, found)
        return out
    if kind == "round-robin":
        inside = ~edges  # every request sent there is in the log: the sequence is whole
        out.statistic = round_robin_share(log.upstream[inside], log.sent[inside], k)
        out.consistent = out.statistic >= ROUND_ROBIN_SHARE
        return out
    if kind == "ewma":  # power of two choices on the costs' ranks
        law, parts = _ewma_panels(out, log, (edges, every), (options, whole_run, seed))
    f = transform(law, parts, uniforms(seed, log, out.requests))
    ks = stats.kstest(f, "uniform")
    out.transform_p = float(ks.pvalue)
    out.draws_p = draws_p(law, parts)
    out.p_value = min(1.0, 2 * min(out.transform_p, out.draws_p))
    out.statistic, out.mean_f = float(ks.statistic), float(f.mean())
    out.small = bool(
        out.p_value < alpha
        and out.draws_p >= alpha / 2
        and _small(out.mean_f, out.statistic, margin)
    )
    out.consistent = bool(out.p_value >= alpha or out.small)
    _add_notes(out, kind, counts, log.resolution, alpha, margin)
    return out


def _configured_only(kind: str, weights: str | None, options: Sequence[str] | None) -> None:
    """Refuse ``weights`` but with wlr, and ``options`` but with the laws that take them."""
    if (weights and kind != "wlr") or (options and kind not in ("wlr", "least-time", "ewma")):
        given = "weights" if weights else "option"
        allowed = "given with --expect wlr" + ("" if weights else ", least-time or ewma")
        raise ParameterError(given, weights or ",".join(options or ()), allowed)


def _ewma_panels(out: Conformance, log: Any, counts: tuple, how: tuple) -> tuple:
    """Peak EWMA: the law (pod:2) and the panels of the costs' ranks; notes in ``out``.

    ``counts``: the window's edges and the shared counts at every arrival (or None).
    """
    (edges, every), (options, whole_run, seed) = counts, how
    decay, rtt = ewma_options(options)
    tested, notes = ewma_tested(log, edges, decay, rtt, whole_run, seed, every)
    n = int(log.upstream.size)
    out.requests, out.left_out = int(tested.upstream.size), n - int(tested.upstream.size)
    out.notes += notes
    return ("pod", 2, False), panels(tested)


def _check_sequence(out: Conformance, n: int, found: Any) -> None:
    """Score a law of the sequence (wlr's EDF, least_time): the share of choices it makes."""
    bad, checked = found.inconsistent, found.checked
    out.requests, out.left_out, out.edges, out.inconsistent = checked, n - checked, found.edges, bad
    out.statistic = 1.0 - bad / checked if checked else 1.0
    out.consistent = checked > 0 and out.statistic >= ROUND_ROBIN_SHARE
    out.schedule = found.schedule
    out.notes += found.notes


def _log_notes(out: Conformance, log: Any) -> None:
    """Say what reading the log left out or could not know."""
    if getattr(log, "unparsed", 0):
        out.notes.append(f"{log.unparsed} lines not in the log's format skipped")
    if getattr(log, "absurd", 0):
        out.notes.append(
            f"{log.absurd} requests held longer than a day (absurd times) left out: the counts "
            "ignore them"
        )
    if getattr(log, "client_times", ""):
        out.notes.append(
            f"the log has only the client's times, so requests count too long: {log.client_times}"
        )


def _add_notes(
    out: Conformance, kind: str, counts: np.ndarray, resolution: float, alpha: float, margin: float
) -> None:
    """Add what the verdict alone does not say: arrivals left out, small departures, shares."""
    from scipy import stats

    assert out.p_value is not None and out.mean_f is not None
    total = out.requests + out.left_out
    if out.edges:
        out.notes.append(
            f"{out.edges} of {total} arrivals at the log's edges left out: read as a window of "
            "a longer run, the log lacks requests that ended before its first line or after "
            "its last, which may have counted at them (--whole-run if it holds the proxy's "
            "whole run)"
        )
    if out.left_out > out.edges:
        out.notes.append(
            f"{out.left_out - out.edges} of {total} arrivals left out: another "
            f"request started or ended within the log's {resolution * 1e3:g} ms resolution of "
            "them, so the counts they saw are unknown"
        )
    if out.small:
        out.notes.append(
            f"the test detects a departure (p = {out.p_value:.2g}) but a small one: mean F "
            f"{out.mean_f:.3f} is within {margin:g} of 0.5 and KS D {out.statistic:.3f} within "
            f"{2 * margin:g} (pod:2 and pod:2r, the closest laws, differ by about 0.03 to 0.05 "
            "in mean F); --margin 0 makes it NOT"
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
