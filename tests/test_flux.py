"""Flux as Storm reads it: components, config, includes, substitution, and worker packing."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from cloudsched.errors import InputError
from cloudsched.placement import load_flux
from cloudsched.placement.flux import read_properties
from cloudsched.placement.workload import topology_from_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BASE = """
name: "t"
config:
  topology.workers: 2
components:
  - id: "scheme"
    className: "org.apache.storm.kafka.StringScheme"
spouts:
  - id: "s"
    className: "org.example.Spout"
    constructorArgs: [{ref: "scheme"}]
    parallelism: 3
bolts:
  - id: "b"
    className: "org.example.Bolt"
    parallelism: 2
streams:
  - {from: "s", to: "b", grouping: {type: SHUFFLE}}
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_components_are_objects_not_executors(tmp_path):
    topo = load_flux(_write(tmp_path, "t.yaml", BASE))
    assert topo.nodes == 5 and topo.edges == 6  # 3 spouts x 2 bolts; "scheme" is no executor


def test_workers_follow_the_even_scheduler(tmp_path):
    """Executors sorted by component id then index; executor i goes to worker i mod W.

    Independent expansion: ids sorted ("b" < "s"): b0 b1 s0 s1 s2 -> workers 0 1 0 1 0.
    Workers 0 = {b0, s0, s2}, 1 = {b1, s1}; s-b pairs in different workers exist -> one link.
    """
    topo = load_flux(_write(tmp_path, "t.yaml", BASE), slots="workers")
    assert topo.nodes == 2 and topo.edges == 1
    assert "2 workers" in topo.name


def test_word_count_takes_three_slots_as_in_storm():
    topo = load_flux(EXAMPLES / "wordcount.yaml", slots="workers")
    assert topo.nodes == 3  # storm-starter sets 3 workers; 25 executors without packing
    assert load_flux(EXAMPLES / "wordcount.yaml").nodes == 25


@pytest.mark.parametrize("k", [1, 2, 3, 7, 25, 40])
def test_executors_per_slot_groups_consecutive_executors(k):
    full = load_flux(EXAMPLES / "wordcount.yaml")
    packed = load_flux(EXAMPLES / "wordcount.yaml", executors_per_slot=k)
    order = sorted(
        full.graph.nodes,
        key=lambda v: (full.graph.nodes[v]["component"], full.graph.nodes[v]["index"]),
    )
    group = {v: i // k for i, v in enumerate(order)}
    expected = nx.quotient_graph(full.graph, lambda u, v: group[u] == group[v])
    assert packed.nodes == -(-full.nodes // k)
    assert packed.edges == expected.number_of_edges() - nx.number_of_selfloops(expected)


def test_workers_fewer_than_executors_never_make_empty_slots(tmp_path):
    text = BASE.replace("topology.workers: 2", "topology.workers: 50")
    assert load_flux(_write(tmp_path, "t.yaml", text), slots="workers").nodes == 5


def test_includes_merge_as_flux_parser_does(tmp_path):
    _write(
        tmp_path,
        "extra.yaml",
        """
name: "renamed"
config: {topology.workers: 5, topology.debug: true}
bolts:
  - {id: "b", className: "org.example.Other", parallelism: 4}
  - {id: "c", className: "org.example.Sink", parallelism: 1}
streams:
  - {from: "b", to: "c", grouping: {type: GLOBAL}}
""",
    )
    keep = BASE + "includes:\n  - {file: extra.yaml, override: false}\n"
    topo = load_flux(_write(tmp_path, "keep.yaml", keep))
    # name and b kept (override false), c and its stream added: 3 + 2 + 1 nodes
    assert topo.name == "t" and topo.nodes == 6 and topo.edges == 6 + 2
    over = BASE + "includes:\n  - {file: extra.yaml, override: true}\n"
    topo = load_flux(_write(tmp_path, "over.yaml", over))
    assert topo.name == "renamed" and topo.nodes == 3 + 4 + 1 and topo.edges == 12 + 4
    assert load_flux(_write(tmp_path, "w.yaml", over), slots="workers").nodes == 5


def test_property_and_environment_substitution(tmp_path, monkeypatch):
    _write(tmp_path, "dev.properties", "# comment\nspout.parallelism = 4\nbolt.p: 2\n")
    text = BASE.replace("parallelism: 3", "parallelism: ${spout.parallelism}").replace(
        "parallelism: 2", "parallelism: ${ENV-BOLT_P}"
    )
    path = _write(tmp_path, "t.yaml", text)
    monkeypatch.setenv("BOLT_P", "6")
    topo = load_flux(path, properties=read_properties(tmp_path / "dev.properties"))
    assert topo.nodes == 10 and topo.edges == 24
    spec = {"flux": "t.yaml", "properties": "dev.properties", "executors_per_slot": 5}
    assert topology_from_spec(spec, tmp_path, rng=np.random.default_rng(0)).nodes == 2


def test_a_list_property_and_one_of_its_elements_are_substituted(tmp_path):
    """As Storm's own substitution test writes them: ``${a.list.property}`` is the list,
    ``${a.list.property[1]}`` its element (FluxParser.parseListAndExtractElem: brackets
    and quotes dropped); an index past the list is a one-line error."""
    _write(tmp_path, "t.properties", 'par: ["2", "4"]\nname: sub\n')
    text = (
        BASE.replace("parallelism: 3", "parallelism: ${par[1]}")
        .replace('name: "t"', 'name: "${name}"')
        .replace("config:", "config:\n  list.target: ${par}", 1)
    )
    props = read_properties(tmp_path / "t.properties")
    topo = load_flux(_write(tmp_path, "t.yaml", text), properties=props)
    plain = load_flux(_write(tmp_path, "p.yaml", BASE.replace("parallelism: 3", "parallelism: 4")))
    assert topo.name == "sub" and topo.nodes == plain.nodes
    with pytest.raises(InputError, match=r"par\[5\]\}: the list has 2 elements"):
        load_flux(_write(tmp_path, "b.yaml", text.replace("par[1]", "par[5]")), properties=props)
