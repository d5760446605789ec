"""Keep an external balancer's processes (NGINX's master and its workers) inside the run.

NGINX's worker processes do not die with their master: killed, the master leaves them to
init, still listening.  So the lab starts NGINX through this guardian (``python -m
cloudsched.lab.guardian --parent PID --lifetime S -- nginx ...``).  The lab gives the
guardian a process group of its own; NGINX runs in that group, and the guardian ends the
whole group when the lab's controller dies (the kernel's parent-death signal, even after
``kill -9``), when it is asked to (SIGTERM, SIGINT), when ``lifetime`` seconds have passed,
or when the command exits: SIGTERM first (NGINX's fast shutdown), SIGKILL after a grace.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from types import FrameType

__all__ = ["main"]

GRACE_SECONDS = 3.0
_PR_SET_PDEATHSIG = 1


def _parent_death_signal(sig: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def _end_group(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the group (this process ignores it), wait a grace, then SIGKILL the group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgrp(), signal.SIGTERM)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=GRACE_SECONDS)
    os.killpg(os.getpgrp(), signal.SIGKILL)  # whatever is left, and this process


def main(argv: list[str] | None = None) -> None:
    """Run the command after ``--`` until the parent dies, a signal, the lifetime, or its exit."""
    p = argparse.ArgumentParser(prog="cloudsched.lab.guardian")
    p.add_argument("--parent", type=int, required=True)
    p.add_argument("--lifetime", type=float, required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("a command to run after --")
    _parent_death_signal(signal.SIGTERM)
    stop = False

    def asked(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, asked)
    signal.signal(signal.SIGINT, asked)
    if os.getppid() != args.parent:  # the controller died before the signal was set
        _end_group(None)
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL)  # in this process group
    end = time.monotonic() + args.lifetime
    while not stop and proc.poll() is None and os.getppid() == args.parent:
        if time.monotonic() >= end:
            break
        time.sleep(0.1)
    _end_group(proc)


if __name__ == "__main__":
    main()
