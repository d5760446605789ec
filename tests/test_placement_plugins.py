"""Placement plug-ins: a file with a compiled ``place`` hook, checked, listed by place compare."""

from __future__ import annotations

import textwrap

import pytest

from cloudsched.cli import main
from cloudsched.data import example_files
from cloudsched.placement import JobType, chain, parse_cluster, simulate_placement, star
from cloudsched.placement.plugin import PluginError

JOBS = [JobType("c3", 1.0, 1.0, chain(3)), JobType("s4", 0.5, 1.0, star(4))]
# one process compiles each plug-in's loop (a plug-in's file path is part of its cache key)
pytestmark = pytest.mark.xdist_group("placement-plugins")

BAD = '''
from cloudsched.placement import place_hook, register_placement
from cloudsched.placement import view as pv


@register_placement("bad")
class Bad:
    """Misbehaves by the cluster's size."""

    @place_hook
    def place(st, mo, j, k, where):
        n = pv.machines(st)
        for v in range(k):
            where[v] = 0
        if n == 3:
            where[k - 1] = n  # outside [0, L)
        elif n == 5:
            raise ValueError("the hook gave up")
        elif n == 6:
            where[0] = where[k + 100]  # past the end of where
        return True  # n == 4 (slots 2): every node on machine 0
'''


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    path = tmp_path_factory.mktemp("bad") / "bad.py"
    path.write_text(BAD)
    return f"{path}:bad"


@pytest.fixture(scope="module")
def even(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugins")
    path = folder / "storm_even.py"
    path.write_bytes(example_files()["plugins/storm_even.py"])
    return str(path)


def test_storm_even_written_as_a_plugin_is_the_builtin_run_for_run(even):
    cluster = parse_cluster("4x4,2x3")
    a = simulate_placement(even, cluster, JOBS, horizon=300.0, rng=1)
    b = simulate_placement("storm-default", cluster, JOBS, horizon=300.0, rng=1)
    assert a.events == b.events and a.arrived == b.arrived
    assert a.cost_rate == b.cost_rate and a.mean_partition_cost == b.mean_partition_cost
    assert a.policy.endswith("storm_even.py")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("3x4", r"policy bad: place put node 2 of a 'c3' job on machine 3, outside \[0, 3\)"),
        pytest.param(
            "4x2",
            r"node 2 of a 'c3' job on machine 0, which has 2 free slots",
            marks=pytest.mark.slow,  # each shape compiles the loop again: 20 s
        ),
        pytest.param("5x4", r"ValueError in place: the hook gave up", marks=pytest.mark.slow),
        ("6x4", r"IndexError in place"),
    ],
)
def test_a_bad_placement_ends_the_run_with_one_line(bad, spec, message):
    with pytest.raises(PluginError, match=message) as got:
        simulate_placement(bad, parse_cluster(spec), JOBS[:1], horizon=50.0, rng=1)
    assert "\n" not in str(got.value)


def test_a_plugin_that_cannot_load_is_one_line(tmp_path):
    none = tmp_path / "none.py"
    none.write_text("x = 1\n")
    with pytest.raises(PluginError, match="registers no placement policy"):
        simulate_placement(str(none), parse_cluster("2x4"), JOBS, horizon=10.0, rng=1)
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    with pytest.raises(PluginError, match="line 1: SyntaxError"):
        simulate_placement(str(broken), parse_cluster("2x4"), JOBS, horizon=10.0, rng=1)
    with pytest.raises(PluginError, match="no such file"):
        simulate_placement(str(tmp_path / "gone.py"), parse_cluster("2x4"), JOBS, rng=1)


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_place_compare_lists_a_plugin_beside_the_builtins(even, tmp_path, capsys):
    workload = tmp_path / "w.yaml"
    workload.write_text(
        textwrap.dedent(
            """\
            job_types:
              - {name: c3, arrival_rate: 1.0, mean_duration: 1,
                 topology: {generator: chain, nodes: 3}}
              - {name: s4, arrival_rate: 0.5, mean_duration: 1,
                 topology: {generator: star, nodes: 4}}
            """
        )
    )
    out = tmp_path / "cmp.csv"
    assert run(
        "place", "compare", "storm-default", f"{even}:storm-even", "--cluster", "4x4",
        "--workload", str(workload), "--horizon", "200", "--seed", "3", "--out", str(out)
    ) == 0  # fmt: skip
    import pandas as pd

    table = pd.read_csv(out).set_index("policy")
    assert list(table.index) == ["storm-default", f"{even}:storm-even"]
    assert table.loc["storm-default", "cost_rate"] == table.loc[f"{even}:storm-even", "cost_rate"]
    capsys.readouterr()
    assert run("place", "simulate", str(tmp_path / "nope.py"), "--cluster", "4x4",
               "--workload", str(workload), "--horizon", "10") == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err and err.count("\n") == 1


def run(*args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return exc.value.code
