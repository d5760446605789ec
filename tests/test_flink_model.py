"""cloudsched.placement.flink: Flink's slot sharing against oracles written from its source."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.errors import InputError, ParameterError
from cloudsched.placement.flink import (
    FlinkEdge,
    FlinkJob,
    crossing_samples,
    evaluate,
    execution_groups,
    measured_crossing,
    partitions,
    slot_counts,
)
from cloudsched.placement.flink_search import advise, lower_bound


def _job(par, edges, cpu=None, out=None, inn=None):
    n = len(par)
    return FlinkJob(
        "t",
        tuple(f"v{i}" for i in range(n)),
        tuple(par),
        tuple(FlinkEdge(*e) for e in edges),
        tuple(out[i] if out else np.full(p, 1 / p) for i, p in enumerate(par)),
        tuple(inn[i] if inn else np.full(p, 1 / p) for i, p in enumerate(par)),
        tuple(np.full(p, (cpu or [0.1] * n)[i]) for i, p in enumerate(par)),
    )


def _oracle_groups(job, groups):
    """LocalInputPreferredSlotSharingStrategy's builder, step by step (flink-runtime)."""
    ess = {}  # (v, i) -> ESSG id
    holds = {}  # ESSG id -> vertices in it
    made = {}  # sharing group -> ESSGs in creation order
    count = 0
    for v in range(len(job.names)):
        inputs = [e for e in job.edges if e.target == v]
        shared = {}  # the all-to-all consumed partition group's candidates, shared
        for e in inputs:
            if e.ship != "FORWARD" and groups[e.source] == groups[v]:
                shared[id(e)] = [ess[(e.source, j)] for j in range(job.parallelism[e.source])]
        remaining = []
        for i in range(job.parallelism[v]):
            chosen = None
            for e in inputs:
                if groups[e.source] != groups[v]:
                    continue
                cands = [ess[(e.source, i)]] if e.ship == "FORWARD" else shared[id(e)]
                while cands and chosen is None:
                    c = cands.pop(0)  # examined candidates are dropped either way
                    if v not in holds[c]:
                        chosen = c
                if chosen is not None:
                    break
            if chosen is None:
                remaining.append(i)
            else:
                ess[(v, i)] = chosen
                holds[chosen].add(v)
        for i in remaining:
            free = [g for g in made.get(groups[v], []) if v not in holds[g]]
            if free:
                chosen = free[0]
            else:
                chosen = count
                count += 1
                holds[chosen] = set()
                made.setdefault(groups[v], []).append(chosen)
            ess[(v, i)] = chosen
            holds[chosen].add(v)
    return ess


def _random_dag(draw_par, draw_edges):
    par = draw_par
    edges = []
    for v, (u, ship) in enumerate(draw_edges, start=1):
        u = u % v
        if ship == "FORWARD" and par[u] != par[v]:
            ship = "HASH"
        edges.append((u, v, ship, 10.0))
    return par, edges


#: a random job: parallelisms, then each vertex's input (a vertex before it) and strategy
PARALLELISMS = st.lists(st.integers(1, 4), min_size=2, max_size=6)
LINKS = st.lists(
    st.tuples(st.integers(0, 5), st.sampled_from(["FORWARD", "HASH", "REBALANCE"])),
    min_size=5,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(PARALLELISMS, LINKS, st.lists(st.integers(0, 2), min_size=6, max_size=6))
def test_execution_groups_match_flinks_builder(par, links, words):
    par, edges = _random_dag(par, links[: len(par) - 1])
    job = _job(par, edges)
    groups = words[: len(par)]
    ess, n = execution_groups(job, groups)
    oracle = _oracle_groups(job, groups)
    assert n == len(set(oracle.values()))
    # the same subtasks share an execution group, whatever the labels
    mine = {(v, i): int(ess[v][i]) for v in range(len(par)) for i in range(par[v])}
    pairs = list(mine)
    for a, b in itertools.combinations(pairs, 2):
        assert (mine[a] == mine[b]) == (oracle[a] == oracle[b])


@pytest.mark.parametrize(
    "slots,tms,per,mode,want",
    [
        (5, 3, 2, "NONE", [2, 2, 1]),
        (4, 3, 2, "NONE", [2, 2, 0]),
        (4, 3, 2, "SLOTS", [2, 1, 1]),
        (2, 3, 2, "SLOTS", [1, 1, 0]),
        (6, 3, 2, "SLOTS", [2, 2, 2]),
    ],
)
def test_slot_counts(slots, tms, per, mode, want):
    assert slot_counts(slots, tms, per, mode).tolist() == want


def test_slot_counts_refuses_too_many_and_unknown_mode():
    assert slot_counts(7, 3, 2, "NONE") is None
    with pytest.raises(ParameterError, match="mode"):
        slot_counts(2, 3, 2, "TASKS")


def _exact_mean(job, groups, mode, tms, per):
    """Average over every order of the slot requests (all permutations)."""
    ess, n = execution_groups(job, groups)
    counts = slot_counts(n, tms, per, mode)
    slot_tm = np.repeat(np.arange(tms), counts)
    values = []
    for perm in itertools.permutations(range(n)):
        tm = slot_tm[list(perm)]
        values.append(
            measured_crossing(job, [[str(tm[e]) for e in ess[v]] for v in range(len(job.names))])
        )
    return float(np.mean(values)), values


@pytest.mark.parametrize(
    "groups,mode",
    [
        ((0, 0, 0, 0), "NONE"),
        ((0, 1, 1, 0), "NONE"),
        ((0, 1, 2, 2), "SLOTS"),
        ((0, 0, 1, 1), "SLOTS"),
    ],
)
def test_mean_is_the_average_over_every_order(groups, mode):
    job = _job(
        [2, 3, 3, 1],
        [(0, 1, "HASH", 30.0), (1, 2, "FORWARD", 20.0), (2, 3, "REBALANCE", 12.0)],
        out=[np.array([0.7, 0.3]), np.full(3, 1 / 3), np.array([0.5, 0.25, 0.25]), np.ones(1)],
        inn=[np.full(2, 0.5), np.array([0.2, 0.3, 0.5]), np.array([0.2, 0.3, 0.5]), np.ones(1)],
    )
    conf = evaluate(job, groups, mode, 3, 3)
    mean, values = _exact_mean(job, groups, mode, 3, 3)
    assert conf.crossing_mean == pytest.approx(mean, rel=1e-12, abs=1e-9)
    if not conf.may_vary:  # then every order gives the same records across
        assert max(values) - min(values) <= 1e-9
    rng = np.random.default_rng(5)
    got = crossing_samples(job, groups, mode, 3, 3, rng, 4000)
    se = got.std(ddof=1) / math.sqrt(got.size)
    assert abs(got.mean() - mean) <= 4 * se + 1e-9
    assert set(np.round(got, 9)) <= set(np.round(values, 9))


def test_order_does_not_matter_when_each_group_has_a_taskmanager():
    job = _job([2, 2, 2], [(0, 1, "HASH", 10.0), (1, 2, "REBALANCE", 6.0)])
    conf = evaluate(job, (0, 1, 1), "SLOTS", 4, 2)  # 4 slots on 4 TaskManagers
    assert not conf.may_vary
    # the HASH edge crosses wholly, the REBALANCE edge within group 1 by half
    assert conf.crossing_mean == pytest.approx(10.0 + 3.0)


def _best_placement(job, tms, per, cpu):
    """The fewest records across TaskManagers over every placement of the subtasks."""
    subtasks = [(v, i) for v, p in enumerate(job.parallelism) for i in range(p)]
    best = math.inf
    for tm in itertools.product(range(tms), repeat=len(subtasks)):
        where = dict(zip(subtasks, tm, strict=False))
        ok = all(
            sum(where[(v, i)] == t for i in range(p)) <= per
            for v, p in enumerate(job.parallelism)
            for t in range(tms)
        ) and all(
            sum(job.cpu[v][i] for (v, i) in subtasks if where[(v, i)] == t) <= cpu + 1e-9
            for t in range(tms)
        )
        if ok:
            placed = [[str(where[(v, i)]) for i in range(p)] for v, p in enumerate(job.parallelism)]
            best = min(best, measured_crossing(job, placed))
    return best


@pytest.mark.parametrize("cpu", [0.5, 0.8, 10.0])
def test_lower_bound_is_the_optimum_of_every_placement(cpu):
    job = _job(
        [2, 2, 1, 2],
        [(0, 1, "HASH", 8.0), (1, 2, "REBALANCE", 5.0), (2, 3, "HASH", 3.0)],
        cpu=[0.3, 0.2, 0.3, 0.1],
    )
    bound, proved = lower_bound(job, 2, 2, cpu, time_limit=30)
    assert proved
    assert bound == pytest.approx(_best_placement(job, 2, 2, cpu), abs=1e-6)


def test_advise_ranks_fitting_configurations_and_its_bound_holds():
    job = _job(
        [2, 2, 2, 2],
        [(0, 1, "FORWARD", 9.0), (1, 2, "HASH", 6.0), (2, 3, "REBALANCE", 4.0)],
        cpu=[0.6, 0.2, 0.5, 0.2],
    )
    advice = advise(job, 3, 2, cpu_per_tm=1.6)
    assert not advice.default.fits  # two full pipelines on one TaskManager: 3.0 cores
    best = advice.best
    assert best is not None and best.fits and best.busiest_cpu <= 1.6
    fitting = [c for c in advice.ranked if c.fits]
    assert best.crossing_mean == min(c.crossing_mean for c in fitting)
    assert advice.bound <= best.crossing_mean + 1e-9
    assert len(advice.ranked) == 15 * 2  # Bell(4) partitions x two modes


def test_partitions_are_bell_numbers():
    assert [sum(1 for _ in partitions(n)) for n in range(1, 7)] == [1, 2, 5, 15, 52, 203]


def test_job_refuses_rescale_and_unequal_forward():
    with pytest.raises(InputError, match="RESCALE"):
        _job([2, 4], [(0, 1, "RESCALE", 1.0)])
    with pytest.raises(InputError, match="unequal"):
        _job([2, 4], [(0, 1, "FORWARD", 1.0)])


@settings(max_examples=60, deadline=None)
@given(
    PARALLELISMS,
    LINKS,
    st.integers(2, 4),
    st.integers(1, 3),
    st.lists(st.floats(0.5, 2.0), min_size=24, max_size=24),
)
def test_without_a_cpu_limit_nothing_beats_flinks_default(par, links, tms, per, weights):
    """What docs/howto/flink.md says: groups only take subtasks apart."""
    par, edges = _random_dag(par, links[: len(par) - 1])
    w = iter(weights)
    shares = [np.array([next(w) for _ in range(p)]) for p in par]
    job = _job(
        par, edges, out=[s / s.sum() for s in shares], inn=[s[::-1] / s.sum() for s in shares]
    )
    default = evaluate(job, (0,) * len(par), "NONE", tms, per)
    if not default.placed:
        return
    for word in partitions(len(par)):
        for mode in ("NONE", "SLOTS"):
            conf = evaluate(job, word, mode, tms, per)
            if conf.placed:
                assert conf.crossing_mean >= default.crossing_mean - 1e-9
