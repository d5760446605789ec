import json
import re
import subprocess
import sys

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch import predict


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_predict_json_schema(capsys):
    code, out, _ = run(
        capsys,
        "predict",
        "jiq-pod",
        "--loads",
        "0.5:0.9:3",
        "--r",
        "10",
        "--d",
        "2",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["policy"] == "jiq-pod"
    assert doc["params"] == {"r": 10.0, "d": 2}
    assert [p["load"] for p in doc["points"]] == pytest.approx([0.5, 0.7, 0.9])
    ref = predict("jiq-pod", [0.5, 0.7, 0.9], r=10, d=2)
    for k, point in enumerate(doc["points"]):
        assert set(point) == {
            "load",
            "p0",
            "mean_response_time",
            "tail",
            "join_rate",
            "delete_rate",
            "probe_rate",
        }
        assert point["mean_response_time"] == pytest.approx(ref.mean_response_time[k])
        assert point["tail"][0] == pytest.approx(point["load"])
        assert np.all(np.diff(point["tail"]) < 0)


def test_predict_random_reports_p0_one(capsys):
    code, out, _ = run(capsys, "predict", "random", "--load", "0.5", "--format", "json")
    assert code == 0
    point = json.loads(out)["points"][0]
    assert point["p0"] == 1.0
    assert point["mean_response_time"] == pytest.approx(2.0)


def test_predict_csv_and_table(capsys, tmp_path):
    code, out, _ = run(
        capsys, "predict", "pod", "--load", "0.9", "--load", "0.5", "--format", "csv"
    )
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("load,p0,mean_response_time,join_rate,delete_rate,probe_rate,s_1")
    assert len(lines) == 3
    code, out, _ = run(capsys, "predict", "jiq", "--load", "0.9")
    assert code == 0 and "1.765" in out
    assert max(len(line) for line in out.splitlines()) <= 80  # fits a terminal


def test_predict_writes_out_and_plot(capsys, tmp_path):
    out_file = tmp_path / "pred.json"
    png = tmp_path / "t.png"
    code, out, _ = run(
        capsys,
        "predict",
        "jiq",
        "--loads",
        "0.1:0.9:9",
        "--format",
        "json",
        "--out",
        str(out_file),
        "--plot",
        str(png),
    )
    assert code == 0 and out == ""
    assert len(json.loads(out_file.read_text())["points"]) == 9
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


BAD = [
    (["predict", "jiq", "--load", "1.0"], "--load", "(0, 1)"),
    (["predict", "jiq", "--load", "0"], "--load", "(0, 1)"),
    (["predict", "jiq", "--load", "-3"], "--load", "(0, 1)"),
    (["predict", "jiq", "--load", "abc"], "--load", "(0, 1)"),
    (["predict", "jiq", "--load", "0.5", "--r", "0"], "--r", "[1e-06, 1e+08]"),
    (["predict", "jiq", "--load", "0.5", "--r", "-2"], "--r", "[1e-06, 1e+08]"),
    (["predict", "pod", "--load", "0.5", "--d", "0"], "--d", "[1, "),
    (["predict", "jiq", "--loads", "0.1:0.5"], "--loads", "START:STOP:COUNT"),
    (["predict", "jiq", "--loads", "0.5:0.1:3"], "--loads", "START:STOP:COUNT"),
    (["predict", "jiq", "--loads", "0.1:1.5:3"], "--loads", "START:STOP:COUNT"),
    (["predict", "jiq", "--loads", "0.1:0.5:x"], "--loads", "START:STOP:COUNT"),
    (["predict", "nosuch", "--load", "0.5"], "POLICY", "jiq-pod"),
    (["predict", "jiq-threshold", "--load", "0.5", "--threshold", "-1"], "--threshold", "[0, "),
    (["predict", "jsq", "--servers", "0", "--load", "0.5"], "--servers", "[1, "),
    (["predict", "pod", "--speeds", "1,0", "--load", "0.5"], "--speeds", "positive"),
    (["predict", "jiq", "--load", "0.5", "--format", "xml"], "--format", "table, csv, json"),
]


@pytest.mark.parametrize(("args", "name", "allowed"), BAD)
def test_bad_input_exits_2_with_one_line(capsys, args, name, allowed):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert name in lines[0] and allowed in lines[0]


def test_bad_input_does_not_touch_existing_output(capsys, tmp_path):
    target = tmp_path / "keep.json"
    target.write_text("earlier result")
    code, _, _ = run(capsys, "predict", "jiq", "--load", "1.5", "--out", str(target))
    assert code == 2
    assert target.read_text() == "earlier result"


def test_console_script_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "cloudsched", "predict", "jiq", "--load", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "error: --load must be in (0, 1) (got '2')"


def test_fluid_command(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "fluid",
        "jiq-pod",
        "--load",
        "0.9",
        "--initial-tasks",
        "3",
        "--horizon",
        "5",
        "--points",
        "6",
        "--format",
        "json",
    )
    assert code == 0
    points = json.loads(out)["points"]
    assert len(points) == 6
    assert points[0]["mean_tasks"] == pytest.approx(3.0)
    assert points[-1]["mean_tasks"] < points[0]["mean_tasks"]


def test_simulate_json(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "jiq-pod",
        "--servers",
        "200",
        "--r",
        "10",
        "--load",
        "0.8",
        "--tasks",
        "50000",
        "--seed",
        "3",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    for key in (
        "mean_response_time",
        "ci95",
        "percentiles",
        "tail",
        "p0",
        "messages",
        "events",
        "wall_seconds",
        "events_per_second",
        "seed",
    ):
        assert key in doc
    assert doc["seed"] == 3 and doc["dispatchers"] == 20
    assert set(doc["messages"]) >= {"join", "delete", "probe"}
    assert doc["ci95"][0] < doc["mean_response_time"] < doc["ci95"][1]


def test_simulate_csv_is_one_row(capsys, tmp_path):
    target = tmp_path / "sim.csv"
    code, _, _ = run(
        capsys,
        "simulate",
        "pod",
        "--servers",
        "50",
        "--load",
        "0.5",
        "--tasks",
        "5000",
        "--seed",
        "1",
        "--format",
        "csv",
        "--out",
        str(target),
    )
    assert code == 0
    lines = target.read_text().strip().splitlines()
    assert len(lines) == 2 and "mean_response_time" in lines[0] and "msg_probe" in lines[0]


def test_simulate_overload_warns_in_one_line(capsys):
    code, _out, err = run(
        capsys,
        "simulate",
        "random",
        "--servers",
        "5",
        "--load",
        "1.2",
        "--tasks",
        "2000",
        "--seed",
        "1",
    )
    assert code == 0
    assert err.strip().startswith("warning: load 1.2 >= 1: no steady state")
    assert len(err.strip().splitlines()) == 1


SIM_BAD = [
    (["--servers", "0", "--load", "0.5"], "--servers", "[1, 2^62]"),
    (["--servers", "10", "--load", "0", "--r", "2"], "--load", "(0, 10]"),
    (["--servers", "10", "--load", "0.5", "--dispatchers", "0"], "--dispatchers", "[1, 10]"),
    (["--servers", "10", "--load", "0.5", "--dispatchers", "11"], "--dispatchers", "[1, 10]"),
    (["--servers", "10", "--load", "0.5", "--r", "2", "--d", "0"], "--d", "[1, 10]"),
    (["--servers", "10", "--load", "0.5", "--r", "2", "--d", "11"], "--d", "[1, 10]"),
    (
        ["--servers", "10", "--load", "0.5", "--r", "2", "--threshold", "-1"],
        "--threshold",
        "[0, 2^62]",
    ),
    (["--servers", "10", "--load", "0.5", "--r", "2", "--tasks", "0"], "--tasks", "[1, 2^62]"),
    (["--servers", "10", "--load", "0.5", "--r", "2", "--warmup", "1"], "--warmup", "[0, 0.9]"),
]


@pytest.mark.parametrize(("args", "name", "allowed"), SIM_BAD)
def test_simulate_bad_input_exits_2_with_one_line(capsys, args, name, allowed):
    code, out, err = run(capsys, "simulate", "jiq-pod", *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert name in lines[0] and allowed in lines[0]


def test_simulate_defaults_to_r_10_like_predict_and_shows_the_mean_field(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "jiq",
        "--servers",
        "1000",
        "--load",
        "0.8",
        "--tasks",
        "200000",
        "--seed",
        "3",
        "--format",
        "json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["dispatchers"] == 100 and doc["r"] == 10
    assert doc["meanfield_response_time"] == pytest.approx(1.32209, abs=1e-5)
    assert doc["inputs"] == {
        "service": "exp",
        "arrivals": "poisson",
        "time_unit": "mean service time",
    }
    code, out, _ = run(
        capsys,
        "simulate",
        "jiq",
        "--servers",
        "4",
        "--load",
        "0.5",
        "--tasks",
        "20000",
        "--seed",
        "3",
    )
    assert code == 0 and "4 / 1 (r = 4)" in out  # N < 10: one dispatcher
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "mean field (N = inf)" in out


def test_simulate_with_service_and_arrival_laws(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "pod",
        "--servers",
        "100",
        "--load",
        "0.7",
        "--service",
        "lognormal:cv=2",
        "--arrivals",
        "h2:cv=2",
        "--tasks",
        "50000",
        "--seed",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["engine"], doc["clock"], doc["load"]) == ("servers", "event-list", 0.7)


def test_simulate_trace_csv(capsys, tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("arrival,service\n" + "".join(f"{2 * k},1\n" for k in range(100)))
    code, out, _ = run(
        capsys,
        "simulate",
        "jiq",
        "--servers",
        "1",
        "--dispatchers",
        "1",
        "--trace",
        str(log),
        "--trace-format",
        "csv",
        "--warmup",
        "0",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["mean_response_time"] == pytest.approx(1.0)
    assert doc["measured_tasks"] == 99


def test_trace_stats_google(capsys, tmp_path):
    png = tmp_path / "h.png"
    code, out, err = run(
        capsys, "trace", "stats", "google2011-sample", "--format", "json", "--plot", str(png)
    )
    assert code == 0 and err == f"wrote {png}\n"
    doc = json.loads(out)
    assert doc["tasks_found"] > 30_000 and doc["service_mean_s"] > 0
    assert png.stat().st_size > 1000


TRACE_BAD = [
    (
        ["--trace-format", "csv"],
        "bad.csv",
        "arrival,service\n1,1\n0,1\n",
        ":3: arrivals out of order",
    ),
    (["--trace-format", "csv"], "bad.csv", "a,b\n1,1\n", ":1: the header must name"),
    (["--trace-format", "swf"], "bad.swf", "1 2 3\n", ":1: expected 18"),
    (["--trace-format", "google2011"], "bad.csv", "1,2,3\n", ":1: expected 13"),
    (["--trace-format", "xml"], "bad.csv", "1\n", "--trace-format must be one of"),
]


@pytest.mark.parametrize(("args", "name", "text", "fragment"), TRACE_BAD)
def test_malformed_traces_exit_2_with_one_line(capsys, tmp_path, args, name, text, fragment):
    path = tmp_path / name
    path.write_text(text)
    for command in (
        ["trace", "stats", str(path)],
        ["simulate", "jiq", "--servers", "2", "--r", "1", "--trace", str(path)],
    ):
        code, out, err = run(capsys, *command, *args)
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0], err


def test_bad_service_spec_exits_2(capsys):
    code, _, err = run(
        capsys, "simulate", "pod", "--servers", "10", "--load", "0.5", "--service", "weibull"
    )
    assert code == 2
    assert err.startswith("error: --service must be") and len(err.strip().splitlines()) == 1


def test_simulate_json_is_standard_even_with_one_measured_task(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "random",
        "--servers",
        "3",
        "--load",
        "0.5",
        "--tasks",
        "1",
        "--warmup",
        "0",
        "--seed",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert doc["ci95"] is None and doc["measured_tasks"] == 1


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["simulate", "jiq", "--servers", "10", "--load", "0.5", "--load", "0.9"], "--load"),
        (["simulate", "jiq", "--servers", "10", "--load=0.5", "--seed", "1", "--seed=2"], "--seed"),
        (["place", "simulate", "--policy", "greedy", "--policy", "storm-default"], "--policy"),
        (["predict", "jiq", "--load", "0.5", "--r", "5", "--r", "6"], "--r"),
        (["trace", "stats", "nginx-sample", "--format", "json", "--format", "table"], "--format"),
    ],
)
def test_an_option_given_twice_is_refused_unless_repeatable(capsys, args, name):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {name}: given 2 times") and err.count("\n") == 1


def test_repeatable_options_mean_several(capsys):
    code, out, _ = run(
        capsys, "predict", "jiq", "--load", "0.5", "--load", "0.9", "--format", "csv"
    )
    assert code == 0 and len(out.strip().splitlines()) == 3


def test_version(capsys):
    from cloudsched import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out == f"cloudsched {__version__}\n"


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("p.csv", lambda t: t.startswith("load,p0,")),
        ("p.json", lambda t: json.loads(t)["policy"] == "jiq"),
        ("p.txt", lambda t: "mean field: jiq" in t),
    ],
)
def test_out_infers_the_format_from_its_extension(capsys, tmp_path, name, check):
    path = tmp_path / name
    code, out, err = run(capsys, "predict", "jiq", "--load", "0.5", "--out", str(path))
    assert code == 0 and out == "" and err == f"wrote {path}\n"
    assert check(path.read_text())


def test_out_extension_and_format_that_disagree_are_refused(capsys, tmp_path):
    code, _, err = run(
        capsys,
        "predict",
        "jiq",
        "--load",
        "0.5",
        "--format",
        "json",
        "--out",
        str(tmp_path / "p.csv"),
    )
    assert code == 2 and err.startswith("error: --out") and not (tmp_path / "p.csv").exists()
    code, _, err = run(capsys, "trace", "stats", "kth-sp2", "--out", str(tmp_path / "s.csv"))
    assert code == 2 and "extension is one of .json, .txt" in err


def test_compare_says_when_the_mean_field_is_outside_the_interval():
    from cloudsched.cli.compare import compare_table

    def row(policy, mf, low, high):
        return {
            "policy": policy,
            "d": 2,
            "r": 10.0,
            "load": 0.9,
            "meanfield_T": mf,
            "mean_response_time": (low + high) / 2,
            "ci95_low": low,
            "ci95_high": high,
            "meanfield_p99": float("nan"),
            "p99": float("nan"),
            "messages_per_task": 2.0,
            "steady_state": True,
        }

    text = compare_table([row("pod", 2.614, 2.75, 2.80), row("jiq", 1.765, 1.70, 1.80)], "t")
    assert "outside the simulated interval for pod at load 0.9:" in text
    assert "jiq" not in text.split("outside")[1] and max(map(len, text.splitlines())) <= 80
    assert "outside" not in compare_table([row("jiq", 1.765, 1.70, 1.80)], "t")


def test_compare_prints_one_table_of_theory_beside_simulation(capsys, tmp_path):
    png, pq = tmp_path / "c.png", tmp_path / "c.parquet"
    code, out, err = run(
        capsys,
        "compare",
        "jiq",
        "pod",
        "random",
        "--servers",
        "200",
        "--load",
        "0.5",
        "--load",
        "0.8",
        "--d",
        "2",
        "--d",
        "3",
        "--tasks",
        "60000",
        "--seed",
        "4",
        "--plot",
        str(png),
    )
    assert code == 0 and f"wrote {png}" in err and png.stat().st_size > 1000
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    # jiq and random have no d: one row per load; pod has d = 2 and 3
    body = [
        line.split() for line in lines if line.strip().split()[:1] in (["jiq"], ["pod"], ["random"])
    ]
    assert [row[0] for row in body].count("pod") == 4 and len(body) == 8
    code, _, _ = run(
        capsys,
        "compare",
        "jiq",
        "pod",
        "random",
        "--servers",
        "200",
        "--load",
        "0.5",
        "--load",
        "0.8",
        "--d",
        "2",
        "--d",
        "3",
        "--tasks",
        "60000",
        "--seed",
        "4",
        "--out",
        str(pq),
    )
    import pandas as pd

    df = pd.read_parquet(pq)
    assert code == 0 and len(df) == 8 and set(df["input_service"]) == {"exp"}
    rnd = df[df["policy"] == "random"].sort_values("load")
    # random routing: each server is an M/M/1 queue, T = 1 / (1 - load) exactly
    np.testing.assert_allclose(rnd["meanfield_T"], [2.0, 5.0], rtol=1e-9)
    assert (df["messages_per_task"][df["policy"] == "random"] == 0).all()
    pod = df[df["policy"] == "pod"]
    np.testing.assert_allclose(pod["messages_per_task"], pod["d"], rtol=0.02)  # d probes a task


def test_compare_says_when_a_precision_is_not_reached(capsys):
    """The issue's case: --precision 1e-9 stopped at --max-tasks with no word of it."""
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "compare",
                "jiq",
                "--servers",
                "100",
                "--load",
                "0.5",
                "--precision",
                "1e-9",
                "--max-tasks",
                "200000",
            ]
        )
    out, err = capsys.readouterr()
    assert exc.value.code == 0
    assert "~" in out and "before --precision 1e-09 held" in out
    assert "precision reached" in err and "(target 1e-07%)" in err


def test_help_texts_name_only_commands_that_exist():
    """Every 'cloudsched WORD' in any command's help is a command (or a placeholder)."""
    import re

    import click
    import typer

    from cloudsched.cli import app

    root = typer.main.get_command(app)
    names = set(root.commands)
    texts = []

    def walk(cmd, ctx):
        texts.append(cmd.get_help(ctx))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, click.Context(sub, info_name=name, parent=ctx))

    walk(root, click.Context(root, info_name="cloudsched"))
    assert len(texts) >= 15  # the commands and their groups
    said = {m for t in texts for m in re.findall(r"cloudsched ([a-z][a-z-]*)", t)}
    assert said <= names | {"demo"}, said - names
    assert "policies" in names and "policies" in said  # simulate's help points at it


@pytest.mark.parametrize("policy", ["pod", "jsq", "random"])
def test_simulate_a_billion_servers_keeps_its_result_and_mean_field(capsys, policy):
    """One dispatcher over 10^9 servers is r = 10^9, beyond the mean field's r range; r
    only matters to I-queues, so the run's mean field is still shown (it once ended a
    finished run with an error about --r)."""
    from cloudsched.dispatch.theory.meanfield import predict

    code, out, err = run(
        capsys,
        "simulate",
        policy,
        "--servers",
        "1000000000",
        "--load",
        "0.9",
        "--tasks",
        "20000",
        "--seed",
        "1",
        "--format",
        "json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["servers"] == 10**9, err
    expected = predict(policy, [0.9]).mean_response_time[0]
    assert doc["meanfield_response_time"] == pytest.approx(expected, rel=1e-12)
    assert "interval withheld" in err  # 20,000 tasks are far from a steady-state interval


def test_the_command_line_loads_no_numeric_library_before_a_command_needs_it():
    """``cloudsched --help`` and ``--version`` stay quick (0.3 s is the target): importing
    the command line imports none of numpy, numba, pandas or scipy (a JSON helper's
    top-level import once brought numpy in: +0.1 s)."""
    import subprocess
    import sys

    code = "import sys, cloudsched.cli; print(sorted(set(sys.modules) & {LIBS!r}))"
    libs = {"numpy", "numba", "pandas", "scipy"}
    out = subprocess.run(
        [sys.executable, "-c", code.replace("{LIBS!r}", repr(libs))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_compare_gives_each_policy_its_own_dispatchers_and_options(capsys):
    """Without --r a production balancer is one proxy (it was given N / 10 proxies, each
    on its own counts) and the JIQ family keeps r = 10; an option goes to the policies
    that have it (a peak EWMA's decay is not pod's) and one nobody has is refused."""
    code, out, _ = run(
        capsys, "compare", "ewma", "wrr", "pod", "jiq", "--servers", "20", "--load", "0.7",
        "-o", "decay=1s", "-o", "weight-update-period=2", "--tasks", "20000",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    rows = {r["policy"]: r for r in json.loads(out)["rows"]}
    assert rows["ewma"]["r"] == 20 and rows["wrr"]["r"] == 20 and rows["pod"]["r"] == 20
    assert rows["jiq"]["r"] == 10
    from cloudsched.experiments.compare import options_per_policy

    per = options_per_policy(["ewma", "wrr", "pod"], ["decay=1s", "weight-update-period=2"])
    assert per == {"ewma": ["decay=1s"], "wrr": ["weight-update-period=2"], "pod": []}
    code, _, err = run(
        capsys, "compare", "pod", "jiq", "--servers", "20", "--load", "0.5", "-o", "decay=1s"
    )
    assert code == 2 and "--option must be absent: no compared policy takes options" in err
    code, _, err = run(
        capsys, "compare", "ewma", "--servers", "20", "--load", "0.5", "-o", "colour=1"
    )
    assert code == 2 and "an option of a compared policy: " in err


def test_compare_with_slowdowns_has_no_mean_field(capsys):
    code, out, _ = run(
        capsys, "compare", "pod", "--servers", "20", "--load", "0.7",
        "--slowdown", "0.1:0.1@0-50/500", "--tasks", "20000", "--format", "json",
    )  # fmt: skip
    assert code == 0
    (row,) = json.loads(out)["rows"]
    assert row["meanfield_T"] is None


def test_the_simulate_card_shows_p0_only_with_iqueues_and_rates_in_words(capsys):
    """p0 means nothing without I-queues (pod showed 'p0 1'); events/s read as 6.3 M,
    not 6.32e+06 (issue 45 item 4)."""
    cards = {}
    for policy in ("pod", "jiq"):
        with pytest.raises(SystemExit) as exc:
            main(["simulate", policy, "--servers", "50", "--load", "0.8", "--tasks", "20000"])
        assert exc.value.code == 0
        cards[policy] = capsys.readouterr().out
    assert "p0 (empty I-queues)" not in cards["pod"]
    assert "p0 (empty I-queues)" in cards["jiq"]
    rate = re.search(r"events/s .*\), (\S+)( [kMG])?", cards["pod"])
    assert rate is not None and "e+" not in rate.group(0)


def test_a_long_progress_description_stays_on_one_line_at_80_columns():
    """The demo's progress wrapped mid-phrase at 80 columns (issue 45): the text column is
    cut with an ellipsis instead."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn

    from cloudsched.cli.console import description_column

    console = Console(width=80, record=True, force_terminal=True, color_system=None)
    bar = Progress(description_column(), BarColumn(), TaskProgressColumn(), console=console)
    bar.add_task("demo: the JIQ figures at N = 500 and 2,000 servers (12 of 40 runs) " * 2,
                 total=1.0, completed=0.3)  # fmt: skip
    console.print(bar.get_renderable())
    lines = [line for line in console.export_text().splitlines() if line.strip()]
    assert len(lines) == 1 and len(lines[0]) <= 80 and "…" in lines[0] and "30%" in lines[0]
