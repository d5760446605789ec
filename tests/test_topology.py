from pathlib import Path

import numpy as np
import pytest

from cloudsched.errors import InputError, ParameterError
from cloudsched.placement import (
    chain,
    complete,
    from_edges,
    load_flux,
    random_graph,
    star,
    topology_from_spec,
    tree,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    ("name", "nodes", "edges"),
    [
        # spout x5 -> split x8 (shuffle: 5*8) -> count x12 (fields: 8*12)
        ("wordcount.yaml", 25, 40 + 96),
        # word x10 -> exclaim1 x3 (shuffle: 30) -> exclaim2 x2 (shuffle: 6)
        ("exclamation.yaml", 15, 30 + 6),
        # generator x5 -> counter x4 (fields: 20) -> ranker x4 (fields: 16) -> final x1 (global: 4)
        ("rolling-top-words.yaml", 14, 20 + 16 + 4),
    ],
)
def test_flux_examples_expand_to_executors(name, nodes, edges):
    topo = load_flux(EXAMPLES / name)
    assert (topo.nodes, topo.edges) == (nodes, edges)
    components = [topo.graph.nodes[v]["component"] for v in range(nodes)]
    assert components == sorted(components, key=components.index)  # contiguous blocks


def test_global_grouping_goes_to_executor_zero():
    topo = load_flux(EXAMPLES / "rolling-top-words.yaml")
    final = [v for v in topo.graph if topo.graph.nodes[v]["component"] == "final-ranker"]
    assert len(final) == 1 and topo.graph.degree(final[0]) == 4


def test_generators():
    assert (chain(4).nodes, chain(4).edges) == (4, 3)
    assert star(5).edges == 4 and max(d for _, d in star(5).graph.degree()) == 4
    assert tree(7).edges == 6 and tree(7, branching=3).graph.degree(0) == 3
    assert complete(5).edges == 10
    r1 = random_graph(20, 0.3, rng=np.random.default_rng(1))
    r2 = random_graph(20, 0.3, rng=np.random.default_rng(1))
    assert np.array_equal(r1.edge_array(), r2.edge_array())
    assert 0 < r1.edges < 190
    assert random_graph(6, 1.0, rng=np.random.default_rng(0)).edges == 15


def test_inline_and_spec_forms(tmp_path):
    topo = from_edges(["a", "b", "c"], [["a", "b"], ["b", "c"], ["c", "b"]])
    assert (topo.nodes, topo.edges) == (3, 2)
    rng = np.random.default_rng(0)
    assert topology_from_spec({"generator": "chain", "nodes": 4}, tmp_path, rng=rng).edges == 3
    assert topology_from_spec({"nodes": 3, "edges": [[0, 1]]}, tmp_path, rng=rng).edges == 1
    spec = {"flux": "wordcount.yaml"}
    assert topology_from_spec(spec, EXAMPLES, rng=rng).nodes == 25


BAD_FLUX = {
    "yaml": ("spouts: [\n  - id: a\n", "malformed YAML"),
    "grouping": (
        "spouts: [{id: s, className: C, parallelism: 2}]\nbolts: [{id: b, className: C}]\n"
        "streams: [{from: s, to: b, grouping: {type: MAGIC}}]\n",
        "unknown grouping MAGIC",
    ),
    "no grouping": (
        "spouts: [{id: s, className: C}]\nbolts: [{id: b, className: C}]\n"
        "streams: [{from: s, to: b}]\n",
        "needs a grouping type",
    ),
    "component": (
        "spouts: [{id: s, className: C}]\nstreams: [{from: s, to: x, grouping: {type: SHUFFLE}}]\n",
        "unknown component 'x'",
    ),
    "parallelism": ("spouts: [{id: s, className: C, parallelism: 0}]\n", "parallelism of 's'"),
    "no spout": ("bolts: [{id: b, className: C}]\n", "at least one spout"),
    "duplicate": ("spouts: [{id: s, className: C}, {id: s, className: C}]\n", "defined twice"),
    "not a mapping": ("- 1\n- 2\n", "a Flux file is a mapping"),
    "no className": ("spouts: [{id: s, parallelism: 2}]\n", "needs a 'className'"),
    "component without className": (
        "components: [{id: k}]\nspouts: [{id: s, className: C}]\n",
        "components entry 'k'",
    ),
    "topologySource": (
        "name: t\ntopologySource: {className: org.example.MyTopology}\n",
        "'topologySource' builds the topology in Java code",
    ),
    "undefined property": (
        "spouts: [{id: s, className: C, parallelism: ${spout.parallelism}}]\n",
        "${spout.parallelism} is not defined",
    ),
    "unset env": (
        "spouts: [{id: s, className: C, parallelism: ${ENV-CLOUDSCHED_SURELY_UNSET}}]\n",
        "environment variable CLOUDSCHED_SURELY_UNSET is not set",
    ),
    "resource include": (
        "includes: [{resource: true, file: /base.yaml}]\nspouts: [{id: s, className: C}]\n",
        "classpath resource",
    ),
    "workers": (
        "config: {topology.workers: 0}\nspouts: [{id: s, className: C}]\n",
        "topology.workers must be an integer in [1, 1000000]",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FLUX))
def test_malformed_flux_gives_one_line(tmp_path, case):
    text, fragment = BAD_FLUX[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_flux(path, slots="workers")
    assert fragment in str(exc.value) and str(path) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_bad_generator_specs(tmp_path):
    rng = np.random.default_rng(0)
    with pytest.raises(ParameterError, match=r"^generator "):
        topology_from_spec({"generator": "hypercube", "nodes": 4}, tmp_path, rng=rng)
    with pytest.raises(ParameterError, match=r"^nodes "):
        topology_from_spec({"generator": "chain", "nodes": 0}, tmp_path, rng=rng)
    with pytest.raises(ParameterError, match=r"^edges "):
        from_edges(3, [[0, 5]])


def test_an_unknown_ref_is_said_not_refused_as_storm_passes_null(tmp_path):
    """Storm's FluxBuilder resolves a ``ref`` to a component that is not defined as null (a
    map lookup, ExecutionContext.getComponent), and Storm's own config-methods-test.yaml
    does so (``reflist: [time1, time2]``): read with a warning naming it (issue 43)."""
    path = tmp_path / "refs.yaml"
    path.write_text(
        "components: [{id: time1, className: java.time.Duration}]\n"
        "spouts: [{id: s, className: C, constructorArgs: [{reflist: [time1, time2]}]}]\n"
    )
    with pytest.warns(UserWarning, match="unknown component 'time2' \\(Storm passes null"):
        top = load_flux(path)
    assert top.nodes == 1
