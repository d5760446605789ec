"""The production balancers' laws, on small cases computed by hand.

The kernel is checked bit for bit against its plain-Python mirror in ``test_simulate.py``;
these tests check the rules themselves against what the balancers' sources say, on
schedules short enough to work out on paper: a fixed trace of tasks far apart (so that
every queue is empty when the next one arrives), servers of chosen speeds, and the server
each task went to read off the queue that grew.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cloudsched.dispatch import simulate
from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.dispatch.engines.servers.engine import ServersRun
from cloudsched.dispatch.options import resolve_options
from cloudsched.dispatch.workload.resolved import Trace, TraceSource
from cloudsched.errors import ParameterError

# Slow tier: each law compiles its balancer on the trace engine (20-60 s cold), which no
# other test needs; the default tier keeps the kernels' bit-for-bit check against their
# mirror (tests/test_simulate.py).
pytestmark = pytest.mark.slow


def dispatched(policy, speeds, arrivals, sizes, seed=0, **options):
    """Run ``policy`` on a trace and return (arrival time, server) of every task."""
    n = len(speeds)
    opt = tuple(resolve_options(policy, {k.replace("_", "-"): v for k, v in options.items()}))
    spec = RunSpec(policy, n, 1, 1.0, end_tasks=len(arrivals) - 1, opt=opt, record=False)
    source = TraceSource(Trace(np.asarray(arrivals, float), np.asarray(sizes, float)))
    run = ServersRun(spec, np.random.default_rng(seed), source, np.asarray(speeds, float))
    seen, before = [], run.qlen.copy()
    while not run.advance(1):
        after = run.qlen.copy()
        grew = np.flatnonzero(after > before)
        if grew.size:
            seen.append((float(run.st.fst[K.F_NOW]), int(grew[0])))
        before = after
    return seen


@pytest.mark.xdist_group("wlr")  # one process compiles its kernel
def test_wlr_with_weights_is_envoys_edf_schedule():
    """Weights 2 and 1, bias 0: Envoy's EDF picks 0, 1, 0 in every period of 3 (deadlines
    1/2, 1 | 1, 3/2 | 2, 2 ...; the lower order number first on a tie), after a uniform
    number of desynchronising picks: exactly 2:1 over any 3 consecutive tasks."""
    times = np.arange(3000) * 10.0
    seen = dispatched(
        "wlr", [2.0, 1.0], times, np.full(3000, 0.1), weights="speed", active_request_bias=0.0
    )
    servers = np.array([s for _, s in seen])
    windows = np.lib.stride_tricks.sliding_window_view(servers, 3)
    assert np.all(windows.sum(axis=1) == 1)  # one task of every three to the weight-1 server


@pytest.mark.xdist_group("wlr")  # one process compiles its kernel
def test_wlr_with_equal_weights_is_pod_two_with_replacement():
    """Envoy's unweighted least request (choice_count 2) draws hosts with replacement and
    keeps the first least active: pod(2) with replacement, draw for draw."""
    common = dict(servers=10, load=0.9, tasks=20_000, rng=3, keep_response_times=True)
    wlr = simulate("wlr", initial="empty", **common)
    pod = simulate("pod", d=2, with_replacement=True, initial="empty", **common)
    assert np.array_equal(wlr.response_times, pod.response_times)


@pytest.mark.xdist_group("least-time")  # one process compiles its kernel
def test_least_time_sends_nothing_to_a_slow_server_until_its_average_halves_twice():
    """NGINX least_time, three servers, 10 ms mean service, tasks 20 ms apart.

    All averages start at 0 (cluster 20 ms): the first three tasks go 0, 1, 2 by smooth
    round robin.  Server 2 (a quarter speed) answers in 40 ms: cluster 60 ms against the
    others' 20 ms, so it gets nothing more while its average is 40 ms.  Unchosen, it halves
    once per fail_timeout + 1 = 11 s of NGINX's clock: 20 ms after 11 s (cluster 40 ms,
    still worse), 10 ms after 22 s (cluster 20 ms, a tie again): its second task comes
    within one round of the three-way round robin from 22 s (2200 mean service times), no
    earlier.
    """
    times = np.arange(1500) * 2.0  # 20 ms apart: 30 s
    seen = dispatched("least-time", [1.0, 1.0, 0.25], times, np.ones(1500))
    to_slow = [t for t, s in seen if s == 2]
    assert [s for _, s in seen[:3]] == [0, 1, 2]
    assert to_slow[0] == 4.0 and to_slow[1] in (2200.0, 2202.0, 2204.0)
    fast = [s for t, s in seen[3:] if t < 2200.0]
    assert abs(fast.count(0) - fast.count(1)) <= 1  # round robin between the tied


def test_ewma_follows_the_peak_ewma_law_on_two_servers():
    """tower's peak EWMA behind P2C, two servers (P2C then always compares both).

    Tasks 20 apart, so nothing is in flight when one arrives and the cost is the estimate
    alone.  The law, applied by hand to the two estimates: every read (each arrival reads
    both) decays an estimate by exp(-dt / decay); a response slower than the estimate
    replaces it (the peak), a faster one is averaged in with weight 1 - exp(-dt / decay);
    the task goes to the lower estimate.  The slow server (a tenth of the speed) answers in
    10, the fast one in 1: after its peak the slow one is chosen again only when its
    decayed peak falls below the fast one's estimate, which reads keep pulling toward 0.
    """
    tau, gap, count = 200.0, 20.0, 1500
    times = np.arange(count) * gap
    for seed in range(3):
        seen = dispatched(
            "ewma", [1.0, 0.1], times, np.ones(count), seed=seed, decay=tau, default_rtt=0.5
        )
        est, stamp = [0.5, 0.5], [0.0, 0.0]
        predicted = []
        for k, t in enumerate(times):
            for s in (0, 1):  # the reads
                est[s] *= math.exp(-(t - stamp[s]) / tau)
                stamp[s] = t
            # the first choices may be ties, broken by the random order
            s = seen[k][1] if k < 2 else int(est[1] < est[0])
            predicted.append(s)
            rt = 1.0 if s == 0 else 10.0
            done = t + rt
            if est[s] < rt:
                est[s] = rt
            else:
                w = math.exp(-(done - stamp[s]) / tau)
                est[s] = est[s] * w + rt * (1 - w)
            stamp[s] = done
        assert [s for _, s in seen] == predicted[: len(seen)]
        assert len(seen) >= count - 1
        assert 3 <= predicted.count(1) < count // 10  # revisited, but rarely


@pytest.mark.xdist_group("wlr")  # one process compiles its kernel
def test_wlr_slow_start_ramps_a_joining_servers_share():
    """Envoy slow start: a host that joins at T gets weight x max(age / window, 10%).

    Two servers, bias 0 (the EDF follows the weights alone), window 1000: in the first
    tenth of the window the new host's share is 0.1 / 1.1 (the 10% floor), in the last
    tenth about 0.95 / 1.95, and after the window a half.
    """
    n_tasks = 8000
    times = np.arange(n_tasks) * 0.5
    seen = dispatched(
        "wlr",
        [1.0, 1.0],
        times,
        np.full(n_tasks, 0.01),
        join_count=1,
        join_time=1000.0,
        slow_start_window=1000.0,
        active_request_bias=0.0,
    )

    def share(lo, hi):
        picks = [s for t, s in seen if lo <= t < hi]
        return picks.count(1) / len(picks), len(picks)

    before, _ = share(0.0, 1000.0)
    assert before == 0.0  # unknown before it joins
    first, count = share(1000.0, 1100.0)
    assert first == pytest.approx(0.1 / 1.1, abs=2.0 / count)
    late, count = share(1900.0, 2000.0)
    assert late == pytest.approx(0.95 / 1.95, abs=0.03)
    after, count = share(2000.0, 4000.0)
    assert after == pytest.approx(0.5, abs=2.0 / count)


def test_clients_balance_over_their_own_subsets():
    """gRPC A68 random subsetting: with 3 clients of 2 servers each out of 12, every task
    goes to a server of its client's subset, so the servers that ever work are exactly the
    union of the subsets (each subset a uniform draw: over seeds every server is in some)."""
    n, clients, subset = 12, 3, 2
    ever_in = np.zeros(n, bool)
    for seed in range(40):
        opt = tuple(resolve_options("ewma", {"subset": subset}))
        spec = RunSpec("ewma", n, clients, 0.1, end_tasks=400, opt=opt, slots=subset, record=False)
        run = ServersRun(spec, np.random.default_rng(seed))
        chosen = set(run.st.mem[: clients * subset].tolist())
        worked = np.zeros(n, bool)
        while not run.advance(1):
            worked |= run.qlen > 0
        assert set(np.flatnonzero(worked).tolist()) == chosen
        ever_in[list(chosen)] = True
    assert ever_in.all()


def test_options_are_checked_in_one_line():
    with pytest.raises(ParameterError, match="decay of ewma must be a duration"):
        simulate("ewma", servers=4, load=0.5, tasks=10, options=["decay=soon"])
    with pytest.raises(ParameterError, match="pod takes no options"):
        simulate("pod", servers=4, load=0.5, tasks=10, options={"decay": "1s"})
    with pytest.raises(ParameterError, match=r"subset of wlr must be in \[0, 4\]"):
        simulate("wlr", servers=4, load=0.5, tasks=10, options={"subset": 5})
    with pytest.raises(ParameterError, match="one of header, last_byte"):
        simulate("least-time", servers=4, load=0.5, tasks=10, options={"mode": "first_byte"})


def test_wrr_learns_the_servers_speeds_after_the_blackout():
    """gRPC WRR, speeds 2 and 1, tasks of size 0.2 every 0.5 (queues empty at arrivals).

    Each server's report is its last full second's qps / utilisation: its speed.  No
    weight is usable before the blackout (10 s = 1000 after the first report, at the end of
    the first 1 s window): round robin, one task in two to each.  Once both weights are
    usable and the schedule rebuilt (on the 1 s grid), the static stride schedule holds
    weights 65535 and lround(65535 / 2) = 32768: the slow server's share is
    32768 / (65535 + 32768), a third.
    """
    count = 8000
    times = np.arange(count) * 0.5
    seen = dispatched("wrr", [2.0, 1.0], times, np.full(count, 0.2))

    def share(lo, hi):
        picks = [s for t, s in seen if lo <= t < hi]
        return picks.count(1), len(picks)

    slow, total = share(0.0, 1000.0)
    assert abs(2 * slow - total) <= 1  # round robin
    slow, total = share(1300.0, 4000.0)
    assert slow / total == pytest.approx(32768 / (65535 + 32768), abs=2 / total)


def test_prequal_prefers_the_cold_probe_with_the_lowest_latency():
    """Prequal, two fast servers and a slow one (a tenth of the speed), tasks far apart.

    A server's latency estimate is (RIF + 1) x its service-time estimate, 0 before its first
    completion: the slow server is tried early, and once its service time (10) is known its
    probes, cold or not, never beat a fast server's (at most 2) while the pool holds one,
    which three probes a query keep it doing: after its queue has drained (its last task
    sent by time 100) it gets nothing more.  The fast servers share the rest.
    """
    count = 3000
    times = np.arange(count) * 2.0
    for seed in range(3):
        seen = dispatched("prequal", [1.0, 1.0, 0.1], times, np.ones(count), seed=seed)
        late = [s for t, s in seen if t >= 100.0]
        assert 2 not in late
        assert abs(late.count(0) - late.count(1)) < 0.2 * len(late)


@pytest.mark.xdist_group("least-time")  # one process compiles its kernel
@pytest.mark.parametrize(
    ("n", "m", "load", "options"),
    [
        (1, 1, 0.8, {}),
        (7, 1, 0.9, {"fail-timeout": "1s", "service-time": "300ms"}),  # averages halve often
        (37, 3, 0.95, {"subset": 11, "join-count": 9, "join-time": 40.0}),
        (24, 2, 0.5, {"service-time": "1ms", "fail-timeout": "2s"}),  # many ties at 20 ms
        (5, 1, 1.6, {"service-time": "10s"}),  # overload: ties beyond the lazy counters
    ],
)
def test_least_time_tree_chooses_as_nginx_scans(n, m, load, options):
    """Equal weights without inflight: the kernel reads each choice off a tournament tree
    with lazy round-robin counters; the mirror scans every server as NGINX does.  Long runs
    (timers that halve averages, joins, subsets, clients, ties of every size and ties past
    the lazy counters in overload) give the same tasks to the same servers."""
    from cloudsched.dispatch.engines.servers.engine import run_once
    from cloudsched.dispatch.engines.servers.mirror import mirror_run

    opt = tuple(resolve_options("least-time", options))
    spec = RunSpec(
        "least-time", n, m, load, end_tasks=6000, opt=opt, slots=int(options.get("subset", 0))
    )
    fast = run_once(spec, np.random.default_rng(11), progress=None)
    slow = mirror_run(spec, np.random.default_rng(11))
    assert fast.events == slow.events
    assert np.array_equal(fast.response_times, slow.response_times)
