import math
from pathlib import Path

import pytest

from cloudsched.errors import InputError
from cloudsched.placement import JobType, load_workload

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_example_workload():
    jobs = load_workload(EXAMPLES / "workload.yaml", rng=1)
    assert [j.name for j in jobs] == ["exclamation", "rolling-top-words", "pipeline"]
    assert [j.topology.nodes for j in jobs] == [15, 14, 4]
    assert jobs[2].load == pytest.approx(2.0)


CHAIN = "topology: {generator: chain, nodes: 2}"


def job(name="a", rate=1, duration=1, topology=CHAIN):
    return f"{{name: {name}, arrival_rate: {rate}, mean_duration: {duration}, {topology}}}"


BAD = {
    "rate": (f"job_types: [{job(rate=0)}]", "a.arrival_rate must be in [1e-06, 1e+06]"),
    "duration": (f"job_types: [{job(duration=-2)}]", "a.mean_duration"),
    "generator": (
        f"job_types: [{job(topology='topology: {generator: cube, nodes: 2}')}]",
        "generator must be one of",
    ),
    "empty": ("job_types: []", "non-empty list"),
    "yaml": ("job_types: [{name: a", "malformed YAML"),
    "flux": (f"job_types: [{job(topology='topology: {flux: nope.yaml}')}]", "cannot open"),
    "names": (f"job_types: [{job()}, {job()}]", "distinct"),
    "flux file as workload": (
        "spouts: [{id: s, className: S, parallelism: 1}]",
        "this is a Storm Flux file",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_workloads_give_one_line(tmp_path, case):
    text, fragment = BAD[case]
    path = tmp_path / "w.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "field,value",
    [
        ("arrival_rate", -1.0),
        ("arrival_rate", 0.0),
        ("mean_duration", 1e300),
        ("arrival_rate", math.nan),
        ("mean_duration", "x"),
    ],
)
def test_a_job_type_checks_itself_when_built(field, value):
    """JobType(rate=-1) used to be accepted and fail later inside the kernel."""
    from cloudsched.errors import ParameterError
    from cloudsched.placement.topology import chain

    kw = {"name": "a", "arrival_rate": 1.0, "mean_duration": 1.0, "topology": chain(3)}
    kw[field] = value
    with pytest.raises(ParameterError, match=field):
        JobType(**kw)
    assert JobType(**{**kw, field: 2.0}).load == pytest.approx(2.0)
