"""The lab's open-loop load: Poisson arrivals sent on time, whatever the system does.

Every request has a scheduled send time fixed in advance; it is sent at that time (or as
soon after as the generator can: the lag is recorded) whether or not earlier requests have
been answered, and its latency is measured from the *scheduled* time, so a slow system
cannot slow its own load down (no coordinated omission).  A request due while
``max_inflight`` are outstanding is not sent and is recorded as ``refused``.  Connections
to each dispatcher are kept alive and reused; a reused connection found closed before any
answer is replaced once.  Every request ends by the deadline: one still outstanding then
is recorded as ``unfinished``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import numpy as np

from cloudsched.lab.protocol import read_message, request_bytes

__all__ = ["OK", "STATUS", "Load", "Records", "send_load"]

OK, REFUSED, FAILED, UNFINISHED = 0, 1, 2, 3
STATUS = ("ok", "refused", "error", "unfinished")
_HEADERS = ("x-server", "x-queue", "x-wait", "x-service", "x-decision", "x-popped", "x-tries")


@dataclass
class Load:
    """What to send: times (s after the start), dispatcher and work (s) of each request."""

    times: np.ndarray
    dispatcher: np.ndarray
    work: np.ndarray


class Records:
    """Per-request measurements, one entry per scheduled request (NaN where unknown)."""

    def __init__(self, n: int) -> None:
        self.status = np.full(n, UNFINISHED, dtype=np.int8)
        self.sent = np.full(n, np.nan)
        self.done = np.full(n, np.nan)
        self.http = np.zeros(n, dtype=np.int16)
        self.fields = {h: np.full(n, np.nan) for h in _HEADERS}
        self.probed = [""] * n

    def answer(self, i: int, status: int, headers: dict[str, str]) -> None:
        """Store response ``i``."""
        self.http[i] = status
        self.status[i] = OK if status == 200 else FAILED
        for h, col in self.fields.items():
            v = headers.get(h)
            if v:
                with contextlib.suppress(ValueError):
                    col[i] = float(v)
        self.probed[i] = headers.get("x-probed", "")


class _Pools:
    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.idle: list[list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = [
            [] for _ in ports
        ]

    async def exchange(self, k: int, request: bytes) -> tuple[int, dict[str, str]]:
        for attempt in range(2):
            fresh = not self.idle[k]
            if fresh:
                r, w = await asyncio.open_connection("127.0.0.1", self.ports[k])
            else:
                r, w = self.idle[k].pop()
            try:
                w.write(request)
                await w.drain()
                msg = await read_message(r)
            except (ConnectionError, OSError):
                msg = None
                if fresh or attempt:
                    w.close()
                    raise
            if msg is None:
                w.close()
                if fresh or attempt:
                    raise ConnectionError("dispatcher closed the connection")
                continue
            if msg.closes:
                w.close()
            else:
                self.idle[k].append((r, w))
            return msg.status, msg.headers
        raise ConnectionError("dispatcher closed the connection")  # pragma: no cover

    def close(self) -> None:
        for pool in self.idle:
            for _, w in pool:
                w.close()
            pool.clear()


async def send_load(
    load: Load,
    ports: list[int],
    *,
    max_inflight: int,
    drain: float,
    at: dict[float, Callable[[], Coroutine[Any, Any, None]]] | None = None,
    token: str = "",
) -> tuple[Records, float]:
    """Send ``load`` to the dispatchers on ``ports``; the records and the start (perf_counter).

    ``at`` maps a time (s after the start) to a coroutine function started then (the
    controller's snapshots and faults).  Outstanding requests are awaited at most ``drain``
    seconds after the last one is due.  ``token``: the run's HTTP token (every request
    carries it).
    """
    n = load.times.size
    rec = Records(n)
    pools = _Pools(ports)
    tasks: set[asyncio.Task[None]] = set()
    events = sorted((at or {}).items())
    side: list[asyncio.Task[None]] = []

    async def one(i: int) -> None:
        rec.sent[i] = time.perf_counter()
        try:
            status, headers = await pools.exchange(
                int(load.dispatcher[i]), request_bytes(f"/work?w={load.work[i]:.7f}", token=token)
            )
        except (ConnectionError, OSError):
            rec.status[i] = FAILED
        else:
            rec.answer(i, status, headers)
        rec.done[i] = time.perf_counter()

    start = time.perf_counter() + 0.05
    for i in range(n):
        while events and events[0][0] <= load.times[i]:
            side.append(asyncio.get_running_loop().create_task(events.pop(0)[1]()))
        delay = start + load.times[i] - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if len(tasks) >= max_inflight:
            rec.status[i] = REFUSED
            continue
        task = asyncio.get_running_loop().create_task(one(i))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for t, fn in events:
        delay = start + t - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        side.append(asyncio.get_running_loop().create_task(fn()))
    if tasks:
        await asyncio.wait(set(tasks), timeout=drain)
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*side)
    pools.close()
    return rec, start
