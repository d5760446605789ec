"""Per-worker counts without ``$pid``: the number of NGINX workers inferred by likelihood.

Logs come from :mod:`cloudsched.testing.balancer_logs` with ``workers`` (each request to a
uniform worker, each worker choosing on its own counts), read without the ``$pid`` field.
"""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb_counts import levels_at_arrivals
from cloudsched.experiments.checklb_identify import CLEAR, identify
from cloudsched.experiments.checklb_laws import loglik, parse_law, ranks
from cloudsched.experiments.checklb_workers import infer_workers, worker_loglik
from cloudsched.testing.balancer_logs import balancer_log

#: The lab's NGINX format without ``$pid``'s meaning: the worker is read as ignored.
pytestmark = pytest.mark.xdist_group("checklb_workers")  # one process compiles the filter

NO_PID = "$msec $request_time $upstream_addr $status $upstream_response_time $ignored"


def _log(tmp_path, lines, log_format=None):
    path = tmp_path / "access.log"
    path.write_text("\n".join(lines) + "\n")
    return read_upstream_log(path, "nginx", log_format=log_format, end_slack=0.0, resolution=0)


@pytest.mark.parametrize(
    "law",
    [
        "least-request",
        pytest.param("pod:2", marks=pytest.mark.slow),
        pytest.param("pod:3r", marks=pytest.mark.slow),
    ],
)
def test_one_worker_is_the_shared_likelihood(tmp_path, law):
    """With one worker nothing is hidden: the filter's likelihood is the exact one."""
    lines = balancer_log(law, k=6, load=0.85, requests=3000, seed=4)
    log = _log(tmp_path, lines)
    total, scored = worker_loglik(log, law, 1, whole_run=True)
    levels = levels_at_arrivals(log.sent, log.end, log.upstream, 6, log.end_slack)
    chosen = levels[np.arange(log.upstream.size), log.upstream]
    exact = loglik(parse_law(law), ranks(levels, chosen), 6) * log.upstream.size
    assert scored == 3000
    assert total == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("law", "workers"),
    [
        ("least-request", 4),
        pytest.param("least-request", 2, marks=pytest.mark.slow),
        pytest.param("pod:2", 3, marks=pytest.mark.slow),
    ],
)
def test_the_number_of_workers_is_inferred(tmp_path, law, workers):
    """A window of a run, the worker not in the log: the count and the law are named."""
    lines = balancer_log(
        law, k=8, load=0.9, requests=12000, seed=workers, workers=workers, window=(0.2, 0.8)
    )
    log = _log(tmp_path, lines, NO_PID)
    assert log.worker is None
    found = infer_workers(log)
    assert (found.law, found.best) == (law, workers), found.sentence
    assert found.evidence >= CLEAR and found.total[workers] - found.total[1] >= CLEAR
    again = infer_workers(log)
    assert again.total == found.total  # seeded: the same numbers every run
    named = identify(log, workers=True)
    assert named.workers == workers and named.inferred is not None
    assert f"in each of {workers} worker processes" in named.sentence


def test_one_process_is_not_split(tmp_path):
    log = _log(tmp_path, balancer_log("least-request", k=8, load=0.9, requests=8000, seed=9))
    found = infer_workers(log, whole_run=True)
    assert found.best == 1 and found.evidence >= CLEAR
    named = identify(log, workers=True, whole_run=True)
    assert named.inferred is None and named.law == "least-request"


def test_too_many_upstreams_are_not_searched_and_the_note_says_so(tmp_path):
    from cloudsched.experiments.checklb_workers import MAX_UPSTREAMS

    k = MAX_UPSTREAMS + 6
    lines = balancer_log("least-request", k=k, load=0.8, requests=4000, seed=2, workers=2)
    named = identify(_log(tmp_path, lines, NO_PID), workers=True)
    assert named.inferred is None
    assert any(f"more than {MAX_UPSTREAMS} upstreams" in n for n in named.notes)
