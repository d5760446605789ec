"""``check-lb --expect wlr``: Envoy's least request with weights, its bias and slow start.

The matrix of deadlines is checked against a linear program over the deadlines (the slow
reference); whole logs come from :mod:`cloudsched.testing.balancer_logs`, whose EDF is a
heap written from Envoy's source, independently of the matrix.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_edf import edf_violations
from cloudsched.testing.balancer_logs import balancer_log
from cloudsched.testing.edf_reference import edf_feasible

W8 = [4.0, 1.0, 1.0, 2.0, 1.0, 1.0, 3.0, 1.0]


def _weights(log, w):
    """``--weights`` for the generator's upstream ``u`` (10.0.0.{u + 1}:8080, or be/s{u + 1})."""
    name = "be/s{}" if log.names[0].startswith("be/") else "10.0.0.{}:8080"
    return ",".join(f"{name.format(u + 1)}={x:g}" for u, x in enumerate(w) if x != 1.0)


def _log(tmp_path, lines, fmt):
    path = tmp_path / "access.log"
    path.write_text("\n".join(lines) + "\n")
    return read_upstream_log(path, fmt, **({"end_slack": 0.0} if fmt == "nginx" else {}))


def _edf_run(rng, k, n, w):
    """Picks of a true EDF from random deadlines, with the increments it used."""
    deadline = rng.random(k) * 2
    picks = []
    for _ in range(n):
        p = int(np.argmin(deadline))
        picks.append(p)
        deadline[p] += 1 / w[p]
    up = np.array(picks)
    return up, 1 / w[up]


@pytest.mark.parametrize("seed", range(3))
def test_the_matrix_agrees_with_the_linear_program(seed):
    """Zero inconsistent picks exactly when the LP has a schedule: true runs, runs with
    one pick changed or two swapped, increments known exactly or only within intervals."""
    rng = np.random.default_rng(seed)
    infeasible = 0
    for _ in range(120):
        k, n = int(rng.integers(2, 6)), int(rng.integers(3, 25))
        w = rng.integers(1, 5, k).astype(float)
        up, inc = _edf_run(rng, k, n, w)
        change = rng.integers(3)
        if change == 1:
            up[rng.integers(n)] = rng.integers(k)
        elif change == 2:
            i = int(rng.integers(n - 1))
            up[[i, i + 1]] = up[[i + 1, i]]
        inc = 1 / w[up]
        lo, hi = inc, inc
        if rng.random() < 0.4:  # counts the log leaves unsure
            lo, hi = inc * rng.uniform(0.5, 1, n), inc * rng.uniform(1, 2, n)
        fresh = np.zeros(n, dtype=bool)
        fresh[0] = True
        bad, checked, _ = edf_violations(up, lo, hi, np.arange(n), fresh, k)
        lp = edf_feasible(up, lo, hi)
        assert (bad == 0) == lp, (up.tolist(), w.tolist())
        assert checked == n - 1
        infeasible += not lp
    assert 10 < infeasible < 110  # the cases test both answers


@pytest.mark.parametrize(
    ("fmt", "bias", "k", "ms", "load"),
    [
        ("nginx", 1.0, 8, False, 0.9),
        ("nginx", 0.0, 8, True, 0.3),  # bias 0 ignores load: weight 4 of 14 needs a light one
        ("envoy", 1.0, 8, False, 0.9),
        ("envoy-json", 2.0, 16, False, 0.9),
        ("haproxy", 1.0, 4, False, 0.9),
    ],
)
def test_true_wlr_windows_have_no_inconsistent_choice(tmp_path, fmt, bias, k, ms, load):
    """Windows of a long run, millisecond clocks (picks a step cannot order): every
    checked choice is one an EDF schedule makes."""
    w = (W8 * 2)[:k]
    lines = balancer_log(
        "wlr", k=k, load=load, requests=6000, seed=k, fmt=fmt, weights=w, active_bias=bias,
        window=(0.2, 0.8), milliseconds=ms,
    )  # fmt: skip
    log = _log(tmp_path, lines, fmt)
    res = check_lb(log, "wlr", weights=_weights(log, w), options=[f"active-request-bias={bias:g}"])
    assert res.inconsistent == 0 and res.consistent, res.verdict
    assert res.requests > 0.9 * len(lines), res.notes
    assert res.edges > 0


@pytest.mark.parametrize(
    ("law", "weights", "bias"),
    [
        ("pod:2r", W8, 1.0),
        ("least-request", W8, 1.0),
        ("random", W8, 1.0),
        ("wlr", [2.0, 1, 1, 1, 1, 1, 1, 1], 1.0),  # weights other than configured
        ("wlr", W8, 0.0),  # bias other than configured
    ],
)
def test_other_laws_and_other_configurations_are_not_wlr(tmp_path, law, weights, bias):
    lines = balancer_log(
        law, k=8, load=0.9, requests=4000, seed=7, weights=weights, active_bias=bias,
        window=(0.2, 0.8),
    )  # fmt: skip
    log = _log(tmp_path, lines, "nginx")
    res = check_lb(log, "wlr", weights=_weights(log, W8))
    assert not res.consistent and res.statistic < 0.9, res.verdict
    assert res.verdict.startswith("NOT wlr")


def test_slow_start_with_joins(tmp_path):
    """Two hosts join mid-run under slow start (each join rebuilds the schedule)."""
    lines = balancer_log(
        "wlr", k=8, load=0.9, requests=20000, seed=3, fmt="envoy", weights=W8,
        slow_start=(2.0, 2.0, 10.0), joins={0: 3.0, 3: 5.0},
    )  # fmt: skip
    log = _log(tmp_path, lines, "envoy")
    opts = ["service-time=1s", "slow-start-window=2s", "aggression=2"]
    res = check_lb(log, "wlr", weights=_weights(log, W8), options=opts)
    assert res.consistent and res.inconsistent <= 10, res.verdict
    assert "slow start 2 s (aggression 2, floor 10%)" in res.verdict


def test_equal_weights_are_p2c_and_the_least_loaded_share_is_reported(tmp_path):
    log = _log(tmp_path, balancer_log("pod:2r", k=8, load=0.9, requests=3000, seed=2), "nginx")
    res = check_lb(log, "wlr")
    assert res.consistent and res.expect == "wlr" and "P2C: tested as pod:2r" in res.notes[0]
    full = check_lb(
        _log(
            tmp_path, balancer_log("least-request", k=8, load=0.9, requests=3000, seed=2), "nginx"
        ),
        "least-request",
    )
    assert full.share_least_loaded == pytest.approx(1.0)
    assert 0.2 < res.share_least_loaded < 0.9  # P2C: often, not always, the least loaded


def test_cli_refuses_what_wlr_cannot_use(tmp_path, capsys):
    path = tmp_path / "a.log"
    path.write_text("\n".join(balancer_log("wlr", k=4, load=0.8, requests=800, seed=1,
                                           weights=[3, 1, 1, 1])) + "\n")  # fmt: skip
    common = ["check-lb", str(path), "--trace-format", "nginx"]
    cases = [
        (["--expect", "wlr", "--weights", "10.9.9.9:80=2"], "weights"),
        (["--expect", "wlr", "--weights", "10.0.0.1:8080=0"], "weights"),
        (["--expect", "pod:2", "--weights", "10.0.0.1:8080=2"], "weights"),
        (["--expect", "wlr", "-o", "decay=1s"], "decay"),
        (["--expect", "wlr", "--weights", "10.0.0.1:8080=3", "--advise"], "advise"),
    ]
    for extra, named in cases:
        with pytest.raises(SystemExit) as exc:
            main([*common, *extra])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2, err
        assert named in err and "Traceback" not in err and len(err.splitlines()) == 1, err
    with pytest.raises(SystemExit) as exc:
        main([*common, "--expect", "wlr", "--weights", "10.0.0.1:8080=3", "--format", "json"])
    assert exc.value.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["consistent"] and out["inconsistent"] == 0 and "10.0.0.1:8080=3" in out["schedule"]


def test_more_upstreams_than_the_schedule_check_takes_are_refused(tmp_path):
    from cloudsched.errors import ParameterError
    from cloudsched.experiments.checklb_edf import MAX_HOSTS

    k = MAX_HOSTS + 4
    lines = balancer_log("random", k=k, load=0.5, requests=3000, seed=1)
    log = _log(tmp_path, lines, "nginx")
    assert len(log.names) > MAX_HOSTS
    with pytest.raises(ParameterError, match=f"at most {MAX_HOSTS} upstreams"):
        check_lb(log, "wlr", weights=_weights(log, [2.0]))
