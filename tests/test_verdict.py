"""The verdict map: each balancer against least request, regime by regime."""

from __future__ import annotations

import pytest

from cloudsched.cli import main
from cloudsched.errors import ParameterError
from cloudsched.experiments.verdict import (
    _arguments,
    _compare,
    _stream,
    axis_regimes,
    check_regime,
    describe,
    verdict_study,
)


def test_a_verdict_needs_the_interval_of_the_difference_to_exclude_zero():
    base = {"mean": 2.0, "half_width": 0.06}
    # half-widths add in quadrature: 0.1 for 0.06 and 0.08
    assert _compare({"mean": 1.89, "half_width": 0.08}, base, "mean") == "better"
    assert _compare({"mean": 1.91, "half_width": 0.08}, base, "mean") == "tie"
    assert _compare({"mean": 2.11, "half_width": 0.08}, base, "mean") == "worse"
    assert _compare({"mean": 9.0, "half_width": None}, base, "mean") == "unknown"
    # by p99: its own interval decides (a tie by the mean can be a win by the tail)
    base |= {"p99": 8.0, "p99_half_width": 0.2}
    row = {"mean": 1.91, "half_width": 0.08, "p99": 7.5, "p99_half_width": 0.2}
    assert _compare(row, base, "mean") == "tie" and _compare(row, base, "p99") == "better"
    assert _compare(row | {"p99_half_width": None}, base, "p99") == "unknown"


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_least_time_beats_least_request_when_some_servers_are_slow():
    """NGINX's least_time scans every server and learns the slow ones' times: with a tenth of
    the servers four times slower it halves least request's mean (0.51x at N = 16); the
    verdict must say better, and least request is its own baseline."""
    study = verdict_study(
        servers=10, load=0.8, policies=["wlr", "least-time"], regimes=["slow 10%"], precision=0.1
    )
    assert study.row("slow 10%", "wlr")["vs"] == "baseline"
    row = study.row("slow 10%", "least-time")
    assert row["vs"] == "better" and row["ratio"] < 0.8
    assert study.findings == ["least-time against least request: better in slow 10%."]


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_the_p99_decides_with_its_own_interval_when_asked(capsys):
    """--metric p99: every row has the p99's 95% interval (20 sections of the run), the ratio
    is to least request's p99, and peak EWMA, which learns which servers are slow, cuts
    least request's p99 (about 0.5x with a tenth of the servers four times slower)."""
    study = verdict_study(
        servers=10,
        load=0.8,
        policies=["wlr", "ewma"],
        regimes=["slow 10%"],
        precision=0.1,
        metric="p99",
    )
    base, row = study.row("slow 10%", "wlr"), study.row("slow 10%", "ewma")
    for r in (base, row):
        assert r["p99_low"] < r["p99"] < r["p99_high"]
        assert r["p99_half_width"] == pytest.approx((r["p99_high"] - r["p99_low"]) / 2)
    assert row["ratio"] == pytest.approx(row["p99"] / base["p99"])
    assert row["vs"] == "better" and row["p99_high"] < base["p99_low"]
    assert study.findings == ["ewma against least request (by p99): better in slow 10%."]
    with pytest.raises(ParameterError, match="metric"):
        verdict_study(metric="p50")
    with pytest.raises(SystemExit) as exc:
        main(["verdict", "--metric", "median"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: --metric") and err.count("\n") == 1


def test_bad_regimes_and_policies_are_refused_in_one_line(capsys):
    with pytest.raises(ParameterError, match="--regime must be one of equal, mixed speeds"):
        verdict_study(regimes=["calm"])
    for bad, allowed in [
        ("proxies=0", "an integer in \\[1, 16\\]"),
        ("proxies=2.5", "an integer"),
        ("cv=0", "coefficient of variation"),
        ("half=1.5", "a speed"),
        ("slow=1", "a fraction"),
        ("refresh=-1", "a period"),
        ("refresh=x", "a period"),
        ("colour=2", "NAME=VALUE with NAME one of half, slow, cv, proxies, refresh"),
    ]:
        with pytest.raises(ParameterError, match=allowed):
            check_regime(bad, 16)
    with pytest.raises(ParameterError, match="--axis"):
        axis_regimes("proxies")
    with pytest.raises(ParameterError, match="one of the production balancers"):
        verdict_study(policies=["jsq"])
    with pytest.raises(SystemExit) as exc:
        main(["verdict", "--policy", "pod"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "--policy must be one of the production balancers: ewma" in err


def test_axes_make_the_arguments_they_name():
    assert axis_regimes("proxies=1, 8") == ["proxies=1", "proxies=8"]
    assert _arguments("proxies=8", 16, "ewma") == {"dispatchers": 8}
    assert _arguments("cv=4", 16, "ewma") == {"service": "lognormal:cv=4"}
    speeds = _arguments("slow=0.25", 16, "ewma")["speeds"]
    assert sorted(speeds.tolist()) == [0.25] * 4 + [1.0] * 12
    speeds = _arguments("half=0.5", 16, "ewma")["speeds"]
    assert sorted(speeds.tolist()) == [0.5] * 8 + [1.0] * 8
    assert _arguments("slow=0", 16, "ewma") == {}
    # polled reports reach the policies that read them, and only those
    assert _arguments("refresh=2", 16, "wlr") == {"policy": "pod", "refresh": 2.0}
    assert _arguments("refresh=2", 16, "wrr") == {"options": {"weight-update-period": 2.0}}
    assert _arguments("refresh=2", 16, "ewma") == {}
    assert _arguments("polled 2", 16, "wlr") == {"policy": "pod", "refresh": 2.0}
    assert describe("proxies=8") == "8 balancers, each with its own counts"


def test_each_run_has_its_own_stream_whatever_else_runs():
    a = _stream(3, "proxies=8", "ewma").generate_state(4)
    assert (a == _stream(3, "proxies=8", "ewma").generate_state(4)).all()
    assert not (a == _stream(3, "proxies=8", "wlr").generate_state(4)).all()
    assert not (a == _stream(3, "proxies=2", "ewma").generate_state(4)).all()
    assert not (a == _stream(4, "proxies=8", "ewma").generate_state(4)).all()
    # the named regimes keep the streams of the runs in the docs
    import numpy as np

    from cloudsched.policy_table import TABLE

    idx = 5 * len(TABLE) + list(TABLE).index("ewma")
    want = np.random.SeedSequence(0).spawn(6 * len(TABLE))[idx].generate_state(4)
    assert (_stream(0, "8 proxies", "ewma").generate_state(4) == want).all()


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_polled_reports_hurt_least_request_not_ewma():
    """With requests in flight read from reports polled every 8 mean service times, P2C
    sends a period's requests to the servers that were short when the report was taken;
    peak EWMA measures its own latencies and is unaffected: it must win, and least request
    must be worse than in the equal regime (its interval above equal's)."""
    study = verdict_study(
        servers=16,
        load=0.8,
        policies=["wlr", "ewma"],
        regimes=["equal", "refresh=8"],
        precision=0.05,
        seed=2,
    )
    polled, equal = study.row("refresh=8", "wlr"), study.row("equal", "wlr")
    assert polled["ci_low"] > equal["ci_high"]
    assert study.row("refresh=8", "ewma")["vs"] == "better"
