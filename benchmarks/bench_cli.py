"""Fixed overhead of the commands, and the log readers against pandas.read_csv.

Prints, for each command, the median wall time of ``reps`` fresh runs (warm disk cache)
beside a bare ``python -c pass`` measured in the same loop, and the ratio; then the rows
per second of each log reader on the logs that ship with the package, with
``pandas.read_csv`` reading the same Google part (its four columns, no task rules) as the
baseline.  Run: ``python benchmarks/bench_cli.py [--reps 7]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "predict": ["predict", "jiq", "--load", "0.9"],
    "trace list": ["trace", "list"],
    "simulate (100k tasks)": [
        "simulate",
        "pod",
        "--servers",
        "1000",
        "--load",
        "0.9",
        "--tasks",
        "100000",
        "--seed",
        "1",
    ],
}


def overheads(reps: int) -> None:
    cli = Path(sys.executable).with_name("cloudsched")
    exe = str(cli) if cli.exists() else "cloudsched"
    print(f"{'command':<24}{'median s':>10}{'python -c pass':>16}{'ratio':>8}")
    for name, args in COMMANDS.items():
        subprocess.run([exe, *args], capture_output=True, check=True)  # warm caches
        ours, bare = [], []
        for _ in range(reps):  # interleaved: both sides see the same machine
            t0 = time.perf_counter()
            subprocess.run([exe, *args], capture_output=True, check=True)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - t0)
        o, b = statistics.median(ours), statistics.median(bare)
        print(f"{name:<24}{o:>10.3f}{b:>16.3f}{o / b:>8.1f}")


def readers(reps: int) -> None:
    import pandas as pd

    from cloudsched.data import DATASETS, dataset_path
    from cloudsched.dispatch.workload.logs import read_log
    from cloudsched.dispatch.workload.traces import _read_google

    google = dataset_path("google2011-sample")

    def best(fn):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        return min(times), out

    base, df = best(lambda: pd.read_csv(google, header=None, usecols=[0, 2, 3, 5]))
    rows = len(df)
    print(f"\n{'reader':<34}{'rows/s':>12}{'vs pandas.read_csv':>20}")
    print(f"{'pandas.read_csv (Google part)':<34}{rows / base:>12.3g}{1.0:>20.2f}")
    ours, log = best(lambda: read_log("google2011-sample"))
    print(f"{'google2011 (columns)':<34}{log.records / ours:>12.3g}{base / ours:>20.2f}")
    line, log = best(lambda: _read_google([google], "drop"))
    print(
        f"{'google2011 (line reader, oracle)':<34}{log.records / line:>12.3g}{base / line:>20.2f}"
    )
    for name in DATASETS:
        if name == "google2011-sample":
            continue
        t, log = best(lambda name=name: read_log(name))
        print(f"{name + ' (' + log.format + ')':<34}{log.records / t:>12.3g}{'':>20}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    ns = parser.parse_args()
    overheads(ns.reps)
    readers(max(1, ns.reps // 2))
