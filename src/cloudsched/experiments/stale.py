"""What late information does: response time against message delay, simulated and in theory.

The question behind several proxies that each see stale counts, or an I-queue that hears of
idle servers late: at which delay does a policy that sends to the least loaded server (as
it looked) start to herd, and when is it worse than choosing at random?  :func:`stale_study`
simulates each policy at each delay on its own seeded stream (the delay engine,
:mod:`cloudsched.dispatch.delays`), with 95% intervals, and puts the delayed mean field
beside it where there is one (:func:`cloudsched.dispatch.theory.delayed.delayed_meanfield`:
exact in the limit for ``jiq`` and ``jiq-pod``, a closure for ``pod``, none for ``jsq``).
Random dispatch reads nothing and sends nothing, so it is the same at every delay (an
M/M/1 queue per server: ``1 / (1 - load)``); it is the line a policy with late information
must stay under to be worth its messages.
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
from cloudsched.results import in_interval, interval_columns

__all__ = ["DEFAULT_DELAYS", "KINDS", "StaleStudy", "parse_policy", "stale_study"]

#: Message kinds a study varies, and the policies shown by default for each (the policy
#: table's ``defaults``; those that probe d servers with d = 2).
KINDS = {
    kind: tuple(
        f"{p}:2" if TABLE[p].probes == "d" else p for p in default_policies(f"stale {kind}")
    )
    for kind in ("info", "join")
}
#: Delays (mean service times) studied by default.
DEFAULT_DELAYS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass
class StaleStudy:
    """One row per (policy, delay); ``findings`` states what the rows show."""

    servers: int
    load: float
    kind: str
    exponential: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    @property
    def random_mean(self) -> float:
        """Mean response time of random dispatch (M/M/1 per server), at every delay."""
        return 1.0 / (1.0 - self.load)


def parse_policy(text: str, kind: str) -> tuple[str, int]:
    """Read ``jsq``, ``pod:D``, ``jiq`` or ``jiq-pod:D`` (one that sends ``kind`` messages)."""
    from cloudsched.dispatch.delays import DELAY_POLICIES

    name, _, d_text = text.partition(":")
    if name not in DELAY_POLICIES or kind not in DELAY_POLICIES[name]:
        senders = [p for p, kinds in DELAY_POLICIES.items() if kind in kinds]
        raise ParameterError(
            "--policy", text, f"one of {', '.join(senders)} (pod and jiq-pod as pod:D)"
        )
    if TABLE[name].probes == "d":
        d = check_int("--policy", int(d_text) if d_text.isdigit() else -1, low=1)
        return name, d
    if d_text:
        raise ParameterError("--policy", text, f"{name} without :D")
    return name, 1


def _theory(name: str, d: int, load: float, delay: float, r: float) -> tuple[float | None, str]:
    from cloudsched.dispatch.theory.delayed import DELAYED_POLICIES, delayed_meanfield

    if name not in DELAYED_POLICIES:
        return None, "none (herding: simulate)"
    p = delayed_meanfield(name, load, delay, d=d, r=r)
    source = "approximate (closure)" if p.approximate else "mean field (N = inf)"
    if not p.converged:
        source += ", NOT converged"
    return p.mean_response_time, source


def stale_study(
    *,
    servers: int,
    load: float,
    kind: str = "info",
    delays: Sequence[float] = DEFAULT_DELAYS,
    policies: Sequence[str] | None = None,
    r: float = 10.0,
    exponential: bool = False,
    theory: bool = True,
    seed: int = 0,
    precision: float = 0.02,
    max_tasks: int = 200_000_000,
    progress: Progress | None = None,
) -> StaleStudy:
    """Simulate each policy at each delay of ``kind`` (and its delayed mean field).

    ``policies``: ``jsq``, ``pod:D`` (``info``), ``jiq``, ``jiq-pod:D`` (``join``; both use
    ``r`` servers per dispatcher); default :data:`KINDS`.  ``exponential``: delays
    exponential with these means instead of fixed.  Each (policy, delay) runs on stream
    ``k`` of ``seed`` in the order given.
    """
    from cloudsched.dispatch.delays import MAX_DELAY
    from cloudsched.dispatch.simulation import simulate

    check_choice("--kind", kind, tuple(KINDS))
    n = check_int("--servers", servers, low=2, high=10**7)
    lam = check_real("--load", load, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int("--seed", seed, low=0, high=SEED_LIMIT - 1)
    grid = sorted({check_real("--delays", x, low=0.0, high=MAX_DELAY) for x in delays})
    if not grid:
        raise ParameterError("--delays", "", "at least one delay")
    chosen = [parse_policy(p, kind) for p in (policies or KINDS[kind])]
    study = StaleStudy(n, lam, kind, exponential)
    total, k = len(chosen) * len(grid), 0
    seeds = np.random.SeedSequence(seed).spawn(total)
    for name, d in chosen:
        label = f"{name}({d})" if TABLE[name].probes == "d" else name
        for delay in grid:
            spec = f"{kind}={'exp:' if exponential else ''}{delay:g}"
            res = simulate(
                name,
                servers=n,
                load=lam,
                d=d,
                r=r if name.startswith("jiq") else None,
                delay=spec if delay > 0 else None,
                rng=np.random.default_rng(seeds[k]),
                precision=precision,
                max_tasks=max_tasks,
            )
            mean_t, source = (None, "-")
            if theory and not exponential:
                mean_t, source = _theory(name, d, lam, delay, r)
            low, high = res.ci95 or (math.nan, math.nan)
            study.rows.append(
                {
                    "policy": label,
                    "delay": delay,
                    "mean_response_time": res.mean_response_time,
                    **interval_columns(res.ci95),
                    "p99": res.percentiles.get("p99", math.nan),
                    "stale_per_task": res.messages.get("stale", 0.0) / lam,
                    "theory_mean": math.nan if mean_t is None else mean_t,
                    "theory": source,
                    "theory_in_interval": in_interval(mean_t, low, high),
                    "engine": res.engine,
                }
            )
            k += 1
            if progress is not None:
                progress(k / total, f"{label} at {kind} delay {delay:g}")
    study.findings = findings(study)
    return study


def _first(rows: list[dict[str, Any]], worse: str, better: str | None, bound: float) -> Any:
    """Return the first delay where ``worse``'s interval is above ``better``'s (or ``bound``)."""
    by = {(r["policy"], r["delay"]): r for r in rows}
    for (p, delay), row in sorted(by.items(), key=lambda kv: kv[0][1]):
        if p != worse:
            continue
        top = bound
        if better is not None:
            other = by.get((better, delay))
            if other is None:
                continue
            top = other["ci95_high"]
        if row["ci95_low"] > top:
            return delay
    return None


def findings(study: StaleStudy) -> list[str]:
    """Plain sentences on what the rows show (crossings judged on the 95% intervals)."""
    out: list[str] = []
    labels = list(dict.fromkeys(r["policy"] for r in study.rows))
    unit = "mean service times"
    rnd = study.random_mean
    for a in labels:
        for b in labels:
            if a == b:
                continue
            fresh = [r for r in study.rows if r["delay"] == 0.0]
            a0 = next((r for r in fresh if r["policy"] == a), None)
            b0 = next((r for r in fresh if r["policy"] == b), None)
            if a0 is None or b0 is None or not a0["ci95_high"] < b0["ci95_low"]:
                continue
            cross = _first(study.rows, a, b, math.inf)
            if cross is not None:
                out.append(
                    f"{a} is better than {b} with fresh information and worse once "
                    f"{study.kind} messages take {cross:g} {unit} (95% intervals apart)"
                )
    for a in labels:
        cross = _first(study.rows, a, None, rnd)
        if cross is not None:
            out.append(
                f"{a} is worse than random dispatch ({rnd:.3g}) once {study.kind} messages "
                f"take {cross:g} {unit}"
            )
    for a in labels:
        mine = [r for r in study.rows if r["policy"] == a]
        off = [r["delay"] for r in mine if r["theory_in_interval"] is False]
        if off:
            closure = " and a closure" if any("closure" in r["theory"] for r in mine) else ""
            out.append(
                f"the theory for {a} is outside the simulated mean's 95% interval at delay "
                f"{', '.join(f'{x:g}' for x in off)} (marked *): it is the N -> infinity "
                f"limit{closure}; the simulation is the number at N = {study.servers}"
            )
    return out
