"""Speed of the compiled dispatch engine against other ways of simulating the same model.

Model: N = 1000 servers, load 0.9, exponential service of mean 1, Poisson arrivals; Random
and Pod(2).  In one run this script times

* the compiled engine (``cloudsched.dispatch.simulate``, every task's response recorded);
* the pure-Python mirror of the same algorithm (``cloudsched.dispatch.engines.servers.mirror``);
* a plain-Python event-list simulator with ``heapq`` (one event per arrival and departure);
* SimPy (one process per task, a ``Resource`` per server), if installed;

all doing the same work: scalar uniform draws for the servers (Pod(2): the second among the
other N - 1), every task's response time recorded.  The comparison with C peers is
``bench_peers.py``.

and prints events per second and the ratios to the engine.  Then it times every policy of
the engine at N = 1000 and a run with N = 1,000,000 servers in a subprocess (peak memory
from ``resource.getrusage``).

Run: ``python benchmarks/bench_simulate.py [--quick]``.
"""

from __future__ import annotations

import heapq
import json
import subprocess
import sys
import time
from collections import deque

import numpy as np

from cloudsched.dispatch import POLICIES, simulate
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.dispatch.engines.servers.mirror import mirror_run as reference_run

N, LOAD = 1000, 0.9


def engine_rate(policy: str, tasks: int, **kw) -> float:
    res = simulate(
        policy, servers=N, load=LOAD, tasks=tasks, rng=1, d=2, keep_response_times=True, **kw
    )
    return res.events_per_second


def reference_rate(policy: str, tasks: int) -> float:
    t0 = time.perf_counter()
    spec = RunSpec(policy, N, 1, LOAD, 2, warm_tasks=tasks // 5, end_tasks=tasks)
    raw = reference_run(spec, np.random.default_rng(1))
    return raw.events / (time.perf_counter() - t0)


def _pick(rng: np.random.Generator, policy: str, qlen) -> int:
    """Random: a uniform server; Pod(2): the shorter of two distinct uniform servers."""
    s = min(int(rng.random() * N), N - 1)
    if policy == "pod":
        s2 = min(int(rng.random() * (N - 1)), N - 2)
        s2 += s2 >= s
        if qlen(s2) < qlen(s):
            s = s2
    return s


def heapq_rate(policy: str, tasks: int) -> float:
    """Event-list simulation in plain Python: arrivals and departures in a binary heap.

    The same work as the engine: every task's arrival time is queued at its server and its
    response time recorded; draws are scalar ``rng.random()`` / ``rng.exponential()``.
    """
    rng = np.random.default_rng(1)
    queues: list[deque[float]] = [deque() for _ in range(N)]
    response: list[float] = []
    heap: list[tuple[float, int, int]] = [(rng.exponential(1 / (LOAD * N)), 0, -1)]
    seq = events = arrivals = 0
    t0 = time.perf_counter()
    while heap:
        now, _, server = heapq.heappop(heap)
        events += 1
        if server < 0:
            arrivals += 1
            s = _pick(rng, policy, lambda k: len(queues[k]))
            queues[s].append(now)
            if len(queues[s]) == 1:
                seq += 1
                heapq.heappush(heap, (now + rng.exponential(), seq, s))
            if arrivals < tasks:
                seq += 1
                heapq.heappush(heap, (now + rng.exponential(1 / (LOAD * N)), seq, -1))
        else:
            response.append(now - queues[server].popleft())
            if queues[server]:
                seq += 1
                heapq.heappush(heap, (now + rng.exponential(), seq, server))
    return events / (time.perf_counter() - t0)


def simpy_rate(policy: str, tasks: int) -> float | None:
    """SimPy: a process per task, a ``Resource`` per server, every response time recorded."""
    try:
        import simpy
    except ImportError:
        return None
    rng = np.random.default_rng(1)
    env = simpy.Environment()
    servers = [simpy.Resource(env, capacity=1) for _ in range(N)]
    counter = {"events": 0}
    response: list[float] = []

    def task(res):
        arrived = env.now
        with res.request() as req:
            yield req
            yield env.timeout(rng.exponential())
        response.append(env.now - arrived)
        counter["events"] += 1

    def source():
        for _ in range(tasks):
            yield env.timeout(rng.exponential(1 / (LOAD * N)))
            counter["events"] += 1
            s = _pick(rng, policy, lambda k: len(servers[k].queue) + servers[k].count)
            env.process(task(servers[s]))

    env.process(source())
    t0 = time.perf_counter()
    env.run()
    return counter["events"] / (time.perf_counter() - t0)


BIG = """
import resource, json
from cloudsched.dispatch import simulate
res = simulate("{policy}", servers=1_000_000, r=10, load=0.9, tasks={tasks}, rng=1,
               engine="{engine}")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = {{"eps": res.events_per_second, "peak_mb": peak}}
print(json.dumps(out))
"""


def main() -> None:
    quick = "--quick" in sys.argv
    scale = 10 if quick else 1
    engine_tasks, slow_tasks = 2_000_000 // scale, 50_000 // scale
    simulate("random", servers=10, load=0.5, tasks=100, rng=0)  # compile outside the timings
    print(f"N = {N}, load = {LOAD}: events per second (ratio = engine / other)")
    print(
        f"{'policy':<8}{'engine':>12}{'reference':>12}{'heapq':>12}{'SimPy':>12}"
        "   ratios ref/heapq/SimPy"
    )
    for policy in ("random", "pod"):
        fast = engine_rate(policy, engine_tasks)
        ref = reference_rate(policy, slow_tasks)
        hq = heapq_rate(policy, slow_tasks)
        sp = simpy_rate(policy, slow_tasks // 2)
        sp_txt = f"{sp:>12.3g}" if sp else f"{'n/a':>12}"
        ratios = f"{fast / ref:.0f}x / {fast / hq:.0f}x / " + (f"{fast / sp:.0f}x" if sp else "n/a")
        print(f"{policy:<8}{fast:>12.3g}{ref:>12.3g}{hq:>12.3g}{sp_txt}   {ratios}")
    print("\nengine, every policy (N = 1000, r = 10, load 0.9, d = 2, z = 1):")
    for policy in POLICIES:
        kw = {"r": 10} if policy == "round-robin" or policy.startswith("jiq") else {}
        print(f"  {policy:<14}{engine_rate(policy, engine_tasks, **kw) / 1e6:6.2f} M events/s")
    big_tasks = 2_000_000 if quick else 20_000_000
    print(
        f"\nN = 1,000,000 (r = 10, load 0.9, {big_tasks:,} tasks; a speed test: "
        f"{big_tasks // 1_000_000} tasks per server is far from steady state):"
    )
    for policy in ("jiq-pod", "random"):
        for engine in ("servers", "auto"):  # auto: the counts engine at this N
            out = subprocess.run(
                [sys.executable, "-c", BIG.format(policy=policy, tasks=big_tasks, engine=engine)],
                capture_output=True,
                text=True,
                check=True,
            )
            big = json.loads(out.stdout)
            print(
                f"  {policy:<8} engine={engine:<8}{big['eps'] / 1e6:7.2f} M events/s, "
                f"peak memory {big['peak_mb']:.0f} MB"
            )


if __name__ == "__main__":
    main()
