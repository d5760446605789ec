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

import pytest

from cloudsched.cli import main
from cloudsched.data import flux_path
from cloudsched.placement.flux import load_flux
from cloudsched.placement.storm_assignment import executor_tasks

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


def test_a_taken_slot_or_a_missing_supervisor_leaves_those_executors_to_even(
    classes, tmp_path, written
):
    tops, doc, path = written
    first = doc["topologies"]["word-count"]["workers"][0]
    k = HOSTS.index(first["host"])
    sc = scenario(tops, path, occupied=[{"id": f"sup-{k}-uuid", "port": first["port"]}])
    placed, even, log = run(classes, tmp_path, sc)
    assert "word-count" in even and "no free slot" in log
    assert len(placed["word-count"]) == sum(
        len(w["executors"]) for w in doc["topologies"]["word-count"]["workers"][1:]
    )
    sc = scenario(tops, path)
    sc["supervisors"] = [s for s in sc["supervisors"] if s["host"] != first["host"]]
    placed, even, _ = run(classes, tmp_path, sc)
    assert "word-count" in even


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
