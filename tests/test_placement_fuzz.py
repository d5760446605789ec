"""Random instances of every placement policy, with numba bounds checking on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _checked_cache() -> str:
    """A private cache folder for the bounds-checked build, kept between runs.

    Apart from the usual cache (numba keys a cache entry on the signature and the target,
    not on the bounds-check flag, so checked and unchecked machine code must not share a
    folder); inside the user's private cache folder (0700, owner checked), and kept so that
    only the first run on a machine compiles every placement kernel checked.
    """
    from cloudsched._jit import private_folder

    folder = os.path.join(private_folder(), "boundscheck")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder


def _run(n: int) -> None:
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": _checked_cache()}
    proc = subprocess.run(
        [sys.executable, str(HERE / "placement_fuzz.py"), str(n)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


@pytest.mark.slow  # compiling every placement kernel bounds-checked takes most of a minute
def test_random_instances_stay_in_bounds():
    _run(400)
