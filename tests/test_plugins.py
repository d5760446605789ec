"""Plug-in dispatch policies: the shipped examples, oracles, and every way a plug-in can fail."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cloudsched.dispatch import PluginError, get_policy, policy_table, simulate
from cloudsched.testing import exact_chain

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "examples" / "plugins"
POD = f"{PLUGINS / 'pod.py'}:pod-plugin"
MEMORY = str(PLUGINS / "pod_memory.py")
Z = 3.3  # standard errors allowed between a simulation and an exact reference
#: Fields that measure the machine or name the policy, not the simulated system.
MACHINE = {"policy", "plugin", "wall_seconds", "events_per_second"}


def same_run(a, b) -> None:
    da, db = a.to_dict(), b.to_dict()
    for key in MACHINE:
        da.pop(key), db.pop(key)
    assert da == db


@pytest.mark.parametrize(
    "kw",
    [
        {"load": 0.9, "d": 2},
        {"load": 0.7, "d": 3, "with_replacement": True, "replications": 2},
        {"load": 0.8, "d": 2, "service": "lognormal:cv=2", "tasks": 50_000},
        {"load": 0.95, "d": 1, "horizon": 200.0, "initial": "empty"},
    ],
)
def test_pod_plugin_gives_the_builtin_results_for_the_same_seed(kw):
    builtin = simulate("pod", servers=200, rng=7, keep_response_times=True, **kw)
    plugin = simulate(POD, servers=200, rng=7, keep_response_times=True, **kw)
    assert plugin.policy == "pod-plugin"
    same_run(builtin, plugin)
    assert np.array_equal(builtin.response_times, plugin.response_times)


def assert_matches(res, exact: float) -> None:
    assert res.ci95 is not None, res.warnings
    se = (res.ci95[1] - res.ci95[0]) / 2 / 1.96
    assert abs(res.mean_response_time - exact) <= Z * se, (res.mean_response_time, exact, se)


@pytest.mark.parametrize(
    ("n", "m", "d", "replace", "load", "cap"),
    [
        (3, 1, 1, True, 0.7, 14),
        (3, 1, 2, False, 0.8, 14),
        (2, 2, 1, True, 0.6, 16),
        (2, 1, 1, False, 0.7, 20),
    ],
)
def test_pod_memory_matches_the_exact_chain(n, m, d, replace, load, cap):
    exact, blocked = exact_chain.solve("pod-memory", n, load, m=m, d=d, replace=replace, cap=cap)
    assert blocked < 1e-4
    res = simulate(
        MEMORY,
        servers=n,
        dispatchers=m,
        d=d,
        with_replacement=replace,
        load=load,
        precision=0.005,
        rng=11,
    )
    assert_matches(res, exact)


def test_memory_changes_the_answer_the_chain_tells_apart():
    """The exact chain separates Pod(1) with and without memory (a check that can fail)."""
    with_memory, _ = exact_chain.solve("pod-memory", 3, 0.7, d=1, replace=True, cap=14)
    without, _ = exact_chain.solve("pod", 3, 0.7, d=1, replace=True, cap=14)
    assert with_memory < 0.8 * without
    res = simulate(MEMORY, servers=3, d=1, with_replacement=True, load=0.7, precision=0.005, rng=3)
    assert res.ci95 is not None and res.ci95[1] < without


def test_pod_memory_counts_its_probes():
    res = simulate(MEMORY, servers=500, d=2, load=0.8, tasks=200_000, rng=5)
    # d fresh probes per task and one for the remembered server (all but the first task)
    assert res.messages["probe"] == pytest.approx(0.8 * 3, rel=0.02)


def test_plugins_are_listed_with_their_needs():
    get_policy(MEMORY)
    rows = {row["policy"]: row for row in policy_table()}
    assert rows["pod-memory"]["dispatchers"] == "optional"
    assert rows["pod-memory"]["source"].endswith("pod_memory.py")
    assert rows["jiq"]["source"] == "built-in" and rows["jiq"]["iqueues"]
    assert rows["jiq"]["engines"] == "servers, counts, delay"  # the policy table's column
    assert rows["pod-memory"]["engines"] == "servers"  # a plug-in runs its hooks


BAD = """
import numpy as np
from cloudsched.dispatch import hook, register_policy
from cloudsched.dispatch import view as v


@register_policy("raises")
class Raises:
    @hook
    def choose(st, par, rng, m):
        if v.now(st) > 5.0:
            raise ValueError("no server after t = 5")
        return 0


@register_policy("outside")
class Outside:
    @hook
    def choose(st, par, rng, m):
        return par.n if v.now(st) > 1.0 else 0


@register_policy("untyped")
class Untyped:
    @hook
    def choose(st, par, rng, m):
        return undefined_name + 1


@register_policy("allocates")
class Allocates:
    @hook
    def choose(st, par, rng, m):
        x = np.zeros(3)
        return int(x[0])


@register_policy("misuse", iqueues=True, dispatchers="required")
class Misuse:
    @hook
    def choose(st, par, rng, m):
        v.iqueue_leave(st, 0)
        return 0


@register_policy("writes-past", memory=4)
class WritesPast:
    @hook
    def choose(st, par, rng, m):
        if v.now(st) > 1.0:
            st.mem[4 + par.n * 1000] = 7  # past its 4 entries: caught, nothing written
        return 0


@register_policy("reads-past", memory=4)
class ReadsPast:
    @hook
    def choose(st, par, rng, m):
        return 0 if st.mem[4 + par.n * 1000] >= 0 else 1
"""


@pytest.fixture(scope="module")
def bad_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plugins") / "bad.py"
    path.write_text(BAD)
    return path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("raises", "policy raises: a hook raised ValueError: no server after t = 5"),
        ("outside", "policy outside: choose returned server 10, outside [0, 9]"),
        ("untyped", "failed to compile: NameError: name 'undefined_name' is not defined"),
        ("allocates", "failed to compile at bad.py line 34: a hook allocates an array"),
        ("misuse", "a hook raised ValueError: iqueue_leave: the server is not listed"),
        (
            "writes-past",
            "policy writes-past: a hook indexed outside an array (st.mem beyond "
            "its declared size, or a server outside [0, N)): IndexError",
        ),
        ("reads-past", "policy reads-past: a hook indexed outside an array"),
    ],
)
def test_a_failing_plugin_is_a_one_line_error(bad_file, name, message):
    with pytest.raises(PluginError) as info:
        simulate(f"{bad_file}:{name}", servers=10, r=5, load=0.5, tasks=2000, rng=1)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_plugins_are_bounds_checked_unless_asked_not_to_be():
    """The checks change no result; --unchecked compiles the kernel without them."""
    from cloudsched.dispatch import get_policy

    kw = {"servers": 200, "load": 0.9, "tasks": 50_000, "rng": 4}
    checked = simulate(POD, **kw)
    unchecked = simulate(POD, unchecked=True, **kw)
    same_run(checked, simulate("pod", **kw))
    same_run(unchecked, checked)
    policy = get_policy(POD)
    assert policy.kernels(False) is not policy.kernels(False, unchecked=True)
    builtin = get_policy("pod")  # built-ins are never checked: one kernel either way
    assert builtin.kernels(False) is builtin.kernels(False, unchecked=True)


def test_the_cli_reports_an_out_of_bounds_write_in_one_line(bad_file):
    bad = cli(
        "simulate", f"{bad_file}:writes-past", "--servers", "10", "--load", "0.5", "--tasks", "1000"
    )
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "indexed outside an array" in lines[0], bad.stderr


def other(prefix: str) -> str:
    """The same plug-ins under other names (a name belongs to one file per process)."""
    return BAD.replace('register_policy("', f'register_policy("{prefix}-')


@pytest.mark.parametrize(
    ("text", "ref", "message"),
    [
        ("def broken(:\n", "{path}", "line 1: SyntaxError"),
        ("import not_a_module_anywhere\n", "{path}", "loading failed: ModuleNotFoundError"),
        ("x = 1\n", "{path}", "registers no policy"),
        (
            other("b"),
            "{path}",
            "the file registers 7 policies (b-raises, b-outside, b-untyped, "
            "b-allocates, b-misuse, b-writes-past, b-reads-past): add :NAME",
        ),
        (other("c"), "{path}:nothing", "the file registers no policy 'nothing'"),
        (
            other("d").replace('"d-raises"', '"pod"'),
            "{path}:pod",
            "already taken by a policy of cloudsched",
        ),
        ("", "{path}.missing.py", "no such file"),
    ],
    ids=["syntax", "import", "no-policy", "several", "unknown-name", "taken-name", "missing"],
)
def test_a_plugin_file_that_cannot_load_is_a_one_line_error(tmp_path, text, ref, message):
    path = tmp_path / "plugin.py"
    path.write_text(text)
    with pytest.raises(PluginError) as info:
        get_policy(ref.format(path=path))
    assert message in str(info.value)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cloudsched", *args], capture_output=True, text=True, timeout=300
    )


def test_the_cli_runs_a_plugin_and_fails_cleanly(bad_file):
    ok = cli(
        "simulate",
        POD,
        "--servers",
        "100",
        "--load",
        "0.8",
        "--tasks",
        "20000",
        "--seed",
        "3",
        "--format",
        "json",
    )
    assert ok.returncode == 0, ok.stderr
    assert '"policy": "pod-plugin"' in ok.stdout
    bad = cli(
        "simulate", f"{bad_file}:outside", "--servers", "10", "--load", "0.5", "--tasks", "1000"
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: policy outside: choose returned server 10, outside [0, 9]"
    ]
    assert "Traceback" not in bad.stderr


def test_a_sweep_runs_a_plugin_next_to_its_spec(tmp_path):
    from cloudsched.experiments.sweep import load_spec, run_sweep

    text = (PLUGINS / "pod.py").read_text().replace('"pod-plugin"', '"pod-copy"')
    (tmp_path / "pod.py").write_text(text)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "kind: simulate\nseed: 4\nfixed: {servers: 50, load: 0.7, tasks: 20000}\n"
        "grid: {policy: [pod, 'pod.py:pod-copy']}\n"
    )
    df = run_sweep(load_spec(spec), tmp_path / "out", workers=2)
    assert len(df) == 2
    by = df.set_index("policy")
    assert by.loc["pod", "events"] > 0 and by.loc["pod-copy", "plugin"] == str(tmp_path / "pod.py")
    # the plug-in is the built-in written again: the same numbers at the same seed words
    assert math.isfinite(by.loc["pod-copy", "mean_response_time"])
