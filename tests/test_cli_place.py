import json
import math

import pytest

from cloudsched.cli import main

WORKLOAD = """\
job_types:
  - name: chain3
    arrival_rate: 1.0
    mean_duration: 1.0
    topology: {generator: chain, nodes: 3}
  - name: star4
    arrival_rate: 0.5
    mean_duration: 1.0
    topology: {generator: star, nodes: 4}
"""


ONE = "job_types:\n  - {{name: a, arrival_rate: {rate}, mean_duration: {dur}, topology: {top}}}\n"
CHAIN = "{generator: chain, nodes: 2}"


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOAD)
    return path


@pytest.mark.parametrize(
    "policy",
    [
        "storm-default",
        "greedy",
        "resource-aware",
        pytest.param("dgp-clock", marks=pytest.mark.slow),  # 35 s cold
        pytest.param("dgp", marks=pytest.mark.slow),  # calibrates alpha: 35 s
        pytest.param("maxweight", marks=pytest.mark.slow),  # solves every frame: 31 s
    ],
)
def test_place_simulate_json(capsys, workload, policy):
    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        policy,
        "--horizon",
        "300",
        "--seed",
        "4",
        "--format",
        "json",
    )
    assert code == 0, err
    doc = json.loads(out)
    for key in ("mean_queue_length", "mean_partition_cost", "utilization", "migrations"):
        assert key in doc
    assert doc["seed"] == 4 and doc["policy"] == policy
    assert [t["name"] for t in doc["per_type"]] == ["chain3", "star4"]
    assert 0 < doc["utilization"] <= 1
    if policy != "maxweight":
        assert doc["migrations"] == 0


def test_place_simulate_table_and_out_file(capsys, workload, tmp_path):
    out_file = tmp_path / "res.txt"
    code, out, _ = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--horizon",
        "100",
        "--seed",
        "1",
        "--out",
        str(out_file),
    )
    assert code == 0 and out == ""
    text = out_file.read_text()
    assert "mean_partition_cost" in text and "per job type" in text


def test_place_bound(capsys, workload):
    code, out, _ = run(
        capsys,
        "place",
        "bound",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["value"] == pytest.approx(0.5) and doc["lower_bound"] == pytest.approx(0.5)
    assert doc["proven"] and doc["gap"] == 0.0 and not doc["hit_time_limit"]
    assert sum(c["share"] for c in doc["configurations"]) <= 1 + 1e-9


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_place_commands_take_the_format_from_out_as_simulate_does(capsys, workload, tmp_path):
    """One resolver: --out x.json writes JSON without --format; a --format that disagrees
    with the name is refused in one line."""
    base = ["place", "bound", "--cluster", "3x3", "--workload", str(workload)]
    code, out, err = run(capsys, *base, "--out", str(tmp_path / "b.json"))
    assert code == 0 and out == "", err
    assert json.loads((tmp_path / "b.json").read_text())["value"] == pytest.approx(0.5)
    code, out, err = run(capsys, *base, "--out", str(tmp_path / "c.json"), "--format", "table")
    assert code == 2 and err.count("\n") == 1 and "agrees with --format table" in err
    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--horizon",
        "100",
        "--seed",
        "1",
        "--out",
        str(tmp_path / "s.json"),
    )
    assert code == 0 and out == "", err
    assert json.loads((tmp_path / "s.json").read_text())["policy"] == "dgp"


def test_the_policy_is_given_as_simulate_takes_it_and_the_old_option_still_works(capsys, workload):
    base = [
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--horizon",
        "100",
        "--seed",
        "2",
        "--format",
        "json",
    ]
    code, out, err = run(capsys, "place", "simulate", "greedy", *base)
    assert code == 0, err
    new = json.loads(out)
    code, out, err = run(capsys, "place", "simulate", *base, "--policy", "greedy")
    assert code == 0, err
    old = json.loads(out)
    assert new["policy"] == old["policy"] == "greedy"
    assert new["mean_partition_cost"] == old["mean_partition_cost"]
    code, out, err = run(capsys, "place", "simulate", "greedy", *base, "--policy", "dgp")
    assert code == 2 and err.count("\n") == 1 and "--policy must be left out" in err
    code, out, err = run(capsys, "place", "simulate", "fifo", *base)
    assert code == 2 and err.startswith("error: POLICY must be one of")


def test_overload_is_warned(capsys, workload):
    code, _, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "1x5",
        "--workload",
        str(workload),
        "--horizon",
        "50",
        "--seed",
        "1",
    )
    assert code == 0
    assert err.startswith("warning: the workload asks for 5 slots on average")
    assert "no policy can keep the queues bounded" in err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--cluster", "2x1"], "--workload must be at most the cluster's 2 slots"),
        (["--cluster", "3x"], "--cluster must be MACHINESxSLOTS"),
        (["--cluster", "3x3,0x2"], "--cluster must be MACHINESxSLOTS"),
        (["--proposal", "smart"], "--proposal must be one of"),
        (["--locality", "1.5"], "--locality must be in [0, 1]"),
        (["--solver", "best"], "--solver must be one of"),
        (["--flux-traffic", "bytes"], "--flux-traffic must be one of"),
        (["--assignments", "a.csv"], "--assignments must be a file ending in .parquet"),
        (["--policy", "fifo"], "--policy must be one of"),
        (["--beta", "0"], "--beta must be in (0, inf)"),
        (["--epsilon", "1.5"], "--epsilon must be in (0, 1)"),
        (["--racks", "9"], "--racks must be an integer in [1, 3]"),
        (["--horizon", "-3"], "--horizon must be"),
    ],
)
def test_bad_place_input_exits_2_with_one_line(capsys, workload, args, fragment):
    base = {"--cluster": "3x3", "--workload": str(workload)}
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v
    flat = [x for kv in base.items() for x in kv]
    code, out, err = run(capsys, "place", "simulate", *flat)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert fragment in err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("job_types: [{name: a", "malformed YAML"),
        (ONE.format(rate=-1, dur=1, top=CHAIN), "a.arrival_rate must be"),
        (ONE.format(rate=1, dur=0, top=CHAIN), "a.mean_duration must be"),
        (ONE.format(rate=1, dur=1, top="{flux: missing.yaml}"), "missing.yaml"),
    ],
)
def test_malformed_workloads_exit_2(capsys, tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    for cmd in ("simulate", "bound"):
        code, _, err = run(capsys, "place", cmd, "--cluster", "3x3", "--workload", str(path))
        assert code == 2
        assert err.count("\n") == 1 and fragment in err


def test_unknown_grouping_exits_2(capsys, tmp_path):
    (tmp_path / "t.yaml").write_text(
        "name: t\nspouts: [{id: s, className: C, parallelism: 1}]\n"
        "bolts: [{id: b, className: C, parallelism: 1}]\n"
        "streams: [{from: s, to: b, grouping: {type: SIDEWAYS}}]\n"
    )
    path = tmp_path / "w.yaml"
    path.write_text(
        "job_types:\n  - {name: a, arrival_rate: 1, mean_duration: 1, topology: {flux: t.yaml}}\n"
    )
    code, _, err = run(capsys, "place", "bound", "--cluster", "3x3", "--workload", str(path))
    assert code == 2 and "unknown grouping SIDEWAYS" in err


def test_place_simulate_writes_placements_frames_and_a_snapshot(capsys, workload, tmp_path):
    import pandas as pd

    files = {
        k: tmp_path / f"{k}.{ext}"
        for k, ext in (("assignments", "parquet"), ("frames", "parquet"), ("plot", "png"))
    }
    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "2x4,1x3",
        "--workload",
        str(workload),
        "--policy",
        "maxweight",
        "--solver",
        "fast",
        "--horizon",
        "60",
        "--seed",
        "2",
        *[x for k, p in files.items() for x in (f"--{k}", str(p))],
    )
    assert code == 0, err
    placed = pd.read_parquet(files["assignments"])
    assert {"job", "type", "node", "machine", "slot", "start", "end"} <= set(placed.columns)
    assert set(placed["type"]) <= {"chain3", "star4"} and placed["machine"].max() <= 2
    frames = pd.read_parquet(files["frames"])
    assert len(frames) == 59 and (frames["gap"] >= 0).all()
    assert files["plot"].stat().st_size > 1000
    assert "frames: " in out and "optimality gap" in out


def test_frames_of_a_policy_without_frames_are_refused_in_one_warning(capsys, workload, tmp_path):
    path = tmp_path / "f.parquet"
    code, _, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        "greedy",
        "--horizon",
        "20",
        "--frames",
        str(path),
    )
    assert code == 0 and not path.exists()
    assert "warning: no frames to write" in err


def test_resource_aware_on_a_cluster_file(capsys, workload, tmp_path):
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "machines:\n  - {count: 2, slots: 4, cpu: 400, rack: 0}\n"
        "  - {count: 2, slots: 3, cpu: 300, rack: 1}\n"
    )
    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        str(cluster),
        "--workload",
        str(workload),
        "--policy",
        "resource-aware",
        "--horizon",
        "200",
        "--seed",
        "1",
        "--format",
        "json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["racks"] == 2 and doc["served_fraction"] > 0.9
    code, _, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        str(cluster),
        "--racks",
        "2",
        "--workload",
        str(workload),
    )
    assert code == 2 and "--racks must be not given with a cluster file" in err


def test_place_bound_fast_with_a_time_limit(capsys, workload):
    code, out, err = run(
        capsys,
        "place",
        "bound",
        "--cluster",
        "6x4",
        "--workload",
        str(workload),
        "--solver",
        "fast",
        "--time-limit",
        "20",
        "--format",
        "json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["solver"] == "fast" and doc["lower_bound"] <= doc["value"] + 1e-9
    assert doc["gap"] == 0 or doc["note"]
    code, _, err = run(
        capsys,
        "place",
        "bound",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--time-limit",
        "0",
    )
    assert code == 2 and "--time-limit must be" in err


def test_place_compare_puts_policies_beside_the_bound(capsys, workload, tmp_path):
    plot = tmp_path / "s.png"
    code, out, err = run(
        capsys,
        "place",
        "compare",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        "greedy",
        "--policy",
        "dgp:local",
        "--policy",
        "storm-default",
        "--horizon",
        "400",
        "--seed",
        "3",
        "--format",
        "json",
        "--plot",
        str(plot),
    )
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc["policies"]) == ["greedy", "dgp:local", "storm-default"]
    assert doc["bound"]["proven"] and doc["bound"]["value"] == pytest.approx(0.5)
    assert doc["policies"]["dgp:local"]["params"]["proposal"] == "local"
    # the same seed as place simulate gives the same run
    code, single, _ = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        "greedy",
        "--horizon",
        "400",
        "--seed",
        "3",
        "--format",
        "json",
    )
    assert json.loads(single)["cost_rate"] == doc["policies"]["greedy"]["cost_rate"]
    assert plot.stat().st_size > 1000
    code, csv, _ = run(
        capsys,
        "place",
        "compare",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        "greedy",
        "--horizon",
        "100",
        "--format",
        "csv",
    )
    assert code == 0 and csv.splitlines()[0].startswith("policy,cost_rate,cost_ci95,gap")
    code, _, err = run(
        capsys,
        "place",
        "compare",
        "--cluster",
        "3x3",
        "--workload",
        str(workload),
        "--policy",
        "greedy:local",
    )
    assert code == 2 and "dgp:uniform" in err and err.count("\n") == 1


def test_place_compare_bounds_the_optimum_once_for_all_policies(monkeypatch, workload):
    """Every run is judged against compare's own bound (not one recomputed per policy)."""
    import cloudsched.placement.optimize as optimize
    from cloudsched.experiments.place_compare import compare_placement
    from cloudsched.placement import load_workload, parse_cluster

    calls = []
    real = optimize.static_optimum
    monkeypatch.setattr(
        optimize, "static_optimum", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    res = compare_placement(
        parse_cluster("3x3"),
        load_workload(workload, rng=1),
        ["greedy", "storm-default"],
        seed=2,
        horizon=300,
    )
    assert calls == []  # the runs reuse compare's bound (computed through its own import)
    for entry, r in res.results.items():
        assert r.bound == res.bound.lower_bound and r.bound_proven == res.bound.proven
        row = res.table.set_index("policy").loc[entry]
        assert row["gap"] == pytest.approx(
            r.bound_gap if r.bound_gap is not None else math.nan, nan_ok=True
        )


def test_flux_properties_are_read_wherever_flux_files_are(tmp_path, capsys):
    """``--properties`` fills a workload's Flux files in place bound, simulate and compare,
    as in place static (issue 43); a workload's own ``properties:`` entry wins."""
    flux = tmp_path / "filtered.yaml"
    flux.write_text(
        'name: "filtered"\n'
        "spouts:\n  - {id: s, className: S, parallelism: ${spout.parallelism}}\n"
        "bolts:\n  - {id: b, className: B, parallelism: 2}\n"
        "streams:\n  - {from: s, to: b, grouping: {type: SHUFFLE}}\n"
    )
    (tmp_path / "dev.properties").write_text("spout.parallelism=3\n")
    here = tmp_path / "run"
    here.mkdir()
    (here / "other.properties").write_text("spout.parallelism=5\n")
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "job_types:\n  - {name: f, arrival_rate: 0.1, mean_duration: 1, "
        "topology: {flux: filtered.yaml}}\n"
    )
    base = ["--cluster", "3x4", "--workload", str(workload)]
    code, _, err = run(capsys, "place", "bound", *base)
    assert code == 2 and "spout.parallelism" in err and err.count("\n") == 1, err
    props = str(here / "other.properties")
    for command in (["place", "bound"], ["place", "simulate", "greedy", "--horizon", "50"]):
        code, out, err = run(capsys, *command, *base, "--properties", props, "--format", "json")
        assert code == 0, err
    doc = json.loads(out)
    assert doc["per_type"][0]["nodes"] == 7  # 5 spouts from --properties, 2 bolts
    code, out, err = run(
        capsys, "place", "compare", *base, "--properties", props, "--policy", "greedy"
    )
    assert code == 0, err
    # the workload's own entry wins over the option
    workload.write_text(
        workload.read_text().replace("filtered.yaml}", "filtered.yaml, properties: dev.properties}")
    )
    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "greedy",
        *base,
        "--properties",
        props,
        "--horizon",
        "50",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["per_type"][0]["nodes"] == 5, err


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["place", "simulate", "greedyy"], "did you mean 'greedy'?"),
        (["place", "compare", "dgp:unifrom"], "did you mean 'dgp:uniform'?"),
        (["place", "simulate", "dgp", "--solver", "exakt"], "did you mean 'exact'?"),
    ],
)
def test_a_misspelt_choice_gets_a_suggestion(capsys, workload, args, suggestion):
    code, _, err = run(capsys, *args, "--cluster", "4x4", "--workload", str(workload))
    assert code == 2 and err.count("\n") == 1
    assert err.rstrip().endswith(suggestion), err
    # nothing close: no suggestion
    code, _, err = run(capsys, "place", "simulate", "zzzz", "--cluster", "4x4",
                       "--workload", str(workload))  # fmt: skip
    assert code == 2 and "did you mean" not in err


def test_a_misspelt_dispatch_policy_gets_a_suggestion(capsys):
    code, _, err = run(capsys, "simulate", "jsqq", "--servers", "10", "--load", "0.5")
    assert code == 2 and err.rstrip().endswith("did you mean 'jsq'?")


def test_a_cluster_too_small_says_which_would_hold_the_topologies(capsys):
    # Storm's usual four slots a supervisor: word count's 28 executors (ackers included)
    code, _, err = run(capsys, "place", "static", "--cluster", "4x4", "--topology", "wordcount")
    assert code == 2 and err.count("\n") == 1
    assert "--cluster 4x7 or 7x4 would hold 28" in err
    code, _, err = run(capsys, "place", "static", "--cluster", "4x8", "--topology", "wordcount",
                       "--topology", "exclamation")  # fmt: skip
    assert code == 2 and "not 46; --cluster 4x12 or 6x8 would hold 46" in err
    # what it names does hold them
    code, _, err = run(capsys, "place", "static", "--cluster", "6x8", "--topology", "wordcount",
                       "--topology", "exclamation", "--time-limit", "20")  # fmt: skip
    assert code == 0, err


def test_place_simulate_prints_a_card_not_every_field(capsys, workload):
    base = ["--cluster", "4x4", "--workload", str(workload), "--horizon", "100", "--seed", "2"]
    code, out, err = run(capsys, "place", "simulate", "greedy", *base)
    assert code == 0, err
    card = out.split("per job type")[0]
    for row in ("cost per unit time", "95% interval", "queue length / wait", "steady state",
                "stopped by", "seed"):  # fmt: skip
        assert row in card
    assert "relaxation_estimate" not in card and "warmup_detected" not in card
    assert card.count("\n") < 30  # the 80-line dump it replaces
    code, out, err = run(capsys, "place", "simulate", "greedy", *base, "--format", "json")
    assert "relaxation_estimate" in json.loads(out)


def test_cards_and_tables_write_numbers_without_e_notation():
    from cloudsched.cli.results import readable

    assert readable(198_400.0) == "198,400" and readable(1.984e5) == "198,400"
    assert readable(0.503) == "0.503" and readable(1.0) == "1" and readable(0.0) == "0"
    assert readable(5870.0, 3) == "5,870" and readable(0.0016456) == "0.001646"
    assert readable((8.834320684882737, 34.847983455153155)) == "(8.834, 34.85)"
    assert readable(None) == "-" and readable(float("nan")) == "-" and readable(3) == "3"
    assert readable(2.5e-7) == "2.5e-07"  # below 1e-4 a reader wants the exponent
