"""Coverage of the simulator's default 95% intervals, over many independent seeds.

Each case runs ``simulate`` with its defaults (mean-field start, MSER warm-up, sequential
stopping at 1% precision) on ``SEEDS`` independent streams (``SeedSequence(root).spawn``)
and counts the intervals that contain the case's reference:

* ``random``, N = 1000 and 10,000, load 0.9: exactly 1 / (1 - 0.9) = 10 (N independent M/M/1
  queues, at any N).
* ``jiq-pod`` (d = 2, r = 10), N = 10,000, load 0.9: the refined mean field at N = 10,000
  (``predict --servers 10000 --method refined``; its own error is far below a run's).
* ``pod-1e6-short``, ``jiq-1e6-0.99-short`` (r = 10), ``random-1e8-0.99-short``: the short
  replications of a large farm; references the refined mean field at N (exact for random).
* ``pod`` (d = 2), N = 1000, load 0.99: the long independent reference of
  ``benchmarks/reference_runs.py`` (empty start, fixed warm-up, 64 replications:
  5.4708 +- 0.0063), which no part of the default procedure enters.

Prints, per case, covered / runs with a 95% Wilson interval for the coverage itself, and
where the misses fall (reference above or below the interval), the mean half-width and the
mean wall time.  Runs are written to ``coverage-<case>.csv`` as they finish, so an
interrupted benchmark resumes where it stopped.

The runs behind the README's table are in ``benchmarks/results/coverage-<case>.csv``; run the
script from that folder to print them again or to resume an unfinished case.

Run: ``python benchmarks/bench_coverage.py [SEEDS] [CASE ...]`` (default 200 seeds, every case;
``WORKERS=k`` processes, default one per core).  On 2 cores random at N = 10,000 takes 100-400
s a run (about 5 hours for 200), the other cases 2-20 s.
"""

from __future__ import annotations

import csv
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.dispatch import simulate
from cloudsched.dispatch.theory.finite import predict_finite

ROOT = 20261203

CASES: dict[str, dict[str, Any]] = {
    "random-1000": {"policy": "random", "servers": 1000, "load": 0.9},
    "random-10000": {"policy": "random", "servers": 10_000, "load": 0.9},
    "jiq-pod-10000": {"policy": "jiq-pod", "servers": 10_000, "load": 0.9, "r": 10, "d": 2},
    "pod-1000-0.99": {"policy": "pod", "servers": 1000, "load": 0.99, "d": 2},
    # short replications (cloudsched.dispatch.short_run): the smallest N where they run
    "pod-1e6-short": {"policy": "pod", "servers": 10**6, "load": 0.9, "d": 2},
    "jiq-1e6-0.99-short": {"policy": "jiq", "servers": 10**6, "load": 0.99, "r": 10, "d": 2},
    "random-1e8-0.99-short": {"policy": "random", "servers": 10**8, "load": 0.99},
}


def reference(name: str) -> float:
    """The value a case's intervals should contain."""
    case = CASES[name]
    if case["policy"] == "random":
        return 1.0 / (1.0 - case["load"])
    if name == "pod-1000-0.99":
        return 5.4708  # benchmarks/reference_runs.py pod 0.99 60000 64 1000
    (pred,) = predict_finite(
        case["policy"],
        case["servers"],
        case["load"],
        r=case.get("r", 10.0),
        d=case["d"],
        method="refined",
    )
    return float(pred.value)


def _one(job: tuple[str, int, np.random.SeedSequence]) -> dict[str, Any]:
    name, k, seq = job
    kwargs = dict(CASES[name])
    policy = kwargs.pop("policy")
    t0 = time.perf_counter()
    res = simulate(policy, rng=np.random.default_rng(seq), **kwargs)
    low, high = res.ci95 if res.ci95 is not None else (math.nan, math.nan)
    return {
        "case": name,
        "seed": k,
        "mean": res.mean_response_time,
        "low": low,
        "high": high,
        "steady": res.steady_state,
        "stop": res.stop_reason,
        "wall": time.perf_counter() - t0,
    }


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k / n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def run_case(name: str, seeds: int, workers: int) -> list[dict[str, Any]]:
    """Run (or resume) ``seeds`` runs of a case; rows are appended to its CSV as they end."""
    path = Path(f"coverage-{name}.csv")
    rows: list[dict[str, Any]] = []
    if path.exists():
        with path.open() as fh:
            rows = [
                {
                    **r,
                    "seed": int(r["seed"]),
                    "mean": float(r["mean"]),
                    "low": float(r["low"]),
                    "high": float(r["high"]),
                    "steady": r["steady"] == "True",
                    "wall": float(r["wall"]),
                }
                for r in csv.DictReader(fh)
            ]
    done = {r["seed"] for r in rows}
    seqs = np.random.SeedSequence([ROOT, list(CASES).index(name)]).spawn(seeds)
    jobs = [(name, k, seq) for k, seq in enumerate(seqs) if k not in done]
    fields = ["case", "seed", "mean", "low", "high", "steady", "stop", "wall"]
    rows += append_runs(path, fields, _one, jobs, workers)
    return sorted(rows, key=lambda r: r["seed"])[:seeds]


def append_runs(path: Path, fields: list[str], one: Any, jobs: list[Any], workers: int) -> list:
    """Run ``one(job)`` for every job in ``workers`` processes, appending each row to the CSV
    at ``path`` as it ends (so an interrupted benchmark resumes); return the new rows."""
    new, rows = not path.exists(), []
    ctx = multiprocessing.get_context("spawn")
    with path.open("a", newline="") as fh, ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        writer = csv.DictWriter(fh, fieldnames=fields)
        if new:
            writer.writeheader()
        for fut in as_completed([pool.submit(one, j) for j in jobs]):
            row = fut.result()
            writer.writerow(row)
            fh.flush()
            rows.append(row)
    return rows


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    names = sys.argv[2:] or list(CASES)
    workers = int(os.environ.get("WORKERS", 0)) or os.cpu_count() or 2
    print(
        f"{'case':>14} {'reference':>9} {'covered':>9} {'coverage [95% CI]':>22} "
        f"{'ref above':>9} {'ref below':>9} {'no CI':>5} {'half-width':>10} {'wall s':>7}"
    )
    for name in names:
        ref = reference(name)
        rows = run_case(name, seeds, workers)
        with_ci = [r for r in rows if math.isfinite(r["low"])]
        covered = sum(r["low"] <= ref <= r["high"] for r in with_ci)
        above = sum(ref > r["high"] for r in with_ci)
        below = sum(ref < r["low"] for r in with_ci)
        lo, hi = wilson(covered, len(rows))
        half = float(np.mean([(r["high"] - r["low"]) / 2 for r in with_ci])) if with_ci else 0.0
        wall = float(np.mean([r["wall"] for r in rows]))
        print(
            f"{name:>14} {ref:9.4f} {covered:4d}/{len(rows):<4d} "
            f"{100 * covered / len(rows):6.1f}% [{100 * lo:4.1f}, {100 * hi:5.1f}] "
            f"{above:9d} {below:9d} {len(rows) - len(with_ci):5d} {half:10.4f} {wall:7.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
