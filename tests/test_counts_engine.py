"""The occupancy-count engine: the same draws as its plain mirror, the same law as the
per-server engine, exact response-time tails, and a cost that does not grow with N."""

import math
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from scipy import stats

from cloudsched.dispatch import predict, simulate
from cloudsched.dispatch.engines import records as K
from cloudsched.dispatch.engines.classes.engine import ClassesRun
from cloudsched.dispatch.engines.classes.mirror import mirror_classes
from cloudsched.dispatch.engines.counts.engine import CountsRun
from cloudsched.dispatch.engines.counts.mirror import mirror_counts
from cloudsched.dispatch.engines.erlang import erlang_histogram
from cloudsched.dispatch.engines.replication import RunSpec
from cloudsched.dispatch.measure import histogram_percentiles
from cloudsched.errors import ParameterError
from cloudsched.policy_table import with_capability

#: Every policy the counts engine runs (the policy table's column), with and without
#: replacement and two values of d (d means nothing to some: they run with it all the same).
CASES = [(p, d, rep) for p in with_capability("counts") for d, rep in ((2, False), (3, True))]


def _initial(n, m, rng):
    """Queue lengths, and I-queue sizes listing the idle servers at random dispatchers."""
    queues = rng.integers(0, 4, size=n)
    sizes = np.bincount(rng.integers(0, m, size=int((queues == 0).sum())), minlength=m)
    return queues, sizes


@pytest.mark.parametrize(("policy", "d", "replace"), CASES)
@pytest.mark.parametrize("timed", [False, True])
def test_the_kernel_makes_the_mirrors_draws_and_bookkeeping(policy, d, replace, timed):
    n, m = 9, 3
    queues, sizes = _initial(n, m, np.random.default_rng(5))
    if timed:
        spec = RunSpec(
            policy, n, m, 0.8, d=d, replace=replace, t_warm=20.0, t_end=400.0, record=False
        )
    else:
        spec = RunSpec(
            policy, n, m, 0.8, d=d, replace=replace, warm_tasks=100, end_tasks=2000, record=False
        )
    iq = np.bincount(sizes) if policy.startswith("jiq") else None
    eng = CountsRun(spec, np.random.default_rng(11), np.bincount(queues), iq)
    while not eng.advance(1000):  # small budgets: resuming changes nothing
        pass
    raw = eng.result()
    ref = mirror_counts(spec, np.random.default_rng(11), list(queues), list(sizes))
    assert raw.width == ref["width"]
    assert np.array_equal(raw.batch_count, ref["bcnt"])
    np.testing.assert_allclose(raw.batch_sum, ref["bsum"], rtol=1e-12)  # merges add in pairs
    joins = eng.mt.hist  # the levels joined per segment
    levels = min(joins.shape[1], ref["joins"].shape[1])
    assert np.array_equal(joins[:, :levels], ref["joins"][:, :levels])
    assert raw.events == ref["events"] and raw.t_end == ref["t_end"]
    assert raw.t_warm == ref["t_warm"]
    assert list(raw.messages[[K.M_JOIN, K.M_DELETE, K.M_PROBE]]) == ref["messages"]
    assert raw.p0_area == pytest.approx(ref["p0_area"], rel=1e-9)
    if iq is not None:
        held = np.repeat(np.arange(eng.st.iq.size), eng.st.iq.astype(int))
        assert list(held) == ref["iqueues"]
    cnt = eng.st.cnt
    final = np.repeat(np.arange(cnt.size), (cnt - np.append(cnt[1:], 0)).astype(int))
    assert list(final) == ref["queues"]
    top = min(raw.tail_area.size, ref["tail_area"].size)
    np.testing.assert_allclose(raw.tail_area[:top], ref["tail_area"][:top], rtol=1e-9, atol=1e-9)


CLASS_CASES = [("pod", 2, False), ("pod", 3, True), ("random", 1, False), ("jsq", 1, False)]


@pytest.mark.parametrize(("policy", "d", "replace"), CLASS_CASES)
@pytest.mark.parametrize("timed", [False, True])
def test_speed_classes_make_the_mirrors_draws_and_bookkeeping(policy, d, replace, timed):
    speeds = [2.0, 0.5, 1.0, 0.5, 2.0, 1.0, 1.0, 3.5, 0.5]  # four classes, in no order
    n = len(speeds)
    rate = 0.4 if policy == "random" else 1.1  # random: below the slowest server's speed
    if timed:
        spec = RunSpec(
            policy, n, 1, rate, d=d, replace=replace, t_warm=20.0, t_end=300.0, record=False
        )
    else:
        spec = RunSpec(
            policy, n, 1, rate, d=d, replace=replace, warm_tasks=100, end_tasks=2000, record=False
        )
    eng = ClassesRun(spec, np.random.default_rng(11), np.array(speeds))
    while not eng.advance(1000):
        pass
    raw = eng.result()
    ref = mirror_classes(spec, np.random.default_rng(11), speeds)
    assert raw.width == ref["width"] and raw.events == ref["events"]
    assert np.array_equal(raw.batch_count, ref["bcnt"])
    np.testing.assert_allclose(raw.batch_sum, ref["bsum"], rtol=1e-12)
    joins = eng.mt.hist  # the (class, level) pairs joined per segment
    levels = min(joins.shape[2], ref["joins"].shape[2])
    assert np.array_equal(joins[:, :, :levels], ref["joins"][:, :, :levels])
    assert joins.sum() == raw.measured
    for c, mine in enumerate(ref["class_queues"]):
        at_least = eng.st.ccnt[c]
        final = np.repeat(
            np.arange(at_least.size), (at_least - np.append(at_least[1:], 0)).astype(int)
        )
        assert list(final) == mine, c
    np.testing.assert_array_equal(eng.st.cnt, eng.st.ccnt.sum(axis=0))
    top = min(raw.tail_area.size, ref["tail_area"].size)
    np.testing.assert_allclose(raw.tail_area[:top], ref["tail_area"][:top], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("policy", "kw"), [("pod", {"d": 2}), ("random", {}), ("jsq", {})])
def test_speed_classes_have_the_event_list_engines_law(policy, kw):
    """Two speed classes (a third of the servers twice as fast): mean, p99 and s_1 of 12
    runs on occupancy counts agree with 12 runs of the event-list engine, which follows
    every task on every server."""
    n = 60
    speeds = [2.0] * (n // 3) + [1.0] * (n - n // 3)
    load = 0.6 if policy == "random" else 0.85  # random: 0.8 per slow server
    runs = {
        eng: [
            simulate(
                policy,
                servers=n,
                load=load,
                speeds=speeds,
                engine=eng,
                tasks=40_000,
                warmup=0.2,
                rng=seed + (100 if eng == "general" else 0),
                **kw,
            )
            for seed in range(12)
        ]
        for eng in ("counts", "general")
    }
    counts, events = runs["counts"], runs["general"]
    assert {r.engine for r in counts} == {"classes"} and {r.engine for r in events} == {"servers"}
    assert {r.clock for r in events} == {"event-list"}
    _agree([r.mean_response_time for r in counts], [r.mean_response_time for r in events], "mean")
    _agree([r.percentiles["p99"] for r in counts], [r.percentiles["p99"] for r in events], "p99")
    _agree([r.tail[0] for r in counts], [r.tail[0] for r in events], "s_1")
    if policy == "random":  # independent M/M/1 queues: exact, and it depends on the speeds
        lam = load * sum(speeds) / n
        exact = np.mean([1.0 / (s - lam) for s in speeds])
        means = np.array([r.mean_response_time for r in counts])
        se = means.std(ddof=1) / math.sqrt(means.size)
        assert abs(means.mean() - exact) <= 4 * se, (means.mean(), exact, se)


def test_class_percentiles_are_the_scaled_erlang_quantiles():
    joins = np.zeros((K.H_SEGMENTS, 2, 64))
    joins[1, 0, 3] = 1e6  # class 0 (speed 0.5): Erlang(4) / 0.5
    speeds = np.array([0.5, 4.0])
    got = histogram_percentiles(erlang_histogram(joins, speeds).sum(axis=0), [50.0, 99.0])
    np.testing.assert_allclose(got, stats.gamma.ppf([0.5, 0.99], 4) / 0.5, rtol=1e-3)
    joins[1, 1, 3] = 1e6  # as many at speed 4: the mixture's median lies between
    mixed = histogram_percentiles(erlang_histogram(joins, speeds).sum(axis=0), [50.0])[0]
    want = stats.gamma.ppf(0.5, 4) / 4.0, stats.gamma.ppf(0.5, 4) / 0.5
    assert want[0] < mixed < want[1]


def test_speed_classes_are_refused_where_they_do_not_apply():
    two = [1.0, 2.0] * 50
    with pytest.raises(ParameterError, match="at most 16 distinct speeds"):
        simulate(
            "pod",
            servers=100,
            load=0.5,
            speeds=list(np.linspace(1, 2, 100)),
            engine="counts",
            tasks=1000,
        )
    with pytest.raises(ParameterError, match="random, jsq, pod"):
        simulate("jiq", servers=100, r=10, load=0.5, speeds=two, engine="counts", tasks=1000)
    with pytest.raises(ParameterError, match="Poisson"):
        simulate(
            "pod", servers=100, load=0.5, speeds=two, service="det", engine="counts", tasks=1000
        )
    with pytest.raises(ParameterError, match="starts empty"):
        simulate(
            "pod",
            servers=100,
            load=0.5,
            speeds=two,
            engine="counts",
            tasks=1000,
            initial="meanfield",
        )
    with pytest.raises(ParameterError, match="'general', 'servers', 'auto' or 'counts'"):
        simulate("pod", servers=100, load=0.5, speeds=two, engine="exponential", tasks=1000)


def _runs(engine, policy, n, seeds, **kw):
    return [
        simulate(
            policy,
            servers=n,
            load=0.9,
            engine=engine,
            tasks=60 * n + 20_000,
            warmup=0.2,
            rng=seed,
            **kw,
        )
        for seed in seeds
    ]


def _agree(a, b, what):
    """Two sets of independent estimates have the same mean (4 standard errors)."""
    a, b = np.asarray(a), np.asarray(b)
    se = math.hypot(a.std(ddof=1) / math.sqrt(a.size), b.std(ddof=1) / math.sqrt(b.size))
    assert abs(a.mean() - b.mean()) <= 4 * se + 1e-12, (what, a.mean(), b.mean(), se)


@pytest.mark.parametrize("n", [50, 1000])
@pytest.mark.parametrize(
    ("policy", "kw"),
    [
        ("pod", {"d": 2}),
        ("random", {}),
        ("jsq", {}),
        ("pod", {"d": 3, "with_replacement": True}),
        ("jiq", {"r": 10}),
        ("jiq-pod", {"r": 10, "d": 2}),
        ("jiq-pod", {"r": 5, "d": 3}),
        ("jiq-sq", {"r": 10, "d": 2}),
    ],
)
def test_the_same_law_as_the_per_server_engine(n, policy, kw):
    """Means, p99, tails, p0 and message rates of 12 independent runs of each engine agree."""
    counts = _runs("counts", policy, n, range(12), **kw)
    servers = _runs("exponential", policy, n, range(100, 112), **kw)
    assert all(r.engine == "counts" for r in counts)
    _agree([r.mean_response_time for r in counts], [r.mean_response_time for r in servers], "mean")
    _agree([r.percentiles["p99"] for r in counts], [r.percentiles["p99"] for r in servers], "p99")
    for k in range(3):
        _agree(
            [r.tail[k] if len(r.tail) > k else 0.0 for r in counts],
            [r.tail[k] if len(r.tail) > k else 0.0 for r in servers],
            f"s_{k + 1}",
        )
    for kind in ("join", "delete", "probe"):
        _agree([r.messages[kind] for r in counts], [r.messages[kind] for r in servers], kind)
    _agree([r.p0 for r in counts], [r.p0 for r in servers], "p0")


def test_a_wrong_level_law_is_caught():
    """The same check sees pod(3) run as pod(2): the law test has power."""
    counts = _runs("counts", "pod", 1000, range(12), d=2)
    servers = _runs("exponential", "pod", 1000, range(100, 112), d=3)
    with pytest.raises(AssertionError):
        _agree(
            [r.mean_response_time for r in counts], [r.mean_response_time for r in servers], "mean"
        )


@pytest.mark.parametrize("level", [0, 3, 40])
def test_percentiles_are_the_erlang_quantiles(level):
    joins = np.zeros((K.H_SEGMENTS, 64))
    joins[2, level] = 1e6
    hist = erlang_histogram(joins).sum(axis=0)
    qs = [50.0, 90.0, 99.0, 99.9]
    got = histogram_percentiles(hist, qs)
    want = stats.gamma.ppf(np.array(qs) / 100, level + 1)
    np.testing.assert_allclose(got, want, rtol=1e-3)


@pytest.mark.parametrize("level", [700, 1407, 4000])
def test_percentiles_of_deep_levels_are_the_erlang_quantiles(level):
    joins = np.zeros((K.H_SEGMENTS, 4096))
    joins[5, level] = 1e6
    joins[9, level - 64] = 1.0  # a second block, nearly empty: no mass of it lost
    hist = erlang_histogram(joins).sum(axis=0)
    assert hist.sum() == pytest.approx(1e6 + 1.0, rel=1e-12)
    qs = [0.1, 50.0, 99.0, 99.9]
    got = histogram_percentiles(hist, qs)
    want = stats.gamma.ppf(np.array(qs) / 100, level + 1)
    np.testing.assert_allclose(got, want, rtol=1e-3)


def test_a_deep_histogram_costs_memory_in_the_levels_not_their_square():
    """Thousands of levels joined (load 0.99 at N = 10^6 reaches about 1,400) once took a
    (levels x 21,000 bins) table and its copies: 600 MB at 1,408 levels, cached per size."""
    joins = np.zeros((K.H_SEGMENTS, 4096))
    joins[:, :4000] = 1.0
    tracemalloc.start()
    hist = erlang_histogram(joins)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    np.testing.assert_allclose(hist.sum(axis=1), 4000.0, rtol=1e-12)
    assert peak < 60e6, peak


_PEAK = """
from cloudsched.dispatch import simulate


def hwm():  # this process's peak resident memory (not its parent's, as ru_maxrss may be)
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:"))


simulate("pod", servers=10**6, load=0.99, d=2, rng=4)  # another large-N run: the baseline
base = hwm()
res = simulate("random", servers=10**6, load=0.99, rng=4)
print(base, hwm(), res.mean_response_time, res.percentiles["p99"])
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's VmHWM")
def test_a_default_run_near_saturation_stays_small():
    """Random at load 0.99, N = 10^6 (queues of about 1,400 tasks at the longest), the
    default run: it peaked at 1.58 GB where other large-N runs peak at 350-400 MB, 1.7 GB
    past a pod run's peak in the same process.  What it may add to that is its twenty
    replications' histograms and snapshots of its 2,048 levels (100-160 MB measured)."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK], capture_output=True, text=True, check=True, timeout=600
    ).stdout.split()
    base, peak, mean, p99 = (float(x) for x in out)
    assert peak - base < 250e6, (base, peak)
    assert p99 > mean > 90.0


def test_the_mixture_holds_every_join():
    joins = np.zeros((K.H_SEGMENTS, 64))
    joins[0, :10] = np.arange(1, 11)
    joins[5, 30] = 7
    hist = erlang_histogram(joins)
    np.testing.assert_allclose(hist.sum(axis=1), joins.sum(axis=1), rtol=1e-9)


def test_a_billion_servers_cost_what_a_thousand_cost():
    """State O(longest queue): a run at N = 10^9 holds no per-server array, and agrees with
    the mean field (exact at this N) to the precision of its tasks."""
    tracemalloc.start()
    res = simulate(
        "pod", servers=10**9, load=0.9, d=2, engine="counts", tasks=200_000, warmup=0.2, rng=3
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 80e6, peak
    # 160,000 tasks over 2e-4 time units meet nearly independent servers frozen in the mean
    # field's state: their mean has the standard error of independent response times, whose
    # standard deviation is below 3 here (Erlang(K + 1), K of mean 1.6)
    mf = float(predict("pod", 0.9, d=2).mean_response_time[0])
    assert abs(res.mean_response_time - mf) <= 4 * 3.0 / math.sqrt(res.measured_tasks)


@pytest.mark.parametrize(
    ("kw", "needs"),
    [
        ({"policy": "jiq-threshold"}, "for jiq-threshold"),
        ({"keep_response_times": True}, "keep_response_times"),
        ({"speeds": [1.0, 2.0, 1.0, 1.0], "policy": "jiq", "r": 2}, "random, jsq, pod"),
        ({"service": "det"}, "Poisson"),
    ],
)
def test_the_counts_engine_refuses_what_it_cannot_run(kw, needs):
    args = {"policy": "pod", "servers": 4, "load": 0.5, "engine": "counts", **kw}
    with pytest.raises(ParameterError, match="engine") as exc:
        simulate(args.pop("policy"), **args)
    assert needs in str(exc.value)


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_auto_runs_counts_from_a_hundred_thousand_servers_where_it_applies():
    """Below AUTO_COUNTS_SERVERS auto keeps the per-server engine (published results
    unchanged); from it on, the counts engine wherever it applies, with the same result as
    asking for it."""
    from cloudsched.dispatch.engines.choice import AUTO_COUNTS_SERVERS

    n = AUTO_COUNTS_SERVERS
    kw = {"load": 0.9, "tasks": 20_000, "rng": 1}

    def ran(policy, **more):
        res = simulate(policy, **{**kw, **more})
        return res.engine, res.clock

    below = simulate("pod", servers=n - 1, **kw)
    assert (below.engine, below.clock) == ("servers", "markov")
    assert below.engine_reason == f"auto: N = {n - 1:,} < {n:,}; Markov clock"
    auto = simulate("pod", servers=n, **kw)
    asked = simulate("pod", servers=n, engine="counts", **kw)
    differ = ("wall_seconds", "events_per_second", "engine_reason")
    assert auto.engine == "counts" and auto.engine_reason == f"auto: N = {n:,} >= {n:,}, on counts"
    assert asked.engine_reason == "asked for"
    assert {k: v for k, v in auto.to_dict().items() if k not in differ} == {
        k: v for k, v in asked.to_dict().items() if k not in differ
    }
    assert ran("jiq-pod", servers=n, r=10) == ("counts", "markov")
    assert ran("jiq-threshold", servers=n, r=10) == ("servers", "markov")
    assert ran("round-robin", servers=n, r=10) == ("servers", "markov")
    assert ran("pod", servers=n, keep_response_times=True) == ("servers", "markov")
    assert ran("pod", servers=n, service="det") == ("servers", "event-list")
    assert ran("pod", servers=n, engine="servers") == ("servers", "markov")
    assert ran("pod", servers=n, engine="general") == ("servers", "event-list")
    one = simulate("pod", servers=n, engine="classes", **kw)  # equal speeds: one class
    assert (one.engine, one.engine_reason) == (
        "counts",
        "asked for classes; equal speeds are one class: counts",
    )
    two = np.where(np.arange(n) % 4 == 0, 2.0, 1.0)  # speed classes: the classes engine for pod
    assert ran("pod", servers=n, speeds=two) == ("classes", "markov")
    assert ran("pod", servers=n - 1, speeds=two[:-1]) == ("servers", "event-list")
    assert ran("jiq", servers=n, r=10, speeds=two) == ("servers", "event-list")
    # a mean-field start with speeds: counts would start empty, so auto keeps the event list
    assert ran("pod", servers=n, speeds=two, initial="meanfield") == ("servers", "event-list")


def test_a_farm_too_big_for_the_servers_engine_is_pointed_to_counts(monkeypatch):
    """When the per-server state does not fit, auto runs counts where it applies; asking
    for the per-server engine is refused with a pointer to counts, and where counts cannot
    run the refusal does not name it."""
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "2G")
    kw = {"load": 0.9, "tasks": 20_000, "rng": 1}
    assert simulate("pod", servers=10**8, **kw).engine == "counts"
    with pytest.raises(ParameterError, match="or --engine counts"):
        simulate("pod", servers=10**8, engine="servers", **kw)
    for policy, extra in (("jiq-threshold", {"r": 10}), ("pod", {"keep_response_times": True})):
        with pytest.raises(ParameterError, match="small enough") as exc:
            simulate(policy, servers=10**8, **extra, **kw)
        assert "counts" not in str(exc.value)
