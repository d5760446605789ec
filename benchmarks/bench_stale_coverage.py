"""Coverage of ``stale``'s printed 95% intervals, over many seeds of the default study.

``cloudsched stale --servers 100 --load 0.9 --seed S`` prints twelve cells (jsq and pod(2)
at info delays 0, 0.25, 0.5, 1, 2 and 4 mean service times); cell ``k`` of seed ``S`` runs
on stream ``k`` of ``SeedSequence(S)`` (:func:`cloudsched.experiments.stale.stale_study`).
This script runs cell ``k`` of seeds 0 .. SEEDS-1 exactly as ``stale`` does (the same
``simulate`` call, the same stream), and counts the intervals that hold the cell's
reference.

References: long independent runs (``reference`` below): an empty start, a fixed 20% of a
long horizon discarded, independent replications for the interval (no mean-field start,
no MSER warm-up, no batch means, no stopping rule), 16 of 200,000 mean service times
each: their half-widths are 0.05-0.2 of a cell's.  They are written to
``stale-references.json`` and reused.

Prints, per cell and over all cells, covered / runs with a 95% Wilson interval for the
coverage, the misses by side, the mean half-width, and the spread of the standardised
errors (mean - reference) / (half-width / 1.96), which is about 1 for an honest interval.
Runs go to ``coverage-stale.csv`` as they finish, so an interrupted run resumes.  The runs
behind docs/explanation/trust.md are in ``benchmarks/results/``; run the script from that
folder to print them again.

Run: ``python benchmarks/bench_stale_coverage.py [SEEDS]`` (default 200; ``WORKERS=k``
processes, default one per core).  On 2 cores: about 8 minutes of references, then about
10 s per seed.
"""

from __future__ import annotations

import csv
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench_coverage import append_runs, wilson  # (this folder is on the path when run as a script)

SERVERS, LOAD = 100, 0.9
#: (policy, d, delay) of each cell, in stale's order (policies, then delays).
CELLS = [(p, 2, x) for p in ("jsq", "pod") for x in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)]


def _simulate(cell: tuple[str, int, float], **kw: Any) -> Any:
    from cloudsched.dispatch import simulate

    policy, d, delay = cell
    return simulate(
        policy,
        servers=SERVERS,
        load=LOAD,
        d=d,
        delay=f"info={delay:g}" if delay > 0 else None,
        **kw,
    )


def _reference(k: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = _simulate(
        CELLS[k],
        initial="empty",
        warmup=0.2,
        horizon=200_000.0,
        replications=16,
        rng=np.random.default_rng([424242, k]),
    )
    lo, hi = res.ci95
    return {
        "cell": k,
        "mean": res.mean_response_time,
        "half": (hi - lo) / 2,
        "wall": time.perf_counter() - t0,
    }


def references(workers: int) -> dict[int, dict[str, Any]]:
    """The reference of every cell (computed once, then read from its file)."""
    path = Path("stale-references.json")
    if path.exists():
        return {int(k): v for k, v in json.loads(path.read_text()).items()}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        out = {r["cell"]: r for r in pool.map(_reference, range(len(CELLS)))}
    path.write_text(json.dumps(out, indent=1))
    return out


def _one(job: tuple[int, int]) -> dict[str, Any]:
    seed, k = job
    stream = np.random.SeedSequence(seed).spawn(len(CELLS))[k]
    t0 = time.perf_counter()
    res = _simulate(
        CELLS[k], rng=np.random.default_rng(stream), precision=0.02, max_tasks=200_000_000
    )
    low, high = res.ci95 if res.ci95 is not None else (math.nan, math.nan)
    return {
        "seed": seed,
        "cell": k,
        "mean": res.mean_response_time,
        "low": low,
        "high": high,
        "wall": time.perf_counter() - t0,
    }


def runs(seeds: int, workers: int) -> list[dict[str, Any]]:
    """Run (or resume) every cell of seeds 0 .. seeds-1; rows appended as they end."""
    path = Path("coverage-stale.csv")
    fields = ["seed", "cell", "mean", "low", "high", "wall"]
    rows: list[dict[str, Any]] = []
    if path.exists():
        with path.open() as fh:
            rows = [
                {**{f: float(r[f]) for f in fields}, "seed": int(r["seed"]), "cell": int(r["cell"])}
                for r in csv.DictReader(fh)
            ]
    done = {(r["seed"], r["cell"]) for r in rows}
    jobs = [(s, k) for s in range(seeds) for k in range(len(CELLS)) if (s, k) not in done]
    rows += append_runs(path, fields, _one, jobs, workers)
    return [r for r in rows if r["seed"] < seeds]


def _line(name: str, ref: float, rows: list[dict[str, Any]]) -> str:
    ok = [r for r in rows if math.isfinite(r["low"])]
    covered = sum(r["low"] - 0.0 <= r["ref"] <= r["high"] for r in ok)
    above = sum(r["ref"] > r["high"] for r in ok)
    below = sum(r["ref"] < r["low"] for r in ok)
    lo, hi = wilson(covered, len(rows))
    half = np.array([(r["high"] - r["low"]) / 2 for r in ok])
    z = np.array([(r["mean"] - r["ref"]) / ((r["high"] - r["low"]) / 2 / 1.96) for r in ok])
    shown = f"{ref:9.4f}" if math.isfinite(ref) else f"{'-':>9}"
    return (
        f"{name:>14} {shown} {covered:5d}/{len(rows):<5d} {100 * covered / len(rows):6.1f}% "
        f"[{100 * lo:4.1f}, {100 * hi:5.1f}] {above:5d} {below:5d} {len(rows) - len(ok):5d} "
        f"{half.mean():9.4f} {z.mean():+7.3f} {z.std(ddof=1):6.3f}"
    )


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    workers = int(os.environ.get("WORKERS", 0)) or os.cpu_count() or 2
    refs = references(workers)
    rows = runs(seeds, workers)
    for r in rows:
        r["ref"] = refs[r["cell"]]["mean"]
    print(
        f"{'cell':>14} {'reference':>9} {'covered':>11} {'coverage [95% CI]':>20} "
        f"{'above':>5} {'below':>5} {'no CI':>5} {'half-w.':>9} {'z mean':>7} {'z sd':>6}"
    )
    for k, (policy, d, delay) in enumerate(CELLS):
        name = f"{policy if policy == 'jsq' else f'pod({d})'} {delay:g}"
        ref = refs[k]
        print(
            _line(name, ref["mean"], [r for r in rows if r["cell"] == k])
            + f"  (reference +- {ref['half']:.4f})"
        )
    print(_line("all cells", math.nan, rows))


if __name__ == "__main__":
    main()
