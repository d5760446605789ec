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
    "simulate": [
        "simulate",
        "jiq",
        "--servers",
        "100",
        "--r",
        "10",
        "--load",
        "0.9",
        "--tasks",
        "10000000000",
        "--seed",
        "1",
    ],
    "open-ended": [
        "simulate",
        "pod",
        "--servers",
        "50",
        "--load",
        "0.95",
        "--precision",
        "0.00001",
        "--seed",
        "2",
    ],
    # one HiGHS solve holds the main thread here: progress and Ctrl-C must still get through
    "bound": [
        "place",
        "bound",
        "--cluster",
        "400x16",
        "--workload",
        str(Path(__file__).resolve().parents[1] / "examples" / "demo-placement.yaml"),
    ],
}


def _ctrl_c(argv, ready, signum=signal.SIGINT, **popen):
    """Start a command, read its progress lines until ``ready(line)``, send ``signum``.

    Returns the exit code and the rest of standard error; the command is always ended.
    """
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )
    try:
        for _ in range(1000):
            line = proc.stderr.readline()
            assert line.startswith("progress: "), line
            if ready(line):
                break
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # closes the pipes
    return proc.returncode, rest


@pytest.mark.parametrize("name", sorted(LONG_RUNS))
def test_a_long_run_reports_progress_and_stops_on_ctrl_c(tmp_path, name):
    out = tmp_path / "result.json"
    env = dict(os.environ, CLOUDSCHED_PROGRESS_SECONDS="0.2")
    argv = [
        sys.executable,
        "-c",
        "from cloudsched.cli import main; main()",
        *LONG_RUNS[name],
        "--format",
        "json",
        "--out",
        str(out),
    ]

    def ready(line):  # the first lines may come before the first estimate
        assert line.endswith(" left (Ctrl-C stops)\n") or "left unknown" in line, line
        return ("% after" in line) == (name != "bound")

    code, rest = _ctrl_c(argv, ready, env=env)
    lines = [line for line in rest.splitlines() if line.strip()]
    assert code == 130, rest
    assert "Traceback" not in rest
    assert lines[-1].startswith("interrupted: "), rest
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir()], list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["simulate", "open-ended"])
def test_sigterm_stops_a_run_as_ctrl_c_does_with_status_143(tmp_path, name):
    """SIGTERM (kill, timeout, a service manager) ended the command by the default action:
    no message, status -15, and whatever it was writing lost silently."""
    out = tmp_path / "result.json"
    env = dict(os.environ, CLOUDSCHED_PROGRESS_SECONDS="0.2")
    argv = [sys.executable, "-c", "from cloudsched.cli import main; main()", *LONG_RUNS[name]]
    argv += ["--format", "json", "--out", str(out)]
    code, rest = _ctrl_c(argv, lambda line: "% after" in line, signal.SIGTERM, env=env)
    lines = [line for line in rest.splitlines() if line.strip()]
    assert code == 143, rest
    assert "Traceback" not in rest
    assert lines[-1].startswith("terminated: stopped by SIGTERM"), rest
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir()], list(tmp_path.iterdir())


def test_sigterm_inside_the_block_is_reported_and_the_old_handler_comes_back():
    from cloudsched.cli._sigint import interruptible, stopped_by

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), interruptible():
        signal.raise_signal(signal.SIGTERM)
    assert stopped_by() == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    with interruptible():
        pass
    assert stopped_by() is None  # each block starts clean


SPIN = '''
from cloudsched.dispatch import hook, register_policy


@register_policy("spin")
class Spin:
    """A hook that never returns."""

    @hook
    def choose(st, par, rng, m):
        x = 0
        while x >= 0:
            x = (x + 1) % 7
        return 0
'''


def _spin_argv(tmp_path, command):
    plugin = tmp_path / "spin.py"
    name = f"spin-{command}"  # a name of its own: tests may load both in one process
    plugin.write_text(SPIN.replace('"spin"', f'"{name}"'))
    if command == "simulate":
        return ["simulate", f"{plugin}:{name}", "--servers", "10", "--load", "0.5"]
    return ["compare", f"{plugin}:{name}", "--servers", "10", "--load", "0.5", "--load", "0.6"]


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_ctrl_c_stops_a_plugin_hook_that_never_returns(tmp_path, command):
    """The issue's case: a looping hook held the process; Ctrl-C did nothing."""
    env = dict(os.environ, CLOUDSCHED_PROGRESS_SECONDS="0.2")
    argv = [
        sys.executable,
        "-c",
        "from cloudsched.cli import main; main()",
        *_spin_argv(tmp_path, command),
    ]
    seen = []

    def ready(line):  # three lines: the hook is running (compiled, called, not returning)
        seen.append(line)
        return len(seen) == 3

    code, rest = _ctrl_c(argv, ready, env=env, cwd=tmp_path)
    assert code == 130, rest
    assert rest.splitlines()[-1].startswith("interrupted: "), rest


@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_a_time_limit_stops_a_plugin_hook_that_never_returns(tmp_path, command):
    """In a process of its own: the abandoned hook spins until its process ends."""
    argv = [
        sys.executable,
        "-c",
        "from cloudsched.cli import main; main()",
        *_spin_argv(tmp_path, command),
        "--time-limit",
        "2",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"stopped at its time limit, inside one call of spin-{command}'s compiled" in proc.stderr
    assert proc.stdout == ""


def test_a_time_limit_stops_a_builtin_run_between_chunks():
    from cloudsched.dispatch import simulate
    from cloudsched.dispatch.engines.guard import TimeLimitExceeded

    with pytest.raises(TimeLimitExceeded, match=r"after [\d,]+ events"):
        simulate("pod", servers=100, load=0.95, precision=1e-6, time_limit=0.5, rng=1)


def test_ctrl_c_inside_a_compiled_librarys_callback_is_delivered_after_it():
    """A Ctrl-C that arrives while llvmlite's code runs (numba saving a kernel from a ctypes
    callback, where a raised exception is dropped) is held and delivered once that code is
    left, so the command still ends with ``interrupted:``, never with numba's traceback."""
    import time

    from cloudsched.cli._sigint import interruptible

    namespace = {"__name__": "llvmlite.binding.fake", "signal": signal, "time": time}
    exec(  # a function that llvmlite's module would own
        "def callback():\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "    end = time.monotonic() + 0.5\n"
        "    while time.monotonic() < end:\n"
        "        pass\n"
        "    return 'finished'\n",
        namespace,
    )
    with interruptible():
        assert namespace["callback"]() == "finished"  # not interrupted inside the callback
        with pytest.raises(KeyboardInterrupt):
            time.sleep(30)  # the held Ctrl-C lands here, a tenth of a second later
        with pytest.raises(KeyboardInterrupt):  # outside any callback: at once
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


CHECK_LB_STUCK = """
import sys, time
import cloudsched.dispatch.workload.upstreams as up

def stuck(*args, **kwargs):  # reading a log that takes long: say so, then keep reading
    sys.stderr.write("reading\\n")
    sys.stderr.flush()
    while True:
        time.sleep(0.01)

up.read_upstream_log = stuck
from cloudsched.cli import main
main()
"""


def test_sigterm_stops_check_lb_while_it_reads_a_log(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("x\n")
    argv = [sys.executable, "-c", CHECK_LB_STUCK, "check-lb", str(log), "--expect", "random"]
    argv += ["--trace-format", "nginx", "--out", str(tmp_path / "verdict.json")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stderr.readline() == "reading\n"
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, rest
    assert rest.splitlines()[-1].startswith("terminated: stopped by SIGTERM"), rest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["access.log"]


_ABANDONED = """
import atexit, ctypes, os, signal, sys
import cloudsched.placement.static as st
from cloudsched._quiet import solve_quietly
from cloudsched.cli import main

def solve(*args, **kwargs):
    def in_c():
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the solve is in compiled code
        ctypes.CDLL(None).sleep(30)
    return solve_quietly("HiGHS (test)", in_c)

st.place_static = solve
atexit.register(lambda: sys.stderr.write("shutdown ran\\n"))
sys.argv = ["cloudsched", "place", "static", "--cluster", "4x16", "--topology", "wordcount"]
main()
"""


def test_ctrl_c_during_a_solve_exits_without_the_interpreters_shutdown():
    """A solve left inside compiled code aborted the interpreter's shutdown (SIGABRT, issue
    43): the CLI now ends at once with exit 130 and its one line, skipping the shutdown."""
    proc = subprocess.run(
        [sys.executable, "-c", _ABANDONED], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 130, proc.stderr
    assert "interrupted: stopped before finishing" in proc.stderr
    assert "shutdown ran" not in proc.stderr and "Traceback" not in proc.stderr
