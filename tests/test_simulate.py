import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.dispatch import _kernel as K
from cloudsched.dispatch import predict, simulate
from cloudsched.dispatch.distributions import (
    BoundedPareto,
    Exponential,
    HyperExponential,
    LogNormal,
    Uniform,
)
from cloudsched.dispatch.engine import Engine, RunSpec, run_once
from cloudsched.dispatch.sim_reference import reference_run
from cloudsched.dispatch.workload import RenewalSource, Trace, TraceSource
from cloudsched.errors import ParameterError

POLICIES = list(K.POLICY_CODES)


SERVICE_LAWS = [
    Exponential(1.0),
    LogNormal(1.0, 1.5),
    HyperExponential(1.0, 2.0),
    Uniform(1.0, 0.3),
    BoundedPareto(1.0, 1.5, 50.0),
]
GAP_LAWS = [Exponential(1.0), HyperExponential(1.0, 3.0), LogNormal(1.0, 0.5), Uniform(1.0)]


@st.composite
def small_systems(draw, general=False):
    policy = draw(st.sampled_from(POLICIES))
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
    batches = draw(st.integers(2, 8))
    workload = None
    if general:
        service = draw(st.sampled_from(SERVICE_LAWS))
        gap = draw(st.sampled_from(GAP_LAWS))
        speeds = np.random.default_rng(seed).uniform(0.5, 2.0, n) if draw(st.booleans()) else None
        trace_len = draw(st.one_of(st.none(), st.integers(2, 500)))
        chunk = draw(st.integers(1, 64))
        workload = (service, gap, speeds, trace_len, chunk)
    return policy, n, m, load, d, z, replace, lengths, seed, batches, workload


def run_spec(system) -> RunSpec:
    policy, n, m, load, d, z, replace, (warm, end, t_warm, t_end), _, batches, _ = system
    return RunSpec(
        K.POLICY_CODES[policy], n, m, load, d, z, replace, warm, end, t_warm, t_end, batches
    )


def make_source(system):
    """Return a fresh task source and speeds for a drawn system (None on the fast path)."""
    _, n, _, load, *_, seed, _, workload = system
    if workload is None:
        return None, None
    service, gap, speeds, trace_len, chunk = workload
    if trace_len is None:
        arr_rng, svc_rng = np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)
        return RenewalSource(gap, service, load * n, arr_rng, svc_rng, chunk), speeds
    rng = np.random.default_rng(seed + 3)
    times = np.cumsum(gap.scaled(1 / (load * n)).sample(rng, trace_len))
    return TraceSource(Trace(times, service.sample(rng, trace_len)), chunk), speeds


@settings(max_examples=150)
@given(st.one_of(small_systems(), small_systems(general=True)))
def test_compiled_kernel_matches_reference_bit_for_bit(system):
    seed, spec = system[8], run_spec(system)
    source, speeds = make_source(system)
    fast = run_once(spec, np.random.default_rng(seed), None, source, speeds)
    source, speeds = make_source(system)
    slow = reference_run(spec, np.random.default_rng(seed), source, speeds)
    assert fast.events == slow.events
    assert np.array_equal(fast.response_times, slow.response_times)
    assert np.array_equal(fast.batch_sum, slow.batch_sum)
    assert np.array_equal(fast.batch_count, slow.batch_count)
    assert np.array_equal(fast.messages, slow.messages)
    assert (fast.t_warm, fast.t_end) == (slow.t_warm, slow.t_end)
    levels = slow.tail_area.size
    assert np.allclose(fast.tail_area[:levels], slow.tail_area, rtol=1e-9, atol=1e-12)
    assert np.all(fast.tail_area[levels:] == 0)
    assert fast.p0_area == pytest.approx(slow.p0_area, rel=1e-9, abs=1e-12)


def check_invariants(engine: Engine, policy: str, z: int) -> None:
    qlen = engine.qlen
    n = engine.n
    # tasks are conserved: every arrival is in a queue or has departed
    in_system = int(qlen.sum())
    assert in_system == engine.tasks_in_pool()
    assert qlen.min() >= 0
    # busy list holds exactly the busy servers
    nbusy = int(engine.ist[K.I_NBUSY])
    assert sorted(engine.busy_list[:nbusy]) == sorted(np.flatnonzero(qlen > 0))
    assert np.array_equal(engine.srv[engine.busy_list[:nbusy], K.S_BUSY], np.arange(nbusy))
    # FIFO lists have the recorded lengths
    for s in range(n):
        k, length = int(engine.srv[s, K.S_HEAD]), 0
        while k >= 0:
            length += 1
            k = int(engine.pool[k, K.P_NEXT])
        assert length == qlen[s]
        tail = int(engine.srv[s, K.S_TAIL])
        assert tail == -1 if qlen[s] == 0 else engine.pool[tail, K.P_NEXT] == -1
    if policy == "jsq":
        order = engine.jperm
        assert sorted(order) == list(range(n))
        assert np.array_equal(engine.srv[order, K.S_JPOS], np.arange(n))
        assert np.all(np.diff(qlen[order]) >= 0)
        assert qlen.min() == engine.ist[K.I_JSQ_MIN]
    if policy.startswith("jiq"):
        queues = engine.iqueues()
        listed = np.concatenate(queues) if queues else np.array([], dtype=np.int64)
        assert len(set(listed.tolist())) == listed.size  # no server listed twice
        iq_of = engine.srv[:, K.S_IQ]
        for m, members in enumerate(queues):
            assert np.all(iq_of[members] == m)
            assert np.array_equal(engine.srv[members, K.S_IQPOS], np.arange(members.size))
        assert int((iq_of >= 0).sum()) == listed.size
        assert engine.ist[K.I_NEMPTY] == sum(1 for q in queues if q.size == 0)
        flags = np.zeros(n, bool)
        flags[listed] = True
        if policy in ("jiq", "jiq-pod", "jiq-sq"):
            # with delete requests: listed <=> idle
            assert np.array_equal(flags, qlen == 0)
        elif policy == "jiq-threshold":
            assert np.array_equal(flags, qlen <= z)
        else:  # jiq-original: every idle server is listed, stale entries allowed
            assert np.all(flags[qlen == 0])


@settings(max_examples=80)
@given(st.one_of(small_systems(), small_systems(general=True)))
def test_invariants_hold_after_every_event(system):
    policy, z, seed = system[0], system[5], system[8]
    source, speeds = make_source(system)
    engine = Engine(run_spec(system), np.random.default_rng(seed), source, speeds)
    check_invariants(engine, policy, z)
    for _ in range(400):
        done = engine.advance(1)
        check_invariants(engine, policy, z)
        if source is not None:
            check_heap(engine)
        if done:
            break
    raw = engine.result()
    assert np.all(raw.response_times > 0)


def check_heap(engine: Engine) -> None:
    """Event list: exactly the busy servers, heap-ordered; no task waits a negative time."""
    size = int(engine.ist[K.I_HEAP_N])
    heap, keys = engine.heap[:size], engine.hkey[:size]
    assert sorted(heap) == sorted(np.flatnonzero(engine.qlen > 0))
    for i in range(1, size):
        assert keys[(i - 1) // 2] <= keys[i]
    assert np.array_equal(engine.srv[heap, K.S_HPOS], np.arange(size))
    now = engine.fst[K.F_NOW]
    for s, key in zip(heap, keys, strict=True):
        task = int(engine.srv[s, K.S_HEAD])
        start = key - engine.pool[task, K.P_SVC] / engine.speed[s]
        # service started after the task arrived (wait >= 0) and not after now
        assert engine.pool[task, K.P_ARR] <= start + 1e-9
        assert start <= now + 1e-9


def test_single_server_policies_coincide():
    """With one server, random, JSQ and Pod(1) consume the same draws and must agree exactly."""
    runs = [
        simulate(p, servers=1, load=0.7, d=1, tasks=5000, rng=11, keep_response_times=True)
        for p in ("random", "jsq", "pod")
    ]
    for res in runs[1:]:
        assert np.array_equal(res.response_times, runs[0].response_times)


def test_random_is_mm1_within_ci():
    res = simulate("random", servers=20, load=0.8, tasks=400_000, replications=8, rng=2024)
    assert res.ci95[0] <= 1 / (1 - 0.8) <= res.ci95[1]
    # each server is an M/M/1 queue: P(N >= i) = load^i
    assert np.allclose(res.tail[:4], 0.8 ** np.arange(1, 5), atol=0.02)


def test_jsq_at_n_1000_is_close_to_one():
    res = simulate("jsq", servers=1000, load=0.9, tasks=1_000_000, rng=5)
    assert res.ci95[1] >= 1.0 and res.mean_response_time < 1.01
    assert res.tail[1] < 0.02


@pytest.mark.parametrize(("policy", "n", "load"), [("random", 1, 0.5), ("random", 10, 0.7)])
def test_confidence_interval_coverage(policy, n, load):
    truth = 1 / (1 - load)
    covered = 0
    runs = 100
    seeds = np.random.SeedSequence(99).spawn(runs)
    for seq in seeds:
        res = simulate(policy, servers=n, load=load, tasks=20_000, rng=np.random.default_rng(seq))
        covered += res.ci95[0] <= truth <= res.ci95[1]
    assert covered >= 90


def test_message_rates_match_mean_field_roughly():
    res = simulate("jiq-pod", servers=2000, r=10, load=0.9, d=2, tasks=2_000_000, rng=3)
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
    assert a.mean_response_time == b.mean_response_time and a.tail == b.tail
    assert a.seed == 7
    reps = simulate("jiq-sq", servers=100, r=5, load=0.8, tasks=50_000, rng=7, replications=3)
    assert reps.replications == 3 and reps.measured_tasks > 2 * a.measured_tasks
    assert reps.ci_method.startswith("replications")
    fresh = simulate("random", servers=10, load=0.5, tasks=1000)
    assert isinstance(fresh.seed, int)
    again = simulate("random", servers=10, load=0.5, tasks=1000, rng=fresh.seed)
    assert again.mean_response_time == fresh.mean_response_time


def test_horizon_mode_and_growth():
    # load above 1 grows the task pool and the per-level arrays well past their initial sizes
    with pytest.warns(RuntimeWarning, match="no steady state"):
        res = simulate("random", servers=3, load=1.5, horizon=400.0, warmup=0.0, rng=1)
    assert len(res.tail) > 64
    assert res.measured_time == pytest.approx(400.0)
    assert res.tail[0] == pytest.approx(1.0, abs=0.02)


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
    ):
        assert key in doc
    assert set(doc["percentiles"]) == {"p50", "p90", "p99", "p99.9"}
    p = doc["percentiles"]
    assert p["p50"] <= p["p90"] <= p["p99"] <= p["p99.9"]
    assert doc["r"] == 10
    assert sum(res.occupancy) == pytest.approx(1.0)
    assert math.isfinite(doc["events_per_second"])


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
        ({"servers": 10, "load": 0.5, "threshold": -1, "dispatchers": 2}, "threshold"),
    ],
)
def test_bad_input(kwargs, name):
    with pytest.raises(ParameterError, match=rf"^{name} "):
        simulate("jiq", **kwargs)


def test_bad_d():
    with pytest.raises(ParameterError, match=r"^d "):
        simulate("pod", servers=5, load=0.5, d=6)
    with pytest.raises(ParameterError, match=r"^d "):
        simulate("jiq-sq", servers=10, dispatchers=2, load=0.5, d=3)
    with pytest.raises(ParameterError, match=r"^dispatchers "):
        simulate("jiq", servers=10, load=0.5)


def test_correlated_batch_means_widen_the_interval():
    from cloudsched._stats import batch_means_half_width, t_half_width

    rng = np.random.default_rng(5)
    iid = rng.normal(size=20)
    assert batch_means_half_width(iid)[0] == t_half_width(iid)  # no evidence: plain t
    ar = np.zeros(20)
    for k in range(1, 20):  # AR(1) with coefficient 0.8
        ar[k] = 0.8 * ar[k - 1] + rng.normal()
    half, rho = batch_means_half_width(ar)
    assert rho > 0.5 and half > 2 * t_half_width(ar)
