"""Nobody else in: the lab's key, checked on every datagram and request, and its sockets.

The unit tests check the seal itself (a forged, altered, replayed or foreign datagram is
refused; reordering within the window is not).  The live test runs a farm while a hostile
sender on the same machine sprays every port of the run: forged and replayed joins,
deletes and probe replies to the dispatchers, a forged configuration to the servers, and
HTTP requests without the token (or with it but for an absurd amount of work).  Nothing of
it may change what the run did, and the result must say what was refused.
"""

import argparse
import dataclasses
import json
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from cloudsched.lab import LabSpec, run_lab
from cloudsched.lab.auth import WINDOW, Signer, Verifier, http_token
from cloudsched.lab.protocol import request_bytes

#: real processes measured live: the slow tier runs these one at a time (.ci/run)
pytestmark = pytest.mark.live

KEY = bytes(range(32))


def test_a_sealed_datagram_opens_once():
    s, v = Signer(KEY, "s3"), Verifier(KEY, "d0")
    msg = s.seal("J 3 123.5", "d0")
    assert v.open(msg) == ("J 3 123.5", "s3")
    assert v.open(msg) is None  # a replay
    assert v.rejected == 1


@pytest.mark.parametrize("forge", ["unsigned", "altered", "foreign key", "truncated", "bytes"])
def test_forged_datagrams_are_refused(forge):
    v = Verifier(KEY, "d0")
    good = Signer(KEY, "s1").seal("J 1 5.0", "d0")
    data = {
        "unsigned": b"J 1 5.0",
        "altered": good.replace(b"J 1 5.0", b"J 2 5.0"),
        "foreign key": Signer(bytes(32), "s1").seal("J 1 5.0", "d0"),
        "truncated": good[:-4],
        "bytes": bytes(range(256)),
    }[forge]
    assert v.open(data) is None and v.rejected == 1


def test_reordering_within_the_window_is_accepted_and_old_counters_are_not():
    s, v = Signer(KEY, "d0"), Verifier(KEY, "s0")
    msgs = [s.seal(f"P {k}", "s0") for k in range(WINDOW + 10)]
    assert v.open(msgs[1]) is not None and v.open(msgs[0]) is not None  # swapped on the way
    for m in msgs[2:]:
        assert v.open(m) is not None
    assert v.open(msgs[3]) is None  # seen (and now outside the window as well)
    assert v.rejected == 1


def test_a_datagram_replayed_to_another_recipient_is_refused():
    """The issue's case: a join sealed for dispatcher 0, captured on loopback and sent to
    dispatcher 1, was accepted (985 of 985), as was a probe replayed to another server."""
    join = Signer(KEY, "s3").seal("J 3 1.5", "d0")
    d0, d1 = Verifier(KEY, "d0"), Verifier(KEY, "d1")
    assert d1.open(join) is None and d1.rejected == 1
    assert d0.open(join) == ("J 3 1.5", "s3")
    probe = Signer(KEY, "d0").seal("P 7", "s1")
    assert Verifier(KEY, "s2").open(probe) is None
    assert Verifier(KEY, "s1").open(probe) == ("P 7", "d0")
    with pytest.raises(ValueError):
        Signer(KEY, "d0").seal("P 7", "s1 s2")


class _Sent:
    def __init__(self):
        self.sent = []

    def sendto(self, data, addr):
        self.sent.append((data, addr))


def test_a_probe_from_another_port_is_not_answered(monkeypatch):
    """A probe whose source is not its dispatcher's socket would send the answer elsewhere
    (11,700 probe answers went to a foreign port)."""
    from cloudsched.lab import backend
    from cloudsched.lab.auth import KEY_ENV

    monkeypatch.setenv(KEY_ENV, KEY.hex())
    args = argparse.Namespace(
        index=1, policy="pod", seed=0, slow=1.0, drop=0.0, mode="sleep", max_work=60.0
    )
    server = backend.Server(args)
    server.peers = [("127.0.0.1", 40000), ("127.0.0.1", 40001)]
    control = backend.Control(server)
    control.connection_made(_Sent())
    d1 = Signer(KEY, "d1")
    control.datagram_received(d1.seal("P 5", "s1"), ("127.0.0.1", 50000))  # foreign port
    assert server.udp.sent == [] and server.verifier.rejected == 1
    control.datagram_received(d1.seal("P 6", "s1"), ("127.0.0.1", 40001))
    ((reply, to),) = server.udp.sent
    assert to == ("127.0.0.1", 40001) and reply.startswith(b"R 6 1 0 0.0 s1 d1 ")
    server.tx.close()


def test_a_probe_reply_from_another_port_is_refused(monkeypatch):
    from cloudsched.lab import dispatcher
    from cloudsched.lab.auth import KEY_ENV

    monkeypatch.setenv(KEY_ENV, KEY.hex())
    args = argparse.Namespace(index=0, policy="pod", seed=0, d=2, probe_timeout=0.05, opt=None)
    disp = dispatcher.Dispatcher(args, [(30000, 40000), (30001, 40001)])
    control = dispatcher.Control(disp)
    control.connection_made(_Sent())
    s1 = Signer(KEY, "s1")
    before = disp.count["probe_reply"]
    control.datagram_received(s1.seal("R 3 1 0 0.0", "d0"), ("127.0.0.1", 50000))
    assert disp.verifier.rejected == 1 and disp.count["probe_reply"] == before


def test_prequal_takes_only_answers_to_its_own_probes(monkeypatch):
    """An answer to a probe never sent, from another server than the one probed, with a
    negative RIF or a service estimate that is not a finite non-negative number never
    reaches the pool; the answer to a probe sent does, once."""
    from cloudsched.lab import dispatcher
    from cloudsched.lab.auth import KEY_ENV

    monkeypatch.setenv(KEY_ENV, KEY.hex())
    opts = ["probe-rate=3", "pool=16", "reuse=2", "max-age=1.0", "q-rif=0.84"]
    args = argparse.Namespace(index=0, policy="prequal", seed=0, d=2, probe_timeout=0.05, opt=opts)
    disp = dispatcher.Dispatcher(args, [(30000, 40000), (30001, 40001)])
    control = dispatcher.Control(disp)
    control.connection_made(_Sent())
    disp.prequal.sent(7, 1)
    s0, s1 = Signer(KEY, "s0"), Signer(KEY, "s1")
    for text, signer, port in [
        ("R 8 1 0 0.01", s1, 40001),  # never sent
        ("R 7 0 0 0.01", s0, 40000),  # sent to server 1, answered by server 0
        ("R 7 1 -1 0.01", s1, 40001),
        ("R 7 1 0 nan", s1, 40001),
        ("R 7 1 0 inf", s1, 40001),
        ("R 7 1 0 -0.5", s1, 40001),
    ]:
        control.datagram_received(signer.seal(text, "d0"), ("127.0.0.1", port))
    assert disp.prequal.pool == [] and disp.count["probe_reply"] == 0
    control.datagram_received(s1.seal("R 7 1 2 0.01", "d0"), ("127.0.0.1", 40001))
    control.datagram_received(s1.seal("R 7 1 2 0.01", "d0"), ("127.0.0.1", 40001))  # again
    assert len(disp.prequal.pool) == 1 and disp.count["probe_reply"] == 1
    assert disp.prequal.pool[0][:3] == [1.0, 2.0, pytest.approx(0.03)]


def _ports_of(pids):
    """Local (address, port) of every TCP and UDP socket the processes hold."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    out = []
    for table in ("tcp", "udp", "tcp6", "udp6"):
        with open(f"/proc/net/{table}") as fh:
            for line in fh.readlines()[1:]:
                f = line.split()
                if f[9] in inodes:
                    addr, port = f[1].split(":")
                    out.append((table, addr, int(port, 16)))
    return out


class Attacker(threading.Thread):
    """Sprays the run's ports while it measures (as another user could: ports are public)."""

    def __init__(self, servers, dispatchers, token):
        super().__init__(daemon=True)
        self.servers, self.dispatchers, self.token = servers, dispatchers, token
        self.sent = {"datagrams": 0, "requests": 0, "bad_requests": 0}
        self.sockets = []
        self.done = threading.Event()

    def http(self, port, path, token=""):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
                c.sendall(request_bytes(path, token=token))
                c.recv(4096)
        except OSError:
            pass

    def run(self):
        time.sleep(0.4)  # inside the measurement
        self.sockets = _ports_of([c.pid for c in [*self.servers, *self.dispatchers]])
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        forged = Signer(bytes(32), "s0")
        for _ in range(300):
            for d in self.dispatchers:
                for data in (
                    b"J 0 0.0",
                    forged.seal("J 1 0.0", "d0"),
                    b"D 2",
                    forged.seal("R 1 0 0", "d0"),
                    b"\xff" * 40,
                ):
                    udp.sendto(data, ("127.0.0.1", d.ports[1]))
                    self.sent["datagrams"] += 1
        for s in self.servers:
            udp.sendto(b'C {"dispatchers": [9]}', ("127.0.0.1", s.ports[1]))
            udp.sendto(forged.seal("P 1", "s0"), ("127.0.0.1", s.ports[1]))
            self.sent["datagrams"] += 2
        for c in [*self.servers, *self.dispatchers]:
            self.http(c.ports[0], "/work?w=1e9")
            self.http(c.ports[0], "/work?w=1e9", token="0" * 64)
            self.sent["requests"] += 2
        for s in self.servers:  # with the token: the amount of work is out of range
            self.http(s.ports[0], "/work?w=1e9", token=self.token)
            self.http(s.ports[0], "/work?w=nan", token=self.token)
            self.sent["bad_requests"] += 2
        udp.close()
        self.done.set()


def test_a_hostile_sender_changes_nothing_and_is_reported(monkeypatch):
    """The issue's case: 49k forged joins raised the mean from 3.5 to 5.3 with exit 0."""
    import cloudsched.lab.run as run

    key = "ab" * 32
    monkeypatch.setattr(run, "new_key", lambda: key)
    real = run._drive
    attackers = []

    async def drive(spec, group, load, servers, dispatchers, keys):
        a = Attacker(servers, dispatchers, http_token(bytes.fromhex(key)))
        attackers.append(a)
        a.start()
        return await real(spec, group, load, servers, dispatchers, keys)

    monkeypatch.setattr(run, "_drive", drive)
    r = run_lab(
        LabSpec(
            "jiq",
            servers=3,
            dispatchers=2,
            load=0.5,
            unit=0.01,
            duration=2.0,
            warmup="0.3s",
            seed=3,
        )
    )
    (a,) = attackers
    assert a.done.wait(30)
    m = r.frame[r.frame["measured"]]
    assert (m["status"] == "ok").all()
    assert m["work"].max() < 1.0  # no request of the attacker was served
    refused = r.lab["rejected"]
    assert refused["datagrams"] >= a.sent["datagrams"]
    assert refused["requests"] >= a.sent["requests"]
    assert refused["bad_requests"] >= a.sent["bad_requests"]
    assert any("refused" in w and "something else on this machine" in w for w in r.record.warnings)
    # no forged join was listed: joins received are the joins the servers sent
    counts = r.lab["dispatcher_counts"]
    sent = r.record.messages["join"] * 3 * r.lab["window_seconds"] / 0.01
    assert abs(counts["join_received"] - sent) <= 3  # messages in flight at the snapshots
    # every socket of the run is on 127.0.0.1 (0100007F), none on 0.0.0.0
    assert a.sockets and all(addr == "0100007F" for _, addr, _ in a.sockets), a.sockets


def test_the_backend_sends_from_loopback(monkeypatch):
    import argparse

    from cloudsched.lab import backend
    from cloudsched.lab.auth import KEY_ENV

    monkeypatch.setenv(KEY_ENV, KEY.hex())
    args = argparse.Namespace(
        index=0, policy="jiq", slow=1.0, drop=0.0, seed=1, mode="sleep", max_work=10.0
    )
    server = backend.Server(args)
    try:
        assert server.tx.getsockname()[0] == "127.0.0.1"
    finally:
        server.tx.close()


def test_a_lab_process_without_the_key_refuses_to_start(tmp_path):
    import subprocess
    import sys

    from cloudsched.lab.auth import KEY_ENV

    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cloudsched.lab.backend",
            "--index",
            "0",
            "--policy",
            "jiq",
            "--seed",
            "1",
            "--lifetime",
            "5",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode != 0 and "holds no key" in out.stderr


def test_run_files_are_private(monkeypatch, tmp_path):
    """The run's folder (configurations with the token, logs) is this user's alone."""
    import stat
    import tempfile

    import cloudsched.lab.run as run

    seen = []
    real = run.ProcessGroup

    class Spy(real):
        def __init__(self, run_dir, env=None):
            seen.append((stat.S_IMODE(os.stat(run_dir).st_mode), dict(env or {})))
            super().__init__(run_dir, env)

    monkeypatch.setattr(run, "ProcessGroup", Spy)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_lab(
        LabSpec(
            "random",
            servers=2,
            dispatchers=1,
            load=0.3,
            unit=0.01,
            duration=0.5,
            warmup="0.1s",
            seed=1,
        )
    )
    ((mode, env),) = seen
    assert mode == 0o700 and len(env["CLOUDSCHED_LAB_KEY"]) == 64
    assert not any(Path(tmp_path).iterdir())  # removed after the run
    _ = json, np


@pytest.mark.parametrize("balancer", ["nginx", "haproxy"])
def test_a_real_proxy_refuses_a_request_without_the_token(balancer, tmp_path):
    import subprocess

    from cloudsched.lab.processes import free_port
    from cloudsched.lab.proxies import binary, haproxy_config, nginx_config, wait_listening

    exe = binary(balancer)
    if exe is None:
        pytest.skip(f"{balancer} is not installed (apt-get install nginx-light haproxy)")
    port, dead = free_port(), free_port()  # a backend port nothing listens on
    if balancer == "nginx":
        conf = tmp_path / "n.conf"
        conf.write_text(nginx_config(tmp_path, 0, port, [dead], "random", "ab12"))
        argv = [exe, "-p", str(tmp_path), "-c", str(conf)]
    else:
        conf = tmp_path / "h.cfg"
        conf.write_text(haproxy_config(tmp_path, 0, port, [dead], "random", 2, "ab12"))
        argv = [exe, "-db", "-f", str(conf)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, lambda: proc.poll() is None)

        def status(token):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                c.sendall(request_bytes("/work?w=0.001", token=token))
                return int(c.recv(4096).split()[1])

        assert status("") == 403 and status("ff00") == 403
        assert status("ab12") in (502, 503)  # let through, to a backend that is not there
    finally:
        proc.kill()
        proc.wait()


def test_refused_requests_are_read_from_the_proxies_access_logs():
    from cloudsched.lab.proxies import refused_requests

    nginx = {
        "a.log": "1700.1 0.010 127.0.0.1:9 200 0.010 41\n1700.2 0.000 - 403 - 41\n"
        "1700.3 0.0 - 403 - 42\n1700.4 0.020 127.0.0.1:9, 127.0.0.1:8 403 0.001, 0.002 41\n"
    }
    haproxy = {
        "h.log": "127.0.0.1:5 [04/Dec/2026:10:00:00.001] dispatcher0 backends/s1 0/0/0/9/9 200 "
        '10 - - ---- 1/1/0/0/0 0/0 "GET /work?w=1 HTTP/1.1"\n'
        "127.0.0.1:6 [04/Dec/2026:10:00:00.002] dispatcher0 dispatcher0/<NOSRV> 0/-1/-1/-1/0 "
        '403 192 - - PR-- 1/1/0/0/0 0/0 "GET /work?w=403 HTTP/1.1"\n'
    }
    assert refused_requests(nginx, "nginx") == 3
    assert refused_requests(haproxy, "haproxy") == 1


@pytest.mark.parametrize("balancer", ["nginx", pytest.param("haproxy", marks=pytest.mark.slow)])
def test_requests_a_real_proxy_refuses_are_counted(monkeypatch, balancer):
    """NGINX and HAProxy answered tokenless requests with 403, and the result said nothing."""
    import cloudsched.lab.run as run
    from cloudsched.lab.proxies import binary

    if binary(balancer) is None:
        pytest.skip(f"{balancer} is not installed (apt-get install nginx-light haproxy)")
    real = run._drive
    sent = []

    async def drive(spec, group, load, servers, dispatchers, keys):
        for d in dispatchers:  # before the run: every one of these is in the proxy's log
            for _ in range(4):
                with socket.create_connection(("127.0.0.1", d.ports[0]), timeout=5) as c:
                    c.sendall(request_bytes("/work?w=1"))
                    assert c.recv(4096).startswith(b"HTTP/1.1 403")
                sent.append(d.index)
        return await real(spec, group, load, servers, dispatchers, keys)

    monkeypatch.setattr(run, "_drive", drive)
    spec = LabSpec("pod", servers=3, dispatchers=2, load=0.5, unit=0.01, duration=1.0, seed=4)
    r = run_lab(dataclasses.replace(spec, balancer=balancer))
    assert len(sent) == 8
    assert r.lab["rejected"]["proxy_requests"] == 8
    assert any(f"{balancer} refused 8 requests" in w for w in r.record.warnings)
