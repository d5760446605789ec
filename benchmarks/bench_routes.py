"""A default ``simulate`` at every farm size: its route, events, precision reached and CPU.

For each policy (pod, jiq-pod, jsq by default) and N = 10, 100, ..., 10^9 at load 0.9, one
default run (precision 1%, seed 1) in a process of its own, its kernels compiled first (a
warm run: compilation is not counted), reports the engine and route it took, the events it
simulated, the precision it reached against the one asked, how many times the events the
asked precision needs it spent (``(reached / asked)^2``: a run that stops when precise
spends about 1), and its CPU seconds.  A run refused up front prints its reason.

Run: ``python benchmarks/bench_routes.py [--policies pod jsq] [--sizes 1e5 1e6] [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
import numpy as np
from cloudsched.dispatch import simulate
from cloudsched.errors import ParameterError
policy, n = sys.argv[1], int(float(sys.argv[2]))
extra = {"r": 10} if policy.startswith("jiq") else {}
warnings.simplefilter("ignore")
try:
    simulate(policy, servers=min(n, 1000), load=0.9, tasks=2000, rng=0, **extra)  # compile
    simulate(policy, servers=n, load=0.9, tasks=200, rng=0, **extra)  # this N's kernels
except ParameterError:
    pass
t0 = time.process_time()
try:
    res = simulate(policy, servers=n, load=0.9, rng=1, **extra)
except ParameterError as exc:
    print(json.dumps({"refused": str(exc)}))
    raise SystemExit(0)
cpu = time.process_time() - t0
print(json.dumps({
    "engine": res.engine, "route": res.stop_reason, "events": res.events,
    "reached": res.precision_reached, "cpu": cpu, "mean": res.mean_response_time,
}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", nargs="+", default=["pod", "jiq-pod", "jsq"])
    ap.add_argument("--sizes", nargs="+", default=[f"1e{k}" for k in range(1, 10)])
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    if args.markdown:
        print("| policy | N | engine | stop | events | reached | x need | CPU s |")
        print("|---|---:|---|---|---:|---:|---:|---:|")
    else:
        print(
            f"{'policy':<8}{'N':>7}{'engine':>9}{'stop':>11}{'events':>10}{'reached':>9}"
            f"{'x need':>8}{'CPU s':>8}"
        )
    for policy in args.policies:
        for size in args.sizes:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, policy, size],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            if "refused" in row:
                why = row["refused"].split(": ", 1)[-1][:90]
                if args.markdown:
                    print(f"| {policy} | {size} | refused: {why} | | | | | |", flush=True)
                else:
                    print(f"{policy:<8}{size:>7}  refused: {why}", flush=True)
                continue
            reached = row["reached"] or float("nan")
            over = (0.01 / reached) ** 2
            if args.markdown:
                print(
                    f"| {policy} | {size} | {row['engine']} | {row['route']} | "
                    f"{row['events']:.2e} | {100 * reached:.3f}% | {over:.1f} | {row['cpu']:.1f} |",
                    flush=True,
                )
                continue
            print(
                f"{policy:<8}{size:>7}{row['engine']:>9}{row['route']:>11}{row['events']:>10.2e}"
                f"{100 * reached:>8.3f}%{over:>8.1f}{row['cpu']:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
