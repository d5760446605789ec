"""What each kernel costs to compile, cold, and how fast it then runs: against a baseline.

Each case runs in a fresh process with an empty kernel cache (its own ``NUMBA_CACHE_DIR``):
the process triggers the compile with a tiny run, then runs the case warm and reports the
CPU seconds of the outermost compiles (numba's ``numba:compile`` events, helpers included)
and the events per CPU second of the warm run.  With ``--baseline-src PATH`` (the ``src``
folder of another checkout, e.g. a ``git worktree`` of an earlier commit) every case also
runs on the baseline, alternating with this tree (a slow minute of the machine hurts
both), and the table gives both and their ratios: the compile's before/after at the same
run speed.  The CPU times are the median of ``--reps`` processes.

``--write`` stores this tree's median compile times in ``src/cloudsched/data/
compile-times.json``: the "typical" time the line of a long compile quotes when a cache has
no time of its own (:mod:`cloudsched._jit.notice`).

Run: ``python benchmarks/bench_compile.py [--reps 3] [--baseline-src /tmp/old/src]
[--only least-time] [--write]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, threading, warnings
from numba.core import event
depth, spent, labels = threading.local(), [0.0], {}
class Listener(event.Listener):
    def on_start(self, ev):
        d = getattr(depth, "n", 0)
        depth.n = d + 1
        if d == 0:
            depth.t = time.process_time()
    def on_end(self, ev):
        depth.n -= 1
        if depth.n == 0:
            dt = time.process_time() - depth.t
            spent[0] += dt
            disp = ev.data["dispatcher"]
            name = getattr(disp, "_cloudsched_label", None) or disp.py_func.__qualname__
            labels[name] = labels.get(name, 0.0) + dt
event.register("numba:compile", Listener())
warnings.simplefilter("ignore")
kind, name, root = sys.argv[1], sys.argv[2], sys.argv[3]
if kind == "dispatch":
    from cloudsched.dispatch import simulate
    policy, engine, n = name.split("|")
    extra = {"r": 10} if policy.startswith("jiq") else {}
    if engine == "classes":
        extra["speeds"] = [1.0, 2.0] * (int(n) // 2)
    if engine == "delay":
        extra["delay"] = "info=0.5"
        engine = "auto"
    def go(tasks, seed):
        return simulate(policy, servers=int(n), load=0.9, tasks=tasks, rng=seed,
                        engine=engine, initial="empty", **extra)
    small, big = 2000, 2_000_000
else:
    from pathlib import Path
    from cloudsched.placement import JobType, load_flux, parse_cluster
    from cloudsched.placement.simulation import simulate_placement
    cluster = parse_cluster("10x12")
    wc = load_flux(Path(root) / "examples" / "wordcount.yaml")
    jobs = [JobType("wordcount", 0.8 * cluster.total_slots / wc.nodes, 1.0, wc)]
    def go(horizon, seed):
        return simulate_placement(cluster=cluster, job_types=jobs, policy=name,
                                  horizon=horizon, rng=seed, compare_bound=False)
    small, big = 5.0, 3000.0
go(small, 0)
compile_cpu = spent[0]
t0 = time.process_time()
res = go(big, 1)
cpu = time.process_time() - t0
print(json.dumps({"compile": compile_cpu, "labels": labels, "rate": res.events / cpu}))
"""

#: (case label, kind, what the child runs)
CASES = [
    ("pod (per-server, Markov)", "dispatch", "pod|exponential|100"),
    ("jiq-pod (per-server, Markov)", "dispatch", "jiq-pod|exponential|100"),
    ("jsq (per-server, event list)", "dispatch", "jsq|general|100"),
    ("least-time (per-server)", "dispatch", "least-time|exponential|16"),
    ("ewma (per-server)", "dispatch", "ewma|exponential|16"),
    ("prequal (per-server)", "dispatch", "prequal|exponential|16"),
    ("wlr (per-server)", "dispatch", "wlr|exponential|16"),
    ("wrr (per-server)", "dispatch", "wrr|exponential|16"),
    ("pod (counts)", "dispatch", "pod|counts|1000"),
    ("pod (speed classes)", "dispatch", "pod|classes|1000"),
    ("pod (delays)", "dispatch", "pod|delay|100"),
    ("placement dgp", "placement", "dgp"),
    ("placement maxweight", "placement", "maxweight"),
    ("placement storm-default", "placement", "storm-default"),
]


def measure(src: Path, kind: str, name: str) -> dict[str, object]:
    """Compile CPU seconds and warm events per CPU second, in a fresh process and cache."""
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        env = {**os.environ, "PYTHONPATH": str(src), "NUMBA_CACHE_DIR": cache}
        env["CLOUDSCHED_COMPILE_NOTICE"] = "off"
        out = subprocess.run(
            [sys.executable, "-c", CHILD, kind, name, str(ROOT)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="processes per case and tree")
    parser.add_argument("--baseline-src", type=Path, help="src folder of the baseline tree")
    parser.add_argument("--only", help="cases whose label contains this text")
    parser.add_argument("--write", action="store_true", help="store the typical times")
    args = parser.parse_args()
    trees = [ROOT / "src"] + ([args.baseline_src.resolve()] if args.baseline_src else [])
    print(f"{platform.node()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"median of {args.reps} fresh processes; compile: CPU s, cold; speed: M events/CPU s")
    head = f"{'case':<32}{'compile':>9}{'speed':>8}"
    if args.baseline_src:
        head += f"{'base':>9}{'speed':>8}{'compile':>9}{'speed':>7}"
        head += "\n" + " " * 49 + f"{'compile':>9}{'':>8}{'ratio':>9}{'ratio':>7}"
    print(head)
    typical: dict[str, float] = {}
    for label, kind, name in CASES:
        if args.only and args.only not in label:
            continue
        runs: list[list[dict[str, object]]] = [[] for _ in trees]
        for _ in range(args.reps):
            for i, src in enumerate(trees):
                runs[i].append(measure(src, kind, name))
        comp = [statistics.median(float(r["compile"]) for r in rs) for rs in runs]  # type: ignore[arg-type]
        rate = [statistics.median(float(r["rate"]) for r in rs) / 1e6 for rs in runs]  # type: ignore[arg-type]
        line = f"{label:<32}{comp[0]:>9.1f}{rate[0]:>8.2f}"
        if args.baseline_src:
            line += f"{comp[1]:>9.1f}{rate[1]:>8.2f}{comp[0] / comp[1]:>9.2f}"
            line += f"{rate[0] / rate[1]:>7.2f}"
        print(line, flush=True)
        for lab in runs[0][0]["labels"]:  # type: ignore[union-attr]
            values = [float(r["labels"].get(lab, 0.0)) for r in runs[0]]  # type: ignore[union-attr]
            typical[str(lab)] = round(statistics.median(values), 1)
    if args.write:
        path = ROOT / "src" / "cloudsched" / "data" / "compile-times.json"
        data = {
            "measured": f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
            "python benchmarks/bench_compile.py --write",
            "kernels": dict(sorted(typical.items())),
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
