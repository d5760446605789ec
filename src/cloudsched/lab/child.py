"""What every process the lab starts does first: die with its parent, and live a bounded time.

A child calls :func:`guard` before anything else: on Linux ``prctl(PR_SET_PDEATHSIG,
SIGKILL)`` makes the kernel kill it when the lab's controller dies (even by ``kill -9``),
and a watchdog ends it when the parent changes or ``lifetime`` seconds have passed, so no
server or dispatcher outlives its run.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from cloudsched.lab.auth import Signer, Verifier, http_token, key_from_env

__all__ = ["Member", "child_parser", "die_with_parent", "guard", "ready", "serve"]

_PR_SET_PDEATHSIG = 1


class Member:
    """What a server and a dispatcher share: who it is, its keys and its random stream.

    ``role`` is ``"s"`` (server) or ``"d"`` (dispatcher); the signer names the sender
    ``role + index`` in every datagram it seals.
    """

    def __init__(self, args: argparse.Namespace, role: str) -> None:
        self.index: int = args.index
        self.policy: str = args.policy
        key = key_from_env()
        self.token = http_token(key)
        self.name = f"{role}{self.index}"
        self.signer = Signer(key, self.name)
        self.verifier = Verifier(key, self.name)
        self.rng = np.random.default_rng(np.random.SeedSequence(args.seed))


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


def child_parser(prog: str) -> argparse.ArgumentParser:
    """Return a parser of what every lab process takes: who it is, its seed, its parent."""
    p = argparse.ArgumentParser(prog=prog)
    p.add_argument("--index", type=int, required=True)
    p.add_argument("--policy", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--parent", type=int, default=os.getppid())
    p.add_argument("--lifetime", type=float, default=600.0)
    p.add_argument("--run-dir", default="")  # names the run in the process list
    return p


def ready(*ports: int) -> None:
    """Tell the controller the ports this process listens on (one line on stdout)."""
    sys.stdout.write("READY " + " ".join(str(p) for p in ports) + "\n")
    sys.stdout.flush()


async def serve(
    handle: Callable[..., Any], control: Callable[[], Any], parent: int, lifetime: float
) -> None:
    """Listen on 127.0.0.1 (HTTP ``handle``, UDP protocol ``control()``) until :func:`guard` ends.

    The ports are free ones the kernel picks, announced with :func:`ready`; both listeners
    are closed however this ends.
    """
    loop = asyncio.get_running_loop()
    http = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    udp, _ = await loop.create_datagram_endpoint(control, local_addr=("127.0.0.1", 0))
    try:
        sock = udp.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        ready(http.sockets[0].getsockname()[1], sock.getsockname()[1])
        await guard(parent, lifetime)
    finally:
        http.close()
        udp.close()
