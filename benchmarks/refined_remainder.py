"""How far the refined mean field is from simulation at small N, against its 1/N term.

The refined value is the mean field plus its 1/N term; the 1/N^2 term is not computed, so
``predict`` states what is left as a share of the 1/N term, measured here: for each
setting a simulation to a relative 95% half-width of ``--precision`` gives the reference,
and the row prints

    remainder share = |simulated - refined| / |refined - mean field|

with its upper end counting the simulation's half-width.  The settings: pod(d) at N = 10,
20, 40, 100 with d up to 32, with and without replacement (76), and jiq and jiq-pod(2) at
N = 20, 50, 100 with r = 10 (12); loads 0.9 and 0.95.  The largest share over pod is the
figure ``predict`` quotes (0.62; 0.67 with the half-width).

Run: ``python benchmarks/refined_remainder.py [--precision 0.004] [--out FILE.csv]``
(about 15 minutes on 2 cores at the defaults; ``WORKERS=k`` processes).  The runs behind the
figure are in ``benchmarks/results/refined-remainder.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from cloudsched.dispatch import predict, simulate

GRID = {10: [2, 3, 4, 6], 20: [2, 3, 4, 6, 8], 40: [2, 4, 6, 8, 16], 100: [4, 8, 10, 16, 32]}
IQUEUE_SERVERS = (20, 50, 100)  # jiq and jiq-pod(2), r = 10
LOADS = (0.9, 0.95)
ROOT = 20261203


def _one(job: tuple[int, str, int, float, int, bool, float]) -> dict[str, Any]:
    k, policy, n, load, d, replace, precision = job
    stream = np.random.SeedSequence(ROOT).spawn(k + 1)[k]
    r = n if policy == "pod" else 10
    sim = simulate(
        policy,
        servers=n,
        load=load,
        d=d,
        r=r,
        with_replacement=replace,
        precision=precision,
        rng=np.random.default_rng(stream),
    )
    (pred,) = predict(policy, [load], servers=n, d=d, replace=replace, r=r, method="refined")
    assert sim.ci95 is not None and pred.refined is not None
    half = (sim.ci95[1] - sim.ci95[0]) / 2
    term = pred.refined - pred.meanfield
    miss = abs(sim.mean_response_time - pred.refined)
    return {
        "policy": policy,
        "servers": n,
        "load": load,
        "d": d,
        "with_replacement": replace,
        "simulated": sim.mean_response_time,
        "half_width": half,
        "meanfield": pred.meanfield,
        "refined": pred.refined,
        "share": miss / abs(term),
        "share_high": (miss + half) / abs(term),
    }


def main() -> None:
    """Run every setting and print the rows and the largest share."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", type=float, default=0.004)
    ap.add_argument("--out", default="refined-remainder.csv")
    args = ap.parse_args()
    settings = [
        ("pod", n, load, d, rep)
        for n, ds in GRID.items()
        for d in ds
        for load in LOADS
        for rep in (False, True)
    ]
    settings += [
        (policy, n, load, 2, False)
        for policy in ("jiq-pod", "jiq")
        for n in IQUEUE_SERVERS
        for load in LOADS
    ]
    jobs = [(k, *setting, args.precision) for k, setting in enumerate(settings)]
    rows = []
    workers = int(os.environ.get("WORKERS", os.cpu_count() or 1))
    with ProcessPoolExecutor(workers) as pool:
        for row in pool.map(_one, jobs):
            rows.append(row)
            print(
                f"{row['policy']} N={row['servers']:3d} load={row['load']} d={row['d']:2d} "
                f"{'with' if row['with_replacement'] else 'without'} replacement: simulated "
                f"{row['simulated']:.4f} +- {row['half_width']:.4f}, refined "
                f"{row['refined']:.4f} ({(row['refined'] / row['simulated'] - 1):+.2%}), "
                f"remainder {row['share']:.2f} of the 1/N term",
                flush=True,
            )
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for family in ("pod", "jiq-pod", "jiq"):
        mine = [r for r in rows if r["policy"] == family]
        worst = max(mine, key=lambda r: r["share"])
        print(
            f"{family}: largest remainder {worst['share']:.2f} of the 1/N term "
            f"({max(r['share_high'] for r in mine):.2f} with the half-width) over {len(mine)} "
            f"settings, at N={worst['servers']}, load {worst['load']}, d={worst['d']}"
        )


if __name__ == "__main__":
    main()
