import math
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as t_dist

from cloudsched.errors import ParameterError
from cloudsched.placement import Cluster, JobType, Topology, chain, complete, parse_cluster, star
from cloudsched.placement import state as S
from cloudsched.placement.engine import EngineParams, PlacementEngine
from cloudsched.placement.optimize import static_optimum
from cloudsched.placement.policies import get_placement_policy
from cloudsched.placement.simulation import simulate_placement
from cloudsched.testing.placement_mirror import ReferencePlacement
from cloudsched.testing.placement_oracles import product_form

SMALL = [JobType("chain3", 1.0, 1.0, chain(3)), JobType("star4", 0.5, 1.0, star(4))]


def _engine(cluster, jobs, policy, horizon, seed, **kw):
    params = EngineParams(get_placement_policy(policy).code, **kw)
    return PlacementEngine(cluster, jobs, params, horizon, 0.0, 2, np.random.default_rng(seed))


def _weighted_chain(k, traffic, cpu):
    g = nx.path_graph(k)
    for i, (u, v) in enumerate(g.edges):
        g.edges[u, v]["weight"] = traffic[i % len(traffic)]
    for v in g.nodes:
        g.nodes[v]["cpu"], g.nodes[v]["memory"] = cpu * (1 + v % 2), 1.0
    return Topology(f"w{k}", g)


# Differential: the compiled kernel against the plain reference, same seed. --------------
@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(st.tuples(st.integers(1, 2), st.integers(1, 4)), min_size=1, max_size=3),
    policy=st.sampled_from(["dgp", "dgp-clock", "storm-default", "greedy", "resource-aware"]),
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    beta=st.sampled_from([0.05, 0.3, 2.0]),
    f=st.sampled_from(["log", "identity"]),
    vclock=st.booleans(),
    proposal=st.sampled_from(["uniform", "local"]),
    traffic=st.sampled_from([[1.0], [0.5, 2.0, 1.25]]),
    cpu=st.sampled_from([None, 1.0, 2.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_kernel_matches_reference(
    groups, policy, sizes, beta, f, vclock, proposal, traffic, cpu, seed
):
    """Every policy, uniform and local proposals, weighted edges, CPU limits, mixed machines."""
    shape = ",".join(f"{n}x{k}" for n, k in groups)
    base = parse_cluster(shape)
    cap = None if cpu is None else [3.0 + (m % 3) for m in range(base.machines)]
    cluster = Cluster(base.slots, racks=min(2, base.machines), cpu=cap)
    sizes = [min(k, cluster.total_slots) for k in sizes]
    jobs = [
        JobType(f"t{i}", 0.3 + 0.4 * i, 1.0 + i, _weighted_chain(k, traffic, cpu or 0.0))
        for i, k in enumerate(sizes)
    ]
    kw = dict(
        beta=beta,
        alpha=0.5,
        h=1.0,
        epsilon=0.5,
        f=f,
        virtual_clock=vclock,
        proposal=proposal,
        locality=0.7,
    )
    eng = _engine(cluster, jobs, policy, 60.0, seed, **kw)
    eng.advance(10**7)
    ref = ReferencePlacement(cluster, jobs, policy, np.random.default_rng(seed), horizon=60.0, **kw)
    while not ref.done:
        ref.step()
    np.testing.assert_array_equal(eng.mt.cnt, ref.count)
    np.testing.assert_allclose(eng.mt.acc, ref.area, rtol=1e-9, atol=1e-9)
    assert [list(q) for q in ref.queues] == [list(eng.queue(j)) for j in range(len(jobs))]


# Invariants, checked after every single event. --------------------------------------------
def _check(eng, started, departures):
    """Slots, conservation, and: running jobs keep their slots.

    A template id freed by a departure can be reused in the same event by another job, so
    at most one template per departure in the event may show new slots.
    """
    owner = eng.st.owner
    moved = 0
    seen = np.full(owner.size, -1)
    actual = set()
    for j in range(len(eng.job_types)):
        for is_actual in (True, False):
            for tid in eng.templates(j, is_actual).tolist():
                slots = eng.st.t_slots[tid, : eng.mo.knodes[j]]
                assert np.all(seen[slots] == -1), "a slot held by two templates"
                seen[slots] = tid
                assert np.all(owner[slots] == tid)
                if is_actual:
                    actual.add(tid)
                    if tid in started and not np.array_equal(started[tid], slots):
                        moved += 1
                    started[tid] = slots.copy()
    for tid in set(started) - actual:
        del started[tid]
    assert moved <= departures, "a running job moved"
    assert np.all((owner == -1) == (seen == -1))
    free = np.bincount(eng.mo.slot_machine[owner == -1], minlength=eng.st.mfree.size)
    assert free.tolist() == eng.st.mfree.tolist()
    assert np.all(eng.st.qlen >= 0)
    in_service = int(eng.st.ntl[:, 0].sum())
    assert eng.st.ist[S.I_ARR_ALL] == eng.st.ist[S.I_DEP_ALL] + in_service + int(eng.st.qlen.sum())


@settings(max_examples=25, deadline=None)
@given(
    policy=st.sampled_from(["dgp", "dgp-clock", "storm-default", "greedy"]),
    shape=st.sampled_from(["2x2", "3x3", "2x4", "5x1"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariants_hold_after_every_event(policy, shape, seed):
    cluster = parse_cluster(shape)
    jobs = [JobType("a", 1.5, 1.0, chain(2)), JobType("b", 0.7, 0.8, complete(3))]
    eng = _engine(cluster, jobs, policy, 30.0, seed, beta=0.3, alpha=0.5, h=1.0)
    started: dict[int, np.ndarray] = {}
    done = False
    while not done:
        before = int(eng.st.ist[S.I_DEP_ALL])
        done = eng.advance(1)
        _check(eng, started, int(eng.st.ist[S.I_DEP_ALL]) - before)


def test_shorter_maxweight_frames_mean_more_migrations():
    cluster = parse_cluster("3x3")
    short = simulate_placement("maxweight", cluster, SMALL, horizon=400, frame=0.2, rng=3)
    long = simulate_placement("maxweight", cluster, SMALL, horizon=400, frame=20.0, rng=3)
    assert short.frames > 10 * long.frames
    assert short.migrations > long.migrations
    assert short.frames_not_optimal == long.frames_not_optimal == 0


# Product form with frozen weights. --------------------------------------------------------
def _classes(cluster, jobs, conf):
    machine = np.repeat(np.arange(cluster.machines), cluster.slots)
    return tuple(sorted((j, cluster.cost(jobs[j].topology, machine[list(s)])) for j, s in conf))


def _product_form_distance(policy, batches, steps, cluster=None, **kw):
    """Largest |z| over configuration classes, and the total variation distance."""
    cluster = cluster or parse_cluster("2x2")
    jobs = [JobType("pair", 1.0, 1.0, chain(2)), JobType("single", 0.5, 2.0, chain(1))]
    weights, beta = [2.5, 0.8], 0.7
    theory = defaultdict(float)
    for conf, p in product_form(cluster, jobs, weights, beta).items():
        theory[_classes(cluster, jobs, conf)] += p
    seen = np.zeros((batches, len(theory)))
    keys = {k: i for i, k in enumerate(sorted(theory))}
    ref = ReferencePlacement(
        cluster, jobs, policy, np.random.default_rng(11), beta=beta, frozen_weights=weights, **kw
    )
    for _ in range(2000):  # warm-up
        ref.step()
    for b in range(batches):
        for _ in range(steps):
            cls = keys[_classes(cluster, jobs, ref.configuration())]
            seen[b, cls] += ref.step()
    frac = seen / seen.sum(axis=1, keepdims=True)
    p = np.array([theory[k] for k in sorted(theory)])
    mean = frac.mean(axis=0)
    se = frac.std(axis=0, ddof=1) / math.sqrt(batches)
    z = np.abs(mean - p) / np.maximum(se, 1e-4)
    return z.max(), 0.5 * np.abs(mean - p).sum()


def _product_form_check(policy, batches, steps, tv_limit, **kw):
    z, tv = _product_form_distance(policy, batches, steps, **kw)
    # 13 classes (2x2): |z| < 4.5 for each is a family-wise level of about 1e-4
    assert z < 4.5, z
    assert tv < tv_limit, tv


@pytest.mark.parametrize("policy", ["dgp", "dgp-clock"])
@pytest.mark.parametrize("proposal", ["uniform", "local"])
def test_frozen_weights_give_the_product_form(policy, proposal):
    _product_form_check(policy, batches=12, steps=8000, tv_limit=0.06, proposal=proposal)


def test_local_proposals_keep_the_product_form_across_racks():
    """Four one-slot machines in two racks: the rack step of the local proposal counts too."""
    cluster = parse_cluster("4x1", racks=2, cross_rack_cost=2.0)
    _product_form_check(
        "dgp", batches=12, steps=8000, tv_limit=0.06, cluster=cluster, proposal="local"
    )


def test_the_product_form_check_catches_local_proposals_without_their_correction():
    """Without the q(A|C) correction, local proposals favour one-machine templates."""
    z, tv = _product_form_distance("dgp", 12, 8000, proposal="local", correct=False)
    assert z > 10 and tv > 0.1, (z, tv)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["dgp", "dgp-clock"])
@pytest.mark.parametrize("proposal", ["uniform", "local"])
def test_frozen_weights_give_the_product_form_closely(policy, proposal):
    _product_form_check(policy, batches=20, steps=40_000, tv_limit=0.025, proposal=proposal)


@pytest.mark.parametrize(
    ("policy", "clock", "proposal"),
    [("dgp", None, "uniform"), ("dgp-clock", 2.0, "uniform"), ("dgp", None, "local")],
)
def test_kernel_template_counts_match_the_product_form(policy, clock, proposal):
    cluster = parse_cluster("2x2")
    jobs = [JobType("pair", 1.0, 1.0, chain(2)), JobType("single", 0.5, 2.0, chain(1))]
    weights, beta = [2.5, 0.8], 0.7
    rates = None if clock is None else [clock, clock]
    law = product_form(cluster, jobs, weights, beta, clock_rates=rates)
    expect = np.zeros(2)
    for conf, p in law.items():
        for j, _ in conf:
            expect[j] += p
    reps = [
        simulate_placement(
            policy,
            cluster,
            jobs,
            horizon=20_000,
            frozen_weights=weights,
            beta=beta,
            clock_rate=clock,
            proposal=proposal,
            compare_bound=False,
            rng=seed,
        )
        for seed in range(10)
    ]
    got = np.array(
        [[t["mean_in_service"] + t["mean_virtual_templates"] for t in r.per_type] for r in reps]
    )
    # 99.9% Student-t interval of the mean over the replications, per type
    half = t_dist.ppf(0.9995, len(reps) - 1) * got.std(axis=0, ddof=1) / math.sqrt(len(reps))
    assert np.all(np.abs(got.mean(axis=0) - expect) < half + 1e-3), (got.mean(axis=0), expect)


# DGP against the static optimum. ----------------------------------------------------------
def test_dgp_cost_falls_towards_the_optimum_with_finite_queues():
    cluster = parse_cluster("3x3")
    opt = static_optimum(cluster, SMALL).cost_rate
    costs = []
    for beta in (0.4, 0.2, 0.1):
        r = simulate_placement(
            "dgp",
            cluster,
            SMALL,
            horizon=200_000,
            beta=beta,
            alpha=0.002,
            h=0.0,
            f="identity",
            rng=5,
        )
        costs.append(r.cost_rate)
        served = sum(t["departed"] for t in r.per_type) / sum(t["arrived"] for t in r.per_type)
        assert served > 0.97
    assert costs[0] > costs[1] > costs[2]
    assert costs[2] <= 1.10 * opt
    low, high = r.cost_rate_ci95
    assert costs[2] >= opt - 3 * (high - low) / 2
    # queues stay bounded: no upward trend across the batches and a final queue near the mean
    assert r.final_queue_length < 3 * r.mean_queue_length
    storm = simulate_placement("storm-default", cluster, SMALL, horizon=20_000, rng=5)
    assert storm.cost_rate > 3 * opt


def test_simulation_is_reproducible_from_a_seed():
    cluster = parse_cluster("3x3")
    a = simulate_placement("dgp", cluster, SMALL, horizon=2000, rng=9).to_dict()
    b = simulate_placement("dgp", cluster, SMALL, horizon=2000, rng=9).to_dict()
    for doc in (a, b):
        doc.pop("wall_seconds"), doc.pop("events_per_second")
    assert a == b and a["seed"] == 9


def test_an_unseeded_run_records_the_seed_that_regenerates_it():
    cluster = parse_cluster("3x3")
    first = simulate_placement("dgp", cluster, SMALL, horizon=500)
    assert isinstance(first.seed, int)
    again = simulate_placement("dgp", cluster, SMALL, horizon=500, rng=first.seed)
    assert (again.cost_rate, again.events) == (first.cost_rate, first.events)
    given = simulate_placement(
        "dgp", cluster, SMALL, horizon=500, rng=np.random.default_rng(first.seed)
    )
    assert given.seed is None and given.cost_rate == first.cost_rate


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        (dict(beta=0.0), "beta"),
        (dict(epsilon=1.0), "epsilon"),
        (dict(horizon=-1.0), "horizon"),
        (dict(policy="fifo"), "policy"),
        (dict(frame=0.0), "frame"),
        (dict(f="sqrt"), "f"),
    ],
)
def test_bad_parameters_are_named(kw, name):
    with pytest.raises(ParameterError, match=name):
        simulate_placement(kw.pop("policy", "dgp"), parse_cluster("3x3"), SMALL, **kw)


def test_a_graph_larger_than_the_cluster_is_refused():
    with pytest.raises(ParameterError, match="at most the cluster's 4 slots"):
        simulate_placement("dgp", parse_cluster("2x2"), [JobType("big", 1.0, 1.0, chain(5))])


def test_maxweight_counts_every_job_that_changes_machines():
    """Independent count: running jobs whose machine map disappears at a frame must have moved.

    Before and after each frame, take the multiset of machine maps of the running jobs of each
    type; maps that vanish belong to jobs that either migrated or were preempted.
    """
    from collections import Counter

    from cloudsched.placement.maxweight import FrameController

    cluster = parse_cluster("3x3")
    eng = _engine(cluster, SMALL, "maxweight", 300.0, 8, alpha=1.0)
    ctl = FrameController(0.5, 1.0, "log", None, 0.0)
    vanished = 0

    def frame(e):
        nonlocal vanished
        before = [Counter(tuple(e.machines_of(t)) for t in e.templates(j, True)) for j in (0, 1)]
        ctl(e)
        after = [Counter(tuple(e.machines_of(t)) for t in e.templates(j, True)) for j in (0, 1)]
        vanished += sum(((b - a).total() for b, a in zip(before, after, strict=True)))

    ctl.start(eng)
    eng.on_stop = frame
    started: dict[int, np.ndarray] = {}
    done = False
    while not done:
        done = eng.advance(50)
        _check(eng, started, 10**9)  # slots and conservation (moves are MaxWeight's to count)
    assert ctl.frames >= 500
    assert ctl.migrations + ctl.preemptions >= vanished > 0
    assert ctl.migrated_nodes >= ctl.migrations


# Steady-state rules shared with the dispatch simulator. -----------------------------------
def test_a_stable_policy_reports_a_detected_warmup_and_certified_intervals():
    res = simulate_placement("greedy", parse_cluster("3x3"), SMALL, horizon=20_000, rng=1)
    assert res.steady_state and res.warmup_detected and res.warnings == ()
    assert res.warmup == "auto" and 0 <= res.warmup_time < 0.5 * res.horizon
    assert res.measured_time == pytest.approx(res.horizon - res.warmup_time)
    for name in ("cost_rate", "mean_queue_length", "mean_partition_cost"):
        low, high = getattr(res, f"{name}_ci95")
        assert low < getattr(res, name) < high
        assert 0 < high - low < 0.4 * max(res.cost_rate, res.mean_queue_length)
    assert res.relaxation_estimate >= 1.0  # at least one mean holding time


def test_a_growing_queue_is_flagged_not_steady_with_no_intervals():
    """DGP with log weights and no bias: the star waits for ~e^(1/alpha) jobs, the queue grows."""
    res = simulate_placement(
        "dgp", parse_cluster("3x3"), SMALL, horizon=2000, alpha=0.2, beta=0.1, h=0.0, f="log", rng=1
    )
    assert not res.steady_state
    assert res.cost_rate_ci95 is None and res.mean_queue_length_ci95 is None
    doc = res.to_dict()
    assert doc["cost_rate_ci95"] is None and doc["steady_state"] is False and doc["warnings"]
    row = res.to_row()
    assert math.isnan(row["cost_rate_ci95_low"]) and row["warnings"]


def test_a_cost_interval_below_the_static_optimum_is_flagged():
    """Nothing serving all the load beats the static optimum: an interval below it is too short."""
    from cloudsched.cli.place_output import bound_line
    from cloudsched.placement.beside_bound import below_bound, gap, short_of

    assert below_bound((0.30, 0.45), 0.5, True).startswith("cost interval [0.3, 0.45] lies below")
    assert "lower bound" in below_bound((0.30, 0.45), 0.5, False)
    assert below_bound((0.45, 0.55), 0.5, True) is None  # straddles: no evidence
    assert below_bound(None, 0.5, True) is None  # no interval: withheld, warned elsewhere
    assert not short_of(0.48, 0.5, (0.45, 0.55)) and gap(0.48, 0.5) == 0.0
    assert not short_of(0.6, 0.5, None) and gap(0.6, 0.5) == pytest.approx(0.2)
    assert "gap 0.0%" in bound_line(0.48, (0.45, 0.55), 0.5, 0.0, True)
    for ci in [(0.30, 0.45), None]:
        assert short_of(0.4, 0.5, ci)
        assert "gap n/a (the cost is below it" in bound_line(0.4, ci, 0.5, None, True)


def test_the_warmup_cut_removes_a_start_up_transient():
    """The window starts after the cluster has filled: its mean queue is the steady one."""
    cluster = parse_cluster("3x3")
    auto = simulate_placement("storm-default", cluster, SMALL, horizon=5000, rng=4)
    none = simulate_placement("storm-default", cluster, SMALL, horizon=5000, warmup=0.0, rng=4)
    assert auto.warmup_detected and not none.warmup_detected
    assert none.warmup == "0" and none.warmup_time == 0.0 and auto.warmup_time > 0
    assert auto.arrived < none.arrived  # counts cover the window only
    assert auto.measured_time < none.measured_time


@pytest.mark.parametrize(
    "kw",
    [
        dict(h="x"),
        dict(h=[1.0, 2.0, 3.0]),
        dict(h=[1.0, "a"]),
        dict(clock_rate="x"),
        dict(clock_rate=[[1.0]]),
        dict(frozen_weights="ab"),
        dict(frozen_weights=5),
        dict(frozen_weights=[1.0]),
    ],
)
def test_per_type_arguments_are_checked_before_the_run(kw):
    """Sweep specs hand these over from YAML: a wrong shape or type is a ParameterError."""
    from cloudsched.placement import PlacementSpec

    jobs = [JobType("a", 1.0, 1.0, chain(2)), JobType("b", 0.5, 1.0, star(3))]
    with pytest.raises(ParameterError, match=next(iter(kw))):
        PlacementSpec("dgp", parse_cluster("3x3"), jobs, **kw)
    plan = PlacementSpec(
        "dgp", parse_cluster("3x3"), jobs, h=[1.0, 2.0], clock_rate=0.5, frozen_weights=[1.0, 2.0]
    )
    assert plan.h == (1.0, 2.0) and plan.rates == (0.5, 0.5) and plan.frozen == (1.0, 2.0)
