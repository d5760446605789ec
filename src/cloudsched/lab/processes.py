"""The processes of one live run: start them, learn their ports, read their CPU, stop them.

:class:`ProcessGroup` is a context manager: every process it starts is stopped when the
block ends, however it ends (success, error, Ctrl-C): SIGTERM, then SIGKILL for any still
alive after a grace period.  Children start in their own session (a Ctrl-C at the terminal
reaches the controller only, which then stops them) and are killed by the kernel if the
controller dies (``PR_SET_PDEATHSIG``, :mod:`cloudsched.lab.child`).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from cloudsched.errors import ExternalError
from cloudsched.lab.child import die_with_parent

__all__ = ["Child", "ProcessGroup", "free_port"]

READY_SECONDS = 30.0
GRACE_SECONDS = 3.0


def free_port() -> int:
    """Find a TCP port on 127.0.0.1 that is free now (for programs that cannot use 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _signal_group(child: Child, sig: int) -> None:
    """Send ``sig`` to the child's process group (its own session: it and what it started).

    NGINX with several workers is a master and its worker processes: signalling the master
    alone would leave workers behind when it is killed.  A group already gone is fine.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.popen.pid, sig)


class Child:
    """One started process: its role, ``Popen`` and the ports it reported."""

    def __init__(self, role: str, index: int, popen: subprocess.Popen[bytes], log: Path) -> None:
        self.role = role
        self.index = index
        self.popen = popen
        self.log = log
        self.ports: list[int] = []

    @property
    def pid(self) -> int:
        """Process id."""
        return self.popen.pid

    def alive(self) -> bool:
        """Still running."""
        return self.popen.poll() is None

    def cpu_seconds(self) -> float:
        """User plus system CPU seconds used so far (0 once the process is gone)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def last_words(self) -> str:
        """Return the last line the process wrote to its log (for an error message)."""
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""


class ProcessGroup:
    """Start, track and always stop the processes of a run (use as ``with``)."""

    def __init__(self, run_dir: Path, env: dict[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.env = dict(env or {})  # added to the environment of the Python children
        self.children: list[Child] = []

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_all()

    def start(self, role: str, index: int, argv: Sequence[str], *, python: bool = True) -> Child:
        """Start ``argv`` (a ``-m module`` of this Python when ``python``); output to a log."""
        log = self.run_dir / f"{role}{index}.log"
        cmd = [sys.executable, *argv] if python else list(argv)
        with open(log, "wb") as err:
            popen = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if python else err,
                stderr=err,
                start_new_session=True,
                preexec_fn=die_with_parent,
                cwd=self.run_dir,
                env={**os.environ, **self.env} if python else None,
            )
        child = Child(role, index, popen, log)
        self.children.append(child)
        return child

    def wait_ready(self, children: Sequence[Child]) -> None:
        """Read each child's ``READY port...`` line; a child that dies or stalls is an error."""
        deadline = time.monotonic() + READY_SECONDS
        for child in children:
            assert child.popen.stdout is not None
            fd = child.popen.stdout.fileno()
            line = b""
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise ExternalError(
                        f"lab: {child.role} {child.index} did not start within "
                        f"{READY_SECONDS:g} s: {child.last_words()}"
                    )
                chunk = os.read(fd, 256)
                if not chunk:
                    raise ExternalError(
                        f"lab: {child.role} {child.index} exited at start: {child.last_words()}"
                    )
                line += chunk
            words = line.decode().split()
            if not words or words[0] != "READY":
                raise ExternalError(f"lab: {child.role} {child.index} said {line!r} at start")
            child.ports = [int(w) for w in words[1:]]
            child.popen.stdout.close()

    def kill(self, child: Child) -> None:
        """SIGKILL one child now (the killed-server fault)."""
        if child.alive():
            _signal_group(child, signal.SIGKILL)
        child.popen.wait()

    def stop_all(self) -> None:
        """SIGTERM every child still running, then SIGKILL those that outlive the grace."""
        for child in self.children:
            if child.alive():
                _signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        for child in self.children:
            try:
                child.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(child, signal.SIGKILL)
                child.popen.wait()
            _signal_group(child, signal.SIGKILL)  # what it started (NGINX's workers) goes too
            if child.popen.stdout is not None and not child.popen.stdout.closed:
                child.popen.stdout.close()
