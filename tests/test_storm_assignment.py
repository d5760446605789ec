"""The assignment file names executors, hosts and worker slots as Storm's scheduler API does.

The oracle here is written from Storm's source independently of the library: a TreeMap of
component ids (Java's String order), ``topology.tasks`` tasks each numbered from 1, split
by ``Utils.partitionFixed`` as ``Nimbus.computeExecutors`` does (apache/storm 73da988).
"""

import json

import pytest
import yaml

from cloudsched.cli import main
from cloudsched.data import flux_path
from cloudsched.errors import InputError, ParameterError
from cloudsched.placement.cluster import cluster_from_text, parse_cluster
from cloudsched.placement.flux import load_flux
from cloudsched.placement.static import place_static
from cloudsched.placement.storm_assignment import (
    FORMAT,
    executor_tasks,
    partition_fixed,
    storm_assignment,
)

SHIPPED = ("wordcount", "exclamation", "rolling-top-words")


def storm_executors(components: dict[str, tuple[int, int]]) -> dict[str, list[tuple[int, int]]]:
    """``{component: (executors, tasks)}`` -> Storm's executors per component, in order.

    Java's TreeMap<String, ...> orders by UTF-16 code units; ids here are ASCII, so
    Python's ``sorted`` agrees.  partitionFixed hands out ``tasks // n + 1`` tasks to the
    first ``tasks % n`` executors and ``tasks // n`` to the others.
    """
    out, task = {}, 1
    for cid in sorted(components):
        n, tasks = components[cid]
        big, extra = divmod(tasks, n)
        sizes = [big + 1] * extra + [big] * (n - extra)
        ranges = []
        for size in sizes:
            ranges.append((task, task + size - 1))
            task += size
        out[cid] = ranges
    return out


def test_partition_fixed_is_storms():
    # Utils.partitionFixed's own examples (its javadoc), and what its loop does when the
    # tasks run out first: it stops (the javadoc's [[1, 2, 3]] for this case is not what
    # the code returns)
    assert partition_fixed(5, list(range(1, 10))) == [[1, 2], [3, 4], [5, 6], [7, 8], [9]]
    assert partition_fixed(3, list(range(1, 11))) == [[1, 2, 3, 4], [5, 6, 7], [8, 9, 10]]
    assert partition_fixed(5, [1, 2, 3]) == [[1], [2], [3]]
    assert partition_fixed(0, [1, 2]) == []


def test_wordcount_tasks_by_hand():
    """word-count: ackers = topology.workers = 3; ids in Java order: __acker, count,
    sentence-spout, split ('_' sorts before lowercase letters)."""
    t = load_flux(flux_path("wordcount"), ackers="storm")
    got: dict[str, list[tuple[int, int]]] = {}
    ranges = executor_tasks(t)
    for v in sorted(ranges, key=lambda v: ranges[v]):
        got.setdefault(t.graph.nodes[v]["component"], []).append(ranges[v])
    assert got["__acker"] == [(1, 1), (2, 2), (3, 3)]
    assert got["count"] == [(k, k) for k in range(4, 16)]
    assert got["sentence-spout"] == [(k, k) for k in range(16, 21)]
    assert got["split"] == [(k, k) for k in range(21, 29)]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_topologies_match_the_oracle(name):
    t = load_flux(flux_path(name), ackers="storm")
    comps: dict[str, int] = {}
    for _, d in t.graph.nodes(data=True):
        comps[d["component"]] = comps.get(d["component"], 0) + 1
    want = storm_executors({c: (n, n) for c, n in comps.items()})
    ranges = executor_tasks(t)
    for v, d in t.graph.nodes(data=True):
        assert ranges[v] == want[d["component"]][d["index"]]


def flux(tmp_path, extra_spout="", config=""):
    path = tmp_path / "t.yaml"
    path.write_text(
        f"name: t\nconfig:\n  topology.workers: 2\n{config}"
        "spouts:\n  - {id: zeta, className: S, parallelism: 4" + extra_spout + "}\n"
        "bolts:\n  - {id: Alpha, className: B, parallelism: 3}\n"
        "streams:\n  - {from: zeta, to: Alpha, grouping: {type: SHUFFLE}}\n"
    )
    return path


def test_num_tasks_spread_as_nimbus_spreads_them(tmp_path):
    """zeta: 4 executors of 10 tasks (3, 3, 2, 2); 'Alpha' sorts first (uppercase), then
    __acker (2: topology.workers), then zeta."""
    t = load_flux(flux(tmp_path, ", numTasks: 10"), ackers="storm")
    want = storm_executors({"Alpha": (3, 3), "__acker": (2, 2), "zeta": (4, 10)})
    assert want["zeta"] == [(6, 8), (9, 11), (12, 13), (14, 15)]
    ranges = executor_tasks(t)
    for v, d in t.graph.nodes(data=True):
        assert ranges[v] == want[d["component"]][d["index"]]


def test_num_tasks_as_flux_applies_it(tmp_path):
    """FluxBuilder: numTasks only when above -1; the component's config comes after it."""
    for value in (-1, -5):
        t = load_flux(flux(tmp_path, f", numTasks: {value}"), ackers="storm")
        assert t.graph.graph["storm_tasks"]["zeta"] == 4  # its parallelism
    t = load_flux(flux(tmp_path, ", numTasks: 10, config: {topology.tasks: 8}"), ackers="storm")
    assert t.graph.graph["storm_tasks"]["zeta"] == 8


def test_max_task_parallelism_caps_the_tasks(tmp_path):
    t = load_flux(
        flux(tmp_path, ", numTasks: 10", "  topology.max.task.parallelism: 6\n"), ackers="storm"
    )
    ranges = sorted(
        executor_tasks(t)[v] for v, d in t.graph.nodes(data=True) if d["component"] == "zeta"
    )
    assert ranges == [(6, 7), (8, 9), (10, 10), (11, 11)]


def test_what_storm_numbers_otherwise_is_refused(tmp_path):
    with pytest.raises(InputError, match="Storm's ackers"):
        executor_tasks(load_flux(flux(tmp_path)))
    with pytest.raises(InputError, match="2 tasks for 4 executors"):
        executor_tasks(load_flux(flux(tmp_path, ", numTasks: 2"), ackers="storm"))
    with pytest.raises(InputError, match=r"topology\.eventlogger\.executors"):
        executor_tasks(
            load_flux(flux(tmp_path, "", "  topology.eventlogger.executors: 1\n"), ackers="storm")
        )


def placed(cluster_text="4x16", names=SHIPPED, **kw):
    cluster = cluster_from_text(cluster_text)
    tops = [load_flux(flux_path(n), ackers="storm") for n in names]
    return cluster, tops, place_static(cluster, tops, time_limit=20)


def test_the_file_names_storms_executors_on_free_worker_slots():
    cluster, tops, res = placed()
    hosts = [f"node{k}.example" for k in range(cluster.machines)]
    doc = storm_assignment(cluster, tops, res, hosts, worker_ports=4)
    assert doc["format"] == FORMAT
    taken: set[tuple[str, int]] = set()
    for t, where in zip(tops, res.machines, strict=True):
        entry = doc["topologies"][t.name]
        ranges = executor_tasks(t)
        want = {ranges[v]: (hosts[int(where[v])], t.graph.nodes[v]["component"]) for v in ranges}
        seen = {}
        for w in entry["workers"]:
            assert w["port"] in doc["supervisors"][w["host"]]["supervisor.slots.ports"]
            assert (w["host"], w["port"]) not in taken  # a slot runs one worker
            taken.add((w["host"], w["port"]))
            for e in w["executors"]:
                assert tuple(e["tasks"]) not in seen
                seen[tuple(e["tasks"])] = (w["host"], e["component"])
        assert seen == want  # every executor once, on its machine, with its component
        assert len(entry["workers"]) == len(set(where.tolist()))  # one worker per machine
    assert all(
        p == [6700, 6701, 6702, 6703]
        for p in (s["supervisor.slots.ports"] for s in doc["supervisors"].values())
    )


def test_too_few_worker_ports_is_a_one_line_error():
    cluster, tops, res = placed("1x80")
    with pytest.raises(ParameterError, match=r"--worker-ports.*at least 3"):
        storm_assignment(cluster, tops, res, worker_ports=2)


def test_hosts_come_from_the_cluster_file(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(
        "machines:\n  - {count: 2, slots: 16, hosts: [a.example, b.example]}\n"
        "  - {count: 2, slots: 16, hosts: [c.example, d.example]}\n"
    )
    out = tmp_path / "p.json"
    argv = ["place", "static", "--cluster", str(path), "--topology", "wordcount"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--assignment", str(out), "--time-limit", "10"])
    assert exc.value.code in (0, None)
    doc = json.loads(out.read_text())
    assert set(doc["supervisors"]) == {"a.example", "b.example", "c.example", "d.example"}
    assert "note: the assignment names the machines" not in capsys.readouterr().err
    for bad, fragment in (
        (["--hosts", "x,y,z,w"], "not given with a cluster file that names hosts"),
        (["--ackers", "0"], "storm with --assignment"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--assignment", str(out), *bad])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and fragment in err and err.count("\n") == 1, err


def test_the_cli_takes_hosts_and_says_when_it_has_none(tmp_path, capsys):
    out = tmp_path / "p.yaml"
    argv = ["place", "static", "--cluster", "3x16", "--topology", "exclamation"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--assignment", str(out), "--hosts", "h1,h2,h3"])
    assert exc.value.code in (0, None)
    doc = yaml.safe_load(out.read_text())
    hosts = {w["host"] for w in doc["topologies"]["exclamation"]["workers"]}
    assert hosts <= {"h1", "h2", "h3"}
    with pytest.raises(SystemExit):
        main([*argv, "--assignment", str(out)])
    assert "give --hosts" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # never silently unused
        main([*argv, "--hosts", "h1,h2,h3"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "given with --assignment" in err, err
    for hosts_arg, fragment in (
        ("h1,h2", "3 host names"),
        ("h1,h1,h2", "distinct"),
        ("h 1,b,c", "letters"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--assignment", str(out), "--hosts", hosts_arg])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and fragment in err and err.count("\n") == 1, err


def test_a_cluster_file_with_hosts_for_some_groups_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("machines:\n  - {count: 1, slots: 4, hosts: [a]}\n  - {count: 1, slots: 4}\n")
    with pytest.raises(InputError, match="'hosts' for every group"):
        cluster_from_text(str(path))
    path.write_text("machines:\n  - {count: 2, slots: 4, hosts: [a]}\n")
    with pytest.raises(InputError, match="list of 2 host names"):
        cluster_from_text(str(path))
    assert parse_cluster("2x4").hosts is None


def test_the_scheduler_sources_are_written_and_kept(tmp_path, capsys):
    from importlib import resources

    folder = tmp_path / "sched"
    with pytest.raises(SystemExit) as exc:
        main(["place", "storm-scheduler", str(folder)])
    assert exc.value.code in (0, None)
    out = capsys.readouterr().out
    assert 'storm.scheduler: "cloudsched.storm.AssignmentScheduler"' in out
    shipped = resources.files("cloudsched") / "data" / "storm" / "cloudsched" / "storm"
    written = sorted(p.name for p in (folder / "cloudsched" / "storm").iterdir())
    assert written == ["AssignmentScheduler.java", "Json.java"]
    for name in written:
        assert (folder / "cloudsched" / "storm" / name).read_text() == (shipped / name).read_text()
    # the same files again: fine; another file of that name: refused, and left alone
    with pytest.raises(SystemExit) as exc:
        main(["place", "storm-scheduler", str(folder)])
    assert exc.value.code in (0, None)
    mine = folder / "cloudsched" / "storm" / "Json.java"
    mine.write_text("// my own\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["place", "storm-scheduler", str(folder)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Json.java" in err and err.count("\n") == 1, err
    assert mine.read_text() == "// my own\n"


@pytest.mark.parametrize(
    "hosts", ["", ",,,", "a,b,c,", "a\x00,b,c", "é,b,c", "a" * 300 + ",b,c", "-a,b,c", "a b,c,d"]
)
def test_hostile_hosts_are_one_line_errors(tmp_path, capfd, hosts):
    argv = ["place", "static", "--cluster", "3x16", "--topology", "exclamation"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--assignment", str(tmp_path / "p.json"), "--hosts", hosts])
    err = capfd.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: --hosts") and err.count("\n") == 1, err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize(
    "group",
    [
        "{count: 2, slots: 16, hosts: a}",
        "{count: 2, slots: 16, hosts: [a, null]}",
        "{count: 2, slots: 16, hosts: [a, [b]]}",
        "{count: 2, slots: 16, hosts: [a, a]}",
        "{count: 2, slots: 16, hosts: {a: 1}}",
        "{count: 2, slots: 16, hosts: []}",
    ],
)
def test_hostile_cluster_file_hosts_are_one_line_errors(tmp_path, capfd, group):
    path = tmp_path / "c.yaml"
    path.write_text(f"machines:\n  - {group}\n")
    with pytest.raises(SystemExit) as exc:
        main(["place", "static", "--cluster", str(path), "--topology", "exclamation"])
    err = capfd.readouterr().err
    assert exc.value.code == 2 and err.startswith("error:") and err.count("\n") == 1, err


@pytest.mark.parametrize("value", ["x", 0.5, True, "[1]", 10**7])
def test_hostile_num_tasks_are_one_line_errors(tmp_path, capfd, value):
    path = flux(tmp_path, f", numTasks: {value}")
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "place",
                "static",
                "--cluster",
                "3x16",
                "--topology",
                str(path),
                "--assignment",
                str(tmp_path / "p.json"),
                "--hosts",
                "a,b,c",
            ]
        )
    err = capfd.readouterr().err
    assert exc.value.code == 2 and err.startswith("error:") and err.count("\n") == 1, err
