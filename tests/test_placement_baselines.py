from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cloudsched.errors import ParameterError
from cloudsched.placement import (
    Cluster,
    chain,
    complete,
    greedy,
    load_flux,
    parse_cluster,
    random_graph,
    storm_default,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_storm_default_breaks_every_edge_of_a_chain_over_empty_machines():
    cluster = parse_cluster("4x3")
    where = storm_default(chain(4), cluster.slots.copy())
    assert sorted(where.tolist()) == [0, 1, 2, 3]
    assert cluster.cost(chain(4), where) == 3


def test_greedy_breaks_nothing_when_one_machine_has_room():
    cluster = Cluster(np.array([2, 4, 1, 3]))
    free = np.array([1, 4, 1, 2])
    where = greedy(chain(4), free, cluster)
    assert where.tolist() == [1, 1, 1, 1]
    assert cluster.cost(chain(4), where) == 0


def test_storm_default_interleaves_most_free_first():
    where = storm_default(chain(5), np.array([1, 3, 2]))
    assert where.tolist() == [1, 2, 0, 1, 2]


def test_rack_distance_and_cost():
    cluster = parse_cluster("4x2", racks=2, cross_rack_cost=3)
    assert [cluster.rack_of(m) for m in range(4)] == [0, 0, 1, 1]
    assert cluster.cost(chain(3), np.array([0, 1, 2])) == 1 + 3
    assert cluster.cost(complete(3), np.array([0, 0, 0])) == 0


def test_greedy_prefers_the_same_rack_when_the_host_is_full():
    cluster = parse_cluster("4x2", racks=2)
    free = np.array([1, 1, 2, 2])
    where = greedy(chain(3), free, cluster)
    # node 0 goes to machine 2 (most free), node 1 joins it, node 2 spills to machine 3 (same rack)
    assert where.tolist() == [2, 2, 3]


@given(
    slots=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    k=st.integers(1, 20),
    p=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_placements_use_only_free_slots(slots, k, p, seed):
    cluster = Cluster(np.array(slots))
    rng = np.random.default_rng(seed)
    free = rng.integers(0, cluster.slots + 1)
    topo = random_graph(k, p, rng=rng)
    for where in (storm_default(topo, free.copy()), greedy(topo, free.copy(), cluster)):
        if k > free.sum():
            assert where is None
            continue
        used = np.bincount(where, minlength=free.size)
        assert np.all(used <= free)  # a slot is never given twice
        assert where.shape == (k,)


def test_flux_jobs_on_a_cluster():
    cluster = parse_cluster("50x12")
    wc = load_flux(EXAMPLES / "wordcount.yaml")
    free = cluster.slots.copy()
    default_cost = cluster.cost(wc, storm_default(wc, free.copy()))
    greedy_cost = cluster.cost(wc, greedy(wc, free.copy(), cluster))
    assert default_cost == wc.edges  # 25 nodes on 25 different machines
    assert greedy_cost < default_cost


def test_bad_clusters():
    with pytest.raises(ParameterError, match=r"^cluster "):
        parse_cluster("4by3")
    with pytest.raises(ParameterError, match=r"^cluster "):
        parse_cluster("0x3")
    with pytest.raises(ParameterError, match=r"^racks "):
        parse_cluster("4x3", racks=5)
    with pytest.raises(ParameterError, match=r"^topology "):
        parse_cluster("2x2").check_fits(chain(5))
