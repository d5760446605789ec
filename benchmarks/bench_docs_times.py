"""The commands whose time the README and docs quote, timed at first use and warm.

Each command runs twice in a temporary folder (the demo's second run in another, since it
would reuse the first's report), by the installed ``cloudsched``: first with an empty
kernel cache of its own (``NUMBA_CACHE_DIR``: what a user's first run of it compiles), then
again with that cache filled (warm).  The table
gives both wall times, the CPU seconds of the first, and where the docs quote it.  The
machine's other load (the load average) is printed before and after: compare rows
measured together.

Run: ``python benchmarks/bench_docs_times.py [--only demo verdict] [--markdown]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (key, where the docs quote it, the command's arguments after ``cloudsched``)
COMMANDS = [
    ("demo", "README (first command)", ["demo"]),
    ("warmup-all", "README (beside the first command)", ["warmup", "--all"]),
    ("verdict", "howto/production-balancers.md", ["verdict", "--plot", "verdict.png"]),
    (
        "tune",
        "howto/compare-and-tune.md",
        ["tune", "--p99", "8", "--rate", "900", "--servers", "900:1200"],
    ),
    (
        "place-static",
        "README (Storm question)",
        shlex.split(
            "place static --cluster 8x24 --topology wordcount --topology exclamation "
            "--topology rolling-top-words --flux-traffic grouping --assignment placement.json "
            "--time-limit 300"
        ),
    ),
    (
        "simulate-100k",
        "explanation/speed.md, README Speed",
        ["simulate", "pod", "--servers", "1000", "--load", "0.9", "--tasks", "100000"],
    ),
    (
        "simulate-jiq-pod",
        "tutorials/first-steps.md",
        shlex.split("simulate jiq-pod --servers 10000 --r 10 --load 0.9 --seed 1"),
    ),
    (
        "least-time",
        "howto/production-balancers.md",
        shlex.split("simulate least-time --servers 16 --load 0.8 --seed 1"),
    ),
    (
        "place-dgp",
        "tutorials/placement.md",
        shlex.split(
            "place simulate dgp --cluster 3x3 --workload examples/demo-placement.yaml --seed 1"
        ),
    ),
    (
        "tune-trace",
        "howto/compare-and-tune.md",
        shlex.split("tune --trace haproxy-sample --p99 300 --unit ms --rate 200 --servers 1:100"),
    ),
    (
        "plugin",
        "howto/plugins.md",
        shlex.split(
            "simulate examples/plugins/pod.py:pod-plugin --servers 1000 --load 0.9 --seed 1"
        ),
    ),
]


def _run(args: list[str], cwd: Path, cache: Path) -> tuple[float, float, int]:
    """Wall seconds, children's CPU seconds, exit status of ``cloudsched args``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env.pop("CLOUDSCHED_COMPILE_NOTICE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [shutil.which("cloudsched") or "cloudsched", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    if args.markdown:
        print("| command | quoted in | first use, wall s | first use, CPU s | warm, wall s |")
        print("|---|---|---:|---:|---:|")
    for key, where, cmd in COMMANDS:
        if args.only and key not in args.only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "cache"
            cache.mkdir(mode=0o700)
            first, again = Path(folder) / "first", Path(folder) / "again"
            for work in (first, again):  # the second its own: the demo reuses a report
                work.mkdir()
                files = ["cloudsched", "examples"]  # the plug-ins and logs the docs read
                subprocess.run(files, cwd=work, check=True, capture_output=True)
            cold, cpu, s1 = _run(cmd, first, cache)
            # the demo's rerun in its own folder (it would reuse the first's report); the
            # rest where they first ran (a plug-in's kernel is keyed on its file's path)
            warm, _, s2 = _run(cmd, again if key == "demo" else first, cache)
        bad = "" if s1 == s2 == 0 else f" (exit {s1}, {s2})"
        text = " ".join(cmd)
        if args.markdown:
            print(f"| `cloudsched {text}`{bad} | {where} | {cold:.0f} | {cpu:.0f} | {warm:.1f} |")
        else:
            print(f"{key:<18}{cold:8.1f}{cpu:8.1f}{warm:8.1f}  {where}{bad}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
