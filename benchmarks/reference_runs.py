"""Long independent reference runs for the README's accuracy table and the slow tests (r = 10).

Independent of the default procedure they check: every run starts empty (no mean-field
start), discards a fixed 20% of a long fixed horizon (no MSER, no stopping rule), and the
interval comes from independent replications (no batch means).  Usage:

    python benchmarks/reference_runs.py jiq-pod 0.99 20000 8 [10000]
    (policy, load, horizon per replication, replications, servers)

Prints one JSON line.  Costs about 2e5 events per time unit at load 0.99 (minutes to an
hour on 2 cores for the horizons in the README).
"""

import json
import sys
import time

from cloudsched.dispatch import simulate


def main() -> None:
    policy, load = sys.argv[1], float(sys.argv[2])
    horizon, reps = float(sys.argv[3]), int(sys.argv[4])
    servers = int(sys.argv[5]) if len(sys.argv) > 5 else 10_000
    t0 = time.perf_counter()
    res = simulate(
        policy,
        servers=servers,
        r=10,
        load=load,
        d=2,
        initial="empty",
        warmup=0.2,
        horizon=horizon,
        replications=reps,
        rng=424242,
    )
    print(
        json.dumps(
            {
                "policy": policy,
                "servers": servers,
                "load": load,
                "horizon": horizon,
                "replications": reps,
                "mean": res.mean_response_time,
                "ci95": res.ci95,
                "measured_time": res.measured_time,
                "events": res.events,
                "wall_seconds": round(time.perf_counter() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
