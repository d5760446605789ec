"""``check-lb --advise``: the configuration change a log implies, with the p99 before and after.

The log itself is the workload: its requests' send times as arrivals and their service
times (:func:`service_times`), replayed (:func:`cloudsched.dispatch.simulate` with a
trace) on one single-server FCFS queue per upstream under the law the balancer follows
now and under each law the same balancer offers (:data:`DIRECTIVES`).  Every replay
serves the same requests, so the laws are compared in pairs: the replay is cut into 20
consecutive sections, and the difference of a law's p99 and the current law's, section by
section, gives a 95% t-interval of the change (each p99 gets its own interval the same
way).  The advice is the law with the lowest p99 when its change's interval lies below
zero; else the current law is kept, and the output says the log cannot tell them apart.
A log too short for 20 sections of 200 requests gets no intervals and no change.

CHOICE: a logged time at an upstream includes the wait behind the requests before it, so
the service of a request is its end less the later of its send and the end of the request
before it at the same upstream (first come, first served at one server: the model the
replay runs, in which this is exact).  Upstreams that serve requests concurrently make
these services short, and the advice then compares the laws at a lighter load than the
real one; when the replay's load (arrival rate x mean service / upstreams) is 0.95 or
more, no advice is given and the output says why.  Services of zero (a millisecond clock)
are replayed as half the clock's step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DIRECTIVES", "Advice", "advise_from_log", "law_policy", "service_times"]

#: What each balancer writes for each law it offers (its configuration).
DIRECTIVES: dict[str, dict[str, str]] = {
    "nginx": {
        "round-robin": "no balancing directive (round robin)",
        "random": "random;",
        "pod:2": "random two least_conn;",
        "least-request": "least_conn;",
    },
    "haproxy": {
        "round-robin": "balance roundrobin",
        "random": "balance random(1)",
        "pod:2r": "balance random(2)",
        "least-request": "balance leastconn",
    },
    "envoy": {
        "round-robin": "lb_policy: ROUND_ROBIN",
        "random": "lb_policy: RANDOM",
        "pod:2r": "lb_policy: LEAST_REQUEST (choice_count: 2)",
        "pod:4r": "lb_policy: LEAST_REQUEST (choice_count: 4)",
        "least-request": "lb_policy: LEAST_REQUEST (selection_method: FULL_SCAN)",
    },
}
DIRECTIVES["envoy-json"] = DIRECTIVES["envoy"]


def law_policy(law: str) -> tuple[str, int, bool]:
    """Return the simulator's policy of a check-lb law: (name, d, with replacement)."""
    from cloudsched.experiments.checklb_laws import parse_law

    kind, d, replace = parse_law(law)
    return {"least-request": "jsq"}.get(kind, kind), d, replace


#: No advice at or above this replay load (see the module notes).
MAX_LOAD = 0.95
#: Consecutive sections of a replay for the p99's intervals.
SECTIONS = 20


@dataclass
class Advice:
    """The p99 of each law the balancer offers, replayed on the log, and the advice."""

    current: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    advice: str | None = None
    load: float = math.nan
    why: str = ""

    def sentence(self, fmt: str) -> str:
        """One line for the report: the change, with the p99 before and after."""
        if self.advice is None:
            return f"advice: none ({self.why})"
        now = next(r for r in self.rows if r["law"] == self.current)
        new = next(r for r in self.rows if r["law"] == self.advice)
        named = DIRECTIVES.get(fmt, {})
        if self.advice == self.current:
            return f"advice: keep {named.get(self.current, self.current)} ({self.why})"
        return (
            f"advice: {named.get(self.current, self.current)} -> {named[self.advice]}: "
            f"predicted p99 {_ms(now)} -> {_ms(new)} ({self.why})"
        )


def _ms(row: dict[str, Any]) -> str:
    if math.isnan(row["p99_low"]):
        return f"{row['p99'] * 1e3:.1f} ms"
    return f"{row['p99'] * 1e3:.1f} ms [{row['p99_low'] * 1e3:.1f}, {row['p99_high'] * 1e3:.1f}]"


def service_times(sent: np.ndarray, end: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """Return each request's service time at its upstream.

    Its end less the later of its send and the previous end at its upstream (first come,
    first served at one server; see the module notes).
    """
    order = np.lexsort((end, upstream))
    prev = np.full(sent.size, -np.inf)
    same = upstream[order][1:] == upstream[order][:-1]
    prev[order[1:][same]] = end[order][:-1][same]
    return end - np.maximum(sent, prev)


def advise_from_log(
    log: Any, fmt: str, current: str, *, seed: int = 0, options: list[str] | None = None
) -> Advice:
    """Replay ``log`` under ``current`` and every law ``fmt``'s balancer offers.

    ``options``: the current law's (least-time's, ewma's), in real time units: the replay
    runs in seconds, so its mean service time is one second.
    """
    from cloudsched.dispatch import simulate
    from cloudsched.dispatch.workload.resolved import Trace

    out = Advice(current)
    k = len(log.names)
    order = np.argsort(log.sent, kind="stable")
    arrivals = log.sent[order] - log.sent[order[0]]
    services = service_times(log.sent, log.end, log.upstream)[order]
    services = np.maximum(services, max(log.resolution, 1e-6) / 2)
    span = float(arrivals[-1]) if arrivals[-1] > 0 else math.inf
    out.load = float(arrivals.size / span * services.mean() / k)
    if not out.load < MAX_LOAD:
        out.why = (
            f"replayed on {k} single-server upstreams the log's times make a load of "
            f"{out.load:.2f}: its upstreams serve requests concurrently, which this model "
            "cannot advise on"
        )
        return out
    laws = list(DIRECTIVES.get(fmt, {}))
    if current not in laws:
        laws.append(current)
    root = np.random.SeedSequence(seed)
    sections: dict[str, np.ndarray | None] = {}
    for law, child in zip(laws, root.spawn(len(laws)), strict=True):
        policy, d, replace = law_policy(law)
        given = _options(policy, options if law == current else None)
        res = simulate(
            policy,
            servers=k,
            load=None,
            d=d,
            with_replacement=replace,
            trace=Trace(arrivals, services, log.source),
            keep_response_times=True,
            rng=np.random.default_rng(child),
            options=given,
        )
        x = np.asarray(res.response_times, dtype=np.float64)
        parts, p99 = _sections(x), float(np.quantile(x, 0.99))
        half = _half(parts)
        out.rows.append({"law": law, "p99": p99, "p99_low": p99 - half, "p99_high": p99 + half})
        sections[law] = parts
    _conclude(out, sections)
    return out


def _options(policy: str, given: list[str] | None) -> list[str] | None:
    """Return a production balancer's options for a replay in seconds (None: it takes none)."""
    from cloudsched.policy_table import TABLE

    row = TABLE.get(policy)
    if row is None or not row.options:
        return None
    return ["service-time=1s", *(given or [])]


def _sections(x: np.ndarray) -> np.ndarray | None:
    """Return the p99 of each of :data:`SECTIONS` consecutive sections (None: too few)."""
    if x.size < SECTIONS * 200:
        return None
    return np.array([np.quantile(part, 0.99) for part in np.array_split(x, SECTIONS)])


def _half(parts: np.ndarray | None) -> float:
    """Return the half-width of a 95% t-interval from sections' values (NaN: none).

    Centred on the whole run's value, as ``tune`` and ``verdict`` centre theirs.
    """
    from cloudsched._quantiles import t_quantile

    if parts is None:
        return math.nan
    return float(t_quantile(0.975, parts.size - 1) * parts.std(ddof=1) / math.sqrt(parts.size))


def _conclude(out: Advice, sections: dict[str, np.ndarray | None]) -> None:
    """Advise the lowest p99 when its change from the current law's is below zero."""
    now = next(r for r in out.rows if r["law"] == out.current)
    best = min(out.rows, key=lambda r: r["p99"])
    out.advice = out.current
    if best["law"] == out.current or best["p99"] >= now["p99"]:
        out.why = f"its p99 is the lowest of the {len(out.rows)} laws replayed, or tied"
        return
    mine, theirs = sections[out.current], sections[best["law"]]
    if mine is None or theirs is None:
        out.why = (
            f"{best['law']}'s p99 is lower, but a log of fewer than {SECTIONS * 200} requests "
            "gives no interval"
        )
        return
    change = best["p99"] - now["p99"]
    half = _half(theirs - mine)
    low, high = change - half, change + half
    best["change_low"], best["change_high"] = low, high
    if high < 0:
        out.advice = best["law"]
        out.why = (
            f"p99 {-high * 1e3:.1f} to {-low * 1e3:.1f} ms lower, 95% interval; the log "
            "replayed on single-server upstreams"
        )
    else:
        out.why = (
            f"{best['law']}'s p99 is lower by {-change * 1e3:.1f} ms, but its "
            f"interval ({-high * 1e3:.1f} to {-low * 1e3:.1f} ms) holds no change"
        )
