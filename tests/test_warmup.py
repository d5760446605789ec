"""``cloudsched warmup``: the kernels a policy needs, compiled ahead; then nothing compiles."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE
from cloudsched.warmup import Target, targets


def test_a_dispatch_policy_warms_both_clocks_and_the_engines_it_runs_on():
    found = targets(["jiq"])
    assert set(found) == {
        Target("dispatch", "jiq", e) for e in ("exponential", "general", "counts", "delay")
    }
    assert set(targets(["wrr"])) == {
        Target("dispatch", "wrr", e) for e in ("exponential", "general")
    }
    assert targets(["dgp", "maxweight"]) == [
        Target("placement", "dgp"),
        Target("placement", "maxweight"),
    ]


def test_everything_covers_every_policy_and_shares_the_count_engines_once():
    found = targets()
    for policy in TABLE:
        for clock in ("exponential", "general"):
            assert Target("dispatch", policy, clock) in found
    shared = [t for t in found if t.engine in ("counts", "classes", "delay")]
    assert sorted(t.engine for t in shared) == ["classes", "counts", "delay"]
    assert {t.kind for t in found} == {"dispatch", "placement", "check-lb"}
    assert len(found) == len(set(found))


def test_an_unknown_policy_is_one_line():
    with pytest.raises(ParameterError, match="POLICY must be a dispatch or placement policy"):
        targets(["no-such-policy"])


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["no-such-policy"], "POLICY must be a dispatch or placement policy"),
        (["pod", "--all"], "--all must be left out when policies are named"),
        (["pod", "--workers", "0"], "--workers must be an integer >= 1"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    from cloudsched.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["warmup", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err


@pytest.mark.slow
def test_after_warmup_a_run_compiles_nothing(tmp_path):
    """Warm a policy in a fresh cache (two processes), then run it: every kernel loads."""
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "CLOUDSCHED_COMPILE_NOTICE": "0",
    }
    cli = [sys.executable, "-m", "cloudsched"]
    first = subprocess.run(
        [*cli, "warmup", "jsq", "storm-default", "--workers", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert first.returncode == 0, first.stderr
    assert "6 of 6 targets compiled" in first.stdout, first.stdout
    again = subprocess.run(
        [*cli, "warmup", "jsq"], capture_output=True, text=True, env=env, timeout=900
    )
    assert again.returncode == 0 and "0 of" in again.stdout, again.stdout
    for argv in (
        ["simulate", "jsq", "--servers", "20", "--load", "0.7", "--tasks", "5000"],
        ["simulate", "jsq", "--servers", "200000", "--load", "0.7", "--tasks", "50000"],
        [
            "simulate",
            "jsq",
            "--servers",
            "20",
            "--load",
            "0.7",
            "--tasks",
            "5000",
            "--service",
            "lognormal:cv=2",
        ],
    ):
        run = subprocess.run([*cli, *argv], capture_output=True, text=True, env=env, timeout=900)
        assert run.returncode == 0, run.stderr
        assert "compiling" not in run.stderr, (argv, run.stderr)
