"""``check-lb`` on a long log: seconds and memory against the per-line reader.

Writes a seeded log of ``--lines`` requests (default 1,000,000: a simulated ``random two
least_conn`` in front of 16 upstreams at load 0.9) in each format (``--formats``: NGINX
with its millisecond clock and ``$upstream_response_time``, Envoy's default text format,
Envoy JSON, HAProxy's ``option httplog``), then measures, each in a fresh process on one core
(``taskset`` where the machine has it):

* the reader: plain lines a batch at a time (``upstream_fast``) against every line by the
  per-line reader (``fast=False``, the reference), with the ratio;
* the counts: the compiled ``levels_at_arrivals`` against ``levels_by_numpy``;
* the whole command, ``cloudsched check-lb LOG --expect pod:2``: wall seconds and the
  peak resident memory, against the same command on a 1,000-line log (the interpreter and
  its libraries).  The logs are written by a child process, so that the children this one
  forks do not inherit its memory (Linux counts it in a forked child's peak).

The issue's target: 1,000,000 lines in at most 10 s on one core, memory bounded.

Run: ``python benchmarks/bench_checklb.py [--lines N] [--formats nginx,envoy,envoy-json,haproxy]``.
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
path, fmt = sys.argv[1], sys.argv[2]
t = time.process_time(); fast = read_upstream_log(path, fmt); a = time.process_time() - t
t = time.process_time(); slow = read_upstream_log(path, fmt, fast=False)
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


WRITE = """
import sys
from pathlib import Path
from cloudsched.testing.balancer_logs import balancer_log
fmt, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
extra = {"client_time": 0.005, "milliseconds": True} if fmt == "nginx" else {}
lines = balancer_log("pod:2", k=16, load=0.9, requests=n, seed=1, fmt=fmt, **extra)
Path(path).write_text("\\n".join(lines) + "\\n")
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
    parser.add_argument("--formats", default="nginx,envoy,envoy-json,haproxy")
    args = parser.parse_args()

    print(f"{args.lines:,} lines, one core: CPU seconds of the reader and the counts")
    for fmt in args.formats.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            logs = {}
            for n in (1_000, args.lines):  # written by a child: this process stays small,
                logs[n] = Path(tmp) / f"{fmt}-{n}.log"  # and so do the children it forks
                subprocess.run([sys.executable, "-c", WRITE, fmt, str(n), str(logs[n])], check=True)
            out = subprocess.run(
                [*_one_core(), sys.executable, "-c", CHILD, str(logs[args.lines]), fmt],
                check=True, capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            fast, slow, counts, counts_np = map(float, out)
            small, big = _command(logs[1_000]), _command(logs[args.lines])
            print(
                f"{fmt:8s} reader {fast:5.2f} (per line {slow:5.2f}: {slow / fast:4.1f}x), "
                f"counts {counts:4.2f} (numpy {counts_np:4.2f}: {counts_np / counts:4.1f}x); "
                f"check-lb {big[0]:5.2f} s wall, peak {big[1]:4.0f} MB "
                f"(1,000 lines: {small[0]:4.2f} s, {small[1]:4.0f} MB)"
            )


if __name__ == "__main__":
    main()
