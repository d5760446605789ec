"""cloudsched's Storm scheduler, compiled with the JDK and run on stand-ins for Storm's API.

``tests/storm_stubs`` declares the Storm classes the scheduler calls with the signatures of
Storm's source (apache/storm 73da988); see its README for what that does and does not show.
The scheduler's own sources compile with every lint warning an error.
"""

import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.data import flux_path
from cloudsched.placement.cluster import parse_cluster
from cloudsched.placement.flux import load_flux
from cloudsched.placement.storm_assignment import executor_tasks, storm_assignment

JAVAC = shutil.which("javac")
JAVA = shutil.which("java")
STUBS = Path(__file__).parent / "storm_stubs"
pytestmark = pytest.mark.skipif(
    JAVAC is None or JAVA is None, reason="no JDK (.ci/run installs openjdk-17-jdk-headless)"
)


def scheduler_sources() -> list[str]:
    root = resources.files("cloudsched") / "data" / "storm" / "cloudsched" / "storm"
    return sorted(str(p) for p in Path(str(root)).glob("*.java"))


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    out = tmp_path_factory.mktemp("classes")
    stubs = [str(p) for p in STUBS.rglob("*.java") if p.name != "Harness.java"]
    subprocess.run([JAVAC, "--release", "8", "-d", str(out), *stubs], check=True)
    # the scheduler itself: Java 8, every lint warning an error
    proc = subprocess.run(
        [
            JAVAC,
            "--release",
            "8",
            "-Xlint:all",
            "-Werror",
            "-cp",
            str(out),
            "-d",
            str(out),
            *scheduler_sources(),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    subprocess.run(
        [JAVAC, "--release", "8", "-cp", str(out), "-d", str(out), str(STUBS / "Harness.java")],
        check=True,
    )
    return out


def run(classes, tmp_path, scenario):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.run(
        [JAVA, "-cp", str(classes), "Harness", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    placed: dict[str, dict[tuple[int, int], tuple[str, int]]] = {}
    even = []
    for line in proc.stdout.splitlines():
        kind, name, *rest = line.split()
        if kind == "assign":
            sup, port, start, end = rest
            placed.setdefault(name, {})[(int(start), int(end))] = (sup, int(port))
        else:
            even.append(name)
    return placed, even, proc.stderr


HOSTS = ["n0.example", "n1.example", "n2.example", "n3.example", "n4.example"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The assignment as the command line writes it (.json), for the three shipped ones."""
    path = tmp_path_factory.mktemp("assignment") / "placement.json"
    argv = ["place", "static", "--cluster", "5x16", "--hosts", ",".join(HOSTS)]
    for name in ("wordcount", "exclamation", "rolling-top-words"):
        argv += ["--topology", name]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--assignment", str(path)])
    assert exc.value.code in (0, None)
    tops = [
        load_flux(flux_path(n), ackers="storm")
        for n in ("wordcount", "exclamation", "rolling-top-words")
    ]
    return tops, json.loads(path.read_text()), path


def scenario(tops, path, *, drop_last_of=None, **extra):
    """Five supervisors as Storm would report them (ids unlike hosts), the topologies with
    the executors nimbus computes (the oracle of tests/test_storm_assignment.py)."""
    sups = [
        {"id": f"sup-{k}-uuid", "host": h, "ports": [6700, 6701, 6702, 6703]}
        for k, h in enumerate(HOSTS)
    ]
    topos = []
    for k, t in enumerate(tops):
        ranges = executor_tasks(t)
        execs = [[*ranges[v], t.graph.nodes[v]["component"]] for v in ranges]
        if t.name == drop_last_of:
            execs = sorted(execs)[:-1]
        topos.append(
            {
                "id": f"{t.name}-{k + 1}-1700000000",
                "name": t.name,
                "workers": t.workers,
                "executors": execs,
            }
        )
    return {"file": str(path), "supervisors": sups, "topologies": topos, **extra}


def test_every_executor_runs_where_the_file_says(classes, tmp_path, written):
    tops, doc, path = written
    placed, even, _ = run(classes, tmp_path, scenario(tops, path))
    assert even == []
    for t in tops:
        want = {
            tuple(e["tasks"]): (f"sup-{HOSTS.index(w['host'])}-uuid", w["port"])
            for w in doc["topologies"][t.name]["workers"]
            for e in w["executors"]
        }
        assert len(want) == t.graph.number_of_nodes()  # every executor, once
        assert placed[t.name] == want


def test_what_the_file_does_not_place_goes_to_even_scheduler(classes, tmp_path, written):
    tops, _, path = written
    sc = scenario(tops, path, drop_last_of="exclamation")
    sc["topologies"].append(
        {"id": "other-9-1", "name": "other", "workers": 1, "executors": [[1, 1, "x"]]}
    )
    placed, even, log = run(classes, tmp_path, sc)
    assert sorted(even) == ["exclamation", "other"]
    assert "exclamation" not in placed and "other" not in placed
    assert "a file for another version" in log
    assert set(placed) == {"word-count", "rolling-top-words"}


def test_a_worker_whose_slot_is_taken_moves_whole_to_a_free_slot(classes, tmp_path, written):
    """Its executors stay together (the point of the placement), on the same host when it
    has a free port; nothing goes to EvenScheduler."""
    tops, doc, path = written
    first = doc["topologies"]["word-count"]["workers"][0]
    k = HOSTS.index(first["host"])
    sc = scenario(tops, path, occupied=[{"id": f"sup-{k}-uuid", "port": first["port"]}])
    placed, even, log = run(classes, tmp_path, sc)
    assert even == [] and "is taken or gone" in log
    moved = {tuple(e["tasks"]) for e in first["executors"]}
    slots = {placed["word-count"][r] for r in moved}
    assert len(slots) == 1  # one worker still
    ((sup, port),) = slots
    assert sup == f"sup-{k}-uuid" and port != first["port"]  # the same host, another port


def test_with_no_free_slot_the_executors_wait(classes, tmp_path, written):
    tops, _, path = written
    taken = [{"id": f"sup-{k}-uuid", "port": p} for k in range(5) for p in range(6700, 6704)]
    placed, even, log = run(classes, tmp_path, scenario(tops, path, occupied=taken))
    assert placed == {} and even == [] and "no slot is free" in log


def test_a_dead_supervisors_worker_moves_and_a_stale_topology_is_freed_for_even(
    classes, tmp_path, written
):
    """A placement written by hand: word-count on n0 and n1, exclamation on n0, n2 and n3.
    Round 1 places it; then n0's supervisor dies and exclamation leaves the file. Round 2:
    word-count's lost worker moves whole to a free slot; exclamation, on two live workers for
    its topology.workers of 1 (set here), is freed and handed to EvenScheduler, which would
    fail on more live workers than it may use."""
    tops, _, _ = written
    by_name = {t.name: t for t in tops}
    wc, ex = by_name["word-count"], by_name["exclamation"]
    machines = []
    for t in tops:
        n = t.graph.number_of_nodes()
        if t is wc:
            machines.append(np.array([0 if v < n // 2 else 1 for v in range(n)]))
        elif t is ex:
            machines.append(np.array([(0, 2, 3)[v % 3] for v in range(n)]))
        else:
            machines.append(np.full(n, 4))
    doc = storm_assignment(
        parse_cluster("5x16"), tops, SimpleNamespace(machines=machines), HOSTS, worker_ports=4
    )
    path = tmp_path / "placement.json"
    path.write_text(json.dumps(doc))
    stale = {**doc, "topologies": {k: v for k, v in doc["topologies"].items() if k != ex.name}}
    sc = scenario(tops, path, rounds=2, kill="sup-0-uuid", then_file=json.dumps(stale))
    for t in sc["topologies"]:
        if t["name"] == ex.name:
            t["workers"] = 1
    placed, even, log = run(classes, tmp_path, sc)
    lost = next(w for w in doc["topologies"][wc.name]["workers"] if w["host"] == HOSTS[0])
    slots = {placed[wc.name][tuple(e["tasks"])] for e in lost["executors"]}
    assert len(slots) == 1 and next(iter(slots))[0] != "sup-0-uuid"
    assert len(placed[wc.name]) == wc.graph.number_of_nodes()
    assert even == [ex.name] and "2 workers for topology.workers 1: freed" in log
    assert ex.name not in placed  # all of it freed, for EvenScheduler to place


def test_a_bad_file_is_logged_and_even_scheduler_places_everything(classes, tmp_path, written):
    tops, doc, _ = written
    cases = {
        "not json": "{'format': 1}",
        "an old format": json.dumps({**doc, "format": "cloudsched-storm-assignment/1"}),
        "a port out of range": json.dumps(doc).replace('"port": 6700', '"port": 70000', 1),
    }
    for why, text in cases.items():
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        placed, even, log = run(classes, tmp_path, scenario(tops, bad))
        assert placed == {} and sorted(even) == sorted(t.name for t in tops), why
        assert "ERROR cannot use" in log, (why, log)


def test_a_second_round_leaves_a_placed_topology_alone(classes, tmp_path, written):
    tops, _, path = written
    placed, even, _ = run(classes, tmp_path, scenario(tops, path, rounds=2))
    assert even == [] and sum(len(p) for p in placed.values()) == sum(
        t.graph.number_of_nodes() for t in tops
    )


def test_executors_of_several_tasks_are_placed_whole(classes, tmp_path):
    """numTasks 10 on 4 executors: ranges [6, 8], [9, 11], [12, 13], [14, 15] (with 'Alpha'
    first and two ackers), each placed as one executor where the file says."""
    flux = tmp_path / "t.yaml"
    flux.write_text(
        "name: t\nconfig:\n  topology.workers: 2\n"
        "spouts:\n  - {id: zeta, className: S, parallelism: 4, numTasks: 10}\n"
        "bolts:\n  - {id: Alpha, className: B, parallelism: 3}\n"
        "streams:\n  - {from: zeta, to: Alpha, grouping: {type: SHUFFLE}}\n"
    )
    path = tmp_path / "placement.json"
    argv = ["place", "static", "--cluster", "2x8", "--hosts", "n0.example,n1.example"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--topology", str(flux), "--assignment", str(path)])
    assert exc.value.code in (0, None)
    doc = json.loads(path.read_text())
    t = load_flux(flux, ackers="storm")
    sc = scenario([t], path)
    sc["supervisors"] = sc["supervisors"][:2]
    placed, even, _ = run(classes, tmp_path, sc)
    assert even == []
    want = {
        tuple(e["tasks"]): (f"sup-{HOSTS.index(w['host'])}-uuid", w["port"])
        for w in doc["topologies"]["t"]["workers"]
        for e in w["executors"]
    }
    assert {(6, 8), (9, 11), (12, 13), (14, 15)} <= set(want)
    assert placed["t"] == want
