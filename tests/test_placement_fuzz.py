"""Random instances of every placement policy, with numba bounds checking on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(n: int, tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    proc = subprocess.run(
        [sys.executable, str(HERE / "placement_fuzz.py"), str(n)],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_random_instances_stay_in_bounds(tmp_path):
    _run(60, tmp_path)


@pytest.mark.slow
def test_many_random_instances_stay_in_bounds(tmp_path):
    _run(400, tmp_path)
