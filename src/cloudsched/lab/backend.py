"""A lab server: one process, one task at a time in FIFO order, join and delete messages.

Run by the controller as ``python -m cloudsched.lab.backend ARGS`` (see :func:`main`).  The
event loop takes requests on keep-alive HTTP connections and control messages on a UDP
socket; a worker thread serves the FIFO queue, each task for its work ``w`` times the
server's slowdown: sleeping (``--mode sleep``, the default) or computing a loop calibrated
to take that long on an idle core (``--mode cpu``, so tasks compete for the CPU for real).

Under the JIQ family the server behaves as the model prescribes: when its queue empties it
joins the I-queue of a dispatcher drawn uniformly (message ``J``), unless the message is
lost (``--drop``); when it receives a task while listed in an I-queue, the task came from
another dispatcher (it was not popped), so it sends that I-queue a delete request (``D``).
The join leaves from the worker thread the instant service ends (the
measured delay to the dispatcher is in the result).  Probes (``P``) are answered with the
number of tasks held.  All counters are cumulative;
the controller differences two snapshots.

Only the run's own processes are heard (:mod:`cloudsched.lab.auth`): a datagram without the
run's MAC, or seen before, and a request without its token (403) are dropped and counted;
so is a request for work outside ``[0, --max-work]`` seconds (400).  Every socket is bound
to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import queue
import socket
import threading
import time
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from cloudsched.lab.auth import SealedControl, token_ok
from cloudsched.lab.child import Member, child_parser, die_with_parent, serve
from cloudsched.lab.protocol import read_message, response_bytes
from cloudsched.policy_table import TABLE

__all__ = ["main"]

#: Queue lengths tracked for the occupancy histogram (longer ones are counted in the last).
LEVELS = 128


def _spin_rate() -> float:
    """Count iterations of the CPU loop per second on this core (a short calibration)."""
    n = 200_000
    t0 = time.perf_counter()
    _spin(n)
    return n / max(time.perf_counter() - t0, 1e-6)


def _spin(n: int) -> int:
    x = 0
    for i in range(n):
        x ^= i
    return x


class Server(Member):
    """State of one server: its FIFO, I-queue membership and counters."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args, "s")
        self.max_work: float = args.max_work
        self.slow: float = args.slow
        self.drop: float = args.drop
        self.cpu_rate = _spin_rate() if args.mode == "cpu" else 0.0
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.held = 0
        self.listed = -1  # dispatcher whose I-queue lists this server, as far as it knows
        self.peers: list[tuple[str, int]] = []
        self.udp: asyncio.DatagramTransport | None = None
        # joins leave from the worker thread the moment service ends, deletes from the loop:
        # both through this plain socket, and the state both threads touch under the lock
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tx.bind(("127.0.0.1", 0))
        self.lock = threading.Lock()
        self.last_change = time.perf_counter()
        self.state_time = [0.0] * LEVELS
        self.count = {
            "served": 0,
            "join": 0,
            "join_dropped": 0,
            "delete": 0,
            "probe_answered": 0,
            "health": 0,
            "rejected_requests": 0,
            "bad_requests": 0,
        }
        self.busy_time = 0.0
        self.service_estimate = 0.0  # seconds: EWMA (weight 1/16) of its service times

    # -- queue accounting -------------------------------------------------------------
    def _change(self, delta: int) -> None:
        now = time.perf_counter()
        self.state_time[min(self.held, LEVELS - 1)] += now - self.last_change
        self.last_change = now
        self.held += delta

    def stats(self) -> dict[str, Any]:
        """Cumulative counters, time per queue length, and the clock they were read at."""
        with self.lock:
            self._change(0)
            return {
                "index": self.index,
                "now": time.perf_counter(),
                "held": self.held,
                "busy_time": self.busy_time,
                "state_time": list(self.state_time),
                "rejected_datagrams": self.verifier.rejected,
                **self.count,
            }

    # -- messages ---------------------------------------------------------------------
    def send(self, k: int, text: str) -> None:
        """Send one control message to dispatcher ``k``."""
        if 0 <= k < len(self.peers):
            self.tx.sendto(self.signer.seal(text, f"d{k}"), self.peers[k])

    def join(self, idle_since: float | None = None) -> None:
        """Join a uniformly drawn dispatcher's I-queue when the queue empties (JIQ family)."""
        if not TABLE[self.policy].iqueues or not self.peers:
            return
        k = int(self.rng.integers(len(self.peers)))
        self.listed = k
        if self.drop > 0 and self.rng.random() < self.drop:
            self.count["join_dropped"] += 1
            return
        self.count["join"] += 1
        since = time.perf_counter() if idle_since is None else idle_since
        self.send(k, f"J {self.index} {since:.7f}")

    def arrive(self, popped_by: int) -> None:
        """Take a task: leave the I-queue, with a delete request if it was not popped."""
        if self.listed >= 0 and TABLE[self.policy].iqueues:
            if popped_by != self.listed:
                self.count["delete"] += 1
                self.send(self.listed, f"D {self.index}")
            self.listed = -1

    # -- service ----------------------------------------------------------------------
    def work(self) -> None:
        """Worker thread: serve the FIFO queue until told to stop (None)."""
        while True:
            job = self.jobs.get()
            if job is None:
                return
            w, fut, loop = job
            start = time.perf_counter()
            seconds = w * self.slow
            if self.cpu_rate > 0:
                _spin(int(seconds * self.cpu_rate))
            elif seconds > 0:
                time.sleep(seconds)
            end = time.perf_counter()
            with self.lock:  # account and, if idle now, join at once (not via the loop)
                self.busy_time += end - start
                old = self.service_estimate  # the server's own EWMA (Prequal's latency)
                service = end - start
                self.service_estimate = service if old == 0.0 else old + (service - old) / 16.0
                self.count["served"] += 1
                self._change(-1)
                if self.held == 0:
                    self.join(end)
            loop.call_soon_threadsafe(_resolve, fut, (start, end))

    def take(self, popped_by: int) -> int:
        """Admit a task (event loop thread); return the number of tasks already here."""
        with self.lock:
            self.arrive(popped_by)
            ahead = self.held
            self._change(+1)
            return ahead


def _resolve(fut: asyncio.Future[tuple[float, float]], value: tuple[float, float]) -> None:
    if not fut.done():
        fut.set_result(value)


class Control(SealedControl):
    """UDP control messages: probes, statistics and the configuration."""

    def handle(self, text: str, sender: str, addr: tuple[str, int]) -> bool:
        """Answer a probe or take the run's configuration."""
        s = cast(Server, self.owner)
        kind, _, rest = text.partition(" ")
        if kind == "P" and sender.startswith("d") and rest.isdigit():
            k = int(sender[1:]) if sender[1:].isdigit() else -1
            if s.peers and (not 0 <= k < len(s.peers) or addr[1] != s.peers[k][1]):
                return False  # not from dispatcher k's socket: the answer would go elsewhere
            s.count["probe_answered"] += 1
            reply = f"R {rest} {s.index} {s.held} {s.service_estimate!r}"
        elif kind == "C" and sender == "c":
            try:
                ports = [int(p) for p in json.loads(rest)["dispatchers"]]
            except (ValueError, KeyError, TypeError):
                return False
            if not all(0 < p < 65536 for p in ports):
                return False
            s.peers = [("127.0.0.1", p) for p in ports]
            reply = "OK"
            with s.lock:
                if s.held == 0 and s.listed < 0:
                    s.join()
        else:
            return False
        assert s.udp is not None
        s.udp.sendto(s.signer.seal(reply, sender), addr)
        return True


def _work(server: Server, path: str, headers: dict[str, str]) -> tuple[float, int] | None:
    """Return a ``/work`` request's work (s) and popping dispatcher; None if out of range."""
    try:
        w = float(parse_qs(urlsplit(path).query, max_num_fields=4)["w"][0])
        popped = int(headers.get("x-popped", "-1"))
    except (ValueError, KeyError, IndexError):
        return None
    if not (math.isfinite(w) and 0.0 <= w <= server.max_work) or not -1 <= popped < 2**20:
        return None
    return w, popped


async def _handle(
    server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    loop = asyncio.get_running_loop()
    try:
        while (msg := await read_message(reader)) is not None:
            path = msg.path
            if not token_ok(msg.headers, server.token):
                server.count["rejected_requests"] += 1
                writer.write(response_bytes(403, {}, b"forbidden"))
                continue
            if path.startswith("/stats"):
                body = json.dumps(server.stats()).encode()
                writer.write(response_bytes(200, {"Content-Type": "application/json"}, body))
                continue
            if path.startswith("/health"):
                server.count["health"] += 1
                writer.write(response_bytes(200, {"X-Server": str(server.index)}))
                continue
            job = _work(server, path, msg.headers) if path.startswith("/work") else None
            if job is None:
                server.count["bad_requests"] += 1
                writer.write(response_bytes(400, {}, b"bad request"))
                continue
            w, popped = job
            arrival = time.perf_counter()
            ahead = server.take(popped)
            fut: asyncio.Future[tuple[float, float]] = loop.create_future()
            server.jobs.put((w, fut, loop))
            start, end = await fut
            writer.write(
                response_bytes(
                    200,
                    {
                        "X-Server": str(server.index),
                        "X-Queue": str(ahead),
                        "X-Wait": f"{start - arrival:.7f}",
                        "X-Service": f"{end - start:.7f}",
                    },
                )
            )
            await writer.drain()
    except (ConnectionError, ValueError, OSError):
        pass
    finally:
        writer.close()


async def _serve(args: argparse.Namespace) -> None:
    server = Server(args)
    worker = threading.Thread(target=server.work, daemon=True)
    worker.start()
    try:
        await serve(
            lambda r, w: _handle(server, r, w), lambda: Control(server), args.parent, args.lifetime
        )
    finally:
        server.jobs.put(None)
        server.tx.close()


def main(argv: list[str] | None = None) -> None:
    """Entry point of a server process (started by the lab's controller)."""
    die_with_parent()
    p = child_parser("cloudsched.lab.backend")
    p.add_argument("--slow", type=float, default=1.0)
    p.add_argument("--drop", type=float, default=0.0)
    p.add_argument("--mode", choices=("sleep", "cpu"), default="sleep")
    p.add_argument("--max-work", type=float, default=600.0)
    asyncio.run(_serve(p.parse_args(argv)))


if __name__ == "__main__":
    main()
