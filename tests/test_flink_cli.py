"""``cloudsched place flink`` on the shipped run, and the REST documents it reads."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.cli import main
from cloudsched.data import flink_path
from cloudsched.errors import InputError
from cloudsched.placement.flink import measured_crossing
from cloudsched.placement.flink_rest import (
    cluster_from_bundle,
    job_from_bundle,
    placement_from_bundle,
    read_job,
)

EXAMPLE = flink_path()


def _run(argv, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    captured = capsys.readouterr()
    return exc.value.code or 0, captured.out, captured.err


def test_the_shipped_run_reads_as_flink_ran_it():
    bundle = read_job(EXAMPLE)
    job = job_from_bundle(bundle)
    assert job.names == ("Source: source", "parse", "count", "enrich", "filter", "sink: Writer")
    assert job.parallelism == (3, 3, 3, 1, 1, 1)
    assert [e.ship for e in job.edges] == ["FORWARD", "HASH", "REBALANCE", "FORWARD", "FORWARD"]
    # 300,000 records through each edge but the last (a filter keeps two in three)
    assert [e.records for e in job.edges][:4] == [300_000.0] * 4
    assert job.edges[4].records == pytest.approx(200_000, rel=0.01)
    assert cluster_from_bundle(bundle) == (3, 2)
    where = placement_from_bundle(bundle, job)
    # one slot-sharing group: subtask i of every vertex in one slot, so on one TaskManager
    for v in range(1, 6):
        assert where[v] == where[0][: job.parallelism[v]]
    # what crossed, counted by hand from the subtasks' TaskManagers and record counts
    assert measured_crossing(job, where) == pytest.approx(_by_hand(job, where))


def _by_hand(job, where):
    total = 0.0
    for e in job.edges:
        for i, a in enumerate(where[e.source]):
            for j, b in enumerate(where[e.target]):
                if a == b:
                    continue
                if e.ship == "FORWARD":
                    total += e.records * job.in_share[e.target][j] * (i == j)
                else:
                    total += e.records * job.out_share[e.source][i] * job.in_share[e.target][j]
    return total


def test_place_flink_on_the_example_writes_the_groups(tmp_path, capsys):
    out = tmp_path / "groups.json"
    code, text, err = _run(
        ["place", "flink", "example", "--cpu", "1.5", "--cpu-of", "*=0.2", "--write", str(out)],
        capsys,
    )
    assert code == 0, err
    assert "best: Source: source, parse, count | enrich, filter, sink: Writer" in text
    doc = json.loads(out.read_text())
    assert doc["flink_config"] == {"taskmanager.load-balance.mode": "NONE"}
    assert set(doc["slot_sharing_groups"].values()) == {"g0", "g1"}
    code, text, _ = _run(["place", "flink", "example", "--format", "json"], capsys)
    payload = json.loads(text)
    rows = {r["configuration"]: r for r in payload["rows"]}
    # no CPU limit: Flink's default (all three slots on one or two TaskManagers) is best
    assert rows["best (= default)"]["groups"] == "one group"
    assert payload["lower_bound"] <= rows["best (= default)"]["across_mean"] + 1e-6


def test_the_same_seed_gives_the_same_ranges(capsys):
    argv = ["place", "flink", "example", "--format", "json", "--seed", "7", "--samples", "300"]
    assert _run(argv, capsys)[1] == _run(argv, capsys)[1]


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--modes", "TASKS"], "--modes must be"),
        (["--cpu-of", "nope=1"], "--cpu-of must be"),
        (["--cpu-of", "parse=fast"], "--cpu-of must be"),
        (["--cpu", "0"], "--cpu must be"),
        (["--samples", "5"], "--samples must be"),
        (["--taskmanagers", "0"], "--taskmanagers must be"),
        (["--save", "copy.json"], "--save must be used with an address"),
        (["--taskmanagers", "1,2,3,4,5", "--slots", "1,2,3,4"], "at most 16 sizes"),
        (["--slots", "1,x"], "--slots must be a count or counts"),
        (["--rest-ca", "ca.pem"], "--rest-cert must be used with an address"),
    ],
)
def test_bad_options_are_one_line(argv, fragment, capsys):
    code, _, err = _run(["place", "flink", "example", *argv], capsys)
    assert code == 2 and fragment in err and err.count("\n") == 1, err


def test_a_configuration_that_fits_none_is_shown_and_nothing_written(tmp_path, capsys):
    out = tmp_path / "groups.json"
    code, text, err = _run(
        ["place", "flink", "example", "--cpu", "0.01", "--write", str(out)], capsys
    )
    assert code == 2 and "used when a configuration fits" in err
    assert "no configuration fits" in text and not out.exists()


def _bundle():
    return json.loads(EXAMPLE.read_text())


@pytest.mark.parametrize(
    "mutate,fragment",
    [
        (
            lambda b: b["plan"]["plan"]["nodes"][0]["inputs"][0].update(ship_strategy="RESCALE"),
            "RESCALE",
        ),
        (lambda b: b["plan"]["plan"]["nodes"].pop(), "differ"),
        (lambda b: b["plan"]["plan"].pop("nodes"), "no plan nodes"),
        (lambda b: next(iter(b["vertices"].values()))["subtasks"].pop(), "subtasks"),
    ],
)
def test_malformed_documents_are_refused(mutate, fragment):
    b = _bundle()
    mutate(b)
    with pytest.raises(InputError, match=fragment):
        job_from_bundle(b)


def test_a_cycle_is_refused():
    b = _bundle()
    nodes = b["plan"]["plan"]["nodes"]
    first = nodes[-1]  # the source: give it an input from the sink
    first["inputs"] = [{"id": nodes[0]["id"], "num": 0, "ship_strategy": "HASH"}]
    with pytest.raises(InputError, match="cycle"):
        job_from_bundle(b)


def test_other_files_are_refused(tmp_path):
    path = tmp_path / "x.json"
    doc = copy.deepcopy(_bundle())
    doc["format"] = "something-else"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        InputError, match="neither a cloudsched-flink-job/1 document nor a Flink job plan"
    ):
        read_job(path)
    path.write_text("{")
    with pytest.raises(InputError, match="not JSON"):
        read_job(path)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            yield from _paths(v, (*prefix, k))
    yield prefix


BUNDLE_PATHS = [p for p in _paths(json.loads(EXAMPLE.read_text())) if p]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(BUNDLE_PATHS),
    st.one_of(st.none(), st.integers(-3, 10**12), st.text(max_size=5), st.floats(), st.just([])),
)
def test_a_mangled_document_is_read_or_refused_in_one_line(path, value):
    doc = _bundle()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    try:
        job = job_from_bundle(doc)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(job.names) == 6


def _plan_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(_bundle()["plan"]))  # what /jobs/:id/plan answers
    return path


GIVEN = {
    "Source: source=>parse": 300,
    "parse=>count": 300,
    "count=>enrich": 300,
    "enrich=>filter": 300,
    "filter=>sink: Writer": 200,
}


def test_a_plan_alone_takes_the_records_given(tmp_path, capsys):
    doc = read_job(_plan_file(tmp_path))
    with pytest.raises(InputError, match="plan without counts: give the records of"):
        job_from_bundle(doc)
    records = {tuple(k.split("=>")): float(v) for k, v in GIVEN.items()}
    job = job_from_bundle(doc, records=records)
    assert job.names == ("Source: source", "parse", "count", "enrich", "filter", "sink: Writer")
    assert [e.records for e in job.edges] == [300, 300, 300, 300, 200]
    assert all(np.allclose(s, 1 / s.size) for s in job.in_share)  # no counts: equal shares
    argv = ["place", "flink", str(_plan_file(tmp_path)), "--format", "json"]
    argv += [a for k, v in GIVEN.items() for a in ("--records", f"{k}={v}")]
    code, _, err = _run(argv, capsys)
    assert code == 2 and "--taskmanagers must be given" in err  # a plan names no cluster
    code, text, err = _run([*argv, "--taskmanagers", "3", "--slots", "2"], capsys)
    payload = json.loads(text)
    assert code == 0 and payload["measured_as_ran"] is None, err
    # one group, equal shares: three slots on two TaskManagers (2 + 1), so a third of
    # the HASH edge's records and of the REBALANCE edge's (into the one enrich) cross
    # when the lone slot holds subtask 0, two thirds otherwise: a mean of 266.67
    default = payload["rows"][0]
    assert default["across_mean"] == pytest.approx(800 / 3)


def test_records_name_edges_of_the_job(capsys):
    code, _, err = _run(["place", "flink", "example", "--records", "a=>b=3"], capsys)
    assert code == 2 and "has no edge a=>b" in err and err.count("\n") == 1
    code, _, err = _run(["place", "flink", "example", "--records", "parse=>count"], capsys)
    assert code == 2 and "--records must be" in err


def test_a_subtask_on_no_taskmanager_leaves_the_run_unmeasured():
    b = _bundle()
    next(iter(b["vertices"].values()))["subtasks"][0]["taskmanager-id"] = "(unassigned)"
    job = job_from_bundle(b)
    with pytest.raises(ValueError, match="ran on no TaskManager"):
        placement_from_bundle(b, job)


def test_several_sizes_choose_the_best_of_each(tmp_path, capsys):
    common = ["place", "flink", "example", "--cpu", "1.5", "--cpu-of", "*=0.2"]
    common += ["--format", "json", "--samples", "50"]
    alone = {}
    for t in (3, 4):
        for p in (1, 2, 3):
            code, text, err = _run([*common, "--taskmanagers", str(t), "--slots", str(p)], capsys)
            assert code == 0, err
            rows = json.loads(text)["rows"]
            alone[(t, p)] = min(
                (r["across_mean"] for r in rows if r["configuration"].startswith("best")),
                default=math.inf,
            )
    out = tmp_path / "g.json"
    code, text, err = _run(
        [*common, "--taskmanagers", "3,4", "--slots", "1,2,3", "--write", str(out)], capsys
    )
    assert code == 0, err
    best = next(r for r in json.loads(text)["rows"] if r["configuration"].startswith("best"))
    assert best["across_mean"] == pytest.approx(min(alone.values()))
    doc = json.loads(out.read_text())
    assert alone[(doc["taskmanagers"], doc["slots_per_taskmanager"])] == pytest.approx(
        best["across_mean"]
    )
    assert best["size"] == f"{doc['taskmanagers']}x{doc['slots_per_taskmanager']}"
