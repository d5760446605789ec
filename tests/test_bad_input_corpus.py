"""The bad-input contract on a corpus of inputs that used to crash: exit 2, one line.

Each case is a command line that once ended in a traceback, a MemoryError or a silent wrong
answer (issue: "92 of 425 tried inputs still crash, hang or mislead").  The contract: exit
code 2, exactly one line on standard error naming the parameter, no traceback, and nothing
written.
"""

from pathlib import Path

import pytest

from cloudsched.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEMO = str(EXAMPLES / "demo-placement.yaml")
SIM = ["simulate", "random", "--servers", "10", "--load", "0.5"]

CASES = {
    "servers overflow": (
        ["simulate", "random", "--servers", "9" * 23, "--load", "0.5"],
        "--servers must be an integer",
    ),
    "servers beyond memory": (
        ["simulate", "random", "--servers", "1000000000", "--load", "0.5", "--engine", "servers"],
        "--servers must be small enough to fit in memory",
    ),
    # auto runs counts there, and jiq-sq has no 1/N model for the short replications: an
    # open-ended run could not certify within --max-tasks
    "servers beyond max tasks": (
        ["simulate", "jiq-sq", "--servers", "1000000000", "--load", "0.5"],
        "--tasks must be given (or horizon",
    ),
    "negative seed": ([*SIM, "--seed", "-1"], "--seed must be an integer in [0"),
    "tasks overflow": ([*SIM, "--tasks", "9" * 20], "--tasks must be an integer"),
    "threshold overflow": (
        [
            "simulate",
            "jiq-threshold",
            "--servers",
            "10",
            "--load",
            "0.5",
            "--r",
            "10",
            "--threshold",
            "1" + "0" * 20,
        ],
        "--threshold must be an integer",
    ),
    "pareto alpha tiny": ([*SIM, "--service", "pareto:alpha=1e-300"], "alpha must be in"),
    "pareto alpha huge": ([*SIM, "--service", "pareto:alpha=1000"], "alpha must be in"),
    "pareto impossible mean": (
        [*SIM, "--service", "pareto:alpha=0.05,max=1000000000"],
        "can have mean",
    ),
    "det mean denormal": ([*SIM, "--service", "det:mean=1e-320"], "mean must be in"),
    "lognormal cv huge": ([*SIM, "--service", "lognormal:cv=1e300"], "cv must be in"),
    "h2 cv huge": ([*SIM, "--service", "h2:cv=1e300"], "cv must be in"),
    "cluster beyond memory": (
        ["place", "simulate", "--cluster", "3x1000000000000", "--workload", DEMO],
        "--cluster must be small enough",
    ),
    "overloaded run beyond memory": (
        [
            "simulate",
            "jiq",
            "--servers",
            "100",
            "--r",
            "10",
            "--load",
            "10",
            "--tasks",
            "100000000",
        ],
        "--load must be small enough to fit in memory",
    ),
    "place negative seed": (
        ["place", "simulate", "--cluster", "3x3", "--workload", DEMO, "--seed", "-5"],
        "--seed must be an integer in [0",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_with_one_line(capsys, monkeypatch, case):
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "8G")  # the same limit on every machine
    argv, fragment = CASES[case]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    assert exc.value.code == 2, err
    assert err.count("\n") == 1 and fragment in err, err
    assert "Traceback" not in err and out == ""


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("kind", "text", "fragment"),
    [
        ("workload", BOMB + "job_types: *i\n", "expands to more than"),
        ("workload", "job_types: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64"),
        (
            "sweep",
            BOMB + "kind: simulate\nseed: 1\nfixed: {policy: random}\ngrid: {x: *i}\n",
            "expands to more than",
        ),
    ],
)
def test_yaml_bombs_are_refused_quickly(capsys, tmp_path, kind, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    if kind == "workload":
        argv = ["place", "simulate", "--cluster", "3x3", "--workload", str(path)]
    else:
        argv = ["sweep", str(path), "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err


def test_unreachable_dask_scheduler_is_one_line(capsys, tmp_path, monkeypatch):
    import socket

    import cloudsched.experiments.sweep_dask as sweep

    monkeypatch.setattr(sweep, "DASK_CONNECT_TIMEOUT", 2.0)
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = tmp_path / "s.yaml"
    spec.write_text("kind: predict\nseed: 1\nfixed: {policy: jiq, r: 10}\ngrid: {load: [0.5]}\n")
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "sweep",
                str(spec),
                "--out",
                str(tmp_path / "o"),
                "--scheduler",
                f"tcp://127.0.0.1:{port}",
            ]
        )
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1, err
    assert "--scheduler must be the address of a reachable Dask scheduler" in err


@pytest.mark.parametrize(
    ("topology", "fragment"),
    [
        ("{generator: complete, nodes: 100000}", "a graph of 1e+05 nodes"),
        ("{flux: big.yaml}", "parallelism must be small enough to fit in memory"),
    ],
)
def test_huge_graphs_are_refused_before_they_are_built(
    capsys, monkeypatch, tmp_path, topology, fragment
):
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "8G")
    (tmp_path / "big.yaml").write_text(
        "spouts: [{id: s, className: C, parallelism: 100000}]\n"
        "bolts: [{id: b, className: C, parallelism: 100000}]\n"
        "streams: [{from: s, to: b, grouping: {type: SHUFFLE}}]\n"
    )
    path = tmp_path / "w.yaml"
    path.write_text(
        f"job_types:\n  - {{name: a, arrival_rate: 1, mean_duration: 1, topology: {topology}}}\n"
    )
    with pytest.raises(SystemExit) as exc:
        main(["place", "bound", "--cluster", "3x3", "--workload", str(path)])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err


def test_memory_limit_comes_from_the_environment(monkeypatch):
    import cloudsched.resources as resources
    from cloudsched.errors import ParameterError
    from cloudsched.resources import check_memory, memory_limit

    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "1.5G")
    assert memory_limit() == int(1.5 * 2**30)
    # what the process holds counts under an explicit limit: fixed here, since a test
    # process's own size depends on what ran before it
    monkeypatch.setattr(resources, "_resident", lambda: 2**28)
    check_memory("x", 1, 2**30, "one GiB")
    with pytest.raises(ParameterError, match="x must be small enough to fit in memory: two GiB"):
        check_memory("x", 1, 2**31, "two GiB")
    with pytest.raises(ParameterError, match="besides the 256 MiB this process holds"):
        check_memory("x", 1, 1.3 * 2**30, "1.3 GiB")
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "lots")
    with pytest.raises(ParameterError, match="CLOUDSCHED_MAX_MEMORY"):
        memory_limit()


@pytest.mark.parametrize("seed", ["-3", "9" * 40])
def test_reproduce_seed_out_of_range(capsys, tmp_path, seed):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "jiq", "--quick", "--out", str(tmp_path / "r"), "--seed", seed])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "--seed must be an integer in [0, 2^62]" in err


SPEC = (
    "kind: simulate\nfixed: {servers: 20, r: 5, load: 0.5, tasks: 2000}\n"
    "grid: {policy: [jiq, pod]}\n"
)
JOB = "job_types:\n  - {{name: a, arrival_rate: {rate}, mean_duration: 1, topology: {topo}}}\n"
#: Found by the re-run campaign (tests/bad_input_campaign.py): file name -> content, the
#: command (FILE is the file), and what the one line must say.
FOUND = {
    "latin-1 workload": (
        b"name: \xe9\n",
        ["place", "bound", "--cluster", "3x3", "--workload", "FILE"],
        "not UTF-8 text",
    ),
    "latin-1 sweep spec": (b"kind: \xe9\n", ["sweep", "FILE", "--out", "OUT"], "not UTF-8 text"),
    "list as a node label": (
        JOB.format(rate=1, topo="{nodes: [[1]], edges: []}"),
        ["place", "bound", "--cluster", "3x3", "--workload", "FILE"],
        "list of distinct labels",
    ),
    "duration 1e300 (HiGHS model error)": (
        JOB.format(rate=1, topo="{generator: chain, nodes: 3}").replace(
            "mean_duration: 1", "mean_duration: 1e300"
        ),
        ["place", "bound", "--cluster", "3x3", "--workload", "FILE"],
        "a.mean_duration must be",
    ),
    "log with all arrivals at 0": (
        "arrival,service\n0,1\n0,1\n0,1\n",
        [
            "simulate",
            "jiq",
            "--servers",
            "20",
            "--r",
            "5",
            "--trace",
            "FILE",
            "--trace-format",
            "csv",
        ],
        "--trace must be arrivals that span a positive time",
    ),
    "sweep without servers": (
        SPEC.replace("servers: 20, ", ""),
        ["sweep", "FILE", "--out", "OUT"],
        "a simulate sweep needs 'servers'",
    ),
    "sweep point out of range": (
        SPEC.replace("r: 5", "r: 5, d: 50"),
        ["sweep", "FILE", "--out", "OUT"],
        "at policy='pod': d must be an integer in [1, 20]",
    ),
    "sweep grid repeats a value": (
        SPEC.replace("[jiq, pod]", "[jiq, jiq]"),
        ["sweep", "FILE", "--out", "OUT"],
        "lists 'jiq' more than once",
    ),
    "empirical sample of 1e-320": (
        "1e-320\n1\n",
        [*SIM, "--tasks", "1000", "--service", "empirical:FILE"],
        "within [1e-12, 1e9]",
    ),
    "empirical sample in latin-1": (
        b"\xe9 1\n",
        [*SIM, "--tasks", "1000", "--service", "empirical:FILE"],
        "UTF-8 text",
    ),
    "flux streams not a list": (
        "name: t\nspouts: [{id: s, className: S}]\nstreams: -1\n",
        ["place", "bound", "--cluster", "3x3", "--workload", "WORKLOAD"],
        "'streams' must be a list",
    ),
    "reproduce --workers 0 (checked before any section)": (
        "",
        ["reproduce", "jiq", "--quick", "--workers", "0", "--out", "OUT"],
        "--workers must be an integer in [1, 1024]",
    ),
    "demo --out ''": ("", ["demo", "--out", ""], "--out must be a directory path"),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_campaign_findings_exit_2_with_one_line(capsys, tmp_path, case):
    content, argv, fragment = FOUND[case]
    path = tmp_path / "input"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "w.yaml").write_text(JOB.format(rate=1, topo=f"{{flux: {path}}}"))
    subst = {"FILE": str(path), "OUT": str(tmp_path / "out"), "WORKLOAD": str(tmp_path / "w.yaml")}
    argv = [a.replace("empirical:FILE", f"empirical:{path}") for a in argv]
    with pytest.raises(SystemExit) as exc:
        main([subst.get(a, a) for a in argv])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err
    assert "Traceback" not in err and out == "" and not (tmp_path / "out").exists()


def test_max_memory_option_sets_the_limit(capsys, monkeypatch):
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "64G")  # restored after the test
    argv = ["simulate", "jiq", "--servers", "100", "--r", "10", "--load", "10"]
    with pytest.raises(SystemExit) as exc:
        main(["--max-memory", "1G", *argv])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and "needs about 2.68 GiB" in err
    assert "1 GiB allowed" in err
    for bad in ("lots", "-5", "0", "nan"):
        with pytest.raises(SystemExit) as exc:
            main(["--max-memory", bad, *argv])
        _, err = capsys.readouterr()
        assert exc.value.code == 2 and err.startswith("error: --max-memory must be a positive")


HAPROXY = (
    "127.0.0.1:1 [01/Dec/2026:18:00:00.123] fe be/s1 0/0/0/{tr}/5 200 100 - - ---- "
    '1/1/0/0/0 0/0 "GET / HTTP/1.1"\n'
)
ENVOY_JSON = '{{"start_time": "2026-12-01T00:00:00Z", "duration": 5, "x": {x}}}\n'
LOG_CMD = ["trace", "stats", "FILE", "--trace-format"]
#: Issue 30's inputs: file content, command (FILE is the file), what the one line must say.
ISSUE_30 = {
    "one long string aliased many times": (
        "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 700) + "]\n",
        ["place", "bound", "--cluster", "3x3", "--workload", "FILE"],
        "characters (aliases",
    ),
    "envoy JSON nested 100k deep": (
        ENVOY_JSON.format(x="[" * 100_000 + "]" * 100_000),
        [*LOG_CMD, "envoy-json"],
        "nested too deep",
    ),
    "haproxy timer of 400 digits": (
        HAPROXY.format(tr="9" * 400) * 3,
        [*LOG_CMD, "haproxy"],
        "Tr must be a finite duration",
    ),
    "google time of 400 digits": (
        "9" * 400 + ",0,1,0,,0,u,0,0,0,0,0,0\n",
        [*LOG_CMD, "google2011"],
        "time must be a 64-bit integer",
    ),
    "a 2 MB line": ("x" * (2 << 20) + "\n", [*LOG_CMD, "nginx"], "a line longer than"),
    "duplicate arrival column": (
        "arrival,service,arrival\n1,2,3\n2,3,4\n",
        [*LOG_CMD, "csv"],
        "names the column 'arrival' 2 times",
    ),
    "services of 1e300 (sums overflow)": (
        "arrival,service\n" + "".join(f"{i},1e300\n" for i in range(5)),
        [*LOG_CMD, "csv"],
        "service must be a finite number of magnitude <= 1e+15",
    ),
    "trace stats --out its own input": (
        "arrival,service\n1,2\n2,3\n3,1\n",
        [*LOG_CMD, "csv", "--out", "FILE"],
        "--out must be a file other than the command's inputs",
    ),
    "a plug-in calling sys.exit(3) at import": (
        "import sys\nsys.exit(3)\n",
        ["simulate", "FILE:X", "--servers", "10", "--load", "0.5"],
        "it called sys.exit(3)",
    ),
    "sweep with fixed.service: [1, 2]": (
        "kind: simulate\nfixed: {policy: random, servers: 10, load: 0.5, service: [1, 2]}\n"
        "grid: {d: [1]}\n",
        ["sweep", "FILE", "--out", "OUT"],
        "service must be a law",
    ),
    "sweep grid of 1.4e10 points": (
        "kind: simulate\nfixed: {policy: pod}\ngrid:\n"
        f"  load: {[round(0.001 * i, 3) for i in range(1, 100)]}\n"
        f"  servers: {list(range(10, 2010))}\n  d: [1, 2]\n  r: {list(range(1, 200))}\n"
        f"  tasks: {list(range(1000, 1180))}\n",
        ["sweep", "FILE", "--out", "OUT"],
        "the grid makes 14,184,720,000 runs",
    ),
}


@pytest.mark.parametrize("case", sorted(ISSUE_30))
def test_issue_30_inputs_exit_2_with_one_line(capsys, tmp_path, case):
    content, argv, fragment = ISSUE_30[case]
    path = tmp_path / "input.py"
    path.write_text(content)
    before = path.read_bytes()
    subst = {"FILE": str(path), "FILE:X": f"{path}:X", "OUT": str(tmp_path / "out")}
    with pytest.raises(SystemExit) as exc:
        main([subst.get(a, a) for a in argv])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err
    assert "Traceback" not in err and out == ""
    assert path.read_bytes() == before  # an input is never written
    assert not (tmp_path / "out").exists()


def test_no_command_is_one_line_after_the_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and "Commands" in out
    assert err == "error: a command is needed (the list is above; cloudsched COMMAND --help)\n"


def _workload(tmp_path, topology):
    path = tmp_path / "w.yaml"
    path.write_text(JOB.format(rate=1, topo=topology))
    return ["place", "bound", "--cluster", "3x3", "--workload", str(path)]


@pytest.mark.parametrize("what", ["workload", "flux file", "flux include", "properties"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "directory"])
def test_inputs_that_are_not_regular_files_are_refused_at_once(capsys, tmp_path, what, special):
    """A FIFO blocked for ever and /dev/zero ran to 5.4 GB; only regular files are read."""
    import os

    target = tmp_path / "special"
    if special == "fifo":
        os.mkfifo(target)
    elif special == "directory":
        target.mkdir()
    else:
        target = Path("/dev/zero")
    flux = tmp_path / "t.yaml"
    flux.write_text("name: t\nspouts: [{id: s, className: S}]\nbolts: []\nstreams: []\n")
    if what == "workload":
        argv = ["place", "bound", "--cluster", "3x3", "--workload", str(target)]
    elif what == "flux file":
        argv = _workload(tmp_path, f"{{flux: {target}}}")
    elif what == "flux include":
        flux.write_text(flux.read_text() + f"includes: [{{file: {target}}}]\n")
        argv = _workload(tmp_path, f"{{flux: {flux}}}")
    else:
        argv = _workload(tmp_path, f"{{flux: {flux}, properties: {target}}}")
    with pytest.raises(SystemExit) as exc:
        main(argv)
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and "not a regular file" in err, err


@pytest.mark.parametrize(
    "field",
    [
        "    parallelism: ${ENV-CS_SECRET}\nstreams: []",
        "streams: [{from: '${ENV-CS_SECRET}', to: s}]",
    ],
)
def test_environment_values_are_never_echoed(capsys, tmp_path, monkeypatch, field):
    monkeypatch.setenv("CS_SECRET", "hunter2-do-not-print")
    flux = tmp_path / "t.yaml"
    flux.write_text(f"name: t\nbolts: []\nspouts:\n  - id: s\n    className: S\n{field}\n")
    with pytest.raises(SystemExit) as exc:
        main(_workload(tmp_path, f"{{flux: {flux}}}"))
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1, err
    assert "hunter2" not in err and "${ENV-CS_SECRET}" in err


GROUPS = ",".join(["3x1"] * 5000)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["place", "bound", "--cluster", "20000x1", "--workload", DEMO],
            "--cluster must be small enough to fit in memory: the cluster state of 20,000 machines",
        ),
        (["place", "bound", "--cluster", GROUPS, "--workload", DEMO], "(15,000 machines)')"),
        (
            ["place", "bound", "--cluster", "3x3", "--workload", "CHAIN"],
            "nodes must be small enough to fit in memory: a graph of 1e+09 nodes",
        ),
    ],
)
def test_memory_estimates_do_not_undershoot(capsys, monkeypatch, tmp_path, argv, fragment):
    """Under a 3 GiB limit these passed their checks and then allocated 3 GB or more."""
    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", "3G")
    chain = tmp_path / "w.yaml"
    chain.write_text(JOB.format(rate=1, topo="{generator: chain, nodes: 1000000000}"))
    with pytest.raises(SystemExit) as exc:
        main([str(chain) if a == "CHAIN" else a for a in argv])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err
    assert len(err) < 400  # the 5,000 groups are not echoed whole


ZERO = '''
from cloudsched.dispatch import hook, register_policy


@register_policy("always-zero")
class AlwaysZero:
    """Every task to server 0."""

    @hook
    def choose(st, par, rng, m):
        return 0
'''


def _limit_above_now(monkeypatch, extra):
    from cloudsched.resources import _resident

    monkeypatch.setenv("CLOUDSCHED_MAX_MEMORY", str(_resident() + extra))


def test_queues_that_outgrow_the_memory_are_refused(capsys, monkeypatch, tmp_path):
    """A plug-in that overloads server 0 at load 0.5 grew its queues until memory ran out."""
    plugin = tmp_path / "zero.py"
    plugin.write_text(ZERO)
    main_args = [
        "simulate",
        f"{plugin}:always-zero",
        "--servers",
        "100",
        "--load",
        "0.5",
        "--seed",
        "1",
    ]
    _limit_above_now(monkeypatch, 150 * 2**20)
    with pytest.raises(SystemExit) as exc:
        main(main_args)
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.count("\n") == 1, err
    assert "--load must be small enough to fit in memory: the run's queues" in err
    assert "is some server overloaded?" in err


def test_tune_skips_a_setting_whose_queues_outgrow_the_memory(monkeypatch, tmp_path):
    from cloudsched.dispatch.plugin import load_plugin
    from cloudsched.experiments.tune import tune

    plugin = tmp_path / "zero.py"
    plugin.write_text(ZERO.replace("always-zero", "always-zero-tune"))  # a name of its own
    load_plugin(plugin)
    _limit_above_now(monkeypatch, 150 * 2**20)
    res = tune(
        rate=50.0, target=20.0, servers=(60, 61), policies=(f"{plugin}:always-zero-tune",), seed=1
    )
    assert res.certified == []
    assert any("refused: load must be small enough" in line for line in res.log)
