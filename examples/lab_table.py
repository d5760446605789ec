"""The README's live table: our JIQ-Pod and Pod(2) beside NGINX and HAProxy on loopback.

Runs every (balancer, policy) x dispatchers x load on this machine for ``--duration`` seconds
each and prints mean and p99 response time (in mean service times, after subtracting each
run's measured forwarding overhead), messages per server per unit time, and the CPU the
whole lab used (cores).  About 25 s per run at the defaults (24 runs: 10 minutes).

    python examples/lab_table.py --duration 15
"""

from __future__ import annotations

import argparse

import pandas as pd

from cloudsched.lab import LabSpec, run_lab

SYSTEMS = [("lab", "jiq-pod"), ("lab", "pod"), ("nginx", "pod"), ("haproxy", "jsq")]
NAMES = {
    ("lab", "jiq-pod"): "jiq-pod (lab)",
    ("lab", "pod"): "pod(2) (lab)",
    ("nginx", "pod"): "nginx random two least_conn",
    ("haproxy", "jsq"): "haproxy leastconn",
}


def main() -> None:
    """Run the grid and print the rows as they come, then the Markdown table."""
    p = argparse.ArgumentParser()
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--servers", type=int, default=8)
    p.add_argument("--dispatchers", type=int, nargs="+", default=[2, 4])
    p.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.7, 0.9])
    args = p.parse_args()
    rows = []
    for m in args.dispatchers:
        for load in args.loads:
            for balancer, policy in SYSTEMS:
                spec = LabSpec(
                    policy,
                    servers=args.servers,
                    dispatchers=m,
                    load=load,
                    balancer=balancer,
                    duration=args.duration,
                    warmup=3.0,
                    seed=1,
                )
                r = run_lab(spec)
                rec, lab = r.record, r.lab
                over = lab["overhead"]
                msgs = sum(rec.messages.values()) + lab["health_checks"]
                rows.append(
                    {
                        "system": NAMES[(balancer, policy)],
                        "M": m,
                        "load": load,
                        "mean": round(rec.mean_response_time - over, 3),
                        "+-95%": round((rec.ci95[1] - rec.ci95[0]) / 2, 3) if rec.ci95 else None,
                        "p99": round(rec.percentiles["p99"] - over, 2),
                        "overhead ms": round(lab["overhead_ms"], 2),
                        "msgs/server/unit": round(msgs, 3),
                        "CPU cores": round(lab["cpu"]["total"], 3),
                    }
                )
                print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    print("| " + " | ".join(df.columns) + " |")
    print("|" + "---|" * len(df.columns))
    for row in df.itertuples(index=False):
        print("| " + " | ".join("-" if v is None else str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
