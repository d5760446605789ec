"""``check-lb``: a balancer's log tested against the law its config names.

The logs come from :mod:`cloudsched.testing.balancer_logs`, a proxy simulated with a known
policy: the test must accept the true law and reject every other one, and the counts it
rebuilds must be those a brute-force count gives.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch.workload.logfiles import TraceError
from cloudsched.dispatch.workload.upstreams import detect_upstream_format, read_upstream_log
from cloudsched.errors import ParameterError
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_counts import levels_at_arrivals, unresolved_arrivals
from cloudsched.experiments.checklb_laws import parse_law
from cloudsched.testing.balancer_logs import balancer_log

LAWS = ["random", "pod:2", "pod:2r", "pod:3", "least-request", "round-robin", "jiq"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """One log of 15,000 requests over 8 upstreams at load 0.8 per law (seeded): enough to
    tell pod(2) with replacement from pod(2) without (p about 1e-14 either way)."""
    out = {}
    for k, law in enumerate(LAWS):
        path = tmp_path_factory.mktemp("logs") / f"{law}.log"
        lines = balancer_log(law, k=8, load=0.8, requests=15000, seed=20 + k)
        path.write_text("\n".join(lines) + "\n")
        out[law] = read_upstream_log(path, "nginx", end_slack=0.0)  # exact times
    return out


@pytest.mark.parametrize("truth", LAWS)
def test_the_true_law_is_accepted_and_every_other_rejected(logs, truth):
    for expect in LAWS:
        res = check_lb(logs[truth], expect)
        if expect == truth:
            assert res.consistent, res.verdict
        else:
            assert not res.consistent, (truth, res.verdict)
            if res.p_value is not None:
                assert res.p_value < 1e-6, (truth, expect, res.p_value)
    if truth != "round-robin":
        best = check_lb(logs[truth], "random").best_fit
        assert best == truth or (truth == "pod:3" and best in ("pod:3", "pod:3r")), best


@pytest.mark.parametrize("fmt", ["envoy", "envoy-json"])
def test_envoy_logs_in_milliseconds_give_the_true_law(tmp_path, fmt):
    """Envoy truncates START_TIME and DURATION to the millisecond: at 20 ms of service, 8
    upstreams and 640 requests/s many arrivals have another request's end within the
    clock's reach.  Counting them anyway (resolution 0) rejects the true law of the
    deterministic choices (least-request, jiq); leaving them out accepts every true law.
    """
    for k, truth in enumerate(["pod:2r", "least-request", "jiq"]):
        path = tmp_path / f"{truth}.log"
        lines = balancer_log(
            truth, k=8, load=0.8, requests=8000, seed=40 + k, mean_service=0.02, fmt=fmt
        )
        path.write_text("\n".join(lines) + "\n")
        log = read_upstream_log(path, fmt)
        assert log.resolution == 1e-3 and len(log.names) == 8
        res = check_lb(log, truth)
        assert res.consistent and res.left_out > 1000, res.verdict
        assert res.requests + res.left_out == 8000
        assert not check_lb(log, "random").consistent
        if truth != "pod:2r":
            naive = check_lb(read_upstream_log(path, fmt, resolution=0.0), truth)
            assert not naive.consistent, naive.verdict


def test_unresolved_arrivals_by_brute_force():
    """An arrival is left out when another start is within one resolution of it, or an end
    within (two before, one after); its own end does not count."""
    rng = np.random.default_rng(5)
    sent = 1.7e9 + np.sort(rng.integers(0, 3000, 400)) / 1e3  # whole milliseconds
    end = sent + rng.integers(0, 40, 400) / 1e3
    got = unresolved_arrivals(sent, end, 1e-3)
    for i in range(sent.size):
        others = np.arange(sent.size) != i
        gap_s = np.round((sent[others] - sent[i]) * 1e3)
        gap_e = np.round((end[others] - sent[i]) * 1e3)
        want = bool(np.any(np.abs(gap_s) < 1) or np.any((gap_e > -2) & (gap_e < 1)))
        assert got[i] == want, i
    assert not unresolved_arrivals(sent, end, 0.0).any()


def test_a_policy_with_the_right_mean_but_the_wrong_law_is_rejected(tmp_path):
    """The least loaded 60% of the time, the most loaded otherwise: its mean transform
    under random is within the margin of 0.5, its distribution far from uniform."""
    path = tmp_path / "extremes.log"
    lines = balancer_log("extremes", k=8, load=0.8, requests=15000, seed=3)
    path.write_text("\n".join(lines) + "\n")
    res = check_lb(read_upstream_log(path, "nginx", end_slack=0.0), "random")
    assert abs(res.mean_f - 0.5) < 0.015 and res.statistic > 0.2
    assert not res.consistent and res.p_value < 1e-100, res.verdict


def test_unequal_draws_are_named(tmp_path):
    """A random balancer that draws one of 8 upstreams twice as often (as HAProxy's random
    does on its consistent-hash ring) is not random, and the note says why."""
    path = tmp_path / "skewed.log"
    path.write_text("\n".join(balancer_log("skewed", k=8, load=0.7, requests=6000, seed=4)))
    res = check_lb(read_upstream_log(path, "nginx"), "random")
    assert not res.consistent
    assert any("upstreams are not chosen equally often" in n for n in res.notes), res.notes
    assert max(res.shares.values()) == pytest.approx(2 / 9, abs=0.02)
    fair = tmp_path / "random.log"
    fair.write_text("\n".join(balancer_log("random", k=8, load=0.7, requests=6000, seed=4)))
    res = check_lb(read_upstream_log(fair, "nginx"), "random")
    assert res.consistent and not any("equally" in n for n in res.notes)


def test_the_resolution_is_the_logs_clock_step(tmp_path):
    path = tmp_path / "ms.log"
    path.write_text("1700000000.105 0.020 10.0.0.1:80 200\n1700000000.110 0.004 10.0.0.2:80 200\n")
    assert read_upstream_log(path, "nginx").resolution == pytest.approx(1e-3)
    path.write_text(
        "1700000000.105001 0.020000 10.0.0.1:80 200\n1700000000.2 0.004123 10.0.0.2:80 200\n"
    )
    assert read_upstream_log(path, "nginx").resolution == pytest.approx(1e-6)  # the coarsest
    assert read_upstream_log(path, "nginx", resolution=0.0).resolution == 0.0


def test_the_direction_of_a_departure_is_named(logs):
    """pod:2's choices are less loaded than random's and more loaded than a full scan's."""
    assert check_lb(logs["pod:2"], "random").mean_f < 0.5
    assert check_lb(logs["pod:2"], "least-request").mean_f > 0.5
    assert "picks less-loaded upstreams than random" in check_lb(logs["pod:2"], "random").verdict


def test_the_rebuilt_counts_are_brute_force_counts(logs):
    log = logs["random"]
    n = 600
    sent, end, up = log.sent[:n], log.end[:n], log.upstream[:n]
    got = levels_at_arrivals(sent, end, up, len(log.names))
    for i in range(0, n, 37):
        others = (np.arange(n) != i) & (sent <= sent[i]) & (end > sent[i])
        tie = (sent == sent[i]) & (np.arange(n) > i)  # sent at the same instant, later in order
        want = np.bincount(up[others & ~tie], minlength=len(log.names))
        assert np.array_equal(got[i], want)


def test_haproxy_lines_give_servers_and_times(tmp_path):
    path = tmp_path / "h.log"
    path.write_text(
        "Dec  1 18:00:00 lb haproxy[1]: 10.0.0.9:5000 [01/Dec/2026:18:00:00.100] fe be/s1 "
        '0/0/1/20/25 200 100 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"\n'
        "10.0.0.9:5001 [01/Dec/2026:18:00:00.110] fe be/s2 2/3/1/20/40 200 100 - - ---- "
        '1/1/0/0/0 0/0 "GET / HTTP/1.1"\n'
        "10.0.0.9:5002 [01/Dec/2026:18:00:00.120] fe be/<NOSRV> -1/-1/-1/-1/0 503 0 - - SC-- "
        '1/1/0/0/0 0/0 "GET / HTTP/1.1"\n'
    )
    log = read_upstream_log(path, "haproxy")
    assert log.names == ("be/s1", "be/s2") and log.dropped == 1
    assert log.sent[1] - log.sent[0] == pytest.approx(0.015, abs=1e-6)  # accept + TR + Tw
    assert log.end - log.sent == pytest.approx([0.025, 0.035], abs=1e-6)


def test_logs_beyond_the_memory_limit_are_refused(logs, monkeypatch, tmp_path):
    import cloudsched.resources as resources

    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "1M")
    monkeypatch.setattr(resources, "_resident", lambda: 0)
    with pytest.raises(ParameterError, match="log must be small enough to fit in memory"):
        check_lb(logs["random"], "random")  # 15,000 requests x 8 upstreams x 12 bytes
    big = tmp_path / "big.log"
    big.write_text("1.0 0.1 10.0.0.1:80 200\n" * 20_000)
    with pytest.raises(ParameterError, match="small enough to fit in memory"):
        read_upstream_log(big, "nginx")


def test_refusals():
    with pytest.raises(ParameterError, match="expect must be random, least-request"):
        parse_law("p2c")
    with pytest.raises(ParameterError, match="log_format must be an NGINX format with"):
        read_upstream_log("x.log", "nginx", log_format="$msec $status")


def test_envoy_lines_and_their_refusals(tmp_path):
    path = tmp_path / "e.log"
    head = '"GET / HTTP/1.1" 200 - 0 10'
    path.write_text(
        f'[2026-12-01T18:00:00.100Z] {head} 25 24 "-" "curl" "id1" "api" "10.0.0.1:80"\n'
        f'[2026-12-01T18:00:00.110Z] {head} 40 - "-" "a \\"quoted\\" agent" "id2" "api" '
        '"10.0.0.2:80"\n'
        f'[2026-12-01T18:00:00.120Z] {head} 3 - "-" "curl" "id3" "api" "-"\n'
    )
    log = read_upstream_log(path, "envoy")
    assert log.names == ("10.0.0.1:80", "10.0.0.2:80") and log.dropped == 1
    assert log.end - log.sent == pytest.approx([0.025, 0.040], abs=1e-6)
    assert log.sent[1] - log.sent[0] == pytest.approx(0.010, abs=1e-6)
    whole = tmp_path / "w.log"
    whole.write_text(
        '{"start_time": "2026-12-01T18:00:00Z", "duration": 5, "upstream_host": "a"}\n'
    )
    with pytest.raises(TraceError, match="START_TIME has whole seconds"):
        read_upstream_log(whole, "envoy-json")
    whole.write_text('{"start_time": "2026-12-01T18:00:00.100Z", "duration": 5}\n')
    with pytest.raises(TraceError, match="this Envoy JSON log records no upstream_host"):
        read_upstream_log(whole, "envoy-json")
    assert detect_upstream_format(path) == "envoy" and detect_upstream_format(whole) == "envoy-json"
    whole.write_text("hello\n")
    with pytest.raises(TraceError, match="in none of the formats check-lb reads"):
        detect_upstream_format(whole)


def test_the_cli_prints_a_verdict_and_writes_json(logs, tmp_path, capsys):
    path = tmp_path / "pod2.log"
    path.write_text("\n".join(balancer_log("pod:2", k=6, load=0.7, requests=2000, seed=3)) + "\n")
    argv = ["check-lb", str(path), "--trace-format", "nginx", "--end-slack", "0"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--expect", "pod:2"])
    out = capsys.readouterr().out
    assert exc.value.code in (0, None) and "verdict: consistent with pod:2" in out
    with pytest.raises(SystemExit):
        main([*argv, "--expect", "random", "--out", str(tmp_path / "r.json")])
    payload = json.loads((tmp_path / "r.json").read_text())
    assert payload["consistent"] is False and payload["best_fit"] == "pod:2"
    capsys.readouterr()
    envoy = tmp_path / "envoy.log"
    lines = balancer_log("pod:2r", k=6, load=0.7, requests=2000, seed=3, fmt="envoy")
    envoy.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit):  # the format read from the first line
        main(["check-lb", str(envoy), "--expect", "pod:2r", "--out", str(tmp_path / "e.json")])
    payload = json.loads((tmp_path / "e.json").read_text())
    assert payload["trace_format"] == "envoy" and payload["consistent"] is True
    assert payload["left_out"] > 0 and payload["requests"] + payload["left_out"] == 2000
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--expect", "pod:9"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "--expect must be pod:D" in err


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        ("nginx-sample", r"which records no upstream \(\$upstream_addr\): check-lb needs"),
        ("envoy-json-sample", r"records no upstream_host: check-lb needs the upstream"),
    ],
)
def test_a_shipped_log_without_upstreams_is_said_plainly(capsys, sample, message):
    """The shipped access logs without an upstream field (issue 45): the error said to give
    --log-format, which cannot help; it now says the log records no upstream."""
    with pytest.raises(SystemExit) as exc:
        main(["check-lb", sample])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert re.search(message, err), err


def test_the_shipped_upstream_sample_reads_as_least_request(capsys):
    """nginx-upstream-sample: the synthetic requests balanced by least_conn (the generator
    sends each to an upstream with the fewest in flight); check-lb finds a least-loaded
    upstream chosen for every request it can count and does not reject least-request,
    and rejects random (issue 45)."""
    with pytest.raises(SystemExit) as exc:
        main(["check-lb", "nginx-upstream-sample", "--expect", "least-request"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "least-loaded upstream chosen: 100.0% of requests" in out
    assert "verdict: consistent with least-request" in out and "over 4 upstreams" in out
    with pytest.raises(SystemExit) as exc:
        main(["check-lb", "nginx-upstream-sample", "--expect", "random"])
    assert "verdict: NOT random" in capsys.readouterr().out
