"""``check-lb``: a balancer's log tested against the law its config names.

The logs come from :mod:`cloudsched.testing.balancer_logs`, a proxy simulated with a known
policy: the test must accept the true law and reject every other one, and the counts it
rebuilds must be those a brute-force count gives.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.errors import ParameterError
from cloudsched.experiments.checklb import check_lb, levels_at_arrivals, parse_law
from cloudsched.testing.balancer_logs import balancer_log

LAWS = ["random", "pod:2", "pod:2r", "pod:3", "least-request", "round-robin"]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """One log of 15,000 requests over 8 upstreams at load 0.8 per law (seeded): enough to
    tell pod(2) with replacement from pod(2) without (p about 1e-14 either way)."""
    out = {}
    for k, law in enumerate(LAWS):
        path = tmp_path_factory.mktemp("logs") / f"{law}.log"
        lines = balancer_log(law, k=8, load=0.8, requests=15000, seed=10 + k)
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
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--expect", "pod:9"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "--expect must be pod:D" in err
