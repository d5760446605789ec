"""``check-lb --advise``: the log replayed under each law its balancer offers.

The logs come from :mod:`cloudsched.testing.balancer_logs`, a proxy in front of
single-server FCFS upstreams with exponential service: the service times recovered from
the log must be that law's, and the advice must follow the p99s with their intervals.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from cloudsched.cli import main
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb_advise import advise_from_log, law_policy, service_times
from cloudsched.testing.balancer_logs import balancer_log


def _log(tmp_path, lines, name="a.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return read_upstream_log(path, "nginx", end_slack=0.0)


def test_service_times_are_recovered_from_first_come_first_served_upstreams(tmp_path):
    """Exponential services of mean 100 ms at load 0.8 on 6 upstreams: the recovered
    services have that mean (a 99.9% interval) and an exponential's spread (KS), though
    the logged times include the waits (their mean is several times larger)."""
    log = _log(tmp_path, balancer_log("pod:2", k=6, load=0.8, requests=20000, seed=9))
    s = service_times(log.sent, log.end, log.upstream)
    half = stats.norm.ppf(0.9995) * s.std(ddof=1) / np.sqrt(s.size)
    assert abs(s.mean() - 0.1) < half
    assert stats.kstest(s, "expon", args=(0, 0.1)).pvalue > 1e-3
    assert (log.end - log.sent).mean() > 1.5 * s.mean()


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_a_random_balancer_is_advised_to_look_at_the_loads(tmp_path):
    """NGINX random at load 0.8 on 8 upstreams: least_conn's p99 is lower with a 95%
    interval of the change below zero; a least_conn log is told to keep it."""
    lines = balancer_log("random", k=8, load=0.8, requests=12000, seed=4, milliseconds=True)
    advice = advise_from_log(_log(tmp_path, lines), "nginx", "random", seed=1)
    assert advice.load == pytest.approx(0.8, abs=0.05)
    assert advice.advice in ("least-request", "pod:2"), advice.sentence("nginx")
    row = next(r for r in advice.rows if r["law"] == advice.advice)
    assert row["change_high"] < 0
    assert advice.sentence("nginx").startswith("advice: random; -> ")
    lines = balancer_log("least-request", k=8, load=0.8, requests=12000, seed=4)
    keep = advise_from_log(_log(tmp_path, lines), "nginx", "least-request", seed=1)
    assert keep.advice == "least-request" and "keep least_conn;" in keep.sentence("nginx")


def test_no_advice_when_the_upstreams_are_never_idle(tmp_path):
    """Back-to-back requests keep both upstreams busy: a replay load near 1 is refused."""
    lines = [f"{1.7e9 + 0.01 * (i + 2):.3f} 0.020 10.0.0.{i % 2 + 1}:80 200" for i in range(400)]
    advice = advise_from_log(_log(tmp_path, lines), "nginx", "round-robin")
    assert advice.advice is None and "cannot advise" in advice.sentence("nginx")


def test_every_law_replays_as_its_simulator_policy():
    assert law_policy("least-request") == ("jsq", 1, False)
    assert law_policy("pod:3r") == ("pod", 3, True) and law_policy("pod:2") == ("pod", 2, False)
    assert law_policy("random")[0] == "random" and law_policy("jiq")[0] == "jiq"


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_the_cli_writes_the_advice(tmp_path, capsys):
    path = tmp_path / "r.log"
    lines = balancer_log("random", k=8, load=0.8, requests=12000, seed=4, milliseconds=True)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit):
        main(["check-lb", str(path), "--advise", "--out", str(tmp_path / "a.json")])
    payload = json.loads((tmp_path / "a.json").read_text())
    assert payload["identified"]["law"] == "random"
    assert payload["advice"]["current"] == "random"
    assert payload["advice"]["sentence"].startswith("advice: random; -> ")
    assert {row["law"] for row in payload["advice"]["laws"]} == {
        "round-robin",
        "random",
        "pod:2",
        "least-request",
    }


def test_a_tie_keeps_the_current_law_and_says_so():
    from cloudsched.experiments.checklb_advise import Advice, _conclude

    out = Advice("random")
    out.rows = [
        {"law": "random", "p99": 0.2, "p99_low": 0.19, "p99_high": 0.21},
        {"law": "least-request", "p99": 0.2, "p99_low": 0.19, "p99_high": 0.21},
    ]
    _conclude(out, {"random": None, "least-request": None})
    assert out.advice == "random" and "or tied" in out.sentence("nginx")
    assert out.sentence("nginx").startswith("advice: keep random;")


def test_the_current_laws_options_reach_the_replay_in_seconds(tmp_path):
    """The replay runs in seconds: a production balancer's durations (NGINX least_time's
    millisecond clock, peak EWMA's decay) need a mean service time of one second."""
    from cloudsched.experiments.checklb_advise import _options

    assert _options("least-time", ["fail-timeout=2s"]) == ["service-time=1s", "fail-timeout=2s"]
    assert _options("ewma", None) == ["service-time=1s"]
    assert _options("jsq", ["decay=1s"]) is None  # a law without options takes none
