"""Several policies at several loads (and d, r) side by side: theory beside simulation.

:func:`compare` runs one simulation per setting of the grid ``policies x loads x d x r``
(a policy that does not use ``d`` or the dispatchers runs once for the first value), each
with its own stream ``k`` of ``SeedSequence(seed).spawn``, and returns one row per setting:
the mean-field prediction where a model covers it (mean and p99), the simulated mean with
its 95% interval, p99 and the messages per task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from cloudsched.dispatch.policies import MEANFIELD_POLICIES, get_policy
from cloudsched.dispatch.result import SimulationResult
from cloudsched.policy_table import TABLE
from cloudsched.progress import Progress
from cloudsched.results import interval_columns

__all__ = [
    "compare",
    "meanfield_mean",
    "meanfield_quantile",
    "messages_per_task",
    "options_per_policy",
    "setting_args",
    "setting_grid",
    "threshold_of",
]


def threshold_of(z: int | None) -> int:
    """Return the threshold a run is given: ``z``, or 1 (unused) for a policy without one."""
    return 1 if z is None else int(z)  # never ``z or 1``: z = 0 is a threshold


def setting_args(cand: dict[str, Any], n: int) -> dict[str, Any]:
    """Return the policy, servers, r, d and threshold of a searched setting at N = ``n``.

    As :func:`~cloudsched.dispatch.simulate` takes them: ``r`` at most ``n``, ``d`` 2 where
    it means nothing, the threshold of :func:`threshold_of`.
    """
    return {
        "policy": cand["policy"],
        "servers": n,
        "r": min(cand["r"], n),
        "d": cand["d"] or 2,
        "threshold": threshold_of(cand["threshold"]),
    }


def meanfield_mean(policy: str, load: float | None, r: float, d: int) -> float | None:
    """Return the mean-field mean response time, or None where no model covers the setting.

    Only for Poisson arrivals and exponential service of mean 1 on equal servers (the
    caller decides that); ``r`` is N/M.
    """
    if policy not in MEANFIELD_POLICIES or load is None or not 0 < load < 1:
        return None
    from cloudsched.dispatch.theory.meanfield import R_MAX, predict

    if not TABLE[policy].iqueues:
        r = 1.0  # servers per dispatcher matters only to I-queues (N / 1 may pass R_MAX)
    elif not 1 <= r <= R_MAX:
        return None

    return float(predict(policy, [load], r=r, d=d).mean_response_time[0])


def meanfield_quantile(policy: str, load: float, r: float, d: int, q: float = 0.99) -> float:
    """Return the ``q``-quantile of the response time in the mean-field limit.

    A task joins a server already holding ``k`` tasks with ``P(K >= j) = G_j``, where
    ``G_j = p0 s_j^d`` (``p0 = 1`` without I-queues, ``d = 1`` for random and JIQ, ``G_j =
    0`` for JSQ), the terms of ``T = 1 + p0 sum s_j^d``.  With FIFO exponential service its
    response time is Erlang(K + 1), so ``P(R > t) = sum_j e^-t t^j / j! G_j``; the quantile
    is found by bisection.  The sum of the ``G_j`` is checked against the model's ``T``.
    """
    from scipy.stats import poisson

    from cloudsched.dispatch.short_run import join_tail

    tail, mean = join_tail(policy, load, r=max(r, 1.0), d=d)
    g = np.concatenate([[1.0], tail])
    if abs(g.sum() - mean) > 1e-6 * mean:
        raise AssertionError(f"{policy}: P(K >= j) does not sum to T")  # model and law disagree
    j = np.arange(g.size)

    def above(t: float) -> float:
        return float(np.sum(poisson.pmf(j, t) * g)) + float(poisson.sf(g.size - 1, t)) * g[-1]

    lo, hi = 0.0, 10.0
    while above(hi) > 1 - q:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if above(mid) > 1 - q else (lo, mid)
    return hi


def messages_per_task(res: SimulationResult) -> float:
    """Return the messages (join + delete + probe) sent per dispatched task."""
    rate = res.measured_tasks / (res.measured_time * res.servers) if res.measured_time > 0 else 0
    sent = sum(res.messages.get(k, 0.0) for k in ("join", "delete", "probe"))
    return sent / rate if rate > 0 else math.nan


def setting_grid(
    policies: Sequence[str],
    loads: Sequence[float | None],
    ds: Sequence[int],
    rs: Sequence[float] | None,
    thresholds: Sequence[int] = (1,),
) -> list[dict[str, Any]]:
    """List the settings ``policy x d x threshold x r x load``; unused ones take one value.

    ``d`` is None for a policy that has no ``d``, ``threshold`` None for one without a
    threshold; ``r`` is kept for every policy (it sets the number of dispatchers, which
    every run has) but varied only where the policy's decisions depend on the dispatcher;
    ``rs`` None gives every policy ``simulate``'s own default (r = 10 for round-robin and
    the JIQ family, one dispatcher for the others: a production balancer is one proxy).
    """
    out: list[dict[str, Any]] = []
    for name in policies:
        pol = get_policy(name)
        for d in ds if pol.d is not None else [None]:
            for z in thresholds if pol.threshold else [None]:
                chosen = [None] if rs is None else (rs if pol.per_dispatcher else rs[:1])
                for r in chosen:
                    out.extend(
                        {"policy": name, "d": d, "threshold": z, "r": r, "load": lam}
                        for lam in loads
                    )
    return out


def options_per_policy(policies: Sequence[str], given: Sequence[str]) -> dict[str, list[str]]:
    """Give each policy the options it has; refuse one that no compared policy has."""
    from cloudsched.errors import ParameterError

    names = {p: {o.name for o in TABLE[p].options} if p in TABLE else set() for p in policies}
    out: dict[str, list[str]] = {p: [] for p in policies}
    for item in given:
        name = str(item).partition("=")[0].strip()
        takers = [p for p in policies if name in names[p]]
        if not takers:
            having = sorted({n for ns in names.values() for n in ns})
            allowed = (
                "an option of a compared policy: " + ", ".join(having)
                if having
                else "absent: no compared policy takes options"
            )
            raise ParameterError("--option", item, allowed)
        for p in takers:
            out[p].append(str(item))
    from cloudsched.dispatch.options import resolve_options

    for p, given_p in out.items():  # every value checked before the first run
        if given_p:
            resolve_options(p, given_p)
    return out


def compare(
    policies: Sequence[str],
    loads: Sequence[float | None],
    *,
    servers: int,
    ds: Sequence[int] = (2,),
    rs: Sequence[float] | None = None,
    thresholds: Sequence[int] = (1,),
    seed: int = 0,
    exponential: bool = True,
    progress: Progress | None = None,
    policy_options: Sequence[str] = (),
    **options: Any,
) -> list[tuple[dict[str, Any], SimulationResult]]:
    """Simulate every setting of :func:`setting_grid`; return ``(row, result)`` pairs.

    ``options`` go to :func:`~cloudsched.dispatch.simulate` (precision, tasks, service,
    trace, ...); ``exponential`` says the workload is Poisson/exp(1) on equal servers, so
    that the mean field applies.  ``progress(fraction, status)``
    (:mod:`cloudsched.progress`) is called before each run, the status naming it.
    ``policy_options``: a production balancer's ``NAME=VALUE`` options, each given to the
    policies that have an option of that name (one no compared policy has is refused).
    """
    from cloudsched.dispatch.simulation import simulate
    from cloudsched.errors import SEED_LIMIT, check_int

    seed = check_int("seed", seed, low=0, high=SEED_LIMIT - 1)
    per_policy = options_per_policy(policies, policy_options)
    grid = setting_grid(policies, loads, ds, rs, thresholds)
    streams = np.random.SeedSequence(seed).spawn(len(grid))
    out = []
    for k, (setting, stream) in enumerate(zip(grid, streams, strict=True)):
        if progress is not None:
            progress(
                k / len(grid), f"{setting['policy']} load {setting['load']} ({k + 1}/{len(grid)})"
            )
        r = None if setting["r"] is None else min(float(setting["r"]), float(servers))
        res = simulate(
            setting["policy"],
            servers=servers,
            load=setting["load"],
            r=r,
            d=setting["d"] or 2,
            threshold=threshold_of(setting["threshold"]),
            rng=np.random.default_rng(stream),
            options=per_policy[setting["policy"]] or None,
            **options,
        )
        r_run = res.servers / res.dispatchers
        mf = meanfield_mean(setting["policy"], res.load, r_run, res.d) if exponential else None
        mf99 = (
            meanfield_quantile(setting["policy"], res.load, r_run, res.d)
            if (mf is not None)
            else None
        )
        row = {
            "policy": setting["policy"],
            "d": setting["d"],
            "threshold": setting["threshold"],
            "r": res.servers / res.dispatchers,
            "load": res.load,
            "meanfield_T": mf,
            "mean_response_time": res.mean_response_time,
            **interval_columns(res.ci95),
            "p99": res.percentiles.get("p99", math.nan),
            "meanfield_p99": mf99,
            "messages_per_task": messages_per_task(res),
            "msg_join": res.messages.get("join", 0.0),
            "msg_delete": res.messages.get("delete", 0.0),
            "msg_probe": res.messages.get("probe", 0.0),
            "steady_state": res.steady_state,
            "stop_reason": res.stop_reason,
            "precision_target": res.precision_target,
            "precision_reached": res.precision_reached,
            "measured_tasks": res.measured_tasks,
            "warnings": "; ".join(res.warnings),
        }
        out.append((row, res))
    if progress is not None:
        progress(1.0, "")
    return out
