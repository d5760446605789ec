import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.dispatch import POLICIES as BUILTIN_POLICIES
from cloudsched.dispatch import predict, simulate
from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.replication import InitialState, RunSpec
from cloudsched.dispatch.engines.servers import records as S
from cloudsched.dispatch.engines.servers.engine import ServersRun, run_once
from cloudsched.dispatch.engines.servers.mirror import mirror_run
from cloudsched.dispatch.options import resolve_options
from cloudsched.dispatch.workload.distributions import (
    BoundedPareto,
    Exponential,
    HyperExponential,
    LogNormal,
    Uniform,
)
from cloudsched.dispatch.workload.resolved import RenewalSource, Trace, TraceSource
from cloudsched.dispatch.workload.slowdown import Slowdown
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE

POLICIES = list(BUILTIN_POLICIES)
#: The papers' policies and the production balancers (their options: the table's).
PAPERS = [p for p in POLICIES if not TABLE[p].options]
BALANCERS = [p for p in POLICIES if TABLE[p].options]


SERVICE_LAWS = [
    Exponential(1.0),
    LogNormal(1.0, 1.5),
    HyperExponential(1.0, 2.0),
    Uniform(1.0, 0.3),
    BoundedPareto(1.0, 1.5, 50.0),
]
GAP_LAWS = [Exponential(1.0), HyperExponential(1.0, 3.0), LogNormal(1.0, 0.5), Uniform(1.0)]


@st.composite
def small_systems(draw, general=False, policies=None):
    policy = draw(st.sampled_from(policies or POLICIES))
    n = draw(st.integers(1, 12))
    m = draw(st.integers(1, n))
    d = draw(st.integers(1, m if policy == "jiq-sq" else n))
    z = draw(st.integers(0, 3))
    replace = draw(st.booleans())
    load = draw(st.floats(0.2, 1.3))
    horizon_mode = draw(st.booleans())
    if horizon_mode:
        t_end = draw(st.floats(5.0, 60.0))
        lengths = (0, -1, draw(st.floats(0.0, 0.5)) * t_end, t_end)
    else:
        tasks = draw(st.integers(1, 400))
        lengths = (draw(st.integers(0, tasks - 1)), tasks, -1.0, -1.0)
    seed = draw(st.integers(0, 2**32 - 1))
    micro = draw(st.sampled_from([16, 32, 64]))
    width = draw(st.integers(0, 4))  # 0: chosen from the run length; small ones force merges
    start = None
    if draw(st.booleans()):
        queues = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
        thresh = z if policy == "jiq-threshold" else 0
        iqueue = np.zeros(0, np.int64)
        if policy.startswith("jiq") and draw(st.booleans()):
            picks = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
            iqueue = np.where(queues <= thresh, np.array(picks, np.int64), -1)
        start = (queues, iqueue)
    workload = None
    if general:
        service = draw(st.sampled_from(SERVICE_LAWS))
        gap = draw(st.sampled_from(GAP_LAWS))
        speeds = np.random.default_rng(seed).uniform(0.5, 2.0, n) if draw(st.booleans()) else None
        trace_len = draw(st.one_of(st.none(), st.integers(2, 500)))
        chunk = draw(st.integers(1, 64))
        slowdown = None
        if draw(st.booleans()):  # some servers slow down for a while, then recover
            t0 = draw(st.floats(0.0, 20.0))
            slowdown = Slowdown(
                draw(st.sampled_from([0.25, 0.5, 1.0])),
                draw(st.sampled_from([0.1, 0.5, 3.0])),
                t0,
                t0 + (length := draw(st.floats(0.5, 30.0))),
                draw(st.sampled_from([0.0, 1.0])) * (length + draw(st.floats(0.1, 20.0))),
            )
        workload = (service, gap, speeds, trace_len, chunk, slowdown)
    opts = draw(balancer_options(policy, n)) if TABLE[policy].options else {}
    if TABLE[policy].pick in ("least", "least of d") and draw(st.booleans()):
        opts = {"refresh": draw(st.sampled_from([0.3, 2.0, 15.0]))}  # a published board
    return policy, n, m, load, d, z, replace, lengths, seed, (micro, width, start), workload, opts


@st.composite
def balancer_options(draw, policy, n):
    """Options of a production balancer, drawn where its rules branch (subsets, joins, ties)."""
    opts = {
        "subset": draw(st.integers(0, n)),
        "join-count": draw(st.integers(0, n - 1)),
        "join-time": draw(st.sampled_from([0.0, 2.0, 20.0])),
        "weights": draw(st.sampled_from(["equal", "speed"])),
        "service-time": draw(st.sampled_from(["1ms", "10ms", "300ms"])),
    }
    if policy == "ewma":
        opts["decay"] = draw(st.sampled_from([0.5, 5.0, 1000.0]))
        opts["default-rtt"] = draw(st.sampled_from([0.1, 3.0]))
    elif policy == "least-time":
        opts["inflight"] = draw(st.sampled_from(["off", "on"]))
        opts["fail-timeout"] = draw(st.sampled_from(["1s", "10s", 3.0]))
    elif policy == "prequal":
        opts["probe-rate"] = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
        opts["pool"] = draw(st.integers(1, 6))
        opts["reuse"] = draw(st.integers(1, 4))
        opts["max-age"] = draw(st.sampled_from([0.5, 5.0, 100.0]))
        opts["q-rif"] = draw(st.sampled_from([0.0, 0.5, 0.84, 1.0]))
    elif policy == "wrr":
        opts["weight-update-period"] = draw(st.sampled_from([0.5, 3.0, 50.0]))
        opts["blackout-period"] = draw(st.sampled_from([0.0, 2.0, 20.0]))
        opts["weight-expiration-period"] = draw(st.sampled_from([1.0, 30.0, 1000.0]))
        opts["server-window"] = draw(st.sampled_from([0.3, 2.0, 10.0]))
    elif policy == "wlr":
        opts["choice-count"] = draw(st.integers(2, 4))
        opts["active-request-bias"] = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
        opts["slow-start-window"] = draw(st.sampled_from([0.0, 5.0, 40.0]))
        opts["aggression"] = draw(st.sampled_from([1.0, 2.0]))
        opts["min-weight-percent"] = draw(st.sampled_from([0.0, 10.0, 50.0]))
    return opts


def run_spec(system) -> RunSpec:
    policy, n, m, load, d, z, replace, lengths, _, (micro, width, _), _, opts = system
    warm, end, t_warm, t_end = lengths
    opt, slots, refresh = (), 0, float(opts.get("refresh", 0.0))
    if opts and not refresh:
        opt = tuple(resolve_options(policy, opts))
        slots = int(opts["subset"])
    return RunSpec(
        policy,
        n,
        m,
        load,
        d,
        z,
        replace,
        warm,
        end,
        t_warm,
        t_end,
        width=width,
        micro=micro,
        opt=opt,
        slots=slots,
        refresh=refresh,
    )


def make_source(system):
    """Return a fresh task source, speeds and initial state for a drawn system."""
    _, n, _, load, *_, seed, (_, _, start), workload, _ = system
    initial = None
    if start is not None:
        queues, iqueue = start
        sizes = np.zeros(0)
        if workload is not None:
            sizes = workload[0].sample(np.random.default_rng(seed + 4), int(queues.sum()))
        initial = InitialState(queues, iqueue, sizes)
    if workload is None:
        return None, None, initial
    service, gap, speeds, trace_len, chunk, _ = workload
    if trace_len is None:
        arr_rng, svc_rng = np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)
        return RenewalSource(gap, service, load * n, arr_rng, svc_rng, chunk), speeds, initial
    rng = np.random.default_rng(seed + 3)
    times = np.cumsum(gap.scaled(1 / (load * n)).sample(rng, trace_len))
    trace = Trace(times, service.sample(rng, trace_len))
    return TraceSource(trace, chunk), speeds, initial


def kernel_and_mirror(system):
    """Run a drawn system on the compiled kernel and on the mirror, from the same seed."""
    seed, spec = system[8], run_spec(system)
    slowdown = system[10][5] if system[10] is not None else None
    runs = []
    for run in (partial(run_once, progress=None), mirror_run):
        source, speeds, initial = make_source(system)
        runs.append(
            run(
                spec,
                np.random.default_rng(seed),
                source=source,
                speeds=speeds,
                initial=initial,
                slowdown=slowdown,
            )
        )
    return runs


PAPERS_SYSTEMS = st.one_of(
    small_systems(policies=PAPERS), small_systems(general=True, policies=PAPERS)
)


@settings(max_examples=40)
@given(PAPERS_SYSTEMS)
def test_compiled_kernel_matches_reference_bit_for_bit(system):
    """The papers' policies (the production balancers have their own test below)."""
    same_run(system)


@pytest.mark.slow  # each new policy and engine compiles a kernel: 150 systems take minutes
@settings(max_examples=150)
@given(PAPERS_SYSTEMS)
def test_many_systems_match_the_reference_bit_for_bit(system):
    same_run(system)


def same_run(system) -> None:
    """The kernel and its plain-Python mirror give the same run, event for event."""
    fast, slow = kernel_and_mirror(system)
    assert fast.events == slow.events
    assert np.array_equal(fast.response_times, slow.response_times)
    assert (fast.width, fast.measured) == (slow.width, slow.measured)
    assert np.allclose(fast.batch_sum, slow.batch_sum, rtol=1e-12, atol=1e-12)
    assert np.array_equal(fast.batch_count, slow.batch_count)
    assert np.array_equal(fast.hist, slow.hist)
    assert np.array_equal(fast.messages, slow.messages)
    assert (fast.t_warm, fast.t_end) == (slow.t_warm, slow.t_end)
    if slow.response_times.size:
        assert (fast.rt_min, fast.rt_max) == (slow.rt_min, slow.rt_max)
    levels = slow.tail_area.size
    assert np.allclose(fast.tail_area[:levels], slow.tail_area, rtol=1e-9, atol=1e-12)
    assert np.all(fast.tail_area[levels:] == 0)
    assert fast.p0_area == pytest.approx(slow.p0_area, rel=1e-9, abs=1e-12)
    # snapshots at the micro-batch boundaries
    assert np.array_equal(fast.snap[:, K.SN_T], slow.snap[:, K.SN_T])
    assert np.array_equal(fast.snap[:, K.SN_MSG :], slow.snap[:, K.SN_MSG :])
    assert np.allclose(fast.snap[:, K.SN_P0], slow.snap[:, K.SN_P0], rtol=1e-9, atol=1e-12)
    cols = slow.snap_area.shape[1]
    assert np.allclose(fast.snap_area[:, :cols], slow.snap_area, rtol=1e-9, atol=1e-12)


@settings(max_examples=100)
@given(
    st.one_of(small_systems(policies=BALANCERS), small_systems(general=True, policies=BALANCERS))
)
@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_production_balancers_match_their_mirror_bit_for_bit(system):
    """The production balancers (clients, subsets, joins, weights, slow start) on the kernel
    and on their plain-Python mirror: the same tasks to the same servers, draw for draw."""
    fast, slow = kernel_and_mirror(system)
    assert fast.events == slow.events
    assert np.array_equal(fast.response_times, slow.response_times)
    assert np.array_equal(fast.messages, slow.messages)


def check_balancer_slots(engine: ServersRun) -> None:
    """A production balancer: each client's subset, and its requests in flight per slot.

    Every task at a server carries the slot it was sent through (or -1), the slot's server
    is that server, and each slot's count in flight is the number of tasks carrying it.
    """
    par, st = engine.par, engine.st
    slots = par.m * par.slots
    subsets = st.mem[:slots].reshape(par.m, par.slots)
    for row in subsets:  # a subset: distinct servers
        assert len(set(row.tolist())) == par.slots and row.min() >= 0 and row.max() < par.n
    carried = np.zeros(slots, np.int64)
    for s in range(par.n):
        k = int(st.srv[s, S.S_HEAD])
        while k >= 0:
            mark = int(st.pool[k, S.P_MARK])
            if mark >= 0:
                assert st.mem[mark] == s  # sent through a slot of this server
                carried[mark] += 1
            k = int(st.pool[k, S.P_NEXT])
    assert np.array_equal(st.mem[slots : 2 * slots], carried)


def check_invariants(engine: ServersRun, policy: str, z: int) -> None:
    qlen = engine.qlen
    n = engine.n
    # tasks are conserved: every arrival is in a queue or has departed
    in_system = int(qlen.sum())
    assert in_system == engine.tasks_in_pool()
    assert qlen.min() >= 0
    # busy list holds exactly the busy servers
    nbusy = int(engine.st.ist[K.I_NBUSY])
    assert sorted(engine.st.busy[:nbusy]) == sorted(np.flatnonzero(qlen > 0))
    assert np.array_equal(engine.st.srv[engine.st.busy[:nbusy], S.S_BUSY], np.arange(nbusy))
    # FIFO lists have the recorded lengths
    for s in range(n):
        k, length = int(engine.st.srv[s, S.S_HEAD]), 0
        while k >= 0:
            length += 1
            k = int(engine.st.pool[k, S.P_NEXT])
        assert length == qlen[s]
        tail = int(engine.st.srv[s, S.S_TAIL])
        assert tail == -1 if qlen[s] == 0 else engine.st.pool[tail, S.P_NEXT] == -1
    if TABLE[policy].options:
        check_balancer_slots(engine)
    if policy == "jsq":
        order = engine.st.jperm
        assert sorted(order) == list(range(n))
        assert np.array_equal(engine.st.srv[order, S.S_JPOS], np.arange(n))
        assert np.all(np.diff(qlen[order]) >= 0)
        assert qlen.min() == engine.st.ist[K.I_JSQ_MIN]
    if policy.startswith("jiq"):
        queues = engine.iqueues()
        listed = np.concatenate(queues) if queues else np.array([], dtype=np.int64)
        assert len(set(listed.tolist())) == listed.size  # no server listed twice
        iq_of = engine.st.srv[:, S.S_IQ]
        for m, members in enumerate(queues):
            assert np.all(iq_of[members] == m)
            assert np.array_equal(engine.st.srv[members, S.S_IQPOS], np.arange(members.size))
        assert int((iq_of >= 0).sum()) == listed.size
        assert engine.st.ist[K.I_NEMPTY] == sum(1 for q in queues if q.size == 0)
        flags = np.zeros(n, bool)
        flags[listed] = True
        if policy in ("jiq", "jiq-pod", "jiq-sq"):
            # with delete requests: listed <=> idle
            assert np.array_equal(flags, qlen == 0)
        elif policy == "jiq-threshold":
            assert np.array_equal(flags, qlen <= z)
        else:  # jiq-original: every idle server is listed, stale entries allowed
            assert np.all(flags[qlen == 0])


@pytest.mark.slow  # 80 systems checked after every event, two kernels of their own: 90 s cold
@settings(max_examples=80)
@given(st.one_of(small_systems(), small_systems(general=True)))
def test_invariants_hold_after_every_event_of_many_systems(system):
    invariants_hold(system)


def invariants_hold(system) -> None:
    policy, z, seed = system[0], system[5], system[8]
    source, speeds, initial = make_source(system)
    slowdown = system[10][5] if system[10] is not None else None
    rng = np.random.default_rng(seed)
    engine = ServersRun(run_spec(system), rng, source, speeds, initial, slowdown)
    check_invariants(engine, policy, z)
    for _ in range(400):
        done = engine.advance(1)
        check_invariants(engine, policy, z)
        if source is not None:
            check_heap(engine)
        if done:
            break
    raw = engine.result()  # measured tasks still in the system have NaN
    kept = raw.response_times[~np.isnan(raw.response_times)]
    assert np.all(kept > 0)
    if done:
        assert kept.size == raw.response_times.size == raw.measured


def check_heap(engine: ServersRun) -> None:
    """Event list: exactly the busy servers, heap-ordered; no task waits a negative time."""
    size = int(engine.st.ist[K.I_HEAP_N])
    heap, keys = engine.st.heap[:size], engine.st.hkey[:size]
    assert sorted(heap) == sorted(np.flatnonzero(engine.qlen > 0))
    for i in range(1, size):
        assert keys[(i - 1) // 2] <= keys[i]
    assert np.array_equal(engine.st.srv[heap, S.S_HPOS], np.arange(size))
    now = engine.st.fst[K.F_NOW]
    t0, t1, period = engine.st.slow_t

    def slowed_at(t: float) -> tuple[bool, bool]:
        """Whether the slowdown is in force at t, and whether t is within 1e-9 of an edge."""
        if t < t0 - 1e-9:
            return False, False
        phase = (t - t0) % period if period > 0 else t - t0
        edge = min(abs(phase), abs(phase - (t1 - t0)), abs(period - phase) if period else 1.0)
        return (phase < t1 - t0), edge < 1e-9

    for s, key in zip(heap, keys, strict=True):
        task = int(engine.st.srv[s, S.S_HEAD])
        size, arrived = engine.st.pool[task, S.P_SVC], engine.st.pool[task, S.P_ARR]
        ok = False  # service started after the task arrived, not after now, at the speed then
        speeds = (engine.st.speed[s], engine.st.speed[s] * engine.st.slow[s])
        for speed, slowed in zip(speeds, (False, True), strict=True):
            start = key - size / speed
            in_window, near_edge = slowed_at(start)
            if (
                arrived <= start + 1e-9
                and start <= now + 1e-9
                and (in_window == slowed or near_edge)
            ):
                ok = True
        assert ok


def test_single_server_policies_coincide():
    """With one server, random, JSQ and Pod(1) consume the same draws and must agree exactly."""
    common = dict(servers=1, load=0.7, d=1, tasks=5000, rng=11, initial="empty")
    runs = [simulate(p, keep_response_times=True, **common) for p in ("random", "jsq", "pod")]
    for res in runs[1:]:
        assert np.array_equal(res.response_times, runs[0].response_times)


def test_jsq_at_n_1000_is_close_to_one():
    res = simulate("jsq", servers=1000, load=0.9, rng=5)
    assert res.ci95 is not None and res.ci95[1] >= 1.0 and res.mean_response_time < 1.01
    assert ([*res.tail, 0.0])[1] < 0.02


@pytest.mark.parametrize(("n", "load", "precision"), [(1, 0.5, 0.01), (10, 0.7, 0.02)])
def test_default_intervals_cover_m_m_1(n, load, precision):
    """The open-ended rule's 95% interval covers the exact value in about 95% of runs."""
    truth = 1 / (1 - load)
    covered = 0
    runs = 100
    for seq in np.random.SeedSequence(99).spawn(runs):
        res = simulate(
            "random", servers=n, load=load, precision=precision, rng=np.random.default_rng(seq)
        )
        assert res.ci95 is not None
        covered += res.ci95[0] <= truth <= res.ci95[1]
    assert covered >= 90


def test_open_ended_run_records_how_it_was_measured():
    res = simulate("jiq-pod", servers=500, r=10, load=0.9, rng=3)
    assert res.steady_state and res.initial == "meanfield" and res.warmup == "auto"
    assert res.stop_reason == "precision" and res.warmup_detected
    assert res.precision_target == 0.01 and res.precision_reached <= 0.01
    assert res.ci95 is not None and res.ci95[0] < res.mean_response_time < res.ci95[1]
    # 20 batches, each at least five relaxation times long
    assert res.measured_time >= 100 * res.relaxation_estimate * (1 - 1e-9)
    assert res.relaxation_estimate >= 6.0  # JIQ-Pod(2) at load 0.9: 6.2 from the fluid model
    assert res.warnings == ()
    doc = res.to_dict()
    for key in (
        "steady_state",
        "initial",
        "warmup_time",
        "measured_time",
        "relaxation_estimate",
        "precision_target",
        "precision_reached",
        "ci_method",
    ):
        assert key in doc


def test_a_start_far_from_steady_state_is_cut_by_mser():
    """Every server starts with 40 tasks: MSER cuts the drain-down, the answer is M/M/1's."""
    n, load = 50, 0.5
    start = InitialState(np.full(n, 40, np.int64), np.zeros(0, np.int64), np.zeros(0))
    spec = RunSpec("random", n, 1, load, warm_tasks=0, end_tasks=40_000, record=False)
    raw = run_once(spec, np.random.default_rng(4), initial=start)
    from cloudsched.dispatch.measure import estimate

    est = estimate(raw, batches=20, relaxation=1 / (1 - load**0.5) ** 2)
    assert est.warmup_found and est.truncation > 0
    cut_time = raw.snap[est.truncation, K.SN_T]
    assert cut_time > 40.0  # the backlog of 40 tasks per server takes about 80 time units
    whole = raw.batch_sum.sum() / raw.batch_count.sum()
    assert whole > 1 / (1 - load) * 1.2  # the uncut mean is badly biased ...
    assert abs(est.mean - 1 / (1 - load)) <= Z_ERR * est.half_width / 1.96  # ... the cut one not


Z_ERR = 3.3


def test_no_steady_state_above_capacity():
    with pytest.warns(RuntimeWarning, match="no steady state"):
        res = simulate("random", servers=3, load=1.5, horizon=400.0, rng=1)
    assert not res.steady_state and res.ci95 is None and res.precision_reached is None
    assert any("no steady state" in w for w in res.warnings)
    doc = res.to_dict()
    assert doc["ci95"] is None and doc["steady_state"] is False
    assert len(res.tail) > 64  # the pool and per-level arrays grew past their initial sizes
    assert res.tail[0] == pytest.approx(1.0, abs=0.02)


def test_short_fixed_runs_withhold_the_interval():
    res = simulate("jiq", servers=10_000, r=10, load=0.9, tasks=200_000, rng=2)
    assert res.steady_state and res.ci95 is None
    assert res.warnings and "interval withheld" in res.warnings[0]
    assert res.stop_reason == "tasks" and res.precision_target is None


def test_max_tasks_stops_an_open_ended_run_and_says_so():
    # said before the run too: 20 batches of 5 relaxation times (1,560) need 1.5e7 arrivals
    with pytest.warns(RuntimeWarning, match="certified interval needs about 1.5e"):
        res = simulate("random", servers=100, load=0.95, max_tasks=200_000, rng=1)
    assert res.stop_reason == "max_tasks"
    assert any("max_tasks" in w for w in res.warnings)


def test_the_default_budget_refuses_a_run_it_cannot_certify_before_it_starts():
    """jiq-sq (no 1/N model: no short replications) at N = 10^7, load 0.9 needs ~1.2e10
    arrivals for a certified interval (100 relaxation times of ~13): with the default
    max_tasks (5e9) the run is refused at once; a fixed length runs.  random at 5 x 10^5
    (refused here before short replications reached 10^4 servers) runs short
    replications: tests/test_short_run.py."""
    with pytest.raises(ParameterError, match=r"tasks must be given .*1\.2e\+10 arrivals"):
        simulate("jiq-sq", servers=10**7, load=0.9, r=10.0, rng=1)
    fixed = simulate("jiq-sq", servers=10**6, load=0.9, r=10.0, tasks=10_000, rng=1)
    assert fixed.measured_tasks > 0
    assert simulate("random", servers=500_000, load=0.9, rng=1).ci_method.startswith("short")


def test_replications_are_each_warmed_up_and_give_the_interval():
    res = simulate("jiq", servers=200, r=10, load=0.9, replications=4, rng=7)
    assert res.replications == 4 and res.ci_method.startswith("replications (4)")
    assert res.ci95 is not None and res.precision_reached <= 0.01
    # each replication spans at least ten relaxation times after its warm-up
    assert res.measured_time >= 4 * 10 * res.relaxation_estimate * (1 - 1e-9)


def test_percentiles_from_the_histogram_are_within_a_tenth_of_a_percent():
    res = simulate(
        "pod", servers=100, load=0.9, tasks=300_000, warmup=0.0, rng=6, keep_response_times=True
    )
    exact = np.percentile(res.response_times, [50, 90, 99, 99.9], method="inverted_cdf")
    got = np.array(list(res.percentiles.values()))
    assert np.allclose(got, exact, rtol=1e-3)


def test_message_rates_match_mean_field_roughly():
    res = simulate("jiq-pod", servers=2000, r=10, load=0.9, d=2, rng=3)
    mf = predict("jiq-pod", 0.9, r=10, d=2)
    assert res.messages["join"] == pytest.approx(mf.join_rate[0], rel=0.03)
    assert res.messages["delete"] == pytest.approx(mf.delete_rate[0], rel=0.05)
    assert res.messages["probe"] == pytest.approx(mf.probe_rate[0], rel=0.03)
    assert res.p0 == pytest.approx(mf.p0[0], rel=0.03)


def test_jiq_original_sends_to_stale_entries_and_jiq_does_not():
    orig = simulate("jiq-original", servers=500, r=10, load=0.9, tasks=300_000, rng=1)
    jiq = simulate("jiq", servers=500, r=10, load=0.9, tasks=300_000, rng=1)
    assert orig.messages["stale"] > 0 and orig.messages["delete"] == 0
    assert jiq.messages["stale"] == 0 and jiq.messages["delete"] > 0


def test_same_seed_same_result_and_replications_are_independent():
    a = simulate("jiq-sq", servers=100, r=5, load=0.8, tasks=50_000, rng=7)
    b = simulate("jiq-sq", servers=100, r=5, load=0.8, tasks=50_000, rng=7)
    assert a.to_dict() | {"wall_seconds": 0, "events_per_second": 0} == b.to_dict() | {
        "wall_seconds": 0,
        "events_per_second": 0,
    }
    assert a.seed == 7
    reps = simulate("jiq-sq", servers=100, r=5, load=0.8, tasks=50_000, rng=7, replications=3)
    assert reps.replications == 3 and reps.measured_tasks > 2 * a.measured_tasks
    assert reps.ci_method.startswith("replications")
    fresh = simulate("random", servers=10, load=0.5, tasks=1000)
    assert isinstance(fresh.seed, int)
    again = simulate("random", servers=10, load=0.5, tasks=1000, rng=fresh.seed)
    assert again.mean_response_time == fresh.mean_response_time


def test_result_record_fields():
    res = simulate("jiq-pod", servers=50, dispatchers=5, load=0.7, tasks=20_000, rng=1)
    doc = res.to_dict()
    for key in (
        "mean_response_time",
        "ci95",
        "percentiles",
        "tail",
        "p0",
        "messages",
        "events",
        "wall_seconds",
        "events_per_second",
        "seed",
        "warnings",
        "stop_reason",
    ):
        assert key in doc
    assert set(doc["percentiles"]) == {"p50", "p90", "p99", "p99.9"}
    p = doc["percentiles"]
    assert p["p50"] <= p["p90"] <= p["p99"] <= p["p99.9"]
    assert doc["r"] == 10
    assert sum(res.occupancy) == pytest.approx(1.0)
    assert math.isfinite(doc["events_per_second"])
    row = res.to_row()
    assert "ci95_low" in row and isinstance(row["warnings"], str)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"servers": 0, "load": 0.5}, "servers"),
        ({"servers": 10, "load": 0.0}, "load"),
        ({"servers": 10, "load": -1.0}, "load"),
        ({"servers": 10, "load": 0.5, "dispatchers": 0}, "dispatchers"),
        ({"servers": 10, "load": 0.5, "dispatchers": 11}, "dispatchers"),
        ({"servers": 10, "load": 0.5, "r": 0.5}, "r"),
        ({"servers": 10, "load": 0.5, "tasks": 0, "dispatchers": 2}, "tasks"),
        ({"servers": 10, "load": 0.5, "horizon": -1.0, "dispatchers": 2}, "horizon"),
        ({"servers": 10, "load": 0.5, "warmup": 0.95, "dispatchers": 2}, "warmup"),
        ({"servers": 10, "load": 0.5, "warmup": "mser", "dispatchers": 2}, "warmup"),
        ({"servers": 10, "load": 0.5, "threshold": -1, "dispatchers": 2}, "threshold"),
        ({"servers": 10, "load": 0.5, "precision": 0.0, "dispatchers": 2}, "precision"),
        ({"servers": 10, "load": 0.5, "precision": 1.5, "dispatchers": 2}, "precision"),
        ({"servers": 10, "load": 0.5, "max_tasks": 10, "dispatchers": 2}, "max_tasks"),
        ({"servers": 10, "load": 0.5, "initial": "full", "dispatchers": 2}, "initial"),
        ({"servers": 10, "load": 1.5, "initial": "meanfield", "dispatchers": 2}, "initial"),
    ],
)
def test_bad_input(kwargs, name):
    with pytest.raises(ParameterError, match=rf"^{name} "):
        simulate("jiq", **kwargs)


def test_policies_with_dispatchers_default_to_r_10_in_the_api_and_the_cli():
    """The API and the command line agree: r = min(10, N) when a policy needs dispatchers
    and neither r nor M is given; one dispatcher for the others."""
    kw = {"servers": 200, "load": 0.8, "tasks": 5000, "rng": 3}
    a = simulate("jiq", **kw)
    assert a.dispatchers == 20
    assert a.to_dict() | {"wall_seconds": 0, "events_per_second": 0} == simulate(
        "jiq", r=10, **kw
    ).to_dict() | {"wall_seconds": 0, "events_per_second": 0}
    assert simulate("jiq", servers=4, load=0.5, tasks=100, rng=1).dispatchers == 1  # r = N
    assert simulate("pod", **kw).dispatchers == 1
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cloudsched",
            "simulate",
            "jiq",
            "--servers",
            "200",
            "--load",
            "0.8",
            "--tasks",
            "5000",
            "--seed",
            "3",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    cli = json.loads(out.stdout)
    assert cli["dispatchers"] == 20 and cli["mean_response_time"] == a.mean_response_time


def test_bad_d():
    with pytest.raises(ParameterError, match=r"^d "):
        simulate("pod", servers=5, load=0.5, d=6)
    with pytest.raises(ParameterError, match=r"^d "):
        simulate("jiq-sq", servers=10, dispatchers=2, load=0.5, d=3)
    with pytest.raises(ParameterError, match=r"^dispatchers "):
        simulate("jiq", servers=10, load=0.5, dispatchers=2, r=5)
    with pytest.raises(ParameterError, match=r"^initial "):
        simulate("jiq-sq", servers=10, dispatchers=2, load=0.5, initial="meanfield")
