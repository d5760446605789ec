"""``check-lb --expect least-time``: NGINX least_time's choices rebuilt from its log.

Logs come from :mod:`cloudsched.testing.balancer_logs`, whose least_time is written from
NGINX's module (an independent state machine: averages, checks, round robin among ties).
"""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch.balancers.ngx_time import ngx_cluster
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_ltime import _bounds
from cloudsched.testing.balancer_logs import balancer_log

pytestmark = pytest.mark.xdist_group("checklb_ltime")  # one process compiles the scan


def _log(tmp_path, law, *, k=8, load=0.6, window=(0.2, 0.8), speeds=None, **kw):
    speeds = speeds or [1.0] * (k // 2) + [0.5] * (k - k // 2)  # half the upstreams slower
    lines = balancer_log(
        law, k=k, load=load, requests=12000, milliseconds=True, speeds=speeds, window=window, **kw
    )
    path = tmp_path / "access.log"
    path.write_text("\n".join(lines) + "\n")
    return read_upstream_log(path, "nginx")


def test_the_bounds_are_the_clusters_least_and_largest():
    """Brute force over every whole millisecond between the two averages."""
    rng = np.random.default_rng(0)
    for _ in range(400):
        lo = float(rng.integers(0, 6000))
        hi = lo + float(rng.integers(0, 300 if rng.random() < 0.7 else 3000))
        values = [ngx_cluster(float(x)) for x in range(int(lo), int(hi) + 1)]
        assert _bounds(lo, hi) == (min(values), max(values)), (lo, hi)


@pytest.mark.parametrize(
    ("k", "load", "fail", "whole"), [(8, 0.6, 10, False), (16, 0.6, 2, False), (4, 0.3, 10, True)]
)
def test_true_least_time_has_no_inconsistent_choice(tmp_path, k, load, fail, whole):
    log = _log(tmp_path, "least-time", k=k, load=load, seed=k, fail_timeout=fail,
               window=None if whole else (0.2, 0.8))  # fmt: skip
    opts = [f"fail-timeout={fail}s", "service-time=1s"]
    res = check_lb(log, "least-time", options=opts, whole_run=whole)
    assert res.inconsistent == 0 and res.consistent, res.verdict
    assert res.requests > 0.6 * log.upstream.size
    assert f"fail_timeout {fail} s" in res.verdict


@pytest.mark.parametrize(
    ("law", "speeds"),
    [("least-request", None), ("least-request", [1.0] * 8), ("pod:2", None), ("random", None)],
)
def test_other_laws_are_not_least_time(tmp_path, law, speeds):
    """Least connections too, at equal speeds: the 20 ms clusters order them otherwise."""
    res = check_lb(_log(tmp_path, law, seed=3, speeds=speeds), "least-time")
    assert not res.consistent and res.statistic < 0.9, res.verdict
    assert res.verdict.startswith("NOT least-time")


def test_what_a_log_cannot_check_is_refused(tmp_path, capsys):
    path = tmp_path / "a.log"
    path.write_text("\n".join(balancer_log("least-time", k=4, load=0.5, requests=500, seed=1)))
    common = ["check-lb", str(path), "--trace-format", "nginx"]
    for extra, named in [
        (["--expect", "least-time", "-o", "inflight=on"], "inflight"),
        (["--expect", "least-request", "-o", "fail-timeout=2s"], "option"),
    ]:
        with pytest.raises(SystemExit) as exc:
            main([*common, *extra])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and named in err and len(err.splitlines()) == 1, err


def test_header_mode_reads_the_logged_header_time(tmp_path):
    """least_time header averages the time to the response header: with
    $upstream_header_time in the log it is read (batch and line readers alike), without it
    the whole response's time departs, and the note says what to log."""
    fmt = "$msec $request_time $upstream_addr $status $upstream_response_time"
    lines = balancer_log(
        "least-time", k=8, load=0.6, requests=12000, seed=5, milliseconds=True,
        speeds=[1.0] * 4 + [0.5] * 4, window=(0.2, 0.8), header_share=0.3,
    )  # fmt: skip
    path = tmp_path / "access.log"
    path.write_text("\n".join(lines) + "\n")
    with_header = read_upstream_log(path, "nginx", log_format=fmt + " $upstream_header_time")
    slow = read_upstream_log(path, "nginx", log_format=fmt + " $upstream_header_time", fast=False)
    assert np.array_equal(with_header.header, slow.header)
    res = check_lb(with_header, "least-time")
    assert res.consistent and res.inconsistent == 0, res.verdict
    assert not check_lb(with_header, "least-time", options=["mode=last_byte"]).consistent
    without = check_lb(read_upstream_log(path, "nginx", log_format=fmt + " $x"), "least-time")
    assert not without.consistent
    assert any("add $upstream_header_time" in n for n in without.notes)
