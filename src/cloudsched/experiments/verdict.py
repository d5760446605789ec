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
* ``8 proxies``: eight balancers, each seeing only its own requests and latencies;
* ``polled 2``: least request reads requests in flight from load reports polled every 2
  mean service times (P2C on a board, ``pod --refresh 2``: a dashboard or control plane
  that scrapes load); ewma, least-time and prequal measure their own latencies and are
  unchanged; wrr takes new weights every 2.

Any point of an axis is a regime too, ``NAME=VALUE`` (:data:`AXES`): ``half=X`` (half the
servers at speed X: heterogeneity), ``slow=F`` (a fraction F of the servers four times
slower), ``cv=C`` (log-normal service of coefficient of variation C: job-size variance),
``proxies=K``, ``refresh=T``; ``axis_regimes`` expands ``NAME=V1,V2,...``.  Servers that
join mid-run (slow start) are a transient, not a steady state to compare: ``cloudsched
fluid wlr`` models them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cloudsched.errors import SEED_LIMIT, ParameterError, check_choice, check_int, check_real
from cloudsched.policy_table import TABLE, default_policies
from cloudsched.progress import Progress

__all__ = [
    "AXES",
    "BASELINE",
    "DEFAULT_POLICIES",
    "REGIMES",
    "VERDICTS",
    "VerdictStudy",
    "axis_regimes",
    "verdict_study",
]

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
    "polled 2": (
        "least request on load reports polled every 2; wrr's weights every 2",
        {"refresh": 2.0},
    ),
}
#: Axes: name -> (what a value means, the values allowed).
AXES: dict[str, tuple[str, str]] = {
    "half": ("half the servers at speed {v}", "a speed in (0, 1]"),
    "slow": ("a fraction {v} of the servers 4x slower", "a fraction in [0, 1)"),
    "cv": ("log-normal service, cv {v}", "a coefficient of variation in [0.1, 20]"),
    "proxies": ("{v} balancers, each with its own counts", "an integer in [1, N]"),
    "refresh": (
        "least request on load reports polled every {v}; wrr's weights every {v}",
        "a period in (0, 1000] mean service times",
    ),
}


@dataclass
class VerdictStudy:
    """One row per (regime, policy); ``findings`` states what the rows show."""

    servers: int
    load: float
    precision: float
    metric: str = "mean"
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def row(self, regime: str, policy: str) -> dict[str, Any]:
        """Return the row of ``policy`` in ``regime``."""
        return next(r for r in self.rows if r["regime"] == regime and r["policy"] == policy)


def _axis_arguments(name: str, text: str, servers: int) -> dict[str, Any]:
    """Return simulate()'s arguments for ``name=text`` (a point of an axis), or refuse it."""
    allowed = AXES[name][1].replace("N", str(servers))
    try:
        v = float(text)
    except ValueError:
        raise ParameterError("--regime", f"{name}={text}", allowed) from None
    ok = {
        "half": 0.0 < v <= 1.0,
        "slow": 0.0 <= v < 1.0,
        "cv": 0.1 <= v <= 20.0,
        "proxies": v.is_integer() and 1 <= v <= servers,
        "refresh": 0.0 < v <= 1000.0,
    }[name]
    if not ok:
        raise ParameterError("--regime", f"{name}={text}", allowed)
    if name == "half":
        return {"speeds": f"0.5@1,0.5@{v:g}"}
    if name == "slow":
        return {"speeds": f"{1 - v:g}@1,{v:g}@0.25"} if v > 0 else {}
    if name == "cv":
        return {"service": f"lognormal:cv={v:g}"}
    if name == "proxies":
        return {"dispatchers": int(v)}
    return {"refresh": v}


def describe(regime: str) -> str:
    """Return what ``regime`` changes (a named regime or a point of an axis)."""
    if regime in REGIMES:
        return REGIMES[regime][0]
    name, _, text = regime.partition("=")
    return AXES[name][0].format(v=text)


def check_regime(regime: str, servers: int) -> None:
    """Refuse a regime that is neither named nor a valid point of an axis, in one line."""
    if regime in REGIMES:
        return
    name, eq, text = regime.partition("=")
    if not eq or name not in AXES:
        raise ParameterError(
            "--regime",
            regime,
            "one of " + ", ".join(REGIMES) + ", or NAME=VALUE with NAME one of " + ", ".join(AXES),
        )
    _axis_arguments(name, text, servers)


def axis_regimes(axis: str) -> list[str]:
    """``NAME=V1,V2,...`` -> the regimes ``NAME=V1``, ``NAME=V2``, ... (checked later)."""
    name, eq, values = axis.partition("=")
    if not eq or name not in AXES or not values.strip():
        raise ParameterError("--axis", axis, "NAME=V1,V2,... with NAME one of " + ", ".join(AXES))
    return [f"{name}={v.strip()}" for v in values.split(",")]


def _arguments(regime: str, servers: int, policy: str) -> dict[str, Any]:
    """Return simulate()'s arguments for ``policy`` in ``regime``.

    Polled reports (``refresh``) reach the policies that read them: least request becomes
    P2C on a board (``pod``: two distinct servers, where Envoy draws with replacement), wrr
    updates its weights every period; the others measure for themselves and run as in
    ``equal``.
    """
    from cloudsched.dispatch.workload.slowdown import speed_mix

    if regime in REGIMES:
        kw = dict(REGIMES[regime][1])
    else:
        name, _, text = regime.partition("=")
        kw = _axis_arguments(name, text, servers)
    if "speeds" in kw:
        kw["speeds"] = speed_mix(servers, kw["speeds"])
    refresh = kw.pop("refresh", None)
    if refresh is not None:
        if policy == BASELINE:
            kw.update(policy="pod", refresh=refresh)
        elif any(o.name == "weight-update-period" for o in TABLE[policy].options):
            kw["options"] = {"weight-update-period": refresh}  # weights from polled reports
    return kw


def _stream(seed: int, regime: str, policy: str) -> np.random.SeedSequence:
    """Return the stream of one (regime, policy) run, the same whatever else runs."""
    import zlib

    p = list(TABLE).index(policy)
    if regime in REGIMES:  # the named regimes keep their streams (the docs' runs)
        idx = list(REGIMES).index(regime) * len(TABLE) + p  # spawn()'s idx-th child
        return np.random.SeedSequence(seed, spawn_key=(idx,))
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32(regime.encode()), p))


#: What decides a verdict: the metric's column and its 95% half-width's column.
METRICS = {"mean": ("mean", "half_width"), "p99": ("p99", "p99_half_width")}


def _compare(row: dict[str, Any], base: dict[str, Any], metric: str) -> str:
    """``better``, ``worse``, ``tie`` or ``unknown`` against least request, by ``metric``."""
    value, width = METRICS[metric]
    if row[width] is None or base[width] is None:
        return "unknown"
    diff = row[value] - base[value]
    half = math.hypot(row[width], base[width])
    if abs(diff) <= half:
        return "tie"
    return "better" if diff < 0 else "worse"


def _findings(study: VerdictStudy, policies: Sequence[str]) -> list[str]:
    value, width = METRICS[study.metric]
    by_what = "" if study.metric == "mean" else f" (by {study.metric})"
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
        out.append(f"{policy} against least request{by_what}: " + "; ".join(parts) + ".")
    lost = [r for r in study.rows if r["policy"] == BASELINE and r[width] is None]
    for r in lost:
        out.append(
            f"least request has no interval in {r['regime']} ({value} {r[value]:.4g}; "
            f"stopped: {r['stop']}): nothing there is compared with it."
        )
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
    metric: str = "mean",
) -> VerdictStudy:
    """Run every policy in every regime (see the module notes) and compare with least request.

    Each run has its own stream, ``SeedSequence(seed)`` spawned once per (regime, policy) in
    the order given, so a row does not depend on which others run.  Every row holds the
    mean response time and its 95% interval, p99 and its 95% interval (20 consecutive
    sections of the run; none when the run is short or not steady), the ratio to least
    request's ``metric`` (``mean`` or ``p99``) and the verdict against it by that metric.
    """
    from cloudsched.dispatch import simulate
    from cloudsched.experiments.tune_search import metric_interval

    servers = check_int("servers", servers, low=2, high=100_000)
    load = check_real("load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    precision = check_real("precision", precision, low=0.0, high=0.5, low_open=True)
    seed = check_int("seed", seed, low=0, high=SEED_LIMIT)
    metric = check_choice("metric", metric, tuple(METRICS))
    for p in policies:
        if p not in TABLE or not TABLE[p].options:
            shown = ", ".join(n for n, r in TABLE.items() if r.options)
            raise ParameterError("--policy", p, f"one of the production balancers: {shown}")
    for g in regimes:
        check_regime(g, servers)
    regimes = list(dict.fromkeys(regimes))
    order = [BASELINE, *[p for p in policies if p != BASELINE]]
    study = VerdictStudy(servers, load, precision, metric)
    total, done = len(regimes) * len(order), 0
    for regime in regimes:
        for policy in order:
            kw = _arguments(regime, servers, policy)
            res = simulate(
                kw.pop("policy", policy),
                servers=servers,
                load=load,
                precision=precision,
                max_tasks=max_tasks,
                rng=np.random.default_rng(_stream(seed, regime, policy)),
                keep_response_times=True,
                **kw,
            )
            ci = res.ci95
            p99, p99_low, p99_high = metric_interval(res, "p99")
            p99_ok = math.isfinite(p99_high)
            study.rows.append(
                {
                    "regime": regime,
                    "what": describe(regime),
                    "policy": policy,
                    "mean": res.mean_response_time,
                    "ci_low": ci[0] if ci else None,
                    "ci_high": ci[1] if ci else None,
                    "half_width": (ci[1] - ci[0]) / 2 if ci else None,
                    "p99": p99,
                    "p99_low": p99_low if p99_ok else None,
                    "p99_high": p99_high if p99_ok else None,
                    "p99_half_width": (p99_high - p99_low) / 2 if p99_ok else None,
                    "tasks": res.measured_tasks,
                    "stop": res.stop_reason,
                }
            )
            done += 1
            if progress is not None:
                progress(done / total, f"{regime}: {policy}")
        base = study.row(regime, BASELINE)
        for row in study.rows:
            if row["regime"] == regime:
                row["ratio"] = row[metric] / base[metric]
                row["vs"] = "baseline" if row["policy"] == BASELINE else _compare(row, base, metric)
    study.findings = _findings(study, order)
    return study
