"""When does a production balancer beat least request?  The verdict map, from simulation.

:func:`verdict_study` runs least request (Envoy's ``LEAST_REQUEST`` with equal weights:
``wlr``, P2C on requests in flight) and each other balancer in a set of regimes, each run
on its own seeded stream until its mean response time is known to ``precision``, and
compares each balancer with least request in the same regime: ``better`` or ``worse`` when
the 95% interval of the difference of the two means (independent runs: half-widths added
in quadrature) excludes 0, ``tie`` when it holds 0, ``unknown`` when a run has no interval
(no steady state, or stopped by the task cap).

The regimes change one thing at a time from the papers' world (equal servers, Poisson
arrivals, exponential service, one balancer), the things the balancers react to
differently (CHOICE: these values, each stated in its row):

* ``equal``: nothing changed;
* ``mixed speeds``: half the servers at half speed;
* ``slow 10%``: a tenth of the servers four times slower;
* ``slowdowns``: a tenth of the servers at a tenth of their speed for 50 of every 500 mean
  service times (a garbage-collection pause, a noisy neighbour), then recovered;
* ``heavy tail``: log-normal service with coefficient of variation 4;
* ``8 proxies``: eight balancers, each seeing only its own requests and latencies.

Polled load reports of pod and JSQ (a bulletin board refreshed every T) are not here yet:
this verdict is about the production balancers, each of which reads its own state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import SEED_LIMIT, ParameterError, check_int, check_real
from cloudsched.policy_table import TABLE, default_policies
from cloudsched.progress import Progress

__all__ = ["BASELINE", "DEFAULT_POLICIES", "REGIMES", "VERDICTS", "VerdictStudy", "verdict_study"]

#: The balancer every other one is compared with: least request (Envoy, equal weights).
BASELINE = default_policies("verdict baseline")[0]
#: The balancers compared with it by default (the table's ``defaults``).
DEFAULT_POLICIES = default_policies("verdict")
#: What a row can say against least request.
VERDICTS = ("better", "tie", "worse", "unknown")
#: Regimes: name -> (what changes, the simulate() arguments that make it), per N.
REGIMES: dict[str, tuple[str, dict[str, Any]]] = {
    "equal": ("equal servers, exponential service", {}),
    "mixed speeds": ("half the servers at half speed", {"speeds": "0.5@1,0.5@0.5"}),
    "slow 10%": ("a tenth of the servers 4x slower", {"speeds": "0.9@1,0.1@0.25"}),
    "slowdowns": (
        "a tenth of the servers at 1/10 speed, 50 of every 500",
        {"slowdown": "0.1:0.1@0-50/500"},
    ),
    "heavy tail": ("log-normal service, cv 4", {"service": "lognormal:cv=4"}),
    "8 proxies": ("8 balancers, each with its own counts", {"dispatchers": 8}),
}


@dataclass
class VerdictStudy:
    """One row per (regime, policy); ``findings`` states what the rows show."""

    servers: int
    load: float
    precision: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def row(self, regime: str, policy: str) -> dict[str, Any]:
        """Return the row of ``policy`` in ``regime``."""
        return next(r for r in self.rows if r["regime"] == regime and r["policy"] == policy)


def _arguments(regime: str, servers: int) -> dict[str, Any]:
    from cloudsched.dispatch.workload.slowdown import speed_mix

    kw = dict(REGIMES[regime][1])
    if "speeds" in kw:
        kw["speeds"] = speed_mix(servers, kw["speeds"])
    return kw


def _compare(row: dict[str, Any], base: dict[str, Any]) -> str:
    """``better``, ``worse``, ``tie`` or ``unknown`` against least request."""
    if row["half_width"] is None or base["half_width"] is None:
        return "unknown"
    diff = row["mean"] - base["mean"]
    half = math.hypot(row["half_width"], base["half_width"])
    if abs(diff) <= half:
        return "tie"
    return "better" if diff < 0 else "worse"


def _findings(study: VerdictStudy, policies: Sequence[str]) -> list[str]:
    out = []
    for policy in policies:
        if policy == BASELINE:
            continue
        by = {
            v: [r["regime"] for r in study.rows if r["policy"] == policy and r["vs"] == v]
            for v in ("better", "worse", "tie", "unknown")
        }
        parts = [
            f"{v} in {', '.join(by[v])}" for v in ("better", "tie", "worse", "unknown") if by[v]
        ]
        out.append(f"{policy} against least request: " + "; ".join(parts) + ".")
    return out


def verdict_study(
    *,
    servers: int = 16,
    load: float = 0.8,
    policies: Sequence[str] = (BASELINE, *DEFAULT_POLICIES),
    regimes: Sequence[str] = tuple(REGIMES),
    precision: float = 0.02,
    seed: int = 0,
    max_tasks: int = 50_000_000,
    progress: Progress | None = None,
) -> VerdictStudy:
    """Run every policy in every regime (see the module notes) and compare with least request.

    Each run has its own stream, ``SeedSequence(seed)`` spawned once per (regime, policy) in
    the order given, so a row does not depend on which others run.  Every row holds the
    mean response time, its 95% interval, p99, the ratio to least request's mean and the
    verdict against it.
    """
    from cloudsched.dispatch import simulate

    servers = check_int("servers", servers, low=2, high=100_000)
    load = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    precision = check_real("precision", precision, low=0.0, high=0.5, low_open=True)
    seed = check_int("seed", seed, low=0, high=SEED_LIMIT)
    for p in policies:
        if p not in TABLE or not TABLE[p].options:
            shown = ", ".join(n for n, r in TABLE.items() if r.options)
            raise ParameterError("--policy", p, f"one of the production balancers: {shown}")
    for g in regimes:
        if g not in REGIMES:
            raise ParameterError("--regime", g, "one of " + ", ".join(REGIMES))
    order = [BASELINE, *[p for p in policies if p != BASELINE]]
    streams = np.random.SeedSequence(seed).spawn(len(REGIMES) * len(TABLE))
    study = VerdictStudy(servers, load, precision)
    total, done = len(regimes) * len(order), 0
    for regime in regimes:
        kw = _arguments(regime, servers)
        for policy in order:
            idx = list(REGIMES).index(regime) * len(TABLE) + list(TABLE).index(policy)
            res = simulate(
                policy,
                servers=servers,
                load=load,
                precision=precision,
                max_tasks=max_tasks,
                rng=np.random.default_rng(streams[idx]),
                **kw,
            )
            ci = res.ci95
            study.rows.append(
                {
                    "regime": regime,
                    "what": REGIMES[regime][0],
                    "policy": policy,
                    "mean": res.mean_response_time,
                    "ci_low": ci[0] if ci else None,
                    "ci_high": ci[1] if ci else None,
                    "half_width": (ci[1] - ci[0]) / 2 if ci else None,
                    "p99": res.percentiles.get("p99"),
                    "tasks": res.measured_tasks,
                }
            )
            done += 1
            if progress is not None:
                progress(done / total, f"{regime}: {policy}")
        base = study.row(regime, BASELINE)
        for row in study.rows:
            if row["regime"] == regime:
                row["ratio"] = row["mean"] / base["mean"]
                row["vs"] = "baseline" if row["policy"] == BASELINE else _compare(row, base)
    study.findings = _findings(study, order)
    return study
