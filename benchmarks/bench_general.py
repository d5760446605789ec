"""Speed of the event-list (general) engine against a hand-written C event-list simulator.

Same model in both (N = 1000 FIFO servers, load 0.9, Poisson arrivals, exponential service
of mean 1, Random and Pod(2), every task's response time recorded).  The C program
``c_eventlist.c`` is compiled with ``gcc -O2`` in this run (skipped if gcc is missing), and
both are timed in the same run; the script prints events per second and the ratio.
Then the general engine with lognormal service and hyperexponential arrivals, and the
exponential (Markov-chain) engine for comparison.

Run: ``python benchmarks/bench_general.py [--quick]``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cloudsched.dispatch import simulate

N, LOAD = 1000, 0.9


def c_rate(binary: Path, policy: int, tasks: int) -> tuple[float, float]:
    out = subprocess.run(
        [str(binary), str(N), str(LOAD), str(tasks), str(policy), "1"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    events, seconds, mean = int(out[0]), float(out[1]), float(out[2])
    return events / seconds, mean


def main() -> None:
    tasks = 1_000_000 if "--quick" in sys.argv else 5_000_000
    simulate("random", servers=10, load=0.5, tasks=100, rng=0)  # compile outside the timings
    binary = None
    if shutil.which("gcc"):
        tmp = Path(tempfile.mkdtemp())
        binary = tmp / "c_eventlist"
        src = Path(__file__).with_name("c_eventlist.c")
        subprocess.run(["gcc", "-O2", "-o", str(binary), str(src), "-lm"], check=True)
    print(f"N = {N}, load = {LOAD}, {tasks:,} tasks, every response time recorded")
    print(f"{'policy':<8}{'general':>12}{'C':>12}{'C / general':>13}{'exponential':>13}")
    for code, policy in ((0, "random"), (1, "pod")):
        gen = simulate(policy, servers=N, load=LOAD, tasks=tasks, rng=1, engine="general")
        exp = simulate(policy, servers=N, load=LOAD, tasks=tasks, rng=1)
        if binary is not None:
            c, _c_mean = c_rate(binary, code, tasks)
            ratio = f"{c / gen.events_per_second:>12.2f}x"
            c_txt = f"{c:>12.3g}"
        else:
            c_txt, ratio = f"{'n/a':>12}", f"{'n/a':>13}"
        print(
            f"{policy:<8}{gen.events_per_second:>12.3g}{c_txt}{ratio}{exp.events_per_second:>13.3g}"
        )
    print("\ngeneral engine, other laws (N = 1000, load 0.9):")
    for policy in ("random", "pod", "jiq", "jiq-pod"):
        kw = {"r": 10} if policy.startswith("jiq") else {}
        res = simulate(
            policy, servers=N, load=LOAD, tasks=tasks, rng=1, service="lognormal:cv=2",
            arrivals="h2:cv=2", **kw,
        )  # fmt: skip
        print(
            f"  {policy:<10}{res.events_per_second / 1e6:6.2f} M events/s"
            f"  T = {res.mean_response_time:.3f}"
        )


if __name__ == "__main__":
    main()
