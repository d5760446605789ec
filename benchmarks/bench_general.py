"""Speed of the event-list (general) engine with other laws, beside the exponential engine.

N = 1000 servers at load 0.9; Random, Pod(2), JIQ and JIQ-Pod(2) with lognormal service
(cv 2) and hyperexponential arrivals (cv 2), then the same policies on the Markov-chain
engine.  Events per second of the kernel (wall time of the run, the result's
``events_per_second``).  The paired comparison with a C event-list simulator doing the same
work is ``bench_peers.py``.

Run: ``python benchmarks/bench_general.py [--quick]``.
"""

from __future__ import annotations

import sys

from cloudsched.dispatch import simulate

N, LOAD = 1000, 0.9


def main() -> None:
    tasks = 1_000_000 if "--quick" in sys.argv else 5_000_000
    simulate("random", servers=10, load=0.5, tasks=100, rng=0)  # compile outside the timings
    print(f"N = {N}, load = {LOAD}, {tasks:,} tasks (M events per second of the kernel)")
    print(f"{'policy':<10}{'lognormal, h2':>15}{'exponential':>13}")
    for policy in ("random", "pod", "jiq", "jiq-pod"):
        kw = {"r": 10} if policy.startswith("jiq") else {}
        gen = simulate(
            policy,
            servers=N,
            load=LOAD,
            tasks=tasks,
            rng=1,
            service="lognormal:cv=2",
            arrivals="h2:cv=2",
            **kw,
        )
        exp = simulate(policy, servers=N, load=LOAD, tasks=tasks, rng=1, **kw)
        gen_rate, exp_rate = gen.events_per_second / 1e6, exp.events_per_second / 1e6
        print(f"{policy:<10}{gen_rate:>15.2f}{exp_rate:>13.2f}")


if __name__ == "__main__":
    main()
