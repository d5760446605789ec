"""Default DGP against the static bound and the greedy packer on random small instances.

Instances (one per seed): 2-8 machines of 2-4 slots, 2-4 job types whose graphs (chain,
star, tree, complete or G(n, 0.5)) have 2-6 nodes, mean holding times in [0.5, 2], and an
offered load of 30-70% of the slots split at random among the types.  For each instance:
the static optimum (``static_optimum``), default DGP (``simulate_placement`` with no
parameters: the rule of ``placement/defaults.py`` with alpha calibrated against the bound),
and greedy.  A run "passes" when it serves at least 99% of arrivals and its cost is within
15% of the bound.  The same seeds give the same instances and the same runs.

Run: ``python benchmarks/dgp_defaults.py [FIRST LAST]`` (default seeds 0..39).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from cloudsched.placement import Cluster, JobType, chain, complete, random_graph, star, tree
from cloudsched.placement.simulation import DefaultsRefused, simulate_placement

GENERATORS = {"chain": chain, "star": star, "tree": tree, "complete": complete}


def instance(seed: int) -> tuple[Cluster, list[JobType]]:
    """The random instance of ``seed``."""
    rng = np.random.default_rng(seed)
    machines, slots = int(rng.integers(2, 9)), int(rng.integers(2, 5))
    cluster = Cluster(np.full(machines, slots))
    nj = int(rng.integers(2, 5))
    tops = []
    for _ in range(nj):
        k = int(rng.integers(2, min(6, cluster.total_slots) + 1))
        kind = rng.choice([*GENERATORS, "random"])
        tops.append(random_graph(k, 0.5, rng=rng) if kind == "random" else GENERATORS[kind](k))
    target = float(rng.uniform(0.3, 0.7)) * cluster.total_slots
    shares = rng.dirichlet(np.ones(nj))
    jobs = []
    for j, top in enumerate(tops):
        rho = shares[j] * target / top.nodes
        duration = float(rng.uniform(0.5, 2.0))
        jobs.append(JobType(f"t{j}", rho / duration, duration, top))
    return cluster, jobs


def main(first: int, last: int) -> None:
    warnings.simplefilter("ignore")
    print(
        f"{'seed':>4} {'slots':>5} {'bound':>7} | {'DGP served':>10} {'cost':>7} {'gap':>7} "
        f"{'queue':>7} {'alpha':>7} {'s':>5} | {'greedy cost':>11} {'gap':>7} {'queue':>6}"
    )
    n = passed = served_ok = cheaper_than_greedy = refused = far = 0
    for seed in range(first, last):
        cluster, jobs = instance(seed)
        t0 = time.perf_counter()
        try:
            dgp = simulate_placement("dgp", cluster, jobs, rng=seed)
        except DefaultsRefused as exc:  # the defaults do not serve it, or not near: counted
            far += "not near the optimum" in str(exc)
            refused += "not near the optimum" not in str(exc)
            print(f"{seed:>4} {cluster.total_slots:>5} refused: {exc}")
            continue
        wall = time.perf_counter() - t0
        if dgp.bound is None:
            print(f"{seed:>4} {cluster.total_slots:>5} no bound: {dgp.bound_note}")
            continue
        gr = simulate_placement("greedy", cluster, jobs, rng=seed, compare_bound=False)
        ggap = gr.cost_rate / dgp.bound - 1 if dgp.bound > 1e-9 else float("nan")
        n += 1
        served_ok += dgp.served_fraction >= 0.99
        ok = dgp.served_fraction >= 0.99 and dgp.bound_gap is not None and dgp.bound_gap <= 0.15
        passed += ok
        cheaper_than_greedy += dgp.cost_rate < gr.cost_rate
        gap = "inf" if dgp.bound_gap == float("inf") else f"{100 * (dgp.bound_gap or 0):.0f}%"
        print(
            f"{seed:>4} {cluster.total_slots:>5} {dgp.bound:>7.3f} | "
            f"{dgp.served_fraction:>10.4f} {dgp.cost_rate:>7.3f} {gap:>7} "
            f"{dgp.mean_queue_length:>7.0f} {dgp.params['alpha']:>7.4f} {wall:>5.1f} | "
            f"{gr.cost_rate:>11.3f} {100 * ggap:>6.0f}% {gr.mean_queue_length:>6.2f}",
            flush=True,
        )
    print(
        f"\n{n} instances with a bound: default DGP serves >= 99% on {served_ok}, is within "
        f"15% of the bound on {passed}, and is cheaper than greedy on {cheaper_than_greedy}; "
        f"its defaults were refused on {refused + far} more ({refused} with a type not "
        f"served, {far} above the optimum by more than 15%)."
    )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]] or [0, 40]
    main(*args)
