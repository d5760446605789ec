"""Events per second of the production balancers against pod(2), measured in the same run.

For each case (clock, N) every policy runs in a fresh process (compilation excluded: each
process compiles or loads its kernel first), alternating over the repetitions so that a
slow minute of the machine hurts all of them; the table gives the median events per CPU
second of the simulation and its ratio to pod's in the same case.  Cases: the Markov
clock (Poisson, exp(1), equal speeds) and the event list with a tenth of the servers four
times slower (``--speeds 0.9@1,0.1@0.25``), both at load 0.9, one dispatcher.

The issue's target is at least 0.8x pod's events/s in the same engine.  ``least-time`` with
equal weights reads NGINX's choice off a tournament tree (O(log N) per event, with NGINX's
average, estimate, halving and round robin among ties kept exactly), and ``prequal`` sends
three probes and scans its pool per query: both are measured, not assumed.

Run: ``python benchmarks/bench_balancers.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

POLICIES = ("pod", "ewma", "least-time", "wlr", "prequal", "wrr")

CHILD = """
import json, sys, time
from cloudsched.dispatch import simulate
from cloudsched.dispatch.workload.slowdown import speed_mix
policy, clock, n, tasks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
kw = dict(load=0.9, initial="empty", engine="servers")
if clock == "event-list":
    kw["speeds"] = speed_mix(n, "0.9@1,0.1@0.25")
simulate(policy, servers=n, tasks=2000, rng=0, **kw)
t0 = time.process_time()
res = simulate(policy, servers=n, tasks=tasks, rng=1, **kw)
print(json.dumps({"events": res.events, "cpu": time.process_time() - t0, "clock": res.clock}))
"""


def measure(policy: str, clock: str, n: int, tasks: int) -> float:
    """Events per CPU second of one run in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, policy, clock, str(n), str(tasks)],
        capture_output=True,
        text=True,
        check=True,
    )
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["clock"] == clock, rec
    return rec["events"] / rec["cpu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer tasks and repetitions")
    args = parser.parse_args()
    tasks, reps = (200_000, 1) if args.quick else (2_000_000, 3)
    print(f"{'clock':<11} {'N':>5} {'policy':<11} {'events/s':>12} {'x pod':>7}")
    for clock in ("markov", "event-list"):
        for n in (16, 100, 1000):
            rates: dict[str, list[float]] = {p: [] for p in POLICIES}
            for _ in range(reps):
                for policy in POLICIES:
                    rates[policy].append(measure(policy, clock, n, tasks))
            base = statistics.median(rates["pod"])
            for policy in POLICIES:
                rate = statistics.median(rates[policy])
                print(f"{clock:<11} {n:>5} {policy:<11} {rate:>12.3e} {rate / base:>7.2f}")


if __name__ == "__main__":
    main()
