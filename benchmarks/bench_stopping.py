"""Coverage, bias and cost of the open-ended stopping rule: pilot + fresh stretch against
the earlier one-stage rule, measured in the same run.

The one-stage rule stopped at the first check whose certified interval met the target and
reported that estimate (MSER cut); the two-stage rule (:mod:`cloudsched.dispatch.measure`)
plans a fresh stretch from a pilot and reports the stretch alone.  For each case and each
rule, ``SEEDS`` seeded runs (``default_rng([seed, 7])``) are checked against the case's
reference, and the script prints coverage (95% Wilson interval), the mean error in units
of its standard error, the spread of the standardised errors (about 1 for an honest
interval), the mean events per run and the two-stage rule's cost as a ratio to the
one-stage rule's.

References: ``random`` is M/M/1 per server (mean response 1 / (1 - load), exact); ``jsq``
and ``pod`` at N = 100, load 0.9 are the long independent runs of
``benchmarks/results/stale-references.json`` (cells 0 and 6: empty start, fixed warm-up,
16 replications of 200,000 service times, half-widths 0.0006 and 0.0026).

Run: ``python benchmarks/bench_stopping.py [SEEDS]`` (default 400; ``WORKERS=k``
processes, default one per core).  On 2 cores: about 6 minutes at 400 seeds.
"""

from __future__ import annotations

import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from bench_coverage import wilson  # (this folder is on the path when run as a script)

PRECISION = 0.02
#: (policy, keyword arguments, reference mean response time)
CASES: list[tuple[str, dict[str, Any], float]] = [
    ("jsq", {"servers": 100, "load": 0.9}, 1.0664760389624477),
    ("pod", {"servers": 100, "load": 0.9, "d": 2}, 2.6471565396030288),
    ("random", {"servers": 100, "load": 0.9}, 10.0),
]


def _run(args: tuple[int, int, int]) -> tuple[float, float, float, int]:
    from cloudsched.dispatch import simulate, stopping

    case, stages, seed = args
    stopping.STAGES = stages
    policy, kw, _ = CASES[case]
    res = simulate(policy, precision=PRECISION, rng=np.random.default_rng([seed, 7]), **kw)
    low, high = res.ci95 if res.ci95 is not None else (math.nan, math.nan)
    return res.mean_response_time, low, high, res.events


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    workers = int(os.environ.get("WORKERS", os.cpu_count() or 1))
    print(f"precision {PRECISION}, {seeds} seeds per case and rule, {workers} workers")
    head = "case", "rule", "covered", "coverage [95%]", "bias/se", "z sd", "events", "cost"
    print("{:<34} {:<10} {:>9} {:>22} {:>8} {:>6} {:>11} {:>5}".format(*head))
    with ProcessPoolExecutor(workers) as pool:
        for c, (policy, kw, ref) in enumerate(CASES):
            events = {}
            for stages in (1, 2):
                t0 = time.perf_counter()
                jobs = [(c, stages, s) for s in range(seeds)]
                out = np.array(list(pool.map(_run, jobs, chunksize=4)))
                mean, low, high, ev = out.T
                ok = ~np.isnan(low)
                hit = int(np.sum((low[ok] <= ref) & (ref <= high[ok])))
                lo, hi = wilson(hit, int(ok.sum()))
                err = mean - ref
                bias_se = err.mean() / (err.std(ddof=1) / math.sqrt(err.size))
                z = err[ok] / ((high[ok] - low[ok]) / 2 / 1.96)
                events[stages] = float(ev.mean())
                cost = f"{events[2] / events[1]:.2f}" if stages == 2 else "1"
                label = f"{policy} " + " ".join(f"{k}={v}" for k, v in kw.items())
                rule = "one-stage" if stages == 1 else "two-stage"
                print(
                    f"{label:<34} {rule:<10} {hit:>4}/{int(ok.sum()):<4} "
                    f"{100 * hit / ok.sum():6.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] "
                    f"{bias_se:8.2f} {z.std(ddof=1):6.2f} {events[stages]:11.3g} {cost:>5}"
                    f"   ({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
