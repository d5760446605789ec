"""A lab dispatcher: an HTTP forwarder that decides by policy, with an I-queue and probes.

Run by the controller as ``python -m cloudsched.lab.dispatcher ARGS`` (see :func:`main`).
Policies, each on this dispatcher's own information (nothing is shared between
dispatchers, as in the paper), by the ``pick`` and ``iqueues`` of their row in
:mod:`cloudsched.policy_table`:

* ``random``: a server drawn uniformly; ``round-robin``: the next server in a cycle that
  starts at a random offset;
* ``jsq``: the fewest requests *this dispatcher* has outstanding at a server (its own view,
  like NGINX's ``least_conn``, not the global JSQ of the simulator);
* ``pod``: probe ``d`` distinct servers over UDP (real round trips), send to the one holding
  the fewest tasks; a probe unanswered within ``--probe-timeout`` counts as lost;
* ``jiq``: pop a uniformly drawn server from the I-queue (``X-Popped`` tells it so), or a
  uniform server when the I-queue is empty; ``jiq-pod``: the same, but probe ``d`` servers
  when the I-queue is empty;
* ``prequal`` and ``ewma``: Prequal's pool of asynchronous probes and Linkerd's peak EWMA
  behind P2C, the simulator's rules (:mod:`cloudsched.lab.balancers`).

A forward that fails (connection refused or cut) marks the server dead: it leaves the
I-queue, no policy chooses it, the request is retried on another server (at most
``MAX_TRIES`` in all) and a health check every second brings the server back if it answers.

Only the run's own processes are heard (:mod:`cloudsched.lab.auth`): a datagram without the
run's MAC, or seen before, and a request without its token (403) are dropped and counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from typing import Any, cast

from cloudsched.lab.auth import SealedControl, token_ok
from cloudsched.lab.balancers import balancer_state, parse_option
from cloudsched.lab.child import Member, child_parser, die_with_parent, serve
from cloudsched.lab.protocol import read_message, request_bytes, response_bytes
from cloudsched.policy_table import TABLE

__all__ = ["MAX_TRIES", "main"]

MAX_TRIES = 3
HEALTH_SECONDS = 1.0
SAMPLE_SECONDS = 0.1
#: Keep at most this many I-queue samples (the run's length is bounded anyway).
MAX_SAMPLES = 20000


class Dispatcher(Member):
    """One dispatcher's view: its I-queue, outstanding counts, pools and counters."""

    def __init__(self, args: argparse.Namespace, ports: list[tuple[int, int]]) -> None:
        super().__init__(args, "d")
        self.d: int = args.d
        self.timeout: float = args.probe_timeout
        self.ports = ports
        n = len(ports)
        self.alive = [True] * n
        self.outstanding = [0] * n
        self.pools: list[list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = [
            [] for _ in ports
        ]
        self.iqueue: list[int] = []
        self.listed = [False] * n
        self.rr = int(self.rng.integers(n))
        self.seq = 0
        self.probes: dict[int, tuple[asyncio.Future[None], dict[int, int], int]] = {}
        self.udp: asyncio.DatagramTransport | None = None
        self.count = {
            "decisions": 0,
            "from_iqueue": 0,
            "fallback": 0,
            "probe": 0,
            "probe_reply": 0,
            "probe_lost": 0,
            "join_received": 0,
            "delete_received": 0,
            "delete_stale": 0,
            "failed_forward": 0,
            "retries": 0,
            "revived": 0,
            "marked_dead": 0,
            "rejected_requests": 0,
        }
        self.chosen = [0] * n
        self.dead_since: dict[int, float] = {}
        self.last_failure: dict[int, float] = {}
        self.empty_time = 0.0
        self.join_delay = 0.0
        self.length_time = 0.0
        self.last_change = time.perf_counter()
        self.samples: list[tuple[float, int]] = []
        self.options = dict(parse_option(x) for x in args.opt or [])
        self.ewma, self.prequal = balancer_state(TABLE[self.policy].pick, n, self.options)

    # -- I-queue --------------------------------------------------------------------
    def _account(self) -> None:
        now = time.perf_counter()
        dt = now - self.last_change
        self.last_change = now
        self.length_time += dt * len(self.iqueue)
        if not self.iqueue:
            self.empty_time += dt

    def add(self, s: int, idle_since: float) -> None:
        """Handle a join message: list server ``s`` (once; a dead server is not listed).

        ``idle_since`` is when the server went idle (the clock is the machine's monotonic
        clock, shared by every process), so the delay until it is listed is measured.
        """
        self.count["join_received"] += 1
        self.join_delay += time.perf_counter() - idle_since
        if 0 <= s < len(self.alive) and not self.listed[s] and self.alive[s]:
            self._account()
            self.listed[s] = True
            self.iqueue.append(s)

    def remove(self, s: int, counted: bool = True) -> None:
        """Handle a delete request (or a death): unlist server ``s``."""
        if counted:
            self.count["delete_received"] += 1
        if 0 <= s < len(self.listed) and self.listed[s]:
            self._account()
            self.listed[s] = False
            self.iqueue.remove(s)
        elif counted:
            self.count["delete_stale"] += 1

    def pop(self) -> int:
        """Take a uniformly drawn server off the I-queue."""
        self._account()
        i = int(self.rng.integers(len(self.iqueue)))
        self.iqueue[i], self.iqueue[-1] = self.iqueue[-1], self.iqueue[i]
        s = self.iqueue.pop()
        self.listed[s] = False
        return s

    # -- decisions ------------------------------------------------------------------
    def _alive(self, exclude: set[int]) -> list[int]:
        live = [i for i, a in enumerate(self.alive) if a and i not in exclude]
        return live or [i for i in range(len(self.alive)) if i not in exclude] or [0]

    async def _probe(self, candidates: list[int]) -> tuple[int, str]:
        k = min(self.d, len(candidates))
        pick = [candidates[i] for i in self.rng.choice(len(candidates), size=k, replace=False)]
        self.seq += 1
        seq = self.seq
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        replies: dict[int, int] = {}
        self.probes[seq] = (fut, replies, k)
        assert self.udp is not None
        for s in pick:
            self.count["probe"] += 1
            self.udp.sendto(self.signer.seal(f"P {seq}", f"s{s}"), ("127.0.0.1", self.ports[s][1]))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fut, self.timeout)
        self.probes.pop(seq, None)
        self.count["probe_lost"] += k - len(replies)
        probed = ",".join(f"{s}:{q}" for s, q in replies.items())
        if not replies:
            return pick[int(self.rng.integers(k))], probed
        low = min(replies.values())
        best = [s for s, q in replies.items() if q == low]
        return best[int(self.rng.integers(len(best)))], probed

    def _send_prequal_probes(self, live: list[int]) -> None:
        """Send Prequal's probes after a choice; answers join the pool as they come."""
        assert self.udp is not None and self.prequal is not None
        for s in self.prequal.targets(self.rng, live):
            self.seq += 1
            self.count["probe"] += 1
            self.count["probe_lost"] += self.prequal.sent(self.seq, s)
            self.udp.sendto(
                self.signer.seal(f"P {self.seq}", f"s{s}"), ("127.0.0.1", self.ports[s][1])
            )

    async def choose(self, exclude: set[int]) -> tuple[int, bool, str]:
        """Server for the next request: (server, popped from the I-queue, probe replies)."""
        live = self._alive(exclude)
        row = TABLE[self.policy]
        if row.iqueues:
            if self.iqueue:
                self.count["from_iqueue"] += 1
                return self.pop(), True, ""
            self.count["fallback"] += 1
        if row.pick == "least of d":
            s, probed = await self._probe(live)
            return s, False, probed
        if row.pick == "cycle":
            n = len(self.alive)
            for _ in range(n):
                self.rr = (self.rr + 1) % n
                if self.rr in live:
                    return self.rr, False, ""
        if row.pick == "probes" and self.prequal is not None:
            s = self.prequal.choose(self.rng, live, len(self.alive), time.perf_counter())
            self._send_prequal_probes(live)
            return s, False, ""
        if row.pick == "p2c cost" and self.ewma is not None:
            now = time.perf_counter()
            return self.ewma.choose(self.rng, live, self.outstanding, now), False, ""
        if row.pick == "least":
            low = min(self.outstanding[i] for i in live)
            best = [i for i in live if self.outstanding[i] == low]
            return best[int(self.rng.integers(len(best)))], False, ""
        return live[int(self.rng.integers(len(live)))], False, ""

    # -- failures -------------------------------------------------------------------
    def mark_dead(self, s: int) -> None:
        """Server ``s`` did not answer: stop choosing it and check its health each second."""
        self.count["failed_forward"] += 1
        self.last_failure[s] = time.perf_counter()
        if self.alive[s]:
            self.alive[s] = False
            self.count["marked_dead"] += 1
            self.dead_since[s] = time.perf_counter()
            self.remove(s, counted=False)
            for _, w in self.pools[s]:
                w.close()
            self.pools[s].clear()
            asyncio.get_running_loop().create_task(self._health(s))

    async def _health(self, s: int) -> None:
        while not self.alive[s]:
            await asyncio.sleep(HEALTH_SECONDS)
            try:
                r, w = await asyncio.open_connection("127.0.0.1", self.ports[s][0])
                w.write(request_bytes("/health", token=self.token))
                msg = await asyncio.wait_for(read_message(r), HEALTH_SECONDS)
                w.close()
                if msg is not None and msg.status == 200:
                    self.alive[s] = True
                    self.count["revived"] += 1
                    self.dead_since.pop(s, None)
            except (OSError, ConnectionError, TimeoutError):
                continue

    def stats(self) -> dict[str, Any]:
        """Cumulative counters, I-queue time integrals and samples."""
        self._account()
        return {
            "index": self.index,
            "now": time.perf_counter(),
            **self.count,
            "rejected_datagrams": self.verifier.rejected,
            "empty_time": self.empty_time,
            "join_delay": self.join_delay,
            "last_failure": {str(k): v for k, v in self.last_failure.items()},
            "length_time": self.length_time,
            "iqueue": len(self.iqueue),
            "chosen": self.chosen,
            "dead": sorted(self.dead_since),
            "samples": self.samples,
        }

    async def sample(self) -> None:
        """Record the I-queue length every ``SAMPLE_SECONDS`` (bounded in count)."""
        while len(self.samples) < MAX_SAMPLES:
            self.samples.append((time.perf_counter(), len(self.iqueue)))
            await asyncio.sleep(SAMPLE_SECONDS)

    # -- forwarding -----------------------------------------------------------------
    async def _exchange(self, s: int, request: bytes) -> Any:
        pool = self.pools[s]
        if pool:
            r, w = pool.pop()
        else:
            r, w = await asyncio.open_connection("127.0.0.1", self.ports[s][0])
        w.write(request)
        await w.drain()
        msg = await read_message(r)
        if msg is None:
            w.close()
            raise ConnectionError("server closed the connection")
        pool.append((r, w))
        return msg

    async def forward(self, path: str) -> bytes:
        """Decide, forward, retry elsewhere on failure; the response for the client."""
        self.count["decisions"] += 1
        decision = self.count["decisions"]
        tried: set[int] = set()
        for attempt in range(MAX_TRIES):
            s, popped, probed = await self.choose(tried)
            tried.add(s)
            self.chosen[s] += 1
            self.outstanding[s] += 1
            head = {"X-Popped": str(self.index if popped else -1)}
            sent = time.perf_counter()
            try:
                msg = await self._exchange(s, request_bytes(path, head, self.token))
                if self.ewma is not None:
                    done = time.perf_counter()
                    self.ewma.observe(s, done - sent, done)
            except (OSError, ConnectionError):
                self.mark_dead(s)
                if attempt + 1 < MAX_TRIES:
                    self.count["retries"] += 1
                continue
            finally:
                self.outstanding[s] -= 1
            extra = {k: v for k, v in msg.headers.items() if k.startswith("x-")}
            extra.update(
                {
                    "X-Decision": str(decision),
                    "X-Popped": str(int(popped)),
                    "X-Probed": probed,
                    "X-Tries": str(attempt + 1),
                }
            )
            return response_bytes(msg.status, extra, msg.body)
        return response_bytes(502, {"X-Decision": str(decision), "X-Tries": str(MAX_TRIES)})


class Control(SealedControl):
    """UDP control messages: joins, deletes and probe replies."""

    def handle(self, text: str, sender: str, addr: tuple[str, int]) -> bool:
        """Take a join, a delete or a probe reply."""
        d = cast(Dispatcher, self.owner)
        parts = text.split()
        try:
            if parts[0] == "J" and len(parts) == 3 and sender == f"s{parts[1]}":
                d.add(int(parts[1]), float(parts[2]))
            elif parts[0] == "D" and len(parts) == 2 and sender == f"s{parts[1]}":
                d.remove(int(parts[1]))
            elif parts[0] == "R" and len(parts) == 5 and sender == f"s{parts[2]}":
                s = int(parts[2])
                if not 0 <= s < len(d.ports) or addr[1] != d.ports[s][1]:
                    return False  # a reply comes from the server's control socket only
                if d.prequal is not None:
                    now = time.perf_counter()
                    ok = d.prequal.answered(int(parts[1]), s, int(parts[3]), float(parts[4]), now)
                    d.count["probe_reply"] += ok
                    return ok
                entry = d.probes.get(int(parts[1]))
                if entry is not None:
                    fut, replies, k = entry
                    d.count["probe_reply"] += 1
                    replies[int(parts[2])] = int(parts[3])
                    if len(replies) >= k and not fut.done():
                        fut.set_result(None)
            else:
                return False
        except (ValueError, IndexError):
            return False
        return True


async def _client(
    disp: Dispatcher, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while (msg := await read_message(reader)) is not None:
            if not token_ok(msg.headers, disp.token):
                disp.count["rejected_requests"] += 1
                writer.write(response_bytes(403, {}, b"forbidden"))
            elif msg.path.startswith("/stats"):
                body = json.dumps(disp.stats()).encode()
                writer.write(response_bytes(200, {"Content-Type": "application/json"}, body))
            else:
                writer.write(await disp.forward(msg.path))
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(args: argparse.Namespace) -> None:
    ports = [(int(a), int(b)) for a, b in (x.split(":") for x in args.backends.split(","))]
    disp = Dispatcher(args, ports)
    sampler = asyncio.get_running_loop().create_task(disp.sample())
    try:
        await serve(
            lambda r, w: _client(disp, r, w), lambda: Control(disp), args.parent, args.lifetime
        )
    finally:
        sampler.cancel()


def main(argv: list[str] | None = None) -> None:
    """Entry point of a dispatcher process (started by the lab's controller)."""
    die_with_parent()
    p = child_parser("cloudsched.lab.dispatcher")
    p.add_argument("--d", type=int, default=2)
    p.add_argument("--backends", required=True, help="http:udp,... of every server")
    p.add_argument("--probe-timeout", type=float, default=0.05)
    p.add_argument("--opt", action="append", help="the policy's option NAME=VALUE (seconds)")
    asyncio.run(_serve(p.parse_args(argv)))


if __name__ == "__main__":
    main()
