"""Events per second of the dispatch kernels, against a baseline measured in the same run.

For each case (policy, N, tasks) the script starts one process per source tree and
repetition, alternating between them (so that a slow minute of the machine hurts both), and
reports the median over the repetitions of events per CPU second of the simulation alone
(compilation excluded: every process compiles or loads its kernels first).  Two kinds of
comparison, each printed as a ratio ``current / baseline``:

* ``--baseline-src PATH``: the same cases on another checkout's ``src`` (e.g. a
  ``git worktree`` of an earlier commit): the before/after of a change;
* plug-ins: ``examples/plugins/pod.py:pod-plugin`` against the built-in ``pod`` in this
  tree, compiled with bounds checks (the default) and without (``--unchecked``: the
  plug-in interface itself must cost nothing).

Run: ``python benchmarks/bench_kernels.py [--quick] [--baseline-src /tmp/old/src]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POD_PLUGIN = f"{ROOT / 'examples' / 'plugins' / 'pod.py'}:pod-plugin"

CHILD = """
import json, sys, time
import numpy as np
from cloudsched.dispatch import simulate
policy, n, tasks, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
m = {"r": 10} if policy.startswith("jiq") else {}
m["engine"] = "exponential"  # the per-server kernels (auto runs counts from N = 100,000)
if policy.endswith("+unchecked"):  # a plug-in compiled without its bounds checks
    policy, m["unchecked"] = policy[: -len("+unchecked")], True
simulate(policy, servers=min(n, 50), load=0.9, tasks=2000, rng=0, initial="empty", **m)
t0 = time.process_time()
res = simulate(policy, servers=n, load=0.9, tasks=tasks, rng=seed, initial="empty", **m)
cpu = time.process_time() - t0
print(json.dumps({"events": res.events, "cpu": cpu, "kernel_wall": res.wall_seconds}))
"""


PLACE_CHILD = """
import json, sys, time, warnings
from pathlib import Path
from cloudsched.placement import JobType, load_flux, parse_cluster
from cloudsched.placement.simulation import simulate_placement
policy, n, horizon, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
cluster = parse_cluster("50x12")
wc = load_flux(Path(sys.argv[5]) / "examples" / "wordcount.yaml")
jobs = [JobType("wordcount", 0.8 * cluster.total_slots / wc.nodes, 1.0, wc)]
warnings.simplefilter("ignore")
run = lambda h, s: simulate_placement(cluster=cluster, job_types=jobs, policy=policy, horizon=h,
                                      rng=s, compare_bound=False)
run(5.0, 0)
t0 = time.process_time()
res = run(horizon, seed)
print(json.dumps({"events": res.events, "cpu": time.process_time() - t0}))
"""


def measure(src: Path, policy: str, n: int, tasks: int, seed: int) -> float:
    """Events per CPU second of one run in a fresh process on source tree ``src``.

    A policy ``place:NAME`` is a placement run (50 x 12 slots, word count at 80% of the
    slots, ``tasks`` is the horizon); the others are dispatch runs.
    """
    env = {**os.environ, "PYTHONPATH": str(src)}
    child, extra = CHILD, []
    if policy.startswith("place:"):
        policy, child, extra = policy[6:], PLACE_CHILD, [str(ROOT)]
    out = subprocess.run(
        [sys.executable, "-c", child, policy, str(n), str(tasks), str(seed), *extra],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return row["events"] / row["cpu"]


def compare(cases: list[tuple[str, str, str, int, int]], reps: int) -> None:
    """Print median events/s of each side of each case and their ratio."""
    print(f"{'case':<44}{'current':>12}{'baseline':>12}{'ratio':>8}")
    for label, cur, base, n, tasks in cases:
        here, there = [], []
        for k in range(reps):
            cur_src, cur_pol = cur.split("|")
            base_src, base_pol = base.split("|")
            here.append(measure(Path(cur_src), cur_pol, n, tasks, k))
            there.append(measure(Path(base_src), base_pol, n, tasks, k))
        a, b = statistics.median(here), statistics.median(there)
        print(f"{label:<44}{a / 1e6:>10.2f} M{b / 1e6:>10.2f} M{a / b:>8.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, 3 repetitions")
    parser.add_argument("--baseline-src", type=Path, help="src folder of the baseline tree")
    args = parser.parse_args()
    reps = 3 if args.quick else 5
    small = 1_000_000 if args.quick else 4_000_000
    big = 2_000_000 if args.quick else 10_000_000
    src = str(ROOT / "src")
    sizes = [(1000, small), (1_000_000, big)]
    if args.baseline_src is not None:
        print(f"this tree against {args.baseline_src} (median of {reps}, events per CPU second)")
        base = str(args.baseline_src.resolve())
        compare(
            [
                (f"{p}, N = {n:,}", f"{src}|{p}", f"{base}|{p}", n, t)
                for p in ("pod", "jiq-pod", "jiq", "random")
                for n, t in sizes
            ],
            reps,
        )
        horizon = 2000 if args.quick else 10_000
        compare(
            [
                (f"placement {p}, 50x12", f"{src}|place:{p}", f"{base}|place:{p}", 0, horizon)
                for p in ("dgp", "dgp-clock", "storm-default", "greedy")
            ],
            reps,
        )
        print()
    print(
        f"plug-in Pod(2) against the built-in (median of {reps}, events per CPU second; "
        "plug-ins are bounds-checked unless --unchecked)"
    )
    compare(
        [
            (
                f"pod plug-in{tag} / built-in, N = {n:,}",
                f"{src}|{POD_PLUGIN}{tag}",
                f"{src}|pod",
                n,
                t,
            )
            for tag in ("", "+unchecked")
            for n, t in sizes
        ],
        reps,
    )


if __name__ == "__main__":
    main()
