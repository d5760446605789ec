"""Speed of the compiled engines against C simulators doing the same work, paired in one run.

Peers, compiled here with ``gcc -O2`` (the script stops if gcc is missing):

* ``c_markov.c``: the Markov chain of the fast path (Poisson arrivals, exponential service,
  one uniform draw per event for its type, dispatcher or busy server), random, pod (distinct
  probes by redrawing a repeat; the engine shuffles a permutation, the same law), jiq and
  jiq-pod (I-queues with delete requests);
* ``c_eventlist.c``: the event-list engine's model (a heap of completion times, the next
  arrival beside it), random and Pod(2);
* ``c_counts.c``: the counts engine's chain (numbers of servers holding at least i tasks; an
  arrival's level read off the counts, its response time drawn as Erlang(k + 1)), random,
  Pod(2) and JIQ-Pod(2) (I-queues counted by size), at N = 10^3, 10^6 and 10^8 (no per-task
  records on either side).

Both sides start empty and are timed in CPU seconds of the simulation in a fresh process
(ours: ``time.process_time`` around ``simulate``, after a small run that loads the compiled
kernels; C: ``clock()`` around allocation and the loop).  The per-server engines and their
peers keep every task's response time in arrival order and simulate the drain without
arrivals (``keep_response_times=True``); the counts engine and its peer keep sums only.  Each
case runs ``reps`` interleaved pairs (ours, then C, with the same seed index); the ratio of a
pair is our events per CPU second over the peer's, reported as the median and the range over
the pairs.  Ours also reports its peak resident memory (``ru_maxrss``); runs without
``keep_response_times`` (the default) keep nothing per task, so their memory does not depend
on the run length (``--memory`` shows it).

Then the start-up: the wall time of ``cloudsched simulate pod --servers 1000 --load 0.9
--tasks 100000`` (warm cache), median of ``reps`` runs, beside a bare ``python -c pass``, and
the first call of a policy with an empty numba cache in each engine (compilation included).

Run: ``python benchmarks/bench_peers.py [--quick] [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

OURS = """
import json, resource, sys, time
from cloudsched.dispatch import simulate
policy, n, m, tasks, seed, engine, keep = sys.argv[1:8]
n, m, tasks, seed, keep = int(n), int(m), int(tasks), int(seed), keep == "1"
kw = dict(dispatchers=m) if policy.startswith("jiq") else {}
simulate(policy, servers=min(n, 50), load=0.9, tasks=2000, rng=0, initial="empty",
         engine=engine, **({"r": 10} if policy.startswith("jiq") else {}))
t0 = time.process_time()
res = simulate(policy, servers=n, load=0.9, tasks=tasks, rng=seed, initial="empty", d=2,
               engine=engine, keep_response_times=keep, **kw)
cpu = time.process_time() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"events": res.events, "cpu": cpu, "peak_mb": peak,
                  "mean": res.mean_response_time}))
"""

C_CODES = {"random": 0, "pod": 1, "jiq": 2, "jiq-pod": 3}


def build(tmp: Path) -> dict[str, Path]:
    """Compile the C peers into ``tmp``."""
    if shutil.which("gcc") is None:
        sys.exit("bench_peers: gcc is needed to build the C peers")
    out = {}
    for name in ("c_markov", "c_eventlist", "c_counts"):
        out[name] = tmp / name
        subprocess.run(
            ["gcc", "-O2", "-o", str(out[name]), str(HERE / f"{name}.c"), "-lm"], check=True
        )
    return out


def ours(
    policy: str, n: int, m: int, tasks: int, seed: int, engine: str, keep: bool = True
) -> dict[str, float]:
    """One run of our engine in a fresh process."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            OURS,
            policy,
            str(n),
            str(m),
            str(tasks),
            str(seed),
            engine,
            "1" if keep else "0",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["rate"] = row["events"] / row["cpu"]
    return row


def peer(binary: Path, policy: str, n: int, m: int, tasks: int, seed: int) -> dict[str, float]:
    """One run of a C peer."""
    if binary.name in ("c_markov", "c_counts"):
        args = [str(n), str(m), "0.9", str(tasks), str(C_CODES[policy]), "2", str(seed + 1)]
    else:
        args = [str(n), "0.9", str(tasks), str(C_CODES[policy]), str(seed + 1)]
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, check=True)
    events, cpu, mean = out.stdout.split()
    return {
        "events": int(events),
        "cpu": float(cpu),
        "rate": int(events) / float(cpu),
        "mean": float(mean),
    }


def pairs(binary: Path, policy: str, n: int, tasks: int, reps: int, engine: str) -> dict:
    """Interleaved pairs of one case; ratios are ours / peer per pair."""
    m = max(1, n // 10)
    here, there = [], []
    for k in range(reps):
        here.append(ours(policy, n, m, tasks, k, engine, keep=engine != "counts"))
        there.append(peer(binary, policy, n, m, tasks, k))
    ratios = [a["rate"] / b["rate"] for a, b in zip(here, there, strict=True)]
    return {
        "ours": statistics.median(r["rate"] for r in here),
        "peer": statistics.median(r["rate"] for r in there),
        "ratio": statistics.median(ratios),
        "low": min(ratios),
        "high": max(ratios),
        "peak_mb": max(r["peak_mb"] for r in here),
        "mean_ours": statistics.mean(r["mean"] for r in here),
        "mean_peer": statistics.mean(r["mean"] for r in there),
    }


def startup(reps: int) -> tuple[float, float]:
    """Median wall seconds of the README's short simulate command, and of a bare python."""
    cli = Path(sys.executable).with_name("cloudsched")
    command = [
        str(cli) if cli.exists() else "cloudsched",
        "simulate",
        "pod",
        "--servers",
        "1000",
        "--load",
        "0.9",
        "--tasks",
        "100000",
    ]
    subprocess.run(command, capture_output=True, check=True)  # warm the cache
    walls, bare = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        walls.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
    return statistics.median(walls), statistics.median(bare)


COMPILE = """
import sys, time
from cloudsched.dispatch import simulate
t0 = time.perf_counter()
simulate(sys.argv[1], servers=20, load=0.5, tasks=200, rng=0, engine=sys.argv[2], r=10)
print(time.perf_counter() - t0)
"""


def compile_seconds(policy: str, engine: str) -> float:
    """Wall seconds of a first call with an empty numba cache (compilation included)."""
    import os

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, "-c", COMPILE, policy, engine],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, 3 pairs")
    parser.add_argument("--markdown", action="store_true", help="print the README table")
    parser.add_argument(
        "--memory",
        action="store_true",
        help="also show that peak memory without records is flat in run length",
    )
    parser.add_argument(
        "--engines",
        default="markov,general,counts",
        help="comma-separated engines to compare (markov, general, counts)",
    )
    args = parser.parse_args()
    chosen = set(args.engines.split(","))
    reps = 3 if args.quick else 5
    small, big = (1_000_000, 2_000_000) if args.quick else (4_000_000, 10_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        bins = build(Path(tmp))
        cases = [("markov", p, 1000, small) for p in ("random", "pod", "jiq", "jiq-pod")]
        cases += [("markov", p, 1_000_000, big) for p in ("pod", "jiq-pod")]
        cases += [("general", p, 1000, small) for p in ("random", "pod")]
        cases += [
            ("counts", p, n, big)
            for p in ("random", "pod", "jiq-pod")
            for n in (1000, 1_000_000, 100_000_000)
        ]
        cases = [c for c in cases if c[0] in chosen]
        rows = []
        print(
            f"{'engine':<9}{'policy':<9}{'N':>10}{'tasks':>12}{'ours M/s':>10}{'C M/s':>8}"
            f"{'ratio':>7}{'range':>13}{'peak MB':>9}{'T ours/C':>16}"
        )
        for engine, policy, n, tasks in cases:
            binary = bins[{"markov": "c_markov", "general": "c_eventlist"}.get(engine, "c_counts")]
            r = pairs(binary, policy, n, tasks, reps, {"markov": "exponential"}.get(engine, engine))
            rows.append((engine, policy, n, tasks, r))
            print(
                f"{engine:<9}{policy:<9}{n:>10,}{tasks:>12,}{r['ours'] / 1e6:>10.2f}"
                f"{r['peer'] / 1e6:>8.2f}{r['ratio']:>7.2f}  [{r['low']:.2f}, {r['high']:.2f}]"
                f"{r['peak_mb']:>9.0f}  {r['mean_ours']:.3f}/{r['mean_peer']:.3f}",
                flush=True,
            )
    if args.memory:
        for tasks in (big // 5, big):
            row = ours("jiq-pod", 1_000_000, 100_000, tasks, 0, "exponential", keep=False)
            print(
                f"jiq-pod N = 1,000,000 without records, {tasks:,} tasks: peak "
                f"{row['peak_mb']:.0f} MB, {row['rate'] / 1e6:.2f} M events/s"
            )
    wall, bare = startup(reps)
    print(
        f"\nstart-up: 'cloudsched simulate pod --servers 1000 --load 0.9 --tasks 100000' "
        f"{wall:.2f} s wall (median of {reps}); 'python -c pass' {bare:.2f} s"
    )
    for engine in ("exponential", "general"):
        first = compile_seconds("jiq-pod", engine)
        print(f"first call with an empty cache (jiq-pod, {engine} engine): {first:.1f} s")
    if args.markdown:
        print(
            f"\n| engine | policy | N | tasks | cloudsched (M events/s) | C peer (M events/s) "
            f"| ratio: median [range of {reps} pairs] | peak memory |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for engine, policy, n, tasks, r in rows:
            print(
                f"| {engine} | {policy} | {n:,} | {tasks:,} | {r['ours'] / 1e6:.2f} | "
                f"{r['peer'] / 1e6:.2f} | {r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}] "
                f"| {r['peak_mb']:.0f} MB |"
            )


if __name__ == "__main__":
    main()
