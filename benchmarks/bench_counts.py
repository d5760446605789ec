"""Speed of the occupancy-count engine in steady state, at N = 10^3, 10^6 and 10^8.

Each run starts from the mean-field steady state (the default start), simulates ``TASKS``
arrivals (load 0.9, d = 2, r = 10) and is timed in CPU seconds of the engine alone
(``time.process_time`` around ``advance``, after a short run that loads the compiled
kernel).  Prints events per CPU second, median and range of 3 seeds, beside the per-server
engine run the same way at N = 10^3 and 10^6 (the ratio: counts over per-server).  Peak
memory at N = 10^8 is measured in a fresh process by ``bench_peers.py --engines counts``.

Then pod(2) with two speed classes (a quarter of the servers at speed 2, an empty start as
with any speeds), against the event-list engine at N = 10^3 and 10^6.

Run: ``python benchmarks/bench_counts.py [TASKS]`` (default 10^7).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from cloudsched.dispatch.engines.classes.engine import ClassesRun
from cloudsched.dispatch.engines.counts.engine import CountsRun
from cloudsched.dispatch.engines.replication import Replication, RunSpec
from cloudsched.dispatch.engines.servers.engine import ServersRun
from cloudsched.dispatch.initial import meanfield_counts, meanfield_state

POLICIES = ("random", "pod", "jiq-pod")


def _rate(policy: str, n: int, tasks: int, seed: int, counts: bool) -> float:
    m = max(1, n // 10)
    spec = RunSpec(policy, n, m, 0.9, d=2, warm_tasks=0, end_tasks=tasks, record=False)
    rng = np.random.default_rng(seed)
    if counts:
        init, iq = meanfield_counts(policy, n, m, 0.9, r=n / m, d=2, rng=rng)
        eng: Replication = CountsRun(spec, rng, init, iq)
    else:
        start = meanfield_state(policy, n, m, 0.9, r=n / m, d=2, rng=rng)
        eng = ServersRun(spec, rng, initial=start)
    t0 = time.process_time()
    while not eng.advance(1 << 22):
        pass
    return eng.events / (time.process_time() - t0)


def main() -> None:
    tasks = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10_000_000
    for policy in POLICIES:  # load the compiled kernels
        _rate(policy, 100, 1000, 0, True)
        _rate(policy, 100, 1000, 0, False)
    print(f"{'policy':<9}{'N':>13}  {'counts M events/s':>24}  {'per-server':>22}  ratio")
    for policy in POLICIES:
        for n in (1000, 1_000_000, 100_000_000):
            ours = [_rate(policy, n, tasks, s, True) / 1e6 for s in range(3)]
            line = (
                f"{policy:<9}{n:>13,}  {statistics.median(ours):>8.1f} "
                f"[{min(ours):5.1f}, {max(ours):5.1f}]"
            )
            if n <= 1_000_000:
                per = [_rate(policy, n, tasks, s, False) / 1e6 for s in range(3)]
                ratio = statistics.median(ours) / statistics.median(per)
                line += (
                    f"  {statistics.median(per):>8.1f} [{min(per):5.1f}, {max(per):5.1f}]"
                    f"  {ratio:5.1f}"
                )
            print(line, flush=True)
    classes(tasks)


def _class_rate(n: int, tasks: int, seed: int, counts: bool) -> float:
    """pod(2) with a quarter of the servers twice as fast (empty start, the default with
    speeds): events per CPU second, counts engine or the event-list engine."""
    speeds = np.where(np.arange(n) % 4 == 0, 2.0, 1.0)
    spec = RunSpec(
        "pod", n, 1, 0.9 * speeds.sum() / n, d=2, warm_tasks=0, end_tasks=tasks, record=False
    )
    rng = np.random.default_rng(seed)
    if counts:
        eng: Replication = ClassesRun(spec, rng, speeds)
    else:
        from cloudsched.dispatch.workload.distributions import Exponential
        from cloudsched.dispatch.workload.resolved import RenewalSource

        arr, svc = rng.spawn(2)
        source = RenewalSource(Exponential(), Exponential(), spec.rate * n, arr, svc)
        eng = ServersRun(spec, rng, source, speeds)
    t0 = time.process_time()
    while not eng.advance(1 << 22):
        pass
    return eng.events / (time.process_time() - t0)


def classes(tasks: int) -> None:
    """Speed classes: pod(2), two speeds, against the event-list engine."""
    _class_rate(100, 1000, 0, True)
    _class_rate(100, 1000, 0, False)
    print("\npod(2), two speed classes (1/4 of the servers at speed 2), empty start:")
    print(f"{'N':>13}  {'counts M events/s':>24}  {'event list':>22}  ratio")
    for n in (1000, 1_000_000, 100_000_000):
        ours = [_class_rate(n, tasks, s, True) / 1e6 for s in range(3)]
        line = f"{n:>13,}  {statistics.median(ours):>8.1f} [{min(ours):5.1f}, {max(ours):5.1f}]"
        if n <= 1_000_000:
            per = [_class_rate(n, tasks, s, False) / 1e6 for s in range(3)]
            ratio = statistics.median(ours) / statistics.median(per)
            line += (
                f"  {statistics.median(per):>8.1f} [{min(per):5.1f}, {max(per):5.1f}]  {ratio:5.1f}"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
