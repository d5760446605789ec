"""``place static``: running topologies placed once, against brute force and Storm's schedulers."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from cloudsched.cli import main
from cloudsched.data import flux_path
from cloudsched.errors import ParameterError
from cloudsched.placement.cluster import parse_cluster
from cloudsched.placement.flux import load_flux
from cloudsched.placement.static import place_baseline, place_static
from cloudsched.placement.topology import Topology, chain, star
from cloudsched.testing.placement_oracles import brute_force_static

SHIPPED = ("wordcount", "exclamation", "rolling-top-words")


@pytest.mark.parametrize(
    ("spec", "tops"), [("3x3", [chain(4), star(4)]), ("2x3,1x2", [chain(2), star(4), chain(2)])]
)
def test_the_placement_is_the_brute_force_optimum_and_its_bound_holds(spec, tops):
    cluster = parse_cluster(spec)
    best = brute_force_static(cluster, tops)
    res = place_static(cluster, tops, time_limit=20)
    assert res.placed == len(tops) and res.cost == pytest.approx(best)
    assert res.lower_bound <= best + 1e-9 and res.proven
    for policy in ("storm-default", "resource-aware"):
        row = place_baseline(cluster, tops, policy)
        # Storm's EvenScheduler (one worker each here) may run more than a machine has
        assert row.cost >= best - 1e-9 or not row.fits


def test_the_shipped_topologies_beat_storms_schedulers_with_a_valid_bound():
    cluster = parse_cluster("8x8")
    tops = [load_flux(flux_path(n), traffic="grouping") for n in SHIPPED]
    res = place_static(cluster, tops, time_limit=30)
    assert res.placed == 3 and res.lower_bound <= res.cost + 1e-9
    for policy in ("storm-default", "resource-aware"):
        other = place_baseline(cluster, tops, policy)
        assert other.placed == 3
        assert other.cost >= res.lower_bound - 1e-9 or not other.fits
    # EvenScheduler's rolling-top-words is one worker of 14 executors on a machine of 8
    even = place_baseline(cluster, tops, "storm-default")
    assert not even.fits and "machine 6 runs 14 executors on 8 slots" in even.notes[0]
    # every machine's slots, CPU and memory hold what was put on it
    for t, m in zip(tops, res.machines, strict=True):
        assert cluster.fits_on_machines(t, m)
    used = np.bincount(np.concatenate(res.machines), minlength=cluster.machines)
    assert np.all(used <= cluster.slots)


def test_topologies_that_cannot_all_fit_are_refused():
    with pytest.raises(ParameterError, match="at most 9 executors in all"):
        place_static(parse_cluster("3x3"), [chain(5), star(5)])


def test_the_cli_writes_the_table_and_a_storm_assignment(tmp_path, capsys):
    path = tmp_path / "assignment.yaml"
    argv = ["place", "static", "--cluster", "8x8", "--assignment", str(path)]
    for name in SHIPPED:
        argv += ["--topology", name]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr().out
    assert exc.value.code in (0, None)
    assert "optimised" in out and "storm-default" in out and "resource-aware" in out
    doc = yaml.safe_load(path.read_text())
    assert set(doc["topologies"]) == {"word-count", "exclamation", "rolling-top-words"}
    assert all(t["placed"] for t in doc["topologies"].values())


def test_topologies_that_fit_alone_but_not_together_are_reported(tmp_path, capsys):
    """Each fits the CPU of two machines alone (180 and 150 of 200, ackers included), not
    both: the report says which was left out, with no bound and no gap (a partial
    placement has none)."""
    cluster = tmp_path / "c.yaml"
    cluster.write_text("machines:\n  - {count: 2, slots: 20, cpu: 100}\n")
    argv = [
        "place",
        "static",
        "--cluster",
        str(cluster),
        "--topology",
        "exclamation",
        "--topology",
        "rolling-top-words",
        "--format",
        "json",
        "--out",
        str(tmp_path / "o.json"),
    ]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code in (0, None)
    rows = json.loads((tmp_path / "o.json").read_text())["rows"]
    assert rows[0]["placed"] == "1/2" and rows[0]["bound"] is None and rows[0]["gap"] is None
    assert "not placed together with the others" in rows[0]["notes"]
    with pytest.raises(SystemExit):
        main(argv[:-4])
    assert "1 of 2 placed together" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--topology", "nope"], "--topology must be a Flux YAML file or one of wordcount"),
        (["--topology", "wordcount", "--topology", "wordcount"], "distinct names"),
        (["--topology", "wordcount", "--solver", "best"], "--solver must be one of"),
        (["--topology", "wordcount", "--assignment", "a.txt"], "--assignment"),
    ],
)
def test_bad_input_is_one_line(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exc:
        main(["place", "static", "--cluster", "8x8", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err


def test_a_topology_larger_than_the_cluster_names_the_option(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["place", "static", "--cluster", "4x4", "--topology", "wordcount"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "--topology must be at most the cluster's 16 slots (a slot per node;" in err, err
    assert "word-count (28 nodes)" in err  # 25 executors and Storm's 3 ackers


def test_a_topology_that_fits_is_not_traded_for_the_others_traffic():
    """2 machines of 4 slots and 100% CPU; two 2-node chains of 50% + 30% and a lone spout
    of 40% (200% in all): all three fit only with both chains split, at cost 2.  Worth only
    its own traffic, the spout (none) was left out to spare that cost (issue 43)."""
    import networkx as nx

    from cloudsched.placement import Topology, parse_cluster
    from cloudsched.placement.static import place_static

    cluster = parse_cluster("2x4")
    cluster = type(cluster)(
        cluster.slots, cpu=np.full(2, 100.0), memory=np.full(2, 1e9)
    )  # fmt: skip

    def chain(name):
        g = nx.Graph()
        g.add_node(0, cpu=50.0, memory=0.0)
        g.add_node(1, cpu=30.0, memory=0.0)
        g.add_edge(0, 1, weight=1.0)
        return Topology(name, g)

    spout = nx.Graph()
    spout.add_node(0, cpu=40.0, memory=0.0)
    out = place_static(cluster, [chain("h1"), chain("h2"), Topology("spout", spout)])
    assert out.placed == 3, out.notes
    assert out.cost == pytest.approx(2.0) and out.lower_bound == pytest.approx(2.0)


def test_flux_properties_are_read_by_place_static(tmp_path, capsys):
    """``--properties`` fills the Flux files' ``${name}``, as Flux's ``--filter`` does for
    ``storm jar``; without it the one-line error names the option (issue 43)."""
    import json

    from cloudsched.cli import main

    flux = tmp_path / "filtered.yaml"
    flux.write_text(
        'name: "${topology.name}"\n'
        "spouts:\n  - {id: s, className: S, parallelism: ${spout.parallelism}}\n"
        "bolts:\n  - {id: b, className: B, parallelism: 2}\n"
        "streams:\n  - {from: s, to: b, grouping: {type: SHUFFLE}}\n"
    )
    props = tmp_path / "dev.properties"
    props.write_text(
        "# as Storm's examples write them\ntopology.name=filtered\nspout.parallelism=3\n"
    )
    argv = ["place", "static", "--cluster", "2x4", "--topology", str(flux)]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "--properties" in err and len(err.splitlines()) == 1, err
    out = tmp_path / "o.json"
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--properties", str(props), "--format", "json", "--out", str(out)])
    assert exc.value.code in (0, None), capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["topologies"] == ["filtered"]
    best = next(r for r in doc["rows"] if r["scheduler"] == "optimised")
    assert best["placed"] == "1/1"  # 3 spouts and 2 bolts: 5 executors on 8 slots


def test_the_optimised_placement_is_never_above_a_storm_scheduler_that_fits():
    """On 6x12 the packing's best (50.17) was above ResourceAwareScheduler's (48.59), which
    fits: the optimised row takes the cheaper placement and says so (issue 43)."""
    cluster = parse_cluster("6x12")
    tops = [load_flux(flux_path(n), traffic="grouping") for n in SHIPPED]
    res = place_static(cluster, tops, time_limit=30)
    for policy in ("storm-default", "resource-aware"):
        row = place_baseline(cluster, tops, policy)
        if row.fits and row.placed == 3:
            assert res.cost <= row.cost + 1e-9, (policy, res.cost, row.cost)
    for t, m in zip(tops, res.machines, strict=True):
        assert cluster.fits_on_machines(t, m)
    assert res.lower_bound <= res.cost + 1e-9


def test_copies_of_a_graph_are_solved_once_and_a_spent_budget_stops_the_milps(monkeypatch):
    """Running topologies are often copies of a few: the library solves each graph once,
    and once its budget is spent the graphs left get the greedy template (issue 43: 120
    copies on 300x12 took 420 s at --time-limit 10; now seconds)."""
    import cloudsched.placement.fastpack as fp

    calls = []
    real = fp.least_cost_template

    def spy(cluster, t, **kw):
        calls.append((t.name, kw["exact"]))
        return real(cluster, t, **kw)

    monkeypatch.setattr(fp, "least_cost_template", spy)
    cluster = parse_cluster("20x12")
    base = [load_flux(flux_path(n), traffic="grouping") for n in SHIPPED]
    tops = [Topology(f"{t.name}-{i}", t.graph) for i in range(4) for t in base]
    lib = fp.Library.build(cluster, tops)
    assert len(calls) == 3 and all(exact for _, exact in calls)
    for j in range(len(tops)):
        assert lib.best[j] is lib.best[j % 3]
    calls.clear()
    fp.Library.build(cluster, tops, budget=0.0)
    assert len(calls) == 3 and not any(exact for _, exact in calls)


def test_a_short_time_limit_keeps_the_bound_below_the_optimum():
    cluster = parse_cluster("20x12")
    base = [load_flux(flux_path(n), traffic="grouping") for n in SHIPPED]
    tops = [Topology(f"{t.name}-{i}", t.graph) for i in range(4) for t in base]
    full = place_static(cluster, tops, time_limit=60)
    short = place_static(cluster, tops, time_limit=0.01)
    assert full.proven and short.placed == len(tops)
    assert short.lower_bound <= full.cost + 1e-9 <= short.cost + 2e-9


def test_too_many_executors_names_a_few_topologies_not_all(capsys):
    """The one-line error for a set larger than the cluster names five topologies and the
    count, not every name (120 topologies gave a line of 3,000 characters)."""
    base = load_flux(flux_path("wordcount"))
    tops = [Topology(f"w{i}", base.graph) for i in range(12)]
    with pytest.raises(ParameterError) as exc:
        place_static(parse_cluster("10x12"), tops)
    msg = str(exc.value)
    assert "w0, w1, w2, w3, w4, ... (12 in all)" in msg and "w11" not in msg
    assert "at most 120 executors in all" in msg
