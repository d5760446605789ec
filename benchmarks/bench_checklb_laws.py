"""``check-lb``'s production laws on a long log: seconds against ``--expect pod:2``.

For each law (Envoy's weighted least request, its EDF schedule; NGINX ``least_time``; peak
EWMA; and the number of NGINX workers inferred without ``$pid``), a seeded log of
``--lines`` requests of that balancer over 16 upstreams is written, read once, and checked
in this process on one core after a warm-up that compiles the kernels; the baseline is
``check_lb(log, "pod:2")`` on the same log, measured in the same run, and the ratio is
printed (CPU seconds).

Run: ``python benchmarks/bench_checklb_laws.py [--lines N]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_workers import infer_workers
from cloudsched.testing.balancer_logs import balancer_log

WEIGHTS = [4.0, 1.0, 2.0, 1.0] * 4
SPEEDS = [1.0] * 8 + [0.5] * 8
NO_PID = "$msec $request_time $upstream_addr $status $upstream_response_time $ignored"


def _cases(n: int) -> list[tuple[str, dict, str, dict]]:
    """(name, generator's arguments, format, check's arguments)."""
    w = ",".join(f"10.0.0.{u + 1}:8080={x:g}" for u, x in enumerate(WEIGHTS) if x != 1.0)
    return [
        ("wlr (EDF)", {"policy": "wlr", "weights": WEIGHTS, "load": 0.9}, "envoy",
         {"expect": "wlr", "weights": w}),
        ("least-time", {"policy": "least-time", "speeds": SPEEDS, "load": 0.6,
                        "milliseconds": True}, "nginx", {"expect": "least-time"}),
        ("ewma", {"policy": "ewma", "speeds": SPEEDS, "load": 0.6}, "nginx",
         {"expect": "ewma"}),
        ("workers (4, no $pid)", {"policy": "least-request", "workers": 4, "load": 0.9},
         "nginx-no-pid", {}),
    ]  # fmt: skip


def _cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    """Print the seconds and ratios of each law's check."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"{args.lines:,} lines, 16 upstreams, one core: CPU seconds")
    with tempfile.TemporaryDirectory() as tmp:
        for name, gen, fmt, check in _cases(args.lines):
            gen = dict(gen)
            policy = gen.pop("policy")
            out = "nginx" if fmt == "nginx-no-pid" else fmt
            lines = balancer_log(policy, k=16, requests=args.lines, seed=1, fmt=out, **gen)
            path = Path(tmp) / f"{policy}.log"
            path.write_text("\n".join(lines) + "\n")
            log_format = NO_PID if fmt == "nginx-no-pid" else None
            log = read_upstream_log(path, out, log_format=log_format)
            if check:  # warm-up: compile on a short prefix
                check_lb(_head(log, 3000), **check, whole_run=True)
                law = _cpu(lambda log=log, check=check: check_lb(log, **check))
            else:
                infer_workers(_head(log, 3000))
                law = _cpu(lambda log=log: infer_workers(log))
            base = _cpu(lambda log=log: check_lb(log, "pod:2"))
            print(f"{name:22s} {law:7.2f} s   pod:2 {base:6.2f} s   ratio {law / base:5.2f}")


def _head(log, n: int):
    """The first ``n`` requests of ``log`` (for the warm-up)."""
    import dataclasses

    keep = np.arange(min(n, log.upstream.size))
    fields = {"sent": log.sent[keep], "end": log.end[keep], "upstream": log.upstream[keep]}
    if log.worker is not None:
        fields["worker"] = log.worker[keep]
    if log.file is not None:
        fields["file"] = log.file[keep]
    return dataclasses.replace(log, **fields)


if __name__ == "__main__":
    main()
