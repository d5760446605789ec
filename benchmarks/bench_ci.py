"""A cold ``.ci/run``, phase by phase: a fresh clone of HEAD, an empty kernel cache.

Clones the checkout's HEAD into a temporary folder (so the kernels, cached beside their
sources, start cold, as on CI's clean checkout) and runs its ``.ci/run`` there, printing
its output as it goes; at the end ``.ci/run`` prints each phase's wall time and each test
phase's 15 slowest tests, which this repeats with the total.  ``--baseline REV`` runs the
same for another commit first, in the same session (on the same machine, so the ratio
compares like with like; it doubles the cost: about 40 minutes each on 2 cores).
``--durations FILE`` writes the slow tier's test durations (for ``.ci/durations.json``).

Run: ``python benchmarks/bench_ci.py [--baseline e730d7e] [--durations .ci/durations.json]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_ci(rev: str, durations: Path | None) -> tuple[float, int, list[str]]:
    """Run ``.ci/run`` of ``rev`` in a fresh clone; return (wall s, exit status, summary)."""
    with tempfile.TemporaryDirectory(prefix="cloudsched-ci-") as folder:
        clone = Path(folder) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", rev], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "VIRTUAL_ENV")}
        if durations is not None:
            env["CI_DURATIONS"] = str(durations.resolve())
        start = time.perf_counter()
        proc = subprocess.Popen(
            ["bash", str(clone / ".ci" / "run")],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        summary: list[str] = []
        keep = False
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            keep = keep or line.startswith("== CI phase times")
            if keep:
                summary.append(line.rstrip("\n"))
        status = proc.wait()
        return time.perf_counter() - start, status, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=None, help="a commit to measure first")
    ap.add_argument("--durations", type=Path, default=None)
    args = ap.parse_args()
    base = None
    if args.baseline:
        base = run_ci(args.baseline, None)
    wall, status, summary = run_ci("HEAD", args.durations)
    print("\n".join(["", "== bench_ci: a cold .ci/run of HEAD", *summary]))
    print(f"HEAD: {wall / 60:.1f} min wall, exit {status}")
    if base is not None:
        print(f"{args.baseline}: {base[0] / 60:.1f} min wall, exit {base[1]}")
        print(f"ratio HEAD / {args.baseline}: {wall / base[0]:.2f}")


if __name__ == "__main__":
    main()
