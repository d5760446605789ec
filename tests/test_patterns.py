"""The max-weight configuration by pieces and patterns, against brute force and the MILP."""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.placement import chain, complete, parse_cluster, star, tree
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.configuration import max_weight_configuration
from cloudsched.placement.milp import exact_max_weight
from cloudsched.placement.patterns import applies, pattern_max_weight, splits
from cloudsched.testing.placement_oracles import brute_force_max_weight


def _weight(cluster, tops, values, templates):
    return sum(values[j] for j, _ in templates) - sum(
        cluster.cost(tops[j], m) for j, m in templates
    )


def _valid(cluster, tops, caps, templates):
    used = np.zeros(cluster.machines, dtype=np.int64)
    for _, m in templates:
        np.add.at(used, m, 1)
    per_type = np.bincount([j for j, _ in templates], minlength=len(tops))
    return bool(np.all(used <= cluster.slots) and np.all(per_type <= caps))


def test_least_cuts_of_a_chain_by_profile_by_hand():
    got = {p: cut for p, (cut, _) in splits(chain(4), 4).items()}
    assert got == {(4,): 0, (3, 1): 1, (2, 2): 1, (2, 1, 1): 2, (1, 1, 1, 1): 3}
    assert set(splits(chain(4), 2)) == {(2, 2), (2, 1, 1), (1, 1, 1, 1)}


@pytest.mark.parametrize("seed", range(6))
def test_patterns_equal_brute_force_on_tiny_clusters(seed):
    rng = np.random.default_rng(seed)
    spec = ["2x3", "3x2", "1x3,1x2", "2x2,1x3"][seed % 4]
    cluster = parse_cluster(spec)
    tops = [[chain(3), star(3)], [chain(2), chain(3)], [star(4), chain(2)]][seed % 3]
    caps = rng.integers(0, 3, size=len(tops))
    values = rng.uniform(0.2, 3.0, size=len(tops))
    templates, optimal, bound = pattern_max_weight(cluster, tops, values, caps)
    best = brute_force_max_weight(cluster, tops, values, caps)
    assert optimal and _valid(cluster, tops, caps, templates)
    assert _weight(cluster, tops, values, templates) == pytest.approx(best, abs=1e-9)
    assert bound == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize(
    ("spec", "tops"),
    [
        ("6x4", [chain(3), chain(4), star(4), tree(5)]),
        ("2x4,2x3", [chain(4), tree(5), star(3), complete(4)]),
    ],
)
def test_patterns_equal_the_per_node_milp(spec, tops):
    cluster = parse_cluster(spec)
    rng = np.random.default_rng(11)
    for _ in range(4):
        caps = rng.integers(0, 4, size=len(tops))
        values = np.log1p(caps) * rng.uniform(0.5, 4.0)
        a, _, _ = exact_max_weight(cluster, tops, values, caps, time_limit=60)
        b, optimal, _ = pattern_max_weight(cluster, tops, values, caps)
        assert optimal and _valid(cluster, tops, caps, b)
        assert _weight(cluster, tops, values, b) == pytest.approx(
            _weight(cluster, tops, values, a), abs=1e-7
        )


def test_patterns_apply_only_where_every_break_costs_the_same():
    tops = [chain(3)]
    assert applies(parse_cluster("4x4"), tops)
    assert not applies(parse_cluster("4x4", racks=2), tops)
    assert applies(Cluster(np.full(4, 4), racks=2, cross_rack_cost=1.0), tops)
    assert not applies(Cluster(np.full(4, 4), cpu=np.full(4, 100.0)), tops)
    assert not applies(parse_cluster("4x9"), [chain(9)])
    # the exact solver goes through them where they apply, and is proven
    sol = max_weight_configuration(parse_cluster("3x3"), [chain(3), star(4)], [1.0, 2.0], [2, 1])
    assert sol.optimal and sol.solver == "exact"
