"""Access logs of a balancer whose policy is known, for testing ``check-lb``.

:func:`balancer_log` simulates one proxy in front of ``k`` single-server FCFS upstreams
(exponential service, Poisson arrivals), choosing each upstream by ``policy`` from the
outstanding counts it sees (its own requests), and returns the lines it would log: in the
NGINX format :data:`~cloudsched.dispatch.workload.upstreams.NGINX_UPSTREAM_FORMAT` with
microsecond times (no two events share a timestamp), or in Envoy's default text format or
a JSON format (``start_time``, ``duration``, ``upstream_host``) with Envoy's millisecond
resolution: ``%START_TIME%`` and ``%DURATION%`` are both truncated to the millisecond, as
Envoy formats them.  Written from the policy descriptions, independently of
:mod:`cloudsched.experiments.checklb`.
"""

from __future__ import annotations

import heapq
import json
from datetime import UTC, datetime

import numpy as np

__all__ = ["balancer_log"]


def _choose(policy: str, counts: list[int], rng: np.random.Generator, state: list[int]) -> int:
    k = len(counts)
    if policy == "random":
        return int(rng.integers(k))
    if policy == "round-robin":
        state[0] = (state[0] + 1) % k
        return state[0]
    if policy == "least-request":
        low = min(counts)
        ties = [u for u in range(k) if counts[u] == low]
        return ties[int(rng.integers(len(ties)))]
    if policy == "extremes":  # a planted wrong policy: whose mean transform under random
        # is near 0.5 (the least loaded 60% of the time, the most loaded otherwise)
        pick = min(counts) if rng.random() < 0.6 else max(counts)
        ties = [u for u in range(k) if counts[u] == pick]
        return ties[int(rng.integers(len(ties)))]
    if policy == "skewed":  # random, but the first upstream drawn twice as often
        u = int(rng.integers(k + 1))
        return 0 if u == k else u
    if policy == "jiq":  # one dispatcher: an idle upstream if it knows one, else any
        idle = [u for u in range(k) if counts[u] == 0]
        return idle[int(rng.integers(len(idle)))] if idle else int(rng.integers(k))
    d = int(policy.split(":")[1].rstrip("r"))
    if policy.endswith("r"):
        sample = [int(x) for x in rng.integers(k, size=d)]
    else:
        sample = [int(x) for x in rng.permutation(k)[:d]]
    return min(sample, key=lambda u: counts[u])  # the first least loaded in sample order


def _envoy_line(start: float, end: float, u: int, fmt: str) -> str:
    ms = int(start * 1000)  # Envoy truncates both to the millisecond
    stamp = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    duration = int((end - start) * 1000)
    host = f"10.0.0.{u + 1}:8080"
    if fmt == "envoy-json":
        return json.dumps(
            {"start_time": stamp, "method": "GET", "duration": duration, "upstream_host": host}
        )
    return (
        f'[{stamp}] "GET /api HTTP/1.1" 200 - 0 512 {duration} {max(duration - 1, 0)} "-" '
        f'"curl/8.5.0" "{u:08x}-{ms % 9973:04x}" "api.example.com" "{host}"'
    )


def balancer_log(
    policy: str,
    *,
    k: int,
    load: float,
    requests: int,
    seed: int,
    mean_service: float = 0.1,
    fmt: str = "nginx",
) -> list[str]:
    """Return the log lines of ``requests`` requests balanced by ``policy`` over ``k``.

    ``fmt``: ``nginx`` (exact times), ``envoy`` or ``envoy-json`` (milliseconds).
    """
    rng = np.random.default_rng(seed)
    counts = [0] * k
    free_at = [0.0] * k  # when each upstream's FCFS queue empties
    ends: list[tuple[float, int]] = []
    state = [-1]
    t = 1.7e9
    lines: list[tuple[float, str]] = []
    for _ in range(requests):
        t += rng.exponential(mean_service / (load * k))
        while ends and ends[0][0] <= t:
            counts[heapq.heappop(ends)[1]] -= 1
        u = _choose(policy, counts, rng, state)
        done = max(t, free_at[u]) + rng.exponential(mean_service)
        free_at[u] = done
        counts[u] += 1
        heapq.heappush(ends, (done, u))
        if fmt == "nginx":
            lines.append((done, f"{done:.6f} {done - t:.6f} 10.0.0.{u + 1}:8080 200"))
        else:
            lines.append((done, _envoy_line(t, done, u, fmt)))
    lines.sort(key=lambda line: line[0])  # written when each request ends
    return [text for _, text in lines]
