"""One live run: start the farm, measure the forwarding overhead, send the load, stop all.

:func:`run_lab` is the whole of it.  Order: the ``N`` backends start and report their
ports; then the ``M`` dispatchers (the lab's own, or NGINX/HAProxy instances with
generated configurations); the backends learn the dispatchers' UDP ports and, under the
JIQ family, join I-queues; a short calibration sends zero-work requests one every 5 ms
(open loop, the same path) and its mean latency is the *fixed overhead* of the forwarding
path; then the Poisson load runs for ``warmup + duration`` seconds.  Counters and CPU times
are read when the warm-up ends and when the measurement ends, and differenced.  Faults
(``kill``) happen at their second of the measurement.  Every process is stopped when the
run ends, however it ends; SIGTERM to the controller is handled as Ctrl-C.

The run has its own key (:mod:`cloudsched.lab.auth`), given to its processes in their
environment, its files live in a folder only this user can open, and what the processes
refused (datagrams and requests from outside the run) is counted in the result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from cloudsched.errors import ExternalError
from cloudsched.lab.auth import KEY_ENV, Signer, Verifier, http_token, new_key
from cloudsched.lab.loadgen import OK, Load, send_load
from cloudsched.lab.processes import Child, ProcessGroup, free_port
from cloudsched.lab.protocol import read_message, request_bytes
from cloudsched.lab.proxies import (
    binary,
    haproxy_config,
    nginx_config,
    refused_requests,
    wait_listening,
)
from cloudsched.lab.result import LabResult, Snapshot, summarise
from cloudsched.lab.spec import LabSpec

__all__ = ["CALIBRATION_REQUESTS", "make_load", "run_lab"]

CALIBRATION_REQUESTS = 200
CALIBRATION_GAP = 0.005


def make_load(spec: LabSpec, rng: np.random.Generator) -> Load:
    """Draw the run's requests: Poisson times over ``warmup + duration``, dispatcher, work (s)."""
    horizon = spec.warmup_seconds + spec.duration
    n = int(rng.poisson(spec.rate * horizon))
    times = np.sort(rng.uniform(0.0, horizon, size=n))  # a Poisson process, given its count
    dispatcher = rng.integers(spec.dispatchers, size=n)
    work = spec.law.sample(rng, n) * spec.unit if n else np.zeros(0)
    return Load(times, dispatcher, np.asarray(work, dtype=np.float64))


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class _Keys:
    """The run's key as the controller uses it: HTTP token, signer and verifier."""

    def __init__(self, key: str) -> None:
        raw = bytes.fromhex(key)
        self.hex = key
        self.token = http_token(raw)
        self.signer = Signer(raw, "c")
        self.verifier = Verifier(raw, "c")


def _count_proxy_refusals(spec: LabSpec, result: LabResult) -> None:
    """Add the requests NGINX or HAProxy refused (403) to ``rejected``, with a warning."""
    refused = refused_requests(result.access_logs, spec.balancer)
    result.lab.setdefault("rejected", {})["proxy_requests"] = refused
    if refused:
        note = (
            f"{spec.balancer} refused {refused} requests without the run's key: something "
            "else on this machine sent to its port (none of them reached a server)"
        )
        result.record = dataclasses.replace(result.record, warnings=(*result.record.warnings, note))


def _access_logs(spec: LabSpec, run_dir: Path) -> dict[str, str]:
    """Return the proxies' access logs (``check-lb`` reads them), every process stopped.

    NGINX writes ``nginx{k}/access{k}.log`` in the ``log_format`` of
    :data:`~cloudsched.lab.proxies.ACCESS_FORMAT`; HAProxy its ``option httplog`` lines on
    its standard output, ``haproxy{k}.log`` (with any warnings, which the readers skip).
    """
    if spec.balancer == "lab":
        return {}
    name = "nginx{k}/access{k}.log" if spec.balancer == "nginx" else "haproxy{k}.log"
    out = {}
    for k in range(spec.dispatchers):
        path = run_dir / name.format(k=k)
        if path.is_file():
            out[f"access-{spec.balancer}-{k}.log"] = path.read_text(errors="replace")
    return out


def _child_args(spec: LabSpec, module: str, index: int, run_dir: Path, seed: int) -> list[str]:
    """Return the command line of lab process ``index`` (``-m module``) up to its own options."""
    args = {"index": index, "policy": spec.policy, "seed": seed, "parent": os.getpid()}
    args |= {"lifetime": spec.lifetime, "run-dir": run_dir}
    return ["-m", module, *[x for k, v in args.items() for x in (f"--{k}", str(v))]]


def _start_backends(spec: LabSpec, group: ProcessGroup, seeds: list[int]) -> list[Child]:
    kids = []
    for i in range(spec.servers):
        argv = [
            *_child_args(spec, "cloudsched.lab.backend", i, group.run_dir, seeds[i]),
            "--slow",
            repr(spec.slow.get(i, 1.0)),
            "--drop",
            repr(spec.drop),
            "--mode",
            spec.mode,
            "--max-work",
            repr(spec.lifetime),
        ]
        kids.append(group.start("server", i, argv))
    group.wait_ready(kids)
    return kids


def _start_dispatchers(
    spec: LabSpec, group: ProcessGroup, servers: list[Child], seeds: list[int], token: str
) -> list[Child]:
    kids = []
    if spec.balancer == "lab":
        ports = ",".join(f"{c.ports[0]}:{c.ports[1]}" for c in servers)
        for k in range(spec.dispatchers):
            argv = [
                *_child_args(spec, "cloudsched.lab.dispatcher", k, group.run_dir, seeds[k]),
                "--d",
                str(spec.d),
                "--backends",
                ports,
                "--probe-timeout",
                repr(spec.probe_timeout),
                *[x for item in spec.seconds_options for x in ("--opt", item)],
            ]
            kids.append(group.start("dispatcher", k, argv))
        group.wait_ready(kids)
        return kids
    exe = binary(spec.balancer)
    if exe is None:
        raise ExternalError(
            f"lab: --balancer {spec.balancer} needs the {spec.balancer} "
            "executable (Debian: apt-get install nginx-light haproxy)"
        )
    http = [c.ports[0] for c in servers]
    for k in range(spec.dispatchers):
        for _attempt in range(5):  # a port taken between the check and the start: try another
            port = free_port()
            if spec.balancer == "nginx":
                conf = group.run_dir / f"nginx{k}.conf"
                text = nginx_config(
                    group.run_dir,
                    k,
                    port,
                    http,
                    spec.policy,
                    token,
                    workers=spec.workers,
                    zone=spec.zone,
                )
                _private_write(conf, text)
                # through the guardian: NGINX's workers do not die with their master
                argv = [
                    sys.executable,
                    "-m",
                    "cloudsched.lab.guardian",
                    "--parent",
                    str(os.getpid()),
                    "--lifetime",
                    str(spec.lifetime),
                    "--",
                    exe,
                    "-p",
                    str(group.run_dir),
                    "-c",
                    str(conf),
                ]
            else:
                conf = group.run_dir / f"haproxy{k}.cfg"
                _private_write(
                    conf, haproxy_config(group.run_dir, k, port, http, spec.policy, spec.d, token)
                )
                argv = [exe, "-db", "-f", str(conf)]
            child = group.start(spec.balancer, k, argv, python=False)
            try:
                wait_listening(port, child.alive)
            except ExternalError:
                if child.alive():
                    raise
                continue
            child.ports = [port]
            kids.append(child)
            break
        else:
            raise ExternalError(f"lab: {spec.balancer} {k} would not start: see its log")
    return kids


def _private_write(path: Path, text: str) -> None:
    """Write a file only this user can read (a configuration holding the run's token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


class _Reply(asyncio.DatagramProtocol):
    def __init__(self, fut: asyncio.Future[bytes]) -> None:
        self.fut = fut

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if not self.fut.done():
            self.fut.set_result(data)


async def _udp_ask(
    keys: _Keys, to: str, port: int, text: str, timeout: float = 1.0, tries: int = 5
) -> str:
    """Send a datagram sealed for process ``to`` and return the sealed answer's text."""
    loop = asyncio.get_running_loop()
    for _ in range(tries):
        fut: asyncio.Future[bytes] = loop.create_future()
        transport, _ = await loop.create_datagram_endpoint(
            functools.partial(_Reply, fut),
            local_addr=("127.0.0.1", 0),
            remote_addr=("127.0.0.1", port),
        )
        try:
            transport.sendto(keys.signer.seal(text, to))
            opened = keys.verifier.open(await asyncio.wait_for(fut, timeout))
            if opened is not None:
                return opened[0]
        except TimeoutError:
            continue
        finally:
            transport.close()
    raise ExternalError(f"lab: no answer on UDP port {port}")


async def _stats(port: int, token: str) -> dict[str, Any]:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    try:
        w.write(request_bytes("/stats", token=token))
        msg = await asyncio.wait_for(read_message(r), 10.0)
    finally:
        w.close()
    return json.loads(msg.body) if msg is not None and msg.status == 200 else {}


def _machine_ticks() -> tuple[float, float]:
    """Busy and total CPU ticks of the whole machine so far (Linux ``/proc/stat``)."""
    try:
        with open("/proc/stat") as fh:
            ticks = [float(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return (0.0, 0.0)
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)
    return (sum(ticks) - idle, sum(ticks))


async def _snapshot(
    spec: LabSpec, group: ProcessGroup, servers: list[Child], dispatchers: list[Child], token: str
) -> Snapshot:
    now = time.perf_counter()
    cpu = {c.role + str(c.index): c.cpu_seconds() for c in group.children}
    cpu["generator"] = time.process_time()
    machine = _machine_ticks()

    async def one(c: Child) -> dict[str, Any]:
        if not c.alive():
            return {}
        try:
            return await _stats(c.ports[0], token)
        except (OSError, ConnectionError, TimeoutError, ValueError):
            return {}

    backs = await asyncio.gather(*(one(c) for c in servers))
    disps = await asyncio.gather(*(one(c) for c in dispatchers)) if spec.balancer == "lab" else []
    return Snapshot(now, cpu, list(backs), list(disps), machine)


async def _drive(
    spec: LabSpec,
    group: ProcessGroup,
    load: Load,
    servers: list[Child],
    dispatchers: list[Child],
    keys: _Keys,
) -> dict[str, Any]:
    if spec.balancer == "lab":
        config = "C " + json.dumps(
            {"dispatchers": [c.ports[1] for c in dispatchers]}, separators=(",", ":")
        )
        await asyncio.gather(*(_udp_ask(keys, f"s{c.index}", c.ports[1], config) for c in servers))
    ports = [c.ports[0] for c in dispatchers]
    m = len(ports)
    k = np.arange(CALIBRATION_REQUESTS) % m
    calib = Load(np.arange(CALIBRATION_REQUESTS) * CALIBRATION_GAP, k, np.zeros(k.size))
    cal, cal_start = await send_load(
        calib, ports, max_inflight=spec.max_inflight, drain=10.0, token=keys.token
    )
    cal_ok = cal.status == OK
    if not cal_ok.any():
        raise ExternalError("lab: no calibration request was answered (see the processes' logs)")
    # latency from the scheduled time, as in the measurement itself
    overhead = float(np.mean(cal.done[cal_ok] - (cal_start + calib.times[cal_ok])))
    snaps: dict[str, Snapshot] = {}
    kills: dict[int, float] = {}

    async def snap(name: str) -> None:
        snaps[name] = await _snapshot(spec, group, servers, dispatchers, keys.token)

    def killer(s: int) -> Callable[[], Any]:
        async def go() -> None:
            kills[s] = time.perf_counter()
            group.kill(servers[s])

        return go

    at: dict[float, Callable[[], Any]] = {
        spec.warmup_seconds: lambda: snap("start"),
        spec.warmup_seconds + spec.duration: lambda: snap("end"),
    }
    for s, t in spec.kill.items():
        at[spec.warmup_seconds + t + 1e-9 * s] = killer(s)
    drain = max(10.0, 500 * spec.unit)
    rec, start = await send_load(
        load, ports, max_inflight=spec.max_inflight, drain=drain, at=at, token=keys.token
    )
    return {
        "records": rec,
        "start": start,
        "overhead": overhead,
        "snapshots": snaps,
        "kills": kills,
    }


def run_lab(spec: LabSpec, *, keep_dir: bool = False) -> LabResult:
    """Run ``spec`` on this machine's loopback interface and summarise what was measured.

    The workload (times, dispatchers, work) is drawn from ``spec.seed`` and is the same on
    every run; what the processes do with it depends on real timing and is not.
    """
    wall = time.perf_counter()
    root = np.random.SeedSequence(spec.seed)
    load_seq, *child_seqs = root.spawn(1 + spec.servers + spec.dispatchers)
    seeds = [int(s.generate_state(1)[0]) for s in child_seqs]
    load = make_load(spec, np.random.default_rng(load_seq))
    run_dir = Path(tempfile.mkdtemp(prefix="cloudsched-lab-"))  # 0700: this user's alone
    keys = _Keys(new_key())
    try:
        with _sigterm_as_interrupt(), ProcessGroup(run_dir, {KEY_ENV: keys.hex}) as group:
            servers = _start_backends(spec, group, seeds[: spec.servers])
            disps = _start_dispatchers(spec, group, servers, seeds[spec.servers :], keys.token)
            out = asyncio.run(_drive(spec, group, load, servers, disps, keys))
        result = summarise(spec, load, out, time.perf_counter() - wall)
        result.access_logs = _access_logs(spec, run_dir)
        _count_proxy_refusals(spec, result)
        return result
    finally:
        if not keep_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
