"""Access logs of a balancer whose policy is known, for testing ``check-lb``.

:func:`balancer_log` simulates one proxy in front of ``k`` single-server FCFS upstreams
(exponential service, Poisson arrivals), choosing each upstream by ``policy`` from the
outstanding counts it sees (its own requests), and returns the lines it would log in the
NGINX format :data:`~cloudsched.dispatch.workload.upstreams.NGINX_UPSTREAM_FORMAT` (with
microsecond times, so that no two events share a timestamp).  Written from the policy
descriptions, independently of :mod:`cloudsched.experiments.checklb`.
"""

from __future__ import annotations

import heapq

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
    d = int(policy.split(":")[1].rstrip("r"))
    if policy.endswith("r"):
        sample = [int(x) for x in rng.integers(k, size=d)]
    else:
        sample = [int(x) for x in rng.permutation(k)[:d]]
    return min(sample, key=lambda u: counts[u])  # the first least loaded in sample order


def balancer_log(
    policy: str, *, k: int, load: float, requests: int, seed: int, mean_service: float = 0.1
) -> list[str]:
    """Return the log lines of ``requests`` requests balanced by ``policy`` over ``k``."""
    rng = np.random.default_rng(seed)
    counts = [0] * k
    free_at = [0.0] * k  # when each upstream's FCFS queue empties
    ends: list[tuple[float, int]] = []
    state = [-1]
    t = 1.7e9
    lines = []
    for _ in range(requests):
        t += rng.exponential(mean_service / (load * k))
        while ends and ends[0][0] <= t:
            counts[heapq.heappop(ends)[1]] -= 1
        u = _choose(policy, counts, rng, state)
        done = max(t, free_at[u]) + rng.exponential(mean_service)
        free_at[u] = done
        counts[u] += 1
        heapq.heappush(ends, (done, u))
        lines.append(f"{done:.6f} {done - t:.6f} 10.0.0.{u + 1}:8080 200")
    lines.sort(key=lambda line: float(line.split()[0]))  # written when each request ends
    return lines
