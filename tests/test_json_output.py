"""Every ``--format json`` output is standard JSON and nothing else, for every command and
placement policy (captured at the file-descriptor level, so output written by compiled
libraries such as HiGHS would be caught too)."""

import json
from pathlib import Path

import pytest

from cloudsched.cli import main
from cloudsched.placement.policies import PLACEMENT_POLICIES

EXAMPLES = Path(__file__).parent.parent / "examples"


def strict(text: str):
    def bad(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=bad)


def run_json(capfd, *args):
    with pytest.raises(SystemExit) as exc:
        main([*args, "--format", "json"])
    out, _ = capfd.readouterr()
    assert exc.value.code == 0
    return strict(out)


@pytest.mark.parametrize("policy", PLACEMENT_POLICIES)
def test_place_simulate_json_for_every_policy(capfd, policy):
    doc = run_json(
        capfd,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(EXAMPLES / "demo-placement.yaml"),
        "--policy",
        policy,
        "--horizon",
        "60",
        "--seed",
        "1",
    )
    assert doc["policy"] == policy and "steady_state" in doc


def test_place_simulate_json_when_the_solver_runs_out_of_time(capfd):
    doc = run_json(
        capfd,
        "place",
        "simulate",
        "--cluster",
        "4x4",
        "--workload",
        str(EXAMPLES / "demo-placement.yaml"),
        "--policy",
        "maxweight",
        "--horizon",
        "10",
        "--solver-time-limit",
        "0.001",
        "--seed",
        "1",
    )
    assert doc["frames_not_optimal"] >= 0


def test_place_bound_json(capfd):
    doc = run_json(
        capfd,
        "place",
        "bound",
        "--cluster",
        "3x3",
        "--workload",
        str(EXAMPLES / "demo-placement.yaml"),
    )
    assert doc["value"] > 0 and doc["lower_bound"] <= doc["value"]


@pytest.mark.parametrize(
    "args",
    [
        ("predict", "jiq-pod", "--load", "0.9"),
        ("fluid", "jiq", "--load", "0.9", "--horizon", "5"),
        ("simulate", "jiq-pod", "--servers", "50", "--r", "5", "--load", "0.8", "--seed", "1"),
        ("simulate", "random", "--servers", "3", "--load", "1.2", "--tasks", "500", "--seed", "1"),
    ],
    ids=["predict", "fluid", "simulate", "simulate-overload"],
)
def test_dispatch_json(capfd, args):
    assert isinstance(run_json(capfd, *args), dict)


def test_nulled_values_carry_a_reason(capsys, tmp_path):
    """Infinite or undefined values become null, listed under "undefined" with what they were."""
    import json

    from cloudsched.cli import main

    log = tmp_path / "z.csv"
    log.write_text("arrival,service\n0,1\n0,1\n0,1\n")
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(log), "--trace-format", "csv", "--format", "json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["arrival_rate_per_s"] is None and doc["offered_work_s_per_s"] is None
    undefined = {"arrival_rate_per_s": "infinite", "offered_work_s_per_s": "infinite"}
    assert doc["undefined"] == undefined
    assert "same time" in doc["notes"][0]


def test_one_helper_empties_undefined_numbers_in_every_record():
    """NaN and infinity become None (at any depth, numpy scalars too); the paths say which."""
    import json

    import numpy as np

    from cloudsched.results import finite_or_none

    undefined: dict[str, str] = {}
    x = {
        "a": float("nan"),
        "b": [1.0, np.float32("inf"), (np.int64(3), np.bool_(True))],
        "c": {"d": -np.inf, 4: 2.5},
    }
    got = finite_or_none(x, undefined)
    assert got == {"a": None, "b": [1.0, None, [3, True]], "c": {"d": None, "4": 2.5}}
    assert undefined == {"a": "not a number", "b[1]": "infinite", "c.d": "infinite"}
    json.dumps(got, allow_nan=False)  # standard JSON
    assert type(got["b"][2][0]) is int and type(got["b"][2][1]) is bool
