"""Ctrl-C on a long run: a plain progress line without a terminal, then one line and exit 130.

The test waits for the first progress line (an event, not a time) before sending SIGINT.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

LONG_RUNS = {
    "simulate": ["simulate", "jiq", "--servers", "100", "--r", "10", "--load", "0.9",
                 "--tasks", "10000000000", "--seed", "1"],
    "open-ended": ["simulate", "pod", "--servers", "50", "--load", "0.95",
                   "--precision", "0.00001", "--seed", "2"],
    # one HiGHS solve holds the main thread here: progress and Ctrl-C must still get through
    "bound": ["place", "bound", "--cluster", "400x16", "--workload",
              str(Path(__file__).resolve().parents[1] / "examples" / "demo-placement.yaml")],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LONG_RUNS))
def test_a_long_run_reports_progress_and_stops_on_ctrl_c(tmp_path, name):
    out = tmp_path / "result.json"
    env = dict(os.environ, CLOUDSCHED_PROGRESS_SECONDS="0.2")
    argv = [sys.executable, "-c", "from cloudsched.cli import main; main()",
            *LONG_RUNS[name], "--format", "json", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)  # fmt: skip
    try:
        for _ in range(1000):  # the first lines may come before the first estimate
            line = proc.stderr.readline()
            assert line.startswith("progress: "), line
            assert line.endswith(" left (Ctrl-C stops)\n") or "left unknown" in line, line
            if ("% after" in line) == (name != "bound"):
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [line for line in rest.splitlines() if line.strip()]
    assert proc.returncode == 130, rest
    assert "Traceback" not in rest
    assert lines[-1].startswith("interrupted: "), rest
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir()], list(tmp_path.iterdir())
