"""Cost of a default steady-state run as N grows: short replications at large N.

For pod(2), jiq-pod(2) (r = 10) and random at load 0.9, a default open-ended
``simulate`` (precision 1%) at N = 10^6, 10^7, 10^8 and 10^9, three seeds each: median wall
seconds (in process, compiled kernels loaded first), tasks measured, events simulated, and
the ratio of the wall time to the N = 10^6 run measured in the same loop (the baseline);
then the interval against the steady-state mean (refined mean field at N; random: exact),
and how many events the long-batch rule (20 batches of five relaxation times) would have
needed instead.  jsq is not on the short route (no bound holds its gap to the mean field).

Run: ``python benchmarks/bench_large_n.py [--markdown]``.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings

from cloudsched.dispatch.simulation import simulate
from cloudsched.dispatch.theory.finite import refined_mean
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.dispatch.theory.relaxation import relaxation_time

LOAD = 0.9
SIZES = (10**6, 10**7, 10**8, 10**9)
SEEDS = (1, 2, 3)
POLICIES = {"pod": {}, "jiq-pod": {"r": 10.0}, "random": {}}


def truth(policy: str, n: int, extra: dict[str, float]) -> float:
    """The steady-state mean at N to first order in 1/N (exact for random)."""
    if policy == "random":
        return float(predict("random", [LOAD]).mean_response_time[0])
    return refined_mean(policy, n, LOAD, extra.get("r", 1.0), 2, replace=False)


def main() -> None:
    markdown = "--markdown" in sys.argv
    warnings.simplefilter("ignore")
    for policy, extra in POLICIES.items():  # load the compiled kernels first
        simulate(policy, servers=10**6, load=LOAD, rng=0, **extra)
    head = ["policy", "N", "wall s (median)", "/ N = 10^6", "tasks", "events", "interval"]
    head += ["covers", "long-batch rule would need"]
    print("| " + " | ".join(head) + " |" if markdown else "  ".join(head))
    if markdown:
        print("|" + "---|" * len(head))
    for policy, extra in POLICIES.items():
        base = None
        for n in SIZES:
            walls, res = [], None
            for seed in SEEDS:
                start = time.perf_counter()
                res = simulate(policy, servers=n, load=LOAD, rng=seed, **extra)
                walls.append(time.perf_counter() - start)
            assert res is not None and res.ci95 is not None
            wall = statistics.median(walls)
            base = base or wall
            lo, hi = res.ci95
            relax = relaxation_time(policy, LOAD, servers=n, r=extra.get("r", 10.0), d=2)
            need = 20 * 5 * relax * LOAD * n
            row = [
                policy,
                f"10^{len(str(n)) - 1}",
                f"{wall:.2f}",
                f"{wall / base:.2f}",
                f"{res.measured_tasks:,}",
                f"{res.events:,}",
                f"{res.mean_response_time:.4f} [{lo:.4f}, {hi:.4f}]",
                "yes" if lo <= truth(policy, n, extra) <= hi else "no",
                f"{need:.2g} events",
            ]
            print("| " + " | ".join(row) + " |" if markdown else "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
