"""``check-lb`` on a long NGINX log: seconds and memory against the per-line reader.

Writes a seeded log of ``--lines`` requests (default 1,000,000: a simulated NGINX
``random two least_conn`` in front of 16 upstreams at load 0.9, written with NGINX's
millisecond clock and ``$upstream_response_time``), then measures, each in a fresh process
on one core (``taskset``/affinity where the machine has it):

* the reader: plain lines a batch at a time (``upstream_fast``) against every line by the
  per-line reader (``fast=False``, the reference), with the ratio;
* the counts: the compiled ``levels_at_arrivals`` against ``levels_by_numpy``;
* the whole command, ``cloudsched check-lb LOG --expect pod:2``: wall seconds and the
  peak resident memory, against the same command on a 1,000-line log (the interpreter and
  its libraries).

The issue's target: 1,000,000 lines in at most 10 s on one core, memory bounded.

Run: ``python benchmarks/bench_checklb.py [--lines N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import sys, time
import numpy as np
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb_counts import levels_at_arrivals, levels_by_numpy
path = sys.argv[1]
t = time.process_time(); fast = read_upstream_log(path, "nginx"); a = time.process_time() - t
t = time.process_time(); slow = read_upstream_log(path, "nginx", fast=False)
b = time.process_time() - t
assert np.array_equal(fast.sent, slow.sent) and np.array_equal(fast.upstream, slow.upstream)
k = len(fast.names)
levels_at_arrivals(fast.sent[:100], fast.end[:100], fast.upstream[:100], k)  # compiled
t = time.process_time(); x = levels_at_arrivals(fast.sent, fast.end, fast.upstream, k)
c = time.process_time() - t
t = time.process_time(); y = levels_by_numpy(fast.sent, fast.end, fast.upstream, k)
d = time.process_time() - t
assert np.array_equal(x, y)
print(a, b, c, d)
"""


def _one_core() -> list[str]:
    return ["taskset", "-c", "0"] if os.path.exists("/usr/bin/taskset") else []


def _command(path: Path) -> tuple[float, float]:
    """Wall seconds and peak resident MB of ``cloudsched check-lb`` on one core."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [*_one_core(), sys.executable, "-m", "cloudsched", "check-lb", str(path),
         "--expect", "pod:2"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"check-lb exited with {proc.returncode}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    from cloudsched.testing.balancer_logs import balancer_log

    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for n in (1_000, args.lines):
            lines = balancer_log(
                "pod:2", k=16, load=0.9, requests=n, seed=1, client_time=0.005,
                milliseconds=True,
            )  # fmt: skip
            logs[n] = Path(tmp) / f"nginx-{n}.log"
            logs[n].write_text("\n".join(lines) + "\n")
        out = subprocess.run(
            [*_one_core(), sys.executable, "-c", CHILD, str(logs[args.lines])],
            check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        fast, slow, counts, counts_np = map(float, out)
        print(f"{args.lines:,} lines, one core (CPU seconds)")
        print(
            f"  reader, batches      {fast:7.2f}   per line {slow:7.2f}   ratio {slow / fast:5.1f}x"
        )
        print(
            f"  counts, compiled     {counts:7.2f}   numpy    {counts_np:7.2f}   "
            f"ratio {counts_np / counts:5.1f}x"
        )
        small = _command(logs[1_000])
        big = _command(logs[args.lines])
        print(f"  check-lb, whole      {big[0]:7.2f} s wall, peak {big[1]:6.0f} MB")
        print(f"  check-lb, 1,000 lines {small[0]:6.2f} s wall, peak {small[1]:6.0f} MB")


if __name__ == "__main__":
    main()
