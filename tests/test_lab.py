"""The live lab: real processes on 127.0.0.1.

Every assertion here is about what the processes did, not how fast: each request is
accounted for, each decision obeys its policy (checked from the headers the dispatchers
return), messages sent are messages received, a killed server stops receiving work, and
no process outlives its run (Ctrl-C, SIGTERM or SIGKILL of the controller).  Tests that
need NGINX or HAProxy skip, with that reason, where the binary is absent; CI installs both.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch import simulate
from cloudsched.lab import LabSpec, run_lab
from cloudsched.lab.notes import run_warnings
from cloudsched.lab.proxies import binary, haproxy_config, nginx_config
from cloudsched.lab.run import make_load

#: real processes measured live: the slow tier runs these one at a time (.ci/run)
pytestmark = pytest.mark.live

SMALL = {
    "servers": 3,
    "dispatchers": 2,
    "load": 0.6,
    "unit": 0.01,
    "duration": 1.5,
    "warmup": "0.3s",
    "seed": 7,
}


@pytest.fixture(scope="module")
def jiq_pod():
    return run_lab(LabSpec("jiq-pod", **SMALL))


def _measured(result):
    f = result.frame
    return f[f["measured"]]


def test_every_request_is_answered_and_recorded(jiq_pod):
    m = _measured(jiq_pod)
    assert len(m) > 50
    assert (m["status"] == "ok").all()
    assert m["server"].between(0, 2).all()
    assert jiq_pod.record.measured_tasks == len(m)
    # the latency counts from the scheduled time, so it covers the backend's own sojourn
    assert (m["latency"] >= m["wait"] + m["service"]).all()


def test_same_record_as_simulate(jiq_pod):
    sim = simulate("jiq-pod", servers=3, dispatchers=2, load=0.6, tasks=2000, rng=1)
    row = jiq_pod.to_row()
    assert set(sim.to_row()) <= set(row)
    assert row["engine"] == "live" and row["overhead"] > 0
    assert abs(sum(jiq_pod.record.occupancy) - 1) < 1e-9


def test_net_mean_is_flagged_when_forwarding_under_load_is_not_the_calibration(jiq_pod):
    # the net mean is the latency less the idle calibration; the servers measure their own
    # sojourn, so the difference is what the path took under load beyond the calibration
    lab = dict(jiq_pod.lab)
    m = _measured(jiq_pod)
    ok = m[m["status"] == "ok"]
    fwd = (ok["latency"] - ok["wait"] - ok["service"]).mean()
    assert lab["forwarding_ms"] == pytest.approx(fwd * 1e3)
    gap = lab["net_mean_response_time"] - lab["backend_sojourn_mean"]
    assert gap == pytest.approx((fwd - lab["overhead_ms"] / 1e3) / lab["unit_seconds"])
    spec = LabSpec("jiq-pod", **SMALL)

    def flagged(lab, half):
        notes = run_warnings(spec, jiq_pod.frame, lab, True, half)
        return [w for w in notes if "'mean - overhead'" in w]

    assert flagged(lab, abs(gap) + 1e-3) == []
    assert flagged(lab, abs(gap) / 2) and "under load" in flagged(lab, abs(gap) / 2)[0]
    lab["net_mean_response_time"] = lab["backend_sojourn_mean"] + 0.5  # a path 0.5 units slower
    assert flagged(lab, 0.2) and "+0.500 units" in flagged(lab, 0.2)[0]


def test_pod_sends_to_the_least_loaded_probed_server(jiq_pod):
    m = _measured(jiq_pod)
    probed = m[m["probed"] != ""]
    assert len(probed) > 0  # empty I-queues happen at load 0.6 with 3 servers
    for server, text in zip(probed["server"], probed["probed"], strict=True):
        replies = {int(a): int(b) for a, b in (x.split(":") for x in text.split(","))}
        low = min(replies.values())
        assert replies[int(server)] == low


def test_popped_servers_were_idle(jiq_pod):
    m = _measured(jiq_pod)
    popped = m[m["popped"] == 1]
    assert len(popped) > 0
    # a server taken from an I-queue is idle, unless a random task overtook its delete
    assert (popped["queue_on_arrival"] == 0).mean() > 0.9


def test_joins_sent_are_joins_received(jiq_pod):
    counts = jiq_pod.lab["dispatcher_counts"]
    window_units = jiq_pod.lab["window_seconds"] / SMALL["unit"]
    sent = jiq_pod.record.messages["join"] * SMALL["servers"] * window_units
    assert abs(counts["join_received"] - sent) <= 3  # messages in flight at the two snapshots


def test_round_robin_cycles_through_the_servers():
    r = run_lab(LabSpec("round-robin", **SMALL))
    f = r.frame[r.frame["status"] == "ok"]
    for _, g in f.groupby("dispatcher"):
        servers = g.sort_values("decision")["server"].to_numpy()
        assert (np.diff(servers) % 3 == 1).all()


def test_a_killed_server_gets_no_more_work():
    spec = LabSpec("jiq", **{**SMALL, "kill": {1: 0.4}, "duration": 1.5})
    r = run_lab(spec)
    m = _measured(r)
    assert (m["status"] == "ok").all()  # failed forwards are retried elsewhere
    killed = r.lab["faults"]["killed"][0]
    # when the SIGKILL was sent (scheduled 0.4 s into the measurement; on a busy machine the
    # timer fires late, and requests served before it are not late)
    at = spec.warmup_seconds + max(0.4, killed["killed_at"])
    late = m[(m["sent"] > at + 0.05) & (m["server"] == 1)]
    assert late.empty
    assert killed["served_after"] <= 1  # a request already done at the kill may count
    assert r.lab["dispatcher_counts"]["revived"] == 0


def test_the_workload_is_a_seeded_poisson_process():
    spec = LabSpec("random", servers=4, load=0.5, unit=0.01, duration=100.0, warmup=0.0)
    a = make_load(spec, np.random.default_rng(3))
    b = make_load(spec, np.random.default_rng(3))
    assert np.array_equal(a.times, b.times) and np.array_equal(a.work, b.work)
    expected = spec.rate * 100.0
    assert abs(a.times.size - expected) < 5 * np.sqrt(expected)
    gaps = np.diff(a.times)
    assert abs(gaps.mean() * spec.rate - 1) < 5 / np.sqrt(gaps.size)
    assert abs(a.work.mean() / spec.unit - 1) < 5 / np.sqrt(a.work.size)


@pytest.mark.parametrize(
    ("balancer", "policy"),
    [("nginx", "pod"), pytest.param("haproxy", "jsq", marks=pytest.mark.slow)],
)
def test_a_real_proxy_serves_every_request(balancer, policy):
    if binary(balancer) is None:
        pytest.skip(f"{balancer} is not installed (apt-get install nginx-light haproxy)")
    r = run_lab(LabSpec(policy, balancer=balancer, **SMALL))
    m = _measured(r)
    assert (m["status"] == "ok").all()
    assert set(m["server"].astype(int)) == {0, 1, 2}
    assert r.record.messages["probe"] == 0  # NGINX and HAProxy do not probe
    # its access log, for check-lb: one line per request it served
    from cloudsched.dispatch.workload.upstreams import read_upstream_log

    assert len(r.access_logs) == SMALL["dispatchers"]
    served = 0
    for name, text in r.access_logs.items():
        path = Path(tempfile.mkdtemp()) / name
        path.write_text(text)
        log = read_upstream_log(path, balancer)
        assert all(re.fullmatch(r"127\.0\.0\.1:\d+|backends/s[0-2]", u) for u in log.names)
        served += log.sent.size
    assert served >= len(r.frame)  # every request of the run (and the calibration's)


def test_generated_configurations(tmp_path):
    text = nginx_config(tmp_path, 0, 18000, [18001, 18002], "pod", "ab12")
    assert "random two least_conn;" in text and "127.0.0.1:18002" in text
    assert '$http_x_lab_key != "ab12"' in text  # requests without the run's token: 403
    cfg = haproxy_config(tmp_path, 1, 18010, [18001, 18002], "pod", 3, "ab12")
    assert "balance random(3)" in cfg and "check inter 500ms" in cfg
    assert "req.hdr(x-lab-key) -m str ab12" in cfg and "hdr X-Lab-Key ab12" in cfg
    with pytest.raises(ValueError, match="hexadecimal"):
        nginx_config(tmp_path, 0, 18000, [18001], "pod", 'x"; return 200; #')
    assert "master_process off;" in text and "zone" not in text and "reuseport" not in text
    many = nginx_config(tmp_path, 0, 18000, [18001], "jsq", "ab12", workers=3, zone=True)
    assert "master_process on;" in many and "worker_processes 3;" in many
    assert "zone backends 1m;" in many and "127.0.0.1:18000 reuseport;" in many
    own = nginx_config(tmp_path, 0, 18000, [18001], "jsq", "ab12", workers=3)
    assert "worker_processes 3;" in own and "zone" not in own
    if binary("nginx"):  # the real NGINX accepts each of them
        for name, conf in (("n.conf", text), ("m.conf", many), ("o.conf", own)):
            (tmp_path / name).write_text(conf)
            ok = subprocess.run(
                [binary("nginx"), "-t", "-p", str(tmp_path), "-c", str(tmp_path / name)],
                capture_output=True,
            )
            assert ok.returncode == 0, ok.stderr
    if binary("haproxy"):
        (tmp_path / "h.cfg").write_text(cfg)
        ok = subprocess.run(
            [binary("haproxy"), "-c", "-f", str(tmp_path / "h.cfg")], capture_output=True
        )
        assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["lab", "run", "jiq", "--balancer", "nginx"],
        ["lab", "run", "jiq", "--servers", "3", "--slow", "9:5x"],
        ["lab", "run", "jiq", "--unit", "0ms"],
        ["lab", "run", "pod", "--drop", "0.1"],
        ["lab", "run", "jiq", "--kill", "1@99", "--duration", "2"],
        ["lab", "run", "pod", "--balancer", "nginx", "--d", "3"],
        ["lab", "run", "jiq", "--servers", "65"],
        ["lab", "run", "jiq", "--dispatchers", "9", "--servers", "8"],
        ["lab", "compare", "jiq", "jiq"],
        ["lab", "run", "jiq", "--duration", "3000", "--max-requests", "1000"],
        ["lab", "run", "jsq", "--balancer", "haproxy", "--workers", "2"],
        ["lab", "run", "jsq", "--zone"],
        ["lab", "run", "jsq", "--balancer", "nginx", "--workers", "17"],
        ["lab", "run", "jsq", "-o", "decay=1s"],
        ["lab", "run", "ewma", "-o", "decay=0"],
        ["lab", "run", "ewma", "-o", "colour=1"],
        ["lab", "run", "ewma", "-o", "service-time=10ms"],
        ["lab", "run", "ewma", "--balancer", "nginx"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not (tmp_path / "o").exists()


def test_who_counts_what():
    """Own counts: the lab's jsq per dispatcher, NGINX's per worker unless they share a zone."""
    assert LabSpec("jsq", dispatchers=2).counts == ("own", 2)
    assert LabSpec("pod", dispatchers=2).counts == ("shared", 2)  # the lab's pod probes
    assert LabSpec("pod", balancer="nginx", dispatchers=2, workers=3).counts == ("own", 6)
    assert LabSpec("jsq", balancer="nginx", dispatchers=2, workers=3, zone=True).counts == (
        "own",
        2,
    )
    assert LabSpec("jsq", balancer="haproxy", dispatchers=3).counts == ("own", 3)
    assert LabSpec("random", balancer="nginx", workers=2).counts[0] == "shared"
    from cloudsched.dispatch.theory.proxies import own_meanfield
    from cloudsched.lab.compare import _theory, compare_notes

    spec = LabSpec("jsq", balancer="nginx", dispatchers=1, workers=3, load=0.8)
    t = _theory(spec)
    assert "3 own counts, exact" in t["source"]
    assert t["mean"] == own_meanfield("jsq", 0.8, 3).mean_response_time
    assert "no shared zone" in compare_notes(spec, ["jsq"])[0]


def _group(pid: int) -> int:
    """The process group of ``pid`` (field 5 of /proc/PID/stat), or -1 when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[2])


def _members(pgid: int) -> list[int]:
    return [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and _group(int(e.name)) == pgid
    ]


def _ours(token: str) -> list[int]:
    """Processes whose command line names ``token`` (the run's temporary folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if token in cmd:
                pids.append(int(entry.name))
    return pids


def _wait_for(predicate, what):
    for _ in range(1200):  # an event, bounded: the children appear, or the test fails
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"never saw {what}")


@pytest.mark.parametrize(
    ("how", "balancer"),
    [
        ("SIGINT", "lab"),
        ("SIGKILL", "haproxy"),
        pytest.param("SIGTERM", "lab", marks=pytest.mark.slow),
        pytest.param("SIGKILL", "lab", marks=pytest.mark.slow),
        pytest.param("SIGINT", "nginx", marks=pytest.mark.slow),
    ],
)
def test_no_process_outlives_the_run(tmp_path, how, balancer):
    if balancer != "lab" and binary(balancer) is None:
        pytest.skip(f"{balancer} is not installed (apt-get install nginx-light haproxy)")
    token = str(tmp_path / "tmp")
    os.makedirs(token)
    env = dict(os.environ, TMPDIR=token)
    policy = "jiq" if balancer == "lab" else "pod"
    argv = [
        sys.executable,
        "-c",
        "from cloudsched.cli import main; main()",
        "lab",
        "run",
        policy,
        "--servers",
        "3",
        "--dispatchers",
        "2",
        "--duration",
        "60",
        "--balancer",
        balancer,
        "--out",
        str(tmp_path / "out"),
    ]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _wait_for(lambda: len(_ours(token)) >= 5, "the five processes of the run")
        proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=60)
        if how != "SIGKILL":
            assert proc.returncode == 130, err
        _wait_for(lambda: not _ours(token), "every process stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in _ours(token):
            os.kill(pid, signal.SIGKILL)
    assert not (tmp_path / "out" / "records.parquet").exists()


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_nginx_workers_stop_with_the_run(tmp_path, how):
    """NGINX's workers outlive a killed master; the guardian ends them with the run."""
    if binary("nginx") is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light haproxy)")
    token = str(tmp_path / "tmp")
    os.makedirs(token)
    argv = [
        sys.executable, "-c", "from cloudsched.cli import main; main()",
        "lab", "run", "jsq", "--servers", "2", "--dispatchers", "1", "--balancer", "nginx",
        "--workers", "2", "--duration", "60", "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    env = dict(os.environ, TMPDIR=token)
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    groups: set[int] = set()
    try:

        def nginx_up() -> bool:
            groups.clear()
            groups.update(_group(p) for p in _ours(token) if "nginx" in _cmd(p))
            return any(len(_members(g)) >= 4 for g in groups)  # guardian, master, 2 workers

        _wait_for(nginx_up, "NGINX's master and two workers")
        proc.send_signal(getattr(signal, how))
        proc.communicate(timeout=60)
        _wait_for(lambda: not any(_members(g) for g in groups), "every NGINX process stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for g in groups:
            for pid in _members(g):
                os.kill(pid, signal.SIGKILL)


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
def test_random_servers_are_mm1_queues_live():
    # under random dispatch each live server is an M/M/1 queue: its own sojourn mean is
    # 1 / (1 - rho) at the load it carried (measured inside the servers, no network in it)
    r = run_lab(
        LabSpec(
            "random",
            servers=4,
            dispatchers=2,
            load=0.6,
            unit=0.01,
            duration=30.0,
            warmup="2s",
            seed=11,
        )
    )
    lab, rho = r.lab, r.lab["achieved_load"]
    half = (r.record.ci95[1] - r.record.ci95[0]) / 2
    # the measured service mean: a busy machine's sleeps overshoot, and rho counts them
    assert abs(lab["backend_sojourn_mean"] - lab["service_mean_measured"] / (1 - rho)) < 2 * half
    # the net mean is off the sojourn mean by exactly the forwarding time under load less
    # the idle calibration, and says so wherever that is more than the interval
    gap = lab["net_mean_response_time"] - lab["backend_sojourn_mean"]
    extra = (lab["forwarding_ms"] - lab["overhead_ms"]) / 1e3 / lab["unit_seconds"]
    assert gap == pytest.approx(extra, abs=1e-6)
    flagged = [w for w in r.record.warnings if "'mean - overhead'" in w]
    assert bool(flagged) == (abs(gap) > half), (gap, half, r.record.warnings)


CLI_SMALL = [
    "--servers",
    "3",
    "--dispatchers",
    "2",
    "--load",
    "0.6",
    "--unit",
    "10ms",
    "--duration",
    "1.5",
    "--warmup",
    "0.3s",
    "--seed",
    "3",
]


def test_lab_run_writes_records_result_and_figure(tmp_path, capsys):
    import json

    import pandas as pd

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["lab", "run", "jiq", *CLI_SMALL, "--out", str(out), "--format", "json"])
    assert exc.value.code == 0
    payload = json.loads(capsys.readouterr().out)
    frame = pd.read_parquet(out / "records.parquet")
    assert len(frame) == payload["events"]
    assert {"scheduled", "sent", "done", "server", "wait", "service", "status"} <= set(frame)
    assert payload["engine"] == "live" and payload["policy"] == "jiq"
    assert (out / "lab.png").stat().st_size > 0 and "lab.png" in (out / "report.md").read_text()


@pytest.mark.slow  # a live run and three simulations: the default tier keeps lab run
def test_lab_compare_puts_models_beside_the_live_run(tmp_path, capsys):
    import json

    out = tmp_path / "cmp"
    with pytest.raises(SystemExit) as exc:
        main(["lab", "compare", "jiq-pod", *CLI_SMALL, "--out", str(out)])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    rows = json.loads((out / "lab-compare.json").read_text())["rows"]
    sources = {r["source"] for r in rows}
    assert {"simulation", "live", "live - overhead"} <= sources
    assert any(s.startswith("theory") for s in sources)
    assert "against simulated" in text and (out / "lab-compare.png").stat().st_size > 0
    # the live run's warnings come with its numbers: 1.5 s of 10 ms units in 20 batches is
    # 7.5 units a batch, under 5 model relaxation times (6.6 units), so never certified
    warned = json.loads((out / "lab-compare.json").read_text())["warnings"]
    assert any("not steady" in w for w in warned), warned
    assert all(w.startswith("jiq-pod live: ") and f"warning: {w}" in text for w in warned)


def test_warmup_is_a_fraction_of_the_run_as_in_simulate(capsys):
    """One unit for --warmup everywhere: a fraction of the run (warm-up and measurement);
    the lab also takes seconds written with their unit, what a bare number meant before."""
    from cloudsched.errors import ParameterError

    assert LabSpec("jiq", duration=20.0, warmup=0.2).warmup_seconds == pytest.approx(5.0)
    assert LabSpec("jiq", warmup="3s").warmup_seconds == 3.0
    assert LabSpec("jiq", duration=20.0).warmup_seconds == pytest.approx(20 * 0.15 / 0.85)
    for bad in (3, 0.95, -0.1, "3x", "700s", float("nan")):
        with pytest.raises(ParameterError, match=r"warmup must be a fraction of the run in \["):
            LabSpec("jiq", warmup=bad)
    with pytest.raises(SystemExit) as exc:
        main(["lab", "run", "jiq", "--warmup", "3"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "or seconds with their unit" in err
    for argv in (["simulate"], ["place", "simulate"], ["lab", "run"], ["lab", "compare"]):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        text = " ".join(capsys.readouterr().out.lower().split())
        assert "--warmup" in text and "fraction of the run" in text, argv


@pytest.mark.slow
@pytest.mark.parametrize(
    ("balancer", "policy", "law"),
    [
        ("nginx", "pod", "pod:2"),  # random two least_conn: two distinct upstreams
        ("haproxy", "pod", "pod:2r"),  # random(2): two independent draws
        ("nginx", "round-robin", "round-robin"),
        ("nginx", "random", "random"),  # and, checked as pod:2, the planted wrong policy
        ("nginx", "jsq", "least-request"),  # least_conn
        ("haproxy", "jsq", "least-request"),  # leastconn
    ],
)
def test_check_lb_names_what_the_real_proxies_do(tmp_path, balancer, policy, law):
    """On live NGINX and HAProxy logs the law each configuration implements is the one
    check-lb accepts (for HAProxy's random(2): the one it finds the best fit), and every
    other is rejected (a random balancer passed off as power-of-two included).

    The logs' times are in milliseconds; arrivals they cannot order are left out (without
    that, least_conn and leastconn looked unlike least-request: 93-96% of requests to a
    least-loaded upstream).  HAProxy draws random(2)'s servers on a consistent-hash ring,
    not uniformly (its random(1) sends 18% to 30% of requests to each of 4 servers): the
    draws' test rejects pod:2r (p = 3e-33 on 3,514 requests) while pod:2r stays the best
    fit, and pod:2 is rejected at p < 1e-6.  The middle half of each log, cut as a rotated
    log is, gives the same verdicts (wrong laws at p < 1e-3 on the half).
    """
    from cloudsched.dispatch.workload.upstreams import read_upstream_log
    from cloudsched.experiments.checklb import check_lb

    if binary(balancer) is None:
        pytest.skip(f"{balancer} is not installed (apt-get install nginx-light haproxy)")
    spec = LabSpec(
        policy,
        servers=4,
        dispatchers=1,
        load=0.8,
        unit=0.02,
        duration=30.0,
        warmup="1s",
        balancer=balancer,
        seed=1,
    )
    ((name, text),) = run_lab(spec).access_logs.items()
    (tmp_path / name).write_text(text)
    lines = text.splitlines()  # written as requests end: the middle half is a rotated log
    (tmp_path / "window.log").write_text("\n".join(lines[len(lines) // 4 : 3 * len(lines) // 4]))
    # the whole log holds the proxy's run from its start (the lab starts it); the window
    # is read as a rotated log is
    for path, strong in ((tmp_path / name, 1e-6), (tmp_path / "window.log", 1e-3)):
        log = read_upstream_log(path, balancer)
        whole = path.name == name
        for expect in ("random", "pod:2", "pod:2r", "least-request", "jiq", "round-robin"):
            res = check_lb(log, expect, alpha=0.001, whole_run=whole)
            if balancer == "haproxy" and expect == law == "pod:2r":  # its draws are unequal
                assert res.consistent or res.best_fit == law, res.verdict
                continue
            assert res.consistent == (expect == law), (path.name, res.verdict)
            if expect != law and res.p_value is not None:
                assert res.p_value < strong, (path.name, res.verdict)
        if not whole and law != "round-robin":
            assert res.edges > 0  # the window's edges were left out


def test_the_lab_ewma_is_the_simulators_rule():
    """The lab dispatcher's peak EWMA (seconds, wall clock) and the simulator's mirror of
    tower's rule give the same costs on one sequence of reads and responses."""
    from cloudsched.dispatch.engines.servers.mirror_balancers import Ewma
    from cloudsched.lab.balancers import PeakEwma

    decay, default = 0.5, 0.03
    lab = PeakEwma(3, decay, default, now=0.0)
    mirror = Ewma.__new__(Ewma)
    mirror.o = {"decay": decay, "default-rtt": default}
    mirror.est, mirror.stamp, mirror.inflight = [[default] * 3], [[0.0] * 3], [[0] * 3]
    rng = np.random.default_rng(5)
    now = 0.0
    for _ in range(400):
        now += float(rng.exponential(0.01))
        s, out = int(rng.integers(3)), int(rng.integers(4))
        if rng.random() < 0.5:
            mirror.inflight[0][s] = out
            assert lab.cost(s, out, now) == pytest.approx(mirror.cost(0, s, now), rel=1e-12)
        else:
            rtt = float(rng.exponential(0.02 * (s + 1)))
            lab.observe(s, rtt, now)
            mirror.returned(0, s, now, rtt)
    assert lab.est == pytest.approx(mirror.est[0], rel=1e-12)


def test_ewma_learns_to_avoid_a_slow_server_live():
    """Server 0 four times slower: its round trips are four times longer, so peak EWMA
    (decay 1 s) sends it far less than a uniform quarter."""
    spec = LabSpec(
        "ewma", **{**SMALL, "servers": 4, "duration": 3.0, "slow": {0: 4.0}},
        options=("decay=1s",),
    )  # fmt: skip
    assert spec.option_values["decay"] == pytest.approx(100.0)  # 1 s in 10 ms units
    r = run_lab(spec)
    m = _measured(r)
    assert (m["status"] == "ok").all()
    share = (m["server"] == 0).mean()
    assert share < 0.15, share  # uniform would be 0.25; the slow server's capacity is 1/13


def test_the_lab_prequal_pool_is_the_simulators_rule():
    """On the same pools and answer histories, the lab's Prequal pool and the simulator's
    mirror pick the same server and leave the same pool (stale probes dropped, the chosen
    probe's RIF and uses up, dropped at its reuse limit)."""
    from cloudsched.dispatch.engines.servers.mirror_reports import Prequal
    from cloudsched.lab.balancers import PrequalPool

    o = {"max-age": 5.0, "q-rif": 0.84, "reuse": 2.0, "pool": 16.0, "probe-rate": 0.0}
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        pool = [
            [float(rng.integers(n)), float(rng.integers(6)), float(rng.exponential()),
             float(rng.uniform(0, 10)), float(rng.integers(2))]
            for _ in range(int(rng.integers(1, 17)))
        ]  # fmt: skip
        history = [float(rng.integers(8)) for _ in range(64)]
        seen = int(rng.integers(1, 200))
        lab = PrequalPool(o)
        lab.pool, lab.history, lab.seen = [list(p) for p in pool], list(history), seen
        mirror = Prequal.__new__(Prequal)
        mirror.o, mirror.rng = o, np.random.default_rng(0)
        mirror.pool, mirror.history, mirror.seen = [[list(p) for p in pool]], [history], [seen]
        now = float(rng.uniform(5, 12))
        got = lab.pick(now, [True] * n)
        if not lab.pool and got < 0:
            continue  # every probe stale: the mirror draws a uniform server instead
        assert got == mirror.pick(0, n, now)
        assert lab.pool == mirror.pool[0]


def test_prequal_learns_to_avoid_a_slow_server_live():
    """Server 0 four times slower: its probes answer a service estimate four times longer
    and it holds more requests, so Prequal sends it far less than a uniform quarter; every
    choice (each decision and each retry) sends three probes (the default probe-rate).

    The dispatchers' counters are read in one snapshot, so probes and choices are compared
    there: the load generator's count of measured requests was compared before, and a
    slow machine let a few decisions fall after the dispatchers' last snapshot (1,782
    probes against 3 x 599 requests)."""
    spec = LabSpec("prequal", **{**SMALL, "servers": 4, "duration": 3.0, "slow": {0: 4.0}})
    r = run_lab(spec)
    m = _measured(r)
    assert (m["status"] == "ok").all()
    assert (m["server"] == 0).mean() < 0.15
    counts = r.lab["dispatcher_counts"]
    assert counts["probe"] == 3 * (counts["decisions"] + counts["retries"])
    assert counts["decisions"] > 0.9 * r.lab["requests"]["ok"]


@pytest.mark.slow
@pytest.mark.live
def test_check_lb_reads_nginx_workers_with_and_without_a_shared_zone(tmp_path):
    """Live NGINX least_conn with 4 worker processes: without a zone each counts its own
    requests, and check-lb, reading each worker's counts from $pid, accepts least request
    and names that view; with the zone the shared counts are least request's."""
    from cloudsched.dispatch.workload.upstreams import read_upstream_log
    from cloudsched.experiments.checklb import check_lb
    from cloudsched.experiments.checklb_identify import identify

    if binary("nginx") is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    for zone in (False, True):
        spec = LabSpec(
            "jsq", servers=4, dispatchers=1, load=0.7, unit=0.02, duration=30.0,
            warmup="1s", balancer="nginx", seed=2, workers=4, zone=zone,
        )  # fmt: skip
        ((name, text),) = run_lab(spec).access_logs.items()
        (tmp_path / name).write_text(text)
        log = read_upstream_log(tmp_path / name, "nginx")
        assert len(log.workers) == 4, log.workers
        view = "shared" if zone else "worker"
        res = check_lb(log, "least-request", alpha=0.001, whole_run=True, view=view)
        assert res.consistent, (zone, res.verdict)
        found = identify(log, whole_run=True)
        assert (found.law, found.view) == ("least-request", view), found.sentence


def test_lab_compare_reports_its_progress_by_policy(monkeypatch):
    """lab compare printed nothing for minutes when piped; it now has a bar (lines every
    minute when piped) that moves by policy (issue 45).  The runs themselves are stubbed."""
    import cloudsched.lab.compare as lc

    monkeypatch.setattr(lc, "compare_one", lambda spec: ([], {}, spec.policy))
    seen: list[tuple[float, str]] = []
    _, _, lives = lc.compare_lab(
        LabSpec("random", **SMALL), ["random", "jiq"], progress=lambda f, s="": seen.append((f, s))
    )
    assert lives == ["random", "jiq"]
    assert seen == [(0.0, "random (0 of 2 policies)"), (0.5, "jiq (1 of 2 policies)")]
