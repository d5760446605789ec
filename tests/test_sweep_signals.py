"""A sweep killed by SIGTERM stops its workers, leaves no temporary file, says what it kept,
and resumes to the same rows; a SIGKILLed sweep's workers do not outlive it."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

SPEC = """kind: simulate
seed: 5
fixed: {policy: random, servers: 200, tasks: 3000000}
grid: {load: [0.5, 0.6, 0.7, 0.8, 0.85, 0.9]}
"""


def _start(tmp_path, out, *extra):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC)
    cmd = [
        sys.executable,
        "-c",
        "from cloudsched.cli import main; main()",
        "sweep",
        str(spec),
        "--out",
        str(out),
        "--workers",
        "2",
        *extra,
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _wait_for_runs(out, n, proc, limit=300.0):
    runs = out / "runs"
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if runs.is_dir() and len(list(runs.glob("*.parquet"))) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"sweep ended early: {proc.stderr.read()}")
        time.sleep(0.1)
    pytest.fail("no run stored in time")


def _group_gone(pgid, limit=30.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_sigterm_stops_workers_and_resume_completes(tmp_path):
    out = tmp_path / "out"
    proc = _start(tmp_path, out)
    _wait_for_runs(out, 1, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err  # 128 + SIGTERM, as a shell reports it
    assert "interrupted:" in err and "--resume" in err
    assert _group_gone(proc.pid), "worker processes outlived the sweep"
    assert not list((out / "runs").glob(".*.tmp"))
    kept = len(list((out / "runs").glob("*.parquet")))
    assert 1 <= kept < 6
    again = _start(tmp_path, out, "--resume")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    resumed = pd.concat([pd.read_parquet(p) for p in sorted((out / "runs").glob("*.parquet"))])
    fresh_out = tmp_path / "fresh"
    fresh = _start(tmp_path, fresh_out)
    _, err = fresh.communicate(timeout=600)
    assert fresh.returncode == 0, err
    full = pd.concat([pd.read_parquet(p) for p in sorted((fresh_out / "runs").glob("*.parquet"))])
    cols = ["run_id", "mean_response_time"]
    pd.testing.assert_frame_equal(
        resumed[cols].reset_index(drop=True), full[cols].reset_index(drop=True)
    )


def test_sigkill_of_the_sweep_ends_its_workers(tmp_path):
    out = tmp_path / "out"
    proc = _start(tmp_path, out)
    _wait_for_runs(out, 1, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _group_gone(proc.pid), "worker processes outlived a killed sweep"


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_ctrl_c_to_the_process_group_stops_quietly(tmp_path, executor):
    """A terminal's Ctrl-C reaches every process of the group: only the sweep answers it,
    with one line saying what it kept, and no worker prints a traceback or survives."""
    out = tmp_path / "out"
    proc = _start(tmp_path, out, "--executor", executor)
    _wait_for_runs(out, 1, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("interrupted:")
    assert _group_gone(proc.pid), "worker processes outlived the sweep"
