"""``check-lb --expect ewma``: tower's (Linkerd's) peak EWMA behind power of two choices.

Logs come from :mod:`cloudsched.testing.balancer_logs`, whose peak EWMA is written from
tower's source (reads and updates of every estimate, both drawn upstreams read).
"""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_counts import levels_at_arrivals
from cloudsched.experiments.checklb_ewma import ewma_levels
from cloudsched.experiments.checklb_identify import CLEAR, identify
from cloudsched.testing.balancer_logs import balancer_log

pytestmark = pytest.mark.xdist_group("checklb_ewma")  # one process compiles the costs


def _log(tmp_path, law, *, k=8, decay=10.0, requests=20000, window=(0.2, 0.8), seed=1, fmt="nginx"):
    speeds = [1.0] * (k // 2) + [0.5] * (k - k // 2)
    lines = balancer_log(
        law, k=k, load=0.6, requests=requests, seed=seed, speeds=speeds, decay=decay,
        window=window, fmt=fmt,
    )  # fmt: skip
    path = tmp_path / "access.log"
    path.write_text("\n".join(lines) + "\n")
    return read_upstream_log(path, fmt, **({"end_slack": 0.0} if fmt == "nginx" else {}))


def test_over_two_upstreams_the_costs_are_exact(tmp_path):
    """Both upstreams are read at every choice, so the rebuilt costs are tower's own: the
    chosen upstream's is never the larger (a tie goes to the first drawn)."""
    log = _log(tmp_path, "ewma", k=2, decay=2.0, requests=6000, window=None)
    levels = levels_at_arrivals(log.sent, log.end, log.upstream, 2, log.end_slack)
    ranked, settled = ewma_levels(log, levels, 2.0, 0.03, whole_run=True)
    assert settled.all()
    chosen = ranked[np.arange(log.upstream.size), log.upstream]
    assert (chosen == 0).all()
    wrong, _ = ewma_levels(log, levels, 0.5, 0.03, whole_run=True)  # another decay
    assert (wrong[np.arange(log.upstream.size), log.upstream] > 0).sum() > 50


@pytest.mark.parametrize(
    ("decay", "window", "fmt"),
    [(10.0, (0.2, 0.8), "nginx"), (1.0, None, "nginx"), (10.0, (0.2, 0.8), "envoy")],
)
def test_true_peak_ewma_is_consistent(tmp_path, decay, window, fmt):
    log = _log(tmp_path, "ewma", decay=decay, window=window, fmt=fmt)
    res = check_lb(log, "ewma", options=[f"decay={decay:g}s"], whole_run=window is None)
    assert res.consistent and not res.small, res.verdict
    assert any("peak EWMA with decay" in n for n in res.notes)


@pytest.mark.parametrize(
    ("law", "decay", "given"),
    [("ewma", 1.0, "10s"), ("pod:2", 10.0, "10s"), ("least-request", 10.0, "10s")],
)
def test_another_decay_or_law_is_not_that_ewma(tmp_path, law, decay, given):
    res = check_lb(_log(tmp_path, law, decay=decay, seed=2), "ewma", options=[f"decay={given}"])
    assert not res.consistent and res.p_value < 1e-6, res.verdict


@pytest.mark.parametrize(
    "decay",
    [3.0, pytest.param(1.0, marks=pytest.mark.slow), pytest.param(10.0, marks=pytest.mark.slow)],
)
def test_the_decay_is_identified(tmp_path, decay):
    log = _log(tmp_path, "ewma", decay=decay, requests=40000, seed=2)
    found = identify(log)
    assert found.law == "ewma" and found.options == [f"decay={decay:g}s"], found.sentence
    assert found.evidence >= CLEAR
    best = found.decays[decay]
    assert all(best - v >= CLEAR for d, v in found.decays.items() if d != decay)


def test_count_laws_are_not_named_ewma(tmp_path):
    found = identify(_log(tmp_path, "pod:2", requests=40000, seed=2))
    assert found.law == "pod:2" and found.decays == {}


@pytest.mark.slow
def test_p_values_of_true_logs_are_not_small():
    """Twenty conforming windows (decays 3 and 10 s, 30,000 requests): each partner's read
    drawn from its law keeps the p-values uniform (leaving the reads out gave 1e-5 on
    such a log).  Under uniform p-values, three or more of 20 below 0.01 has chance 0.001."""
    import tempfile
    from pathlib import Path

    small = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(20):
            decay = (3.0, 10.0)[seed % 2]
            log = _log(Path(tmp), "ewma", decay=decay, requests=30000, seed=100 + seed)
            res = check_lb(log, "ewma", options=[f"decay={decay:g}s"])
            small += res.p_value < 0.01
    assert small <= 2, small


def test_a_window_shorter_than_the_burn_in_is_refused(tmp_path):
    from cloudsched.errors import ParameterError

    log = _log(tmp_path, "ewma", requests=600, window=(0.2, 0.8))  # a few seconds
    with pytest.raises(ParameterError, match="3 decay times"):
        check_lb(log, "ewma")
    assert check_lb(log, "ewma", whole_run=True).requests > 0  # read as a whole run


def test_the_decay_is_fitted_on_the_first_lines_of_a_long_log(tmp_path, monkeypatch):
    """Bounded memory: the decay's fit reads at most EWMA_LINES lines (here 30,000 of a
    40,000-line window), and still names it."""
    import cloudsched.experiments.checklb_identify as ident

    monkeypatch.setattr(ident, "EWMA_LINES", 30_000)
    log = _log(tmp_path, "ewma", decay=3.0, requests=60000, seed=2)
    assert log.upstream.size > 30_000
    found = identify(log)
    assert found.law == "ewma" and found.options == ["decay=3s"], found.sentence
    assert found.requests < 30_000
