"""The verdict map: each balancer against least request, regime by regime."""

from __future__ import annotations

import pytest

from cloudsched.cli import main
from cloudsched.errors import ParameterError
from cloudsched.experiments.verdict import _compare, verdict_study


def test_a_verdict_needs_the_interval_of_the_difference_to_exclude_zero():
    base = {"mean": 2.0, "half_width": 0.06}
    # half-widths add in quadrature: 0.1 for 0.06 and 0.08
    assert _compare({"mean": 1.89, "half_width": 0.08}, base) == "better"
    assert _compare({"mean": 1.91, "half_width": 0.08}, base) == "tie"
    assert _compare({"mean": 2.11, "half_width": 0.08}, base) == "worse"
    assert _compare({"mean": 9.0, "half_width": None}, base) == "unknown"


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


def test_bad_regimes_and_policies_are_refused_in_one_line(capsys):
    with pytest.raises(ParameterError, match="--regime must be one of equal, mixed speeds"):
        verdict_study(regimes=["calm"])
    with pytest.raises(ParameterError, match="one of the production balancers"):
        verdict_study(policies=["jsq"])
    with pytest.raises(SystemExit) as exc:
        main(["verdict", "--policy", "pod"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "--policy must be one of the production balancers: ewma" in err
