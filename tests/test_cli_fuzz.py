"""The CLI fuzz tier (see tests/cli_fuzz.py): one hostile option (40 examples here, 600 in the
slow tier) and vectors of up to three (30 here, 400 slow).

It found, among others: --replications 1e9 (MemoryError), --load 6e16 (32 GiB), fluid --r 1e6
(129 TiB), and a fragmented-frame warning on --tail 100.
"""

import pytest
from hypothesis import HealthCheck, given, settings

from cli_fuzz import BASES, hostile_argv, run_contract
from cloudsched.cli import main

SETTINGS = dict(
    deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@settings(max_examples=20, **SETTINGS)  # the slow tier runs 600
@given(argv=hostile_argv())
def test_hostile_command_lines_keep_the_contract(capfd, argv):
    run_contract(main, capfd, argv)


@pytest.mark.slow
@settings(max_examples=600, **SETTINGS)
@given(argv=hostile_argv())
def test_many_hostile_command_lines_keep_the_contract(capfd, argv):
    run_contract(main, capfd, argv)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n == "place" else n  # place: 37 s cold
        for n in sorted(BASES)
    ],
)
def test_every_base_command_succeeds_as_is(capfd, name):
    """Without this, a broken base command (exit 2 on every input) would pass the fuzz."""
    with pytest.raises(SystemExit) as exc:
        main(list(BASES[name][0]))
    assert exc.value.code == 0, capfd.readouterr().err


@settings(max_examples=30, **SETTINGS)
@given(argv=hostile_argv(most=3))
def test_several_hostile_options_keep_the_contract(capfd, argv):
    run_contract(main, capfd, argv)


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(argv=hostile_argv(most=3))
def test_many_vectors_of_hostile_options_keep_the_contract(capfd, argv):
    run_contract(main, capfd, argv)
