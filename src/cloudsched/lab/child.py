"""What every process the lab starts does first: die with its parent, and live a bounded time.

A child calls :func:`guard` before anything else: on Linux ``prctl(PR_SET_PDEATHSIG,
SIGKILL)`` makes the kernel kill it when the lab's controller dies (even by ``kill -9``),
and a watchdog ends it when the parent changes or ``lifetime`` seconds have passed, so no
server or dispatcher outlives its run.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys

__all__ = ["die_with_parent", "guard", "ready"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; no-op elsewhere)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass


async def guard(parent: int, lifetime: float) -> None:
    """Return when the parent is gone or ``lifetime`` seconds have passed (run as a task)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + lifetime
    while loop.time() < end and os.getppid() == parent:
        await asyncio.sleep(0.25)


def ready(*ports: int) -> None:
    """Tell the controller the ports this process listens on (one line on stdout)."""
    sys.stdout.write("READY " + " ".join(str(p) for p in ports) + "\n")
    sys.stdout.flush()
