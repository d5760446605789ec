"""Servers that slow down and recover (--slowdown) and speeds given as a mix (--speeds F@S)."""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.dispatch import simulate
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.dispatch.engines.servers.engine import run_once
from cloudsched.dispatch.workload.resolved import Trace, TraceSource
from cloudsched.dispatch.workload.slowdown import Slowdown, parse_slowdown, speed_mix, spread
from cloudsched.errors import ParameterError


def test_a_service_keeps_the_speed_in_force_when_it_starts():
    """One server, half speed during [10, 20) and again every 30: tasks of size 1 that start
    at 0, 12, 19.5, 25 and 42 take 1, 2, 2 (started inside), 1 and 2 (the next period)."""
    arrivals = [0.0, 12.0, 19.5, 25.0, 42.0, 60.0]
    source = TraceSource(Trace(np.array(arrivals), np.ones(len(arrivals))))
    spec = RunSpec("random", 1, 1, 1.0, end_tasks=len(arrivals) - 1)
    slow = parse_slowdown("1:0.5@10-20/30")
    raw = run_once(spec, np.random.default_rng(0), None, source, np.ones(1), None, slow)
    assert raw.response_times.tolist() == [1.0, 2.0, 2.0, 1.0, 2.0]


def test_parse_and_refuse():
    assert parse_slowdown("0.1:0.2@2000-4000") == Slowdown(0.1, 0.2, 2000.0, 4000.0)
    assert parse_slowdown("0.5:3@0-50/500").period == 500.0
    for bad in ("0.1:0.2", "0:0.2@1-2", "0.1:0.2@5-2", "0.1:0.2@0-50/20", "1.5:1@0-1"):
        with pytest.raises(ParameterError, match=r"slowdown must be F:X@T0-T1\[/P\]"):
            parse_slowdown(bad)
    with pytest.raises(ParameterError, match="slowdown must be given without a trace"):
        trace = Trace(np.arange(3.0), np.ones(3))
        simulate("pod", servers=2, load=None, trace=trace, slowdown="0.5:0.5@0-1")
    with pytest.raises(ParameterError, match="'auto', 'servers' or 'general' with a slowdown"):
        simulate("pod", servers=10, load=0.5, tasks=100, engine="counts", slowdown="0.5:0.5@0-1")


def test_a_speed_mix_spreads_each_speed_evenly():
    speeds = speed_mix(20, "0.8@1,0.2@0.25")
    assert sorted(speeds.tolist()) == [0.25] * 4 + [1.0] * 16
    assert np.flatnonzero(speeds == 0.25).tolist() == spread(20, 4).tolist() == [2, 7, 12, 17]
    with pytest.raises(ParameterError, match="fractions F > 0 summing to 1"):
        speed_mix(10, "0.5@1,0.4@2")


def test_jsq_reading_a_board_never_refreshed_is_random_draw_for_draw():
    """Polled information: with a board published at time 0 (all queues empty) and never
    again, every server is among the shortest on it, so JSQ sends to a uniform server with
    the one draw random makes: the same response times, task for task."""
    common = dict(servers=10, load=0.8, tasks=20_000, rng=3, initial="empty")
    jsq = simulate("jsq", keep_response_times=True, refresh=1e9, **common)
    rnd = simulate("random", keep_response_times=True, **common)
    assert np.array_equal(jsq.response_times, rnd.response_times)


def test_old_information_makes_jsq_herd():
    """Mitzenmacher (2000), 'How useful is old information?': JSQ on a board refreshed every
    T sends all of a period's tasks to the few servers that were shortest; at N = 100, load
    0.9, a period of one mean service time is already worse than pod(2) reading the same
    board, and the gap grows with T."""
    common = dict(servers=100, load=0.9, rng=1, precision=0.03)
    for period in (1.0, 10.0):
        jsq = simulate("jsq", refresh=period, **common)
        pod = simulate("pod", refresh=period, **common)
        assert jsq.ci95[0] > pod.ci95[1]


def test_a_refresh_needs_a_policy_that_reads_lengths():
    with pytest.raises(ParameterError, match="refresh must be 0 unless the policy reads"):
        simulate("random", servers=4, load=0.5, tasks=10, refresh=1.0)
    with pytest.raises(ParameterError, match="'auto' or 'servers' with a refresh period"):
        simulate("pod", servers=4, load=0.5, tasks=10, refresh=1.0, engine="counts")
