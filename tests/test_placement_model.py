"""The placement model's inputs: mixed clusters and cluster files, edge traffic, CPU and
memory, and Storm's resource-aware scheduler, each against values worked out by hand."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from cloudsched.errors import InputError, ParameterError
from cloudsched.placement import Cluster, JobType, Topology, chain, load_flux, load_workload
from cloudsched.placement.baselines import machine_order, ras_order, resource_aware
from cloudsched.placement.cluster import cluster_from_text, load_cluster, parse_cluster
from cloudsched.placement.simulation import simulate_placement

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

FLUX = """\
name: t
config: {topology.component.cpu.pcore.percent: 20}
spouts: [{id: s, className: C, parallelism: 2, onHeapMemoryLoad: 300}]
bolts:
  - {id: a, className: C, parallelism: 4, cpuLoad: 50, offHeapMemoryLoad: 10}
  - {id: g, className: C, parallelism: 2}
streams:
  - {from: s, to: a, grouping: {type: SHUFFLE}}
  - {from: a, to: g, grouping: {type: GLOBAL}}
  - {from: s, to: g, grouping: {type: ALL}}
"""


def test_groups_of_machines_and_their_racks():
    cl = parse_cluster("2x4,3x2", racks=2)
    assert cl.slots.tolist() == [4, 4, 2, 2, 2]
    assert cl.rack.tolist() == [0, 0, 0, 1, 1] and cl.describe() == "2x4,3x2, 2 racks"
    with pytest.raises(ParameterError, match="groups of them"):
        parse_cluster("2x4,,3x2")


def test_a_cluster_file_gives_slots_limits_and_racks(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "cross_rack_cost: 3\nmachines:\n"
        "  - {count: 2, slots: 4, cpu: 400, memory: 8192, rack: 1}\n"
        "  - {count: 1, slots: 8, rack: 0}\n"
    )
    cl = load_cluster(path)
    assert cl.slots.tolist() == [4, 4, 8] and cl.rack.tolist() == [1, 1, 0]
    assert cl.capacity[:, 0].tolist() == [400, 400, np.inf] and cl.has_resources
    assert cl.distance[0, 2] == 3 and cl.distance[0, 1] == 1
    assert cluster_from_text(str(path)).slots.tolist() == [4, 4, 8]
    with pytest.raises(ParameterError, match="--racks"):
        cluster_from_text(str(path), racks=2)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("machines: []", "non-empty list 'machines'"),
        ("machines: [{count: 2, slots: 3, rack: 0}, {count: 1, slots: 2}]", "for every group"),
        ("machines: [{count: 2, slots: 3, cores: 4}]", "keys from"),
        ("machines: [{count: 2, slots: 0}]", "machines[0].slots must be"),
        ("machines: [{count: 1, slots: 2, cpu: -1}]", "machines[0].cpu must be"),
        ("racks: 2\nmachines: [{count: 1, slots: 2, rack: 0}]", "either 'racks'"),
        ("machines: [{count: 2, slots: 2, rack: 1}]", "ids 0..R-1"),
    ],
)
def test_bad_cluster_files_are_one_line_errors(tmp_path, text, fragment):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ParameterError) as exc:
        load_cluster(path)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_flux_traffic_from_groupings_and_demands_from_loads(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(FLUX)
    top = load_flux(path, traffic="grouping")
    g = top.graph
    # SHUFFLE s(2) -> a(4): 1/4 per edge; GLOBAL a(4) -> g[0]: 1 each; ALL s(2) -> g(2): 1 each
    assert g.edges[0, 2]["weight"] == pytest.approx(0.25)
    assert g.edges[2, 6]["weight"] == pytest.approx(1.0) and not g.has_edge(2, 7)
    assert g.edges[0, 7]["weight"] == pytest.approx(1.0)
    assert top.total_traffic == pytest.approx(2 * 4 * 0.25 + 4 + 2 * 2)
    dem = top.demands()
    assert dem[0].tolist() == [20.0, 300.0]  # spout: cpu from config, its own memory
    assert dem[2].tolist() == [50.0, 138.0]  # bolt a: cpuLoad; 128 default + 10 off-heap
    assert dem[6].tolist() == [20.0, 128.0]  # bolt g: config cpu, Storm's memory default
    assert load_flux(path).total_traffic == top.edges  # traffic 1 per edge by default


def test_workers_sum_their_executors_demands_and_traffic(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        FLUX.replace("name: t\n", "name: t\n").replace(
            "config: {", "config: {topology.workers: 2, "
        )
    )
    top = load_flux(path, slots="workers", traffic="grouping")
    execs = load_flux(path, traffic="grouping")
    assert top.nodes == 2
    assert top.demands().sum(axis=0).tolist() == execs.demands().sum(axis=0).tolist()
    assert load_flux(path, slots="workers").total_traffic == 1.0  # one link, counted once


def test_workload_edges_carry_traffic_and_nodes_resources(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        "job_types:\n  - {name: t, arrival_rate: 1, mean_duration: 1, resources: "
        "{cpu: 30, memory: 64}, topology: {nodes: [a, b, c], edges: [[a, b, 2.5], "
        "[b, c], [a, b, 0.5]]}}\n"
    )
    (jt,) = load_workload(path)
    assert jt.topology.graph.edges[0, 1]["weight"] == pytest.approx(3.0)  # listed twice
    assert jt.topology.total_traffic == pytest.approx(4.0)
    assert jt.topology.demands().tolist() == [[30.0, 64.0]] * 3
    cl = Cluster(np.array([2, 2]), racks=2, cross_rack_cost=2.0)
    assert cl.cost(jt.topology, np.array([0, 1, 1])) == pytest.approx(6.0)


def test_a_flux_topology_takes_no_workload_resources(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        "job_types:\n  - {name: t, arrival_rate: 1, mean_duration: 1, resources: "
        f"{{cpu: 1}}, topology: {{flux: {EXAMPLES / 'wordcount.yaml'}}}}}\n"
    )
    with pytest.raises(InputError, match="cpuLoad"):
        load_workload(path)


def test_ras_orders_executors_as_storm_does(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(FLUX)
    top = load_flux(path)
    # connections: s 2*4 + 2*2 = 12, a 4*2 + 4*2 = 16, g 2*4 + 2*2 = 12: a first, then g, s
    # (ties by id); around a: neighbours by fewest connections with it, g (2*4) then s (2*4,
    # id order)
    order = ras_order(top)
    comp = [top.graph.nodes[v]["component"] for v in order]
    assert comp[:3] == ["a", "g", "s"] and sorted(order) == list(range(top.nodes))


def test_ras_packs_racks_by_their_share_of_free_resources():
    cl = Cluster(np.array([4, 4, 4, 4]), racks=2, cpu=[100, 100, 400, 400])
    free = cl.slots.copy()
    res = cl.capacity.copy()
    res[2, 0] = 50
    order = machine_order(cl, free, res)
    # racks: 0 has 8 of 16 slots (50%) and 200 of 650 CPU (30.8%), 1 has 50% and 69.2%: the
    # least shares are 30.8 and 50, so rack 1 first; in it machine 3 (50% of the slots,
    # 400/450 CPU) before machine 2 (50%, 50/450 = 11.1%); rack 0's two tie: by id
    assert order == [3, 2, 0, 1]
    top = chain(5).with_demands(40.0, 0.0)
    where = resource_aware(top, free, cl, res)
    used = np.bincount(where, minlength=4)
    assert np.all(np.bincount(where, weights=top.demands()[:, 0], minlength=4) <= res[:, 0])
    assert used.sum() == 5


def test_every_policy_respects_cpu_limits():
    # two machines of 3 slots, but CPU for 2 nodes of 40 each on machine 0
    cl = Cluster(np.array([3, 3]), cpu=[80.0, 200.0])
    top = chain(3).with_demands(40.0, 0.0)
    jobs = [JobType("c", 0.8, 1.0, top)]
    for policy in ("storm-default", "greedy", "resource-aware", "dgp", "maxweight"):
        res = simulate_placement(
            policy, cl, jobs, horizon=300, rng=2, record=True, compare_bound=False
        )
        tab = res.assignments
        for t in np.linspace(1, 299, 60):
            now = tab[(tab.start <= t) & (tab.end.fillna(np.inf) > t)]
            cpu = np.bincount(now.machine, weights=np.full(len(now), 40.0), minlength=2)
            assert np.all(cpu <= cl.capacity[:, 0]), (policy, t)


def test_a_graph_larger_than_a_machine_cpu_is_refused():
    cl = Cluster(np.array([4, 4]), cpu=[100.0, 100.0])
    big = Topology("g", nx.path_graph(3))
    for v in big.graph.nodes:
        big.graph.nodes[v]["cpu"] = 150.0
    with pytest.raises(ParameterError, match=r"(CPU|cpu)"):
        cl.check_fits(Topology("g", big.graph))
