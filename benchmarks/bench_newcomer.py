"""A newcomer's first half hour, timed: install, the cold demo, the default test tier.

Clones this repository's HEAD into a fresh temporary folder and runs the README's two
commands there as a new user would, each timed:

1. ``pip install -e ".[dev]"`` into a new virtual environment (from the user's pip cache
   unless ``--no-pip-cache``; downloads depend on the network, so they are timed apart);
2. ``cloudsched demo``, cold (no compiled kernel on disk: the clone's caches are empty),
   then again warm;
3. ``python -m pytest`` (the default tier, the README's second command).

Beside each time it prints its ratio to a reference job measured in the same run (a fixed
pure-Python loop, timed before and after): on a busy machine every phase and the reference
slow down together, so the ratios say whether cloudsched or the machine changed.  It also
prints the load average before and after.  Run:
``python benchmarks/bench_newcomer.py [--skip-tests] [--no-pip-cache] [--keep]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "s = 0\nfor i in range(30_000_000):\n    s += i * i\n"


def reference() -> float:
    """Wall time of a fixed single-core pure-Python loop (about 2 s on an idle core)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", REFERENCE], check=True)
    return time.perf_counter() - t0


def timed(label: str, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    print(f"... {label}: {' '.join(argv)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(
            f"{label} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    return took, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-tests", action="store_true", help="stop after the demos")
    ap.add_argument("--no-pip-cache", action="store_true", help="download every package")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--python", default=sys.executable, help="the Python that makes the venv")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cloudsched-newcomer-"))
    clone = work / "cloudsched"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    if args.no_pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    load0 = os.getloadavg()
    ref0 = reference()
    rows: list[tuple[str, float]] = []
    try:
        subprocess.run(
            ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True
        )
        venv = work / "venv"
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        py = str(venv / "bin" / "python")
        took, _ = timed("install", [py, "-m", "pip", "install", "-q", "-e", ".[dev]"], clone, env)
        rows.append(("install (pip install -e .[dev])", took))
        demo = work / "user"
        demo.mkdir()
        took, _ = timed("cold demo", [str(venv / "bin" / "cloudsched"), "demo"], demo, env)
        rows.append(("cloudsched demo, cold", took))
        took, _ = timed("warm demo", [str(venv / "bin" / "cloudsched"), "demo"], demo, env)
        rows.append(("cloudsched demo, warm", took))
        if not args.skip_tests:
            took, out = timed(
                "default tier", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"], clone, env
            )
            tail = [line for line in out.splitlines() if re.search(r"\d+ passed", line)]
            rows.append((f"python -m pytest ({tail[-1].strip('= ') if tail else '?'})", took))
    finally:
        ref1 = reference()
        load1 = os.getloadavg()
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    ref = (ref0 + ref1) / 2
    print(f"\n{os.cpu_count()} cores; load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    print(f"reference job: {ref0:.2f} s before, {ref1:.2f} s after (mean {ref:.2f} s)")
    print(f"{'phase':<58}{'wall':>10}{'/ reference':>13}")
    for name, took in rows:
        m, s = divmod(took, 60)
        print(f"{name:<58}{f'{int(m)}:{s:04.1f}':>10}{took / ref:>13.1f}")


if __name__ == "__main__":
    main()
