"""Storm 2.x's ResourceAwareScheduler on worker slots: heap limit and bound ackers, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudsched.data import flux_path
from cloudsched.errors import InputError
from cloudsched.placement import parse_cluster
from cloudsched.placement.baselines import ras_order
from cloudsched.placement.flux import load_flux
from cloudsched.placement.static import place_baseline
from cloudsched.placement.storm import ACKER
from cloudsched.placement.storm_ras import estimated_workers, ras_acker_count, ras_scheduler


def _flux(tmp_path: Path, config: str = "") -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(
        "name: t\nconfig:\n  topology.workers: 2\n"
        "  topology.component.resources.onheap.memory.mb: 256\n"
        "  topology.acker.resources.onheap.memory.mb: 128\n" + config + "spouts:\n"
        "  - {id: s, className: S, parallelism: 2}\n"
        "bolts:\n  - {id: b, className: B, parallelism: 6}\n"
        "streams:\n  - {from: s, to: b, grouping: {type: SHUFFLE}}\n"
    )
    return path


def _where(top, placed) -> dict[str, tuple[int, int]]:
    g = top.graph
    name = {v: f"{g.nodes[v]['component']}{g.nodes[v]['index']}" for v in g}
    return {name[v]: (int(placed.machines[v]), int(placed.ports[v])) for v in g}


def test_heap_limit_fills_workers_by_hand(tmp_path):
    # links: s 2*6 = b 6*2, tie by id: b first; order b0 s0 b1 s1 b2 b3 b4 b5.
    # 768 MB of heap holds three 256 MB executors: machine 0's ports 6700 and 6701 take
    # six, machine 1's port 6700 the last two.
    top = load_flux(_flux(tmp_path), ackers=0)
    names = [
        f"{top.graph.nodes[v]['component']}{top.graph.nodes[v]['index']}" for v in ras_order(top)
    ]
    assert names == ["b0", "s0", "b1", "s1", "b2", "b3", "b4", "b5"]
    (placed,) = ras_scheduler(parse_cluster("2x8"), [top], 2)
    got = _where(top, placed)
    assert [k for k, w in got.items() if w == (0, 6700)] == ["s0", "b0", "b1"]
    assert sorted(k for k, w in got.items() if w == (0, 6701)) == ["b2", "b3", "s1"]
    assert sorted(k for k, w in got.items() if w == (1, 6700)) == ["b4", "b5"]
    assert placed.workers == 3


def test_a_larger_heap_limit_packs_one_worker(tmp_path):
    top = load_flux(_flux(tmp_path, "  topology.worker.max.heap.size.mb: 2048\n"), ackers=0)
    (placed,) = ras_scheduler(parse_cluster("2x8"), [top], 2)
    assert set(_where(top, placed).values()) == {(0, 6700)}


def test_bound_ackers_join_each_new_worker_by_hand(tmp_path):
    # two ackers of 128 MB; the first user executor of a worker brings one along:
    # (0,6700): b0 a0 s0 (640); b1 opens (0,6701) with a1: b1 a1 s1 (640);
    # b2 b3 b4 fill (1,6700) to 768 (no acker left to bind); b5 opens (1,6701)
    top = load_flux(_flux(tmp_path), ackers="storm")
    assert sum(1 for _, c in top.graph.nodes(data="component") if c == ACKER) == 2
    (placed,) = ras_scheduler(parse_cluster("2x8"), [top], 2)
    got = _where(top, placed)
    by_slot: dict[tuple[int, int], list[str]] = {}
    for k, w in got.items():
        by_slot.setdefault(w, []).append(k)
    assert {w: sorted(v) for w, v in by_slot.items()} == {
        (0, 6700): ["__acker0", "b0", "s0"],
        (0, 6701): ["__acker1", "b1", "s1"],
        (1, 6700): ["b2", "b3", "b4"],
        (1, 6701): ["b5"],
    }


def test_nimbus_acker_count_under_ras(tmp_path):
    # heap asked: 8 x 256 + 2 ackers (topology.workers) x 128 = 2304 -> 3 workers of 768
    top = load_flux(_flux(tmp_path), ackers="storm")
    assert estimated_workers(top) == 3
    assert ras_acker_count(top) == 3
    per2 = load_flux(_flux(tmp_path, "  topology.ras.acker.executors.per.worker: 2\n"))
    assert ras_acker_count(per2) == 6
    fixed = load_flux(_flux(tmp_path, "  topology.acker.executors: 4\n"))
    assert ras_acker_count(fixed) == 4


def test_cpu_and_memory_of_the_machine_bound_it(tmp_path):
    # CPU 25 a machine, 10 an executor: two executors a machine, four machines
    top = load_flux(_flux(tmp_path), ackers=0)
    cluster = parse_cluster("4x8")
    cluster.capacity[:, 0] = 25.0
    (placed,) = ras_scheduler(cluster, [top], 4)
    assert sorted(placed.machines.tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]
    cluster.capacity[:, 0] = 15.0  # one a machine: 8 executors do not fit on 4
    assert ras_scheduler(cluster, [top], 4) == [None]


def test_place_baseline_flags_a_ras_row_beyond_the_models_slots():
    cluster = parse_cluster("8x16")
    tops = [load_flux(flux_path("wordcount"), ackers="storm", traffic="grouping")]
    row = place_baseline(cluster, tops, "resource-aware", 4)
    assert row.placed == 1
    assert not row.fits and any("over capacity" in n for n in row.notes)
    assert any("under RAS Storm runs 5 ackers" in n for n in row.notes)


def test_a_bad_heap_limit_is_one_line(tmp_path):
    with pytest.raises(InputError, match=r"max\.heap\.size\.mb must be a number in \(0, 1e12\]"):
        load_flux(_flux(tmp_path, "  topology.worker.max.heap.size.mb: 0\n"))
