"""File-content fuzz: hostile workload YAML files, CSV and SWF logs keep the bad-input contract.

Each example writes one file and runs a short command on it; the contract is that of
``tests/cli_fuzz.py`` (exit 0 with strict JSON, or exit 2 with one line, no traceback).
30 examples of each kind here, 300 in the slow tier.
"""

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_fuzz import run_contract
from cloudsched.cli import main

SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip

ODD = st.one_of(
    st.sampled_from([0, -1, 1, 2, 3, 1e-320, 1e308, float("nan"), float("inf"), -0.5, 10**30,
                     "", "x", None, [], {}, True, "1e3", 0.5]),
    st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.text(max_size=8),
)  # fmt: skip
TOPOLOGY = st.one_of(
    st.fixed_dictionaries({"generator": st.sampled_from(["chain", "star", "tree", "complete",
                                                          "random", "ring", 3]),
                           "nodes": ODD}, optional={"p": ODD, "branching": ODD}),
    st.fixed_dictionaries({"nodes": st.one_of(ODD, st.lists(ODD, max_size=4)),
                           "edges": st.lists(st.lists(ODD, max_size=3), max_size=4)}),
    st.fixed_dictionaries({"flux": st.sampled_from(["wordcount.yaml", "nope.yaml", "", "/dev/null",
                                                    "/"])}),
    ODD,
)  # fmt: skip
JOB = st.fixed_dictionaries(
    {"name": st.one_of(st.text(max_size=6), ODD), "arrival_rate": ODD, "mean_duration": ODD,
     "topology": TOPOLOGY},
)  # fmt: skip
WORKLOAD = st.one_of(
    st.fixed_dictionaries({"job_types": st.lists(JOB, min_size=0, max_size=3)}),
    st.dictionaries(st.text(max_size=5), ODD, max_size=3),
    st.lists(ODD, max_size=3), ODD,
)


def _workload_argv(tmp_path, doc):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    path = tmp_path / "w.yaml"
    text = yaml.safe_dump(doc, allow_unicode=True)
    path.write_text(text.replace("wordcount.yaml", str(examples / "wordcount.yaml")))
    return ["place", "simulate", "--cluster", "3x3", "--workload", str(path), "--policy",
            "greedy", "--horizon", "20", "--seed", "1", "--no-compare-bound", "--format", "json"]


CSV_FIELD = st.one_of(st.sampled_from(["0", "1", "-1", "nan", "inf", "1e309", "", "x", "1e-320",
                                       "2.5", " 3 ", '"4"']), st.text(max_size=5))  # fmt: skip
CSV = st.tuples(
    st.sampled_from(["arrival,service", "service,arrival", "arrival", "a,b", "",
                     "arrival,service,x"]),
    st.lists(st.lists(CSV_FIELD, min_size=0, max_size=3).map(",".join), max_size=6),
).map(lambda hr: "\n".join([hr[0], *hr[1]]) + "\n")  # fmt: skip


SWF_FIELD = st.one_of(st.sampled_from(["-1", "0", "1", "5", "60", "1e309", "nan", "x", "",
                                       "99999999999999999999"]), st.integers(-5, 10**6).map(str))
SWF = st.lists(
    st.one_of(st.just("; MaxJobs: 3"), st.lists(SWF_FIELD, min_size=0, max_size=20).map(" ".join)),
    max_size=8,
).map(lambda lines: "\n".join(lines) + "\n")  # fmt: skip


def _check_swf(capsys, tmp_path, text):
    path = tmp_path / "log.swf"
    path.write_text(text)
    run_contract(main, capsys, ["trace", "stats", str(path), "--trace-format", "swf",
                                "--format", "json"])  # fmt: skip


def _check_workload(capsys, tmp_path, doc):
    run_contract(main, capsys, _workload_argv(tmp_path, doc))


def _check_csv(capsys, tmp_path, text):
    path = tmp_path / "log.csv"
    path.write_text(text)
    run_contract(main, capsys, ["trace", "stats", str(path), "--trace-format", "csv",
                                "--format", "json"])  # fmt: skip


def test_the_base_commands_accept_valid_files(capsys, tmp_path):
    """Without this, a broken base command (exit 2 on every input) would pass the fuzz."""
    job = {"name": "a", "arrival_rate": 1.0, "mean_duration": 1.0,
           "topology": {"generator": "chain", "nodes": 3}}  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(_workload_argv(tmp_path, {"job_types": [job]}))
    assert exc.value.code == 0, capsys.readouterr().err
    path = tmp_path / "log.csv"
    path.write_text("arrival,service\n" + "".join(f"{k},{1 + k % 3}\n" for k in range(50)))
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(path), "--trace-format", "csv", "--format", "json"])
    assert exc.value.code == 0, capsys.readouterr().err
    swf = tmp_path / "log.swf"
    swf.write_text("; MaxJobs: 40\n" + "".join(
        f"{k} {k * 10} 0 {5 + k % 4} 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n" for k in range(1, 41)
    ))  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(swf), "--trace-format", "swf", "--format", "json"])
    assert exc.value.code == 0, capsys.readouterr().err


@settings(max_examples=30, **SETTINGS)
@given(doc=WORKLOAD)
def test_hostile_workload_files(capsys, tmp_path, doc):
    _check_workload(capsys, tmp_path, doc)


@settings(max_examples=30, **SETTINGS)
@given(text=CSV)
def test_hostile_csv_logs(capsys, tmp_path, text):
    _check_csv(capsys, tmp_path, text)


@settings(max_examples=30, **SETTINGS)
@given(text=SWF)
def test_hostile_swf_logs(capsys, tmp_path, text):
    _check_swf(capsys, tmp_path, text)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=SWF)
def test_many_hostile_swf_logs(capsys, tmp_path, text):
    _check_swf(capsys, tmp_path, text)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(doc=WORKLOAD)
def test_many_hostile_workload_files(capsys, tmp_path, doc):
    _check_workload(capsys, tmp_path, doc)


@pytest.mark.slow
@settings(max_examples=300, **SETTINGS)
@given(text=CSV)
def test_many_hostile_csv_logs(capsys, tmp_path, text):
    _check_csv(capsys, tmp_path, text)
