"""The scalable optimisation: least-cost templates, the fast packing, the relaxation and the
static bound, each against an exact answer (the MILP, exhaustive search or a brute-force
dynamic programme) on instances small enough to have one."""

import itertools
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.placement import (
    Cluster,
    JobType,
    Topology,
    chain,
    complete,
    load_flux,
    parse_cluster,
    star,
    tree,
)
from cloudsched.placement.configuration import max_weight_configuration
from cloudsched.placement.fastpack import Library
from cloudsched.placement.graphcuts import forest_split
from cloudsched.placement.optimize import static_optimum
from cloudsched.placement.relaxation import Relaxation, part_cuts
from cloudsched.placement.shapes import least_cost_template, twin_classes
from cloudsched.testing.placement_oracles import brute_force_max_weight

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _bipartite(a, b, c=0, weight=1.0):
    """A Storm-like graph: components of a, b (and c) executors, all pairs linked."""
    g = nx.Graph()
    sizes = [a, b] + ([c] if c else [])
    first = np.concatenate([[0], np.cumsum(sizes)])
    g.add_nodes_from(range(int(first[-1])))
    for s in range(len(sizes) - 1):
        for u in range(first[s], first[s + 1]):
            for v in range(first[s + 1], first[s + 2]):
                g.add_edge(int(u), int(v), weight=weight * (1 + s))
    return Topology(f"bi{sizes}", g)


GRAPHS = {
    "chain4": chain(4),
    "star5": star(5),
    "tree6": tree(6),
    "k4": complete(4),
    "bi23": _bipartite(2, 3),
    "bi212": _bipartite(2, 1, 2, weight=0.5),
}


def _exact_least(cluster, top):
    sol = max_weight_configuration(cluster, [top], [1e4], [1], solver="exact")
    assert sol.optimal and len(sol.templates) == 1
    return cluster.cost(top, sol.templates[0][1])


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(GRAPHS)),
    shape=st.sampled_from(["2x3", "3x2", "2x4", "3x3", "1x2,2x3"]),
    racks=st.integers(1, 3),
    cross=st.sampled_from([1.0, 3.0]),
)
def test_least_cost_template_brackets_the_exact_one(name, shape, racks, cross):
    base = parse_cluster(shape)
    cluster = Cluster(base.slots, racks=min(racks, base.machines), cross_rack_cost=cross)
    top = GRAPHS[name]
    if top.nodes > cluster.total_slots:
        return
    exact = _exact_least(cluster, top)
    got = least_cost_template(cluster, top)
    assert cluster.fits_on_machines(top, got.machines)
    assert got.cost == pytest.approx(cluster.cost(top, got.machines))
    assert got.lower_bound <= exact + 1e-9 <= got.cost + 2e-9
    if got.proven:
        assert got.cost == pytest.approx(exact)


def test_least_cost_templates_of_the_storm_examples_are_proven_on_50x12():
    cluster = parse_cluster("50x12", racks=5)
    for name, cost in (("wordcount", 72.0), ("exclamation", 9.0), ("rolling-top-words", 7.0)):
        got = least_cost_template(cluster, load_flux(EXAMPLES / f"{name}.yaml"))
        assert got.proven and got.cost == cost, (name, got)


def test_twin_classes_group_executors_with_the_same_links():
    wc = load_flux(EXAMPLES / "wordcount.yaml")  # spouts and counters both talk to all splits
    cls = twin_classes(wc)
    assert sorted(cls.sizes.tolist()) == [8, 17]
    assert cls.kept(cls.sizes) == pytest.approx(wc.total_traffic)
    k5 = twin_classes(complete(5))
    assert k5.sizes.tolist() == [5] and k5.kept([2]) == 1.0


def _brute_forest(top, s):
    edges = top.edge_array()
    w = top.edge_weights()
    best = math.inf
    for cut in itertools.product([0, 1], repeat=len(edges)):
        g = nx.Graph()
        g.add_nodes_from(range(top.nodes))
        g.add_edges_from(e for e, c in zip(edges.tolist(), cut, strict=True) if not c)
        if max(len(c) for c in nx.connected_components(g)) <= s:
            best = min(best, float(np.dot(cut, w)))
    return best


@pytest.mark.parametrize("top", [chain(9), tree(10), tree(11, 3), star(7)])
@pytest.mark.parametrize("s", [2, 3, 4])
def test_forest_split_matches_brute_force(top, s):
    cut, piece = forest_split(top, s)
    assert cut == pytest.approx(_brute_forest(top, s))
    assert np.bincount(piece).max() <= s
    broken = sum(1 for u, v in top.edge_array() if piece[u] != piece[v])
    assert broken == pytest.approx(cut)


@settings(max_examples=12, deadline=None)
@given(
    names=st.lists(
        st.sampled_from(["chain4", "star5", "bi23", "k4"]), min_size=1, max_size=2, unique=True
    ),
    shape=st.sampled_from(["2x3", "3x3", "2x4"]),
    values=st.lists(st.floats(0.5, 12.0), min_size=2, max_size=2),
    caps=st.lists(st.integers(0, 3), min_size=2, max_size=2),
)
def test_fast_max_weight_is_feasible_and_its_bound_holds(names, shape, values, caps):
    cluster = parse_cluster(shape)
    tops = [GRAPHS[n] for n in names]
    vals, cap = values[: len(tops)], caps[: len(tops)]
    best = brute_force_max_weight(cluster, tops, vals, cap)
    sol = max_weight_configuration(cluster, tops, vals, cap, solver="fast")
    used = np.zeros(cluster.machines, dtype=int)
    for _, m in sol.templates:
        np.add.at(used, m, 1)
    assert np.all(used <= cluster.slots)
    assert np.all(sol.counts(len(tops)) <= cap)
    assert sol.weight <= best + 1e-9 <= sol.upper_bound + 2e-9
    assert sol.gap >= 0 and (not sol.optimal or sol.weight == pytest.approx(best))


def test_fast_max_weight_lets_a_large_graph_take_the_large_machine():
    """By value per slot the star goes first and takes the 8-slot machine, breaking K8 in two;
    the largest-first packing keeps K8 whole and splits the star instead (the optimum)."""
    cluster = parse_cluster("1x8,2x4")
    tops = [complete(8), star(6)]
    sol = max_weight_configuration(cluster, tops, [100.0, 100.0], [1, 1], solver="fast")
    exact = max_weight_configuration(cluster, tops, [100.0, 100.0], [1, 1], solver="exact")
    assert exact.optimal and exact.cost == pytest.approx(2.0)
    assert sol.weight == pytest.approx(exact.weight) and sol.upper_bound >= exact.weight


def test_the_relaxation_sees_machines_split_a_job():
    """10 machines of 4 slots, 90% of slots: stars of 4 and chains of 3 cannot all stay whole.

    The knapsack bound (total slots only) is 0; the relaxation knows that whole chains leave
    a slot that only a split job can use.
    """
    cluster = parse_cluster("10x4")
    jobs = [JobType("c3", 6.0, 1.0, chain(3)), JobType("s4", 4.5, 1.0, star(4))]
    tops = [j.topology for j in jobs]
    rel = Relaxation(cluster, tops, [0.0, 0.0])
    bound = rel.static_bound([6.0, 4.5])
    opt = static_optimum(cluster, jobs, solver="fast")
    assert 0.5 <= bound <= opt.value + 1e-9
    assert opt.lower_bound >= bound - 1e-9


def test_part_cuts_are_the_least_traffic_leaving_g_nodes():
    top = GRAPHS["bi212"]
    cuts = part_cuts(top, top.nodes)
    for g in range(1, top.nodes):
        brute = min(
            sum(
                top.edge_weights()[i]
                for i, (u, v) in enumerate(top.edge_array())
                if (u in s) != (v in s)
            )
            for s in map(set, itertools.combinations(range(top.nodes), g))
        )
        assert cuts[g] == pytest.approx(brute)
    assert cuts[top.nodes] == 0.0


@pytest.mark.parametrize(
    ("shape", "load"), [("3x3", 0.5), ("3x3", 0.85), ("4x2", 0.6), ("2x4", 0.8)]
)
def test_fast_static_bound_brackets_the_proven_optimum(shape, load):
    cluster = parse_cluster(shape)
    s = cluster.total_slots * load
    jobs = [JobType("c3", s / 6, 1.0, chain(3)), JobType("s4", s / 8, 1.0, star(4))]
    exact = static_optimum(cluster, jobs, solver="exact")
    fast = static_optimum(cluster, jobs, solver="fast")
    assert exact.proven
    assert fast.lower_bound <= exact.value + 1e-7 <= fast.value + 2e-7
    if fast.proven:
        assert fast.value == pytest.approx(exact.value, abs=1e-7)


def test_weight_bound_is_an_upper_bound_with_cpu_limits():
    cluster = Cluster(np.array([3, 3, 2]), cpu=[4.0, 2.0, 4.0])
    top = GRAPHS["chain4"].with_demands(1.0, 0.0)
    lib = Library.build(cluster, [top])
    for value, cap in ((5.0, 2), (1.5, 3), (0.5, 1)):
        best = brute_force_max_weight(cluster, [top], [value], [cap])
        assert lib.relaxation.weight_bound([value], [cap]) >= best - 1e-9
        sol = max_weight_configuration(cluster, [top], [value], [cap], solver="fast", library=lib)
        assert sol.weight <= best + 1e-9 <= sol.upper_bound + 2e-9
        cpu = np.zeros(cluster.machines)
        for _, m in sol.templates:
            np.add.at(cpu, m, 1.0)
        assert np.all(cpu <= cluster.capacity[:, 0])
