"""File-content fuzz: hostile workload YAML, Flux files, sweep specs, empirical samples, CSV, SWF
and Google logs keep the bad-input contract.

Each example writes one file and runs a short command on it; the contract is that of
``tests/cli_fuzz.py`` (exit 0 with strict JSON, or exit 2 with one line, no traceback).
20-30 examples of each kind here, 200-300 in the slow tier.
"""

import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_fuzz import DEMO, run_contract
from cloudsched.cli import main

SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

ODD = st.one_of(
    st.sampled_from(
        [
            0,
            -1,
            1,
            2,
            3,
            1e-320,
            1e308,
            float("nan"),
            float("inf"),
            -0.5,
            10**30,
            "",
            "x",
            None,
            [],
            {},
            True,
            "1e3",
            0.5,
        ]
    ),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True),
    st.text(max_size=8),
)
TOPOLOGY = st.one_of(
    st.fixed_dictionaries(
        {
            "generator": st.sampled_from(
                ["chain", "star", "tree", "complete", "random", "ring", 3]
            ),
            "nodes": ODD,
        },
        optional={"p": ODD, "branching": ODD},
    ),
    st.fixed_dictionaries(
        {
            "nodes": st.one_of(ODD, st.lists(ODD, max_size=4)),
            "edges": st.lists(st.lists(ODD, max_size=3), max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {"flux": st.sampled_from(["wordcount.yaml", "nope.yaml", "", "/dev/null", "/"])}
    ),
    ODD,
)
JOB = st.fixed_dictionaries(
    {
        "name": st.one_of(st.text(max_size=6), ODD),
        "arrival_rate": ODD,
        "mean_duration": ODD,
        "topology": TOPOLOGY,
    }
)
WORKLOAD = st.one_of(
    st.fixed_dictionaries({"job_types": st.lists(JOB, min_size=0, max_size=3)}),
    st.dictionaries(st.text(max_size=5), ODD, max_size=3),
    st.lists(ODD, max_size=3),
    ODD,
)


def _workload_argv(tmp_path, doc):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    path = tmp_path / "w.yaml"
    text = yaml.safe_dump(doc, allow_unicode=True)
    path.write_text(text.replace("wordcount.yaml", str(examples / "wordcount.yaml")))
    return [
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(path),
        "--policy",
        "greedy",
        "--horizon",
        "20",
        "--seed",
        "1",
        "--no-compare-bound",
        "--format",
        "json",
    ]


CSV_FIELD = st.one_of(
    st.sampled_from(
        ["0", "1", "-1", "nan", "inf", "1e309", "", "x", "1e-320", "2.5", " 3 ", '"4"']
    ),
    st.text(max_size=5),
)
CSV = st.tuples(
    st.sampled_from(
        ["arrival,service", "service,arrival", "arrival", "a,b", "", "arrival,service,x"]
    ),
    st.lists(st.lists(CSV_FIELD, min_size=0, max_size=3).map(",".join), max_size=6),
).map(lambda hr: "\n".join([hr[0], *hr[1]]) + "\n")


SWF_FIELD = st.one_of(
    st.sampled_from(["-1", "0", "1", "5", "60", "1e309", "nan", "x", "", "99999999999999999999"]),
    st.integers(-5, 10**6).map(str),
)
SWF = st.lists(
    st.one_of(st.just("; MaxJobs: 3"), st.lists(SWF_FIELD, min_size=0, max_size=20).map(" ".join)),
    max_size=8,
).map(lambda lines: "\n".join(lines) + "\n")


def _check_swf(capfd, tmp_path, text):
    path = tmp_path / "log.swf"
    path.write_text(text)
    run_contract(
        main, capfd, ["trace", "stats", str(path), "--trace-format", "swf", "--format", "json"]
    )


def _check_workload(capfd, tmp_path, doc):
    run_contract(main, capfd, _workload_argv(tmp_path, doc))


def _check_csv(capfd, tmp_path, text):
    path = tmp_path / "log.csv"
    path.write_text(text)
    run_contract(
        main, capfd, ["trace", "stats", str(path), "--trace-format", "csv", "--format", "json"]
    )


def test_the_base_commands_accept_valid_files(capfd, tmp_path):
    """Without this, a broken base command (exit 2 on every input) would pass the fuzz."""
    job = {
        "name": "a",
        "arrival_rate": 1.0,
        "mean_duration": 1.0,
        "topology": {"generator": "chain", "nodes": 3},
    }
    with pytest.raises(SystemExit) as exc:
        main(_workload_argv(tmp_path, {"job_types": [job]}))
    assert exc.value.code == 0, capfd.readouterr().err
    path = tmp_path / "log.csv"
    path.write_text("arrival,service\n" + "".join(f"{k},{1 + k % 3}\n" for k in range(50)))
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(path), "--trace-format", "csv", "--format", "json"])
    assert exc.value.code == 0, capfd.readouterr().err
    swf = tmp_path / "log.swf"
    swf.write_text(
        "; MaxJobs: 40\n"
        + "".join(
            f"{k} {k * 10} 0 {5 + k % 4} 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
            for k in range(1, 41)
        )
    )
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(swf), "--trace-format", "swf", "--format", "json"])
    assert exc.value.code == 0, capfd.readouterr().err


@settings(max_examples=30, **SETTINGS)
@given(doc=WORKLOAD)
def test_hostile_workload_files(capfd, tmp_path, doc):
    _check_workload(capfd, tmp_path, doc)


@settings(max_examples=30, **SETTINGS)
@given(text=CSV)
def test_hostile_csv_logs(capfd, tmp_path, text):
    _check_csv(capfd, tmp_path, text)


@settings(max_examples=30, **SETTINGS)
@given(text=SWF)
def test_hostile_swf_logs(capfd, tmp_path, text):
    _check_swf(capfd, tmp_path, text)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=SWF)
def test_many_hostile_swf_logs(capfd, tmp_path, text):
    _check_swf(capfd, tmp_path, text)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(doc=WORKLOAD)
def test_many_hostile_workload_files(capfd, tmp_path, doc):
    _check_workload(capfd, tmp_path, doc)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=CSV)
def test_many_hostile_csv_logs(capfd, tmp_path, text):
    _check_csv(capfd, tmp_path, text)


# --- Google task_events, Flux files, empirical samples and sweep specs -----------------------
# These start from a valid document and make 0-2 hostile changes (replace a value, delete or
# add a key, drop or garble a line), so the readers are exercised beyond their first check.


def _nodes(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from _nodes(value, (*path, k))


@st.composite
def mutated(draw, base, values=ODD, most=2):
    """``base`` (a strategy of YAML-like documents) with up to ``most`` hostile changes."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(0, most))):
        path = draw(st.sampled_from(list(_nodes(doc))))
        if not path:
            doc = draw(values)
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["x", "parallelism", "grouping", "id", "tasks"]))] = draw(
                values
            )
        else:
            parent.append(draw(values))
    return doc


GOOGLE_FIELD = st.one_of(
    st.sampled_from(
        [
            "0",
            "1",
            "2",
            "4",
            "5",
            "8",
            "9",
            "-1",
            "",
            "x",
            "1e6",
            "nan",
            "99999999999999999999",
            "3.5",
        ]
    ),
    st.integers(0, 10**13).map(str),
)
#: A task's life: submit time, delays to its schedule and to its end, and how it ends
#: (FINISH, or KILL/FAIL/EVICT/LOST, or never).
GOOGLE_TASK = st.tuples(
    st.integers(0, 10**7),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from([4, 4, 4, 5, 3, 2, 6, None]),
)


@st.composite
def google_logs(draw):
    """Time-ordered events of a few tasks' lives, with 0-2 garbled, dropped or swapped lines."""
    events = []
    for k, (t, wait, run, end) in enumerate(draw(st.lists(GOOGLE_TASK, max_size=8))):
        job, index = 1 + k % 3, k // 3
        events += [(t, job, index, 0), (t + wait, job, index, 1)]
        if end is not None:
            events.append((t + wait + run, job, index, end))
    events.sort()
    lines = [
        [str(t), "", str(j), str(k), "", str(e), "u", "0", "0", "0.1", "0.1", "0", "0"]
        for t, j, k, e in events
    ]
    for _ in range(draw(st.integers(0, 2))):
        action = draw(st.sampled_from(["field", "field", "drop", "swap", "line"]))
        if action == "line" or not lines:
            lines.insert(
                draw(st.integers(0, len(lines))), draw(st.lists(GOOGLE_FIELD, max_size=14))
            )
            continue
        i = draw(st.integers(0, len(lines) - 1))
        if action == "field" and lines[i]:
            lines[i][draw(st.integers(0, len(lines[i]) - 1))] = draw(GOOGLE_FIELD)
        elif action == "drop":
            del lines[i]
        else:
            k = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[k] = lines[k], lines[i]
    return "".join(",".join(line) + "\n" for line in lines)


GOOGLE = google_logs()


def _check_google(capfd, tmp_path, text, unfinished):
    path = tmp_path / "part-00000-of-00500.csv"
    path.write_text(text)
    run_contract(
        main,
        capfd,
        [
            "trace",
            "stats",
            str(path),
            "--trace-format",
            "google2011",
            "--unfinished",
            unfinished,
            "--format",
            "json",
        ],
    )


@st.composite
def flux_files(draw):
    """A valid Flux topology: one spout, one or two bolts, streams between them."""
    bolts = draw(st.integers(1, 2))
    ids = ["s"] + [f"b{k}" for k in range(bolts)]
    doc = {
        "name": "t",
        "spouts": [{"id": "s", "className": "S", "parallelism": draw(st.integers(1, 3))}],
        "bolts": [
            {"id": b, "className": "B", "parallelism": draw(st.integers(1, 3))} for b in ids[1:]
        ],
        "streams": [
            {
                "from": ids[k],
                "to": ids[k + 1],
                "grouping": {
                    "type": draw(st.sampled_from(["SHUFFLE", "GLOBAL", "FIELDS", "ALL", "DIRECT"]))
                },
            }
            for k in range(bolts)
        ],
    }
    if draw(st.booleans()):
        doc["config"] = {"topology.workers": draw(st.integers(1, 4))}
    return doc


FLUX = mutated(flux_files())
SLOTS = mutated(
    st.sampled_from([{}, {"slots": "executors"}, {"slots": "workers"}, {"executors_per_slot": 2}]),
    most=1,
)


def _flux_argv(tmp_path, doc, slots):
    flux = tmp_path / "flux.yaml"
    flux.write_text(yaml.safe_dump(doc, allow_unicode=True))
    topology = {"flux": str(flux), **slots} if isinstance(slots, dict) else slots
    job = {"name": "a", "arrival_rate": 1.0, "mean_duration": 1.0, "topology": topology}
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump({"job_types": [job]}, allow_unicode=True))
    return ["place", "bound", "--cluster", "3x3", "--workload", str(path), "--format", "json"]


def _check_flux(capfd, tmp_path, doc, slots):
    run_contract(main, capfd, _flux_argv(tmp_path, doc, slots))


EMPIRICAL_LINE = st.one_of(
    CSV_FIELD,
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["# comment", "1 2 3", "1,2", "\t", "1e-320"]),
)
EMPIRICAL = st.tuples(
    st.lists(st.floats(0.01, 100).map(repr), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 8), EMPIRICAL_LINE), max_size=2),
).map(lambda a: "\n".join(_insert(a[0], a[1])) + "\n")


def _insert(lines, changes):
    lines = list(lines)
    for where, line in changes:
        lines.insert(min(where, len(lines)), line)
    return lines


def _check_empirical(capfd, tmp_path, text):
    path = tmp_path / "sample.txt"
    path.write_text(text)
    run_contract(
        main,
        capfd,
        [
            "simulate",
            "jiq-pod",
            "--servers",
            "20",
            "--load",
            "0.5",
            "--r",
            "5",
            "--tasks",
            "3000",
            "--seed",
            "1",
            "--service",
            f"empirical:{path}",
            "--format",
            "json",
        ],
    )


SWEEP_BASES = [
    {
        "kind": "simulate",
        "seed": 3,
        "fixed": {"servers": 20, "r": 5, "load": 0.5, "tasks": 3000},
        "grid": {"policy": ["jiq", "pod"], "d": [2, 3]},
    },
    {"kind": "predict", "fixed": {"r": 5, "load": 0.5}, "grid": {"policy": ["jiq", "jiq-pod"]}},
    {
        "kind": "place",
        "replications": 2,
        "fixed": {"cluster": "3x3", "workload": DEMO, "horizon": 30, "policy": "greedy"},
        "grid": {"beta": [0.1, 0.2]},
    },
]
#: Sweep values: the hostile ones, with integers kept small enough that a run length or a
#: replication count drawn here stays short (huge integers are refused before any run).
SWEEP_ODD = st.one_of(
    st.sampled_from(
        [
            0,
            -1,
            1,
            2,
            3,
            1e-320,
            1e308,
            float("nan"),
            float("inf"),
            -0.5,
            10**30,
            2**63,
            "",
            "x",
            None,
            [],
            {},
            True,
            "1e3",
            0.5,
            "jiq",
            "pareto:alpha=0",
        ]
    ),
    st.integers(-5, 3000),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(-2, 5), max_size=3),
)
SWEEP = mutated(st.sampled_from(SWEEP_BASES), values=SWEEP_ODD)


def _check_sweep(capfd, tmp_path, doc):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    out = tmp_path / "out"
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    run_contract(main, capfd, ["sweep", str(path), "--out", str(out)])


def test_the_other_readers_accept_valid_files(capfd, tmp_path):
    """The base cases of the fuzzers below succeed (so refusing everything would fail)."""
    good_google = "".join(
        f"{t},,{j},0,,{k},u,0,0,0.1,0.1,0,0\n"
        for j in range(1, 6)
        for t, k in ((10 * j, 0), (10 * j + 2, 1), (10 * j + 9, 4))
    )
    good_google = "".join(sorted(good_google.splitlines(True), key=lambda s: int(s.split(",")[0])))
    for unfinished in ("drop", "censor"):
        path = tmp_path / "g.csv"
        path.write_text(good_google)
        with pytest.raises(SystemExit) as exc:
            main(
                [
                    "trace",
                    "stats",
                    str(path),
                    "--trace-format",
                    "google2011",
                    "--unfinished",
                    unfinished,
                    "--format",
                    "json",
                ]
            )
        assert exc.value.code == 0, capfd.readouterr().err
        assert '"tasks_used": 5' in capfd.readouterr().out
    flux = {
        "name": "t",
        "spouts": [{"id": "s", "className": "X", "parallelism": 2}],
        "bolts": [{"id": "b", "className": "Y", "parallelism": 2}],
        "streams": [{"from": "s", "to": "b", "grouping": {"type": "SHUFFLE"}}],
    }
    for slots in ({}, {"slots": "executors"}, {"slots": "workers"}, {"executors_per_slot": 2}):
        with pytest.raises(SystemExit) as exc:
            main(_flux_argv(tmp_path, flux, slots))
        assert exc.value.code == 0, (slots, capfd.readouterr().err)
        assert '"cost_per_job"' in capfd.readouterr().out
    sample = tmp_path / "sample.txt"
    sample.write_text("1\n2\n3.5\n")
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "simulate",
                "jiq-pod",
                "--servers",
                "20",
                "--load",
                "0.5",
                "--r",
                "5",
                "--tasks",
                "3000",
                "--seed",
                "1",
                "--service",
                f"empirical:{sample}",
                "--format",
                "json",
            ]
        )
    assert exc.value.code == 0, capfd.readouterr().err
    capfd.readouterr()
    for k, (doc, runs) in enumerate(zip(SWEEP_BASES, (4, 2, 4), strict=True)):
        spec = tmp_path / f"spec{k}.yaml"
        spec.write_text(yaml.safe_dump(doc))
        with pytest.raises(SystemExit) as exc:
            main(["sweep", str(spec), "--out", str(tmp_path / f"out{k}")])
        assert exc.value.code == 0, capfd.readouterr().err
        assert len(list((tmp_path / f"out{k}" / "runs").glob("*.parquet"))) == runs


@settings(max_examples=30, **SETTINGS)
@given(text=GOOGLE, unfinished=st.sampled_from(["drop", "censor"]))
def test_hostile_google_logs(capfd, tmp_path, text, unfinished):
    _check_google(capfd, tmp_path, text, unfinished)


@settings(max_examples=30, **SETTINGS)
@given(doc=FLUX, slots=SLOTS)
def test_hostile_flux_files(capfd, tmp_path, doc, slots):
    _check_flux(capfd, tmp_path, doc, slots)


@settings(max_examples=30, **SETTINGS)
@given(text=EMPIRICAL)
def test_hostile_empirical_samples(capfd, tmp_path, text):
    _check_empirical(capfd, tmp_path, text)


@settings(max_examples=20, **SETTINGS)
@given(doc=SWEEP)
def test_hostile_sweep_specs(capfd, tmp_path, doc):
    _check_sweep(capfd, tmp_path, doc)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=GOOGLE, unfinished=st.sampled_from(["drop", "censor"]))
def test_many_hostile_google_logs(capfd, tmp_path, text, unfinished):
    _check_google(capfd, tmp_path, text, unfinished)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(doc=FLUX, slots=SLOTS)
def test_many_hostile_flux_files(capfd, tmp_path, doc, slots):
    _check_flux(capfd, tmp_path, doc, slots)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=EMPIRICAL)
def test_many_hostile_empirical_samples(capfd, tmp_path, text):
    _check_empirical(capfd, tmp_path, text)


@pytest.mark.slow
@settings(max_examples=200, **SETTINGS)
@given(doc=SWEEP)
def test_many_hostile_sweep_specs(capfd, tmp_path, doc):
    _check_sweep(capfd, tmp_path, doc)
