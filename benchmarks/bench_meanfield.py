"""Time the mean-field predictions: 100 loads per policy, against the slow reference.

Run: ``python benchmarks/bench_meanfield.py``.  Prints wall time per call and the ratio
reference / fast measured in the same run (machines here are noisy: compare ratios).
"""

from __future__ import annotations

import time

import numpy as np

from cloudsched.dispatch import fluid_steady_state, predict
from cloudsched.testing.meanfield_oracle import reference_response_time


def best_of(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    loads = np.linspace(0.01, 0.99, 100)
    r, d = 10.0, 2
    print(f"{'policy':<10}{'predict 100 loads':>20}{'reference':>14}{'ratio':>10}")
    for policy in ("random", "pod", "jsq", "jiq", "jiq-pod"):
        fast = best_of(lambda p=policy: predict(p, loads, r=r, d=d))
        slow = best_of(
            lambda p=policy: [reference_response_time(p, x, r, d) for x in loads], repeats=1
        )
        print(f"{policy:<10}{fast * 1e3:>17.2f} ms{slow * 1e3:>11.1f} ms{slow / fast:>9.3g}x")
    for big_r in (1e3, 1e4):
        fast = best_of(lambda rr=big_r: predict("jiq-pod", loads, r=rr, d=d), repeats=2)
        print(f"jiq-pod r={big_r:g}: predict 100 loads {fast * 1e3:.1f} ms")
    ode = best_of(lambda: fluid_steady_state("jiq-pod", 0.9, r=r, d=d), repeats=1)
    one = best_of(lambda: predict("jiq-pod", [0.9], r=r, d=d))
    print(f"fluid ODE steady state (jiq-pod, 0.9): {ode * 1e3:.0f} ms = {ode / one:.0f}x predict")


if __name__ == "__main__":
    main()
