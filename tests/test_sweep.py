import gc
import os
import signal
import subprocess
import sys
import time

import pytest

from cloudsched.cli import main
from cloudsched.errors import ParameterError
from cloudsched.experiments.sweep import TIMING_COLUMNS, load_results, load_spec, run_sweep

SPEC = """\
kind: simulate
seed: 7
replications: 2
fixed: {servers: 50, r: 5, tasks: 20000}
grid:
  policy: [jiq, jiq-pod]
  load: [0.5, 0.9]
"""


def _rows(df):
    return df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    return load_spec(path)


def test_rows_do_not_depend_on_executor_or_workers(spec, tmp_path):
    one = run_sweep(spec, tmp_path / "one")
    two = run_sweep(spec, tmp_path / "two", workers=2)
    dask = run_sweep(spec, tmp_path / "dask", executor="dask", workers=2)
    assert len(one) == 8 and one["run_id"].is_unique
    assert _rows(one).equals(_rows(two))
    assert _rows(one).equals(_rows(dask))
    # replications differ, and the stored seed words say why
    a = one[one["replication"] == 0]["mean_response_time"].to_numpy()
    b = one[one["replication"] == 1]["mean_response_time"].to_numpy()
    assert (a != b).all()


def test_any_pool_of_the_callers_gives_the_same_rows(spec, tmp_path):
    """The SciPy workers= / emcee pool= convention: an Executor, a pool with map, a map."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    one = _rows(run_sweep(spec, tmp_path / "one"))
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as executor:
        assert _rows(run_sweep(spec, tmp_path / "executor", executor=executor)).equals(one)
    with ctx.Pool(2) as pool:
        assert _rows(run_sweep(spec, tmp_path / "pool", executor=pool)).equals(one)
        assert _rows(run_sweep(spec, tmp_path / "pool-map", executor=pool.imap)).equals(one)
    assert _rows(run_sweep(spec, tmp_path / "map", executor=map)).equals(one)  # in process
    with pytest.raises(ParameterError, match="executor must be 'local', 'dask', a concurrent"):
        run_sweep(spec, tmp_path / "bad", executor=42)


def test_dask_is_an_optional_extra(spec, tmp_path, monkeypatch):
    """A plain install has no Dask: the package imports without it, and asking for it says
    how to install it in one line, before anything is written."""
    import importlib.util
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    plain = " ".join(project["project"]["dependencies"])
    assert "dask" not in plain and "distributed" not in plain and "cryptography" not in plain
    assert any("distributed" in d for d in project["project"]["optional-dependencies"]["dask"])
    code = (
        "import sys, cloudsched.cli, cloudsched.dispatch, cloudsched.experiments.sweep; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', "
        "'cryptography')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "distributed" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ParameterError, match=r'pip install "cloudsched\[dask\]"'):
        run_sweep(spec, tmp_path / "dask", executor="dask")
    assert not (tmp_path / "dask").exists()


def test_dask_sweep_runs_while_the_dashboard_port_is_held(spec, tmp_path):
    """Port 8787 (Dask's default) held by another program: the sweep still runs.

    The socket takes 8787 when it is free; when it is not, something else holds it, which
    is the case under test anyway.
    """
    import contextlib
    import socket

    holder = socket.socket()
    with contextlib.suppress(OSError):
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    try:
        rows = run_sweep(spec, tmp_path / "dask", executor="dask", workers=1)
    finally:
        holder.close()
    assert len(rows) == 8


def test_open_ended_runs_and_their_options_pass_through_a_sweep(tmp_path):
    """Runs to a precision, with the initial state chosen: identical rows on any pool size."""
    path = tmp_path / "open.yaml"
    path.write_text(
        "kind: simulate\nseed: 3\nfixed: {servers: 40, r: 4, precision: 0.05}\n"
        "grid:\n  policy: [jiq, jiq-pod]\n  initial: [empty, meanfield]\n"
        "  load: [0.6]\n"
    )
    spec = load_spec(path)
    one = run_sweep(spec, tmp_path / "one")
    two = run_sweep(spec, tmp_path / "two", workers=2)
    assert _rows(one).equals(_rows(two))
    assert set(one["initial"]) == {"empty", "meanfield"}
    assert (one["stop_reason"] == "precision").all()
    assert (one["precision_reached"] <= 0.05).all() and one["steady_state"].all()


def test_a_killed_sweep_resumes_to_the_same_rows(tmp_path):
    path = tmp_path / "spec.yaml"
    longer = SPEC.replace("tasks: 20000", "tasks: 400000")
    path.write_text(longer.replace("[0.5, 0.9]", "[0.3, 0.5, 0.7, 0.9]"))
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "cloudsched", "sweep", str(path), "--out", str(out)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "runs").glob("*.parquet"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = len(list((out / "runs").glob("*.parquet")))
    assert 3 <= stored < 16, "the kill must land mid-way"
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(path), "--out", str(out), "--resume"])
    assert exc.value.code == 0
    whole = run_sweep(load_spec(path), tmp_path / "whole")
    resumed = load_results(out)
    assert len(resumed) == 16 and resumed["run_id"].is_unique
    assert _rows(resumed).equals(_rows(whole))
    assert not list((out / "runs").glob(".*.tmp"))


def test_a_stored_sweep_is_not_overwritten_without_resume(spec, tmp_path, capsys):
    run_sweep(spec, tmp_path / "out")
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(SPEC)
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(spec_file), "--out", str(tmp_path / "out")])
    assert exc.value.code == 2
    assert "--resume" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (SPEC.replace("servers: 50", "servrs: 50"), "fixed.servrs is not a parameter"),
        (SPEC.replace("policy: [jiq, jiq-pod]", "policy: []"), "grid.policy must be a non-empty"),
        (SPEC.replace("load: [0.5, 0.9]", "load: [0.5, fast]"), "grid.load: 'fast' has the wrong"),
        (SPEC.replace("tasks: 20000", "tasks: 2.5"), "fixed.tasks: 2.5 has the wrong type"),
        (SPEC.replace("kind: simulate", "kind: dance"), "'kind' must be one of"),
        (SPEC.replace("grid:", "grod:"), "unknown key 'grod'"),
        (SPEC.replace("[jiq, jiq-pod]", "[jiq, jiq-fast]"), "policy must be one of"),
        ("kind: simulate\ngrid: {}\n", "'grid' must be a non-empty mapping"),
        ("kind: place\ngrid: {beta: [0.1]}\n", "a place sweep needs 'cluster'"),
        ("kind: [", "malformed YAML"),
    ],
)
def test_malformed_specs_fail_before_any_run(tmp_path, capsys, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and fragment in err
    assert not out.exists()


def test_place_and_predict_sweeps(tmp_path):
    (tmp_path / "w.yaml").write_text(
        "job_types:\n  - {name: c, arrival_rate: 1, mean_duration: 1, "
        "topology: {generator: chain, nodes: 3}}\n"
    )
    (tmp_path / "place.yaml").write_text(
        "kind: place\nseed: 1\nfixed: {cluster: 3x3, workload: w.yaml, horizon: 200}\n"
        "grid: {policy: [greedy, dgp], beta: [0.1]}\n"
    )
    df = run_sweep(load_spec(tmp_path / "place.yaml"), tmp_path / "p")
    assert set(df["policy"]) == {"greedy", "dgp"} and "c.mean_queue_length" in df.columns
    (tmp_path / "pred.yaml").write_text(
        "kind: predict\ngrid: {policy: [jiq, pod], load: [0.5, 0.9]}\nfixed: {r: 10.0}\n"
    )
    pred = run_sweep(load_spec(tmp_path / "pred.yaml"), tmp_path / "m")
    assert len(pred) == 4 and (pred["mean_response_time"] > 1).all()


def test_a_resumed_directory_returns_only_the_specs_runs(spec, tmp_path):
    run_sweep(spec, tmp_path / "out")
    smaller = load_spec_text(tmp_path, SPEC.replace("load: [0.5, 0.9]", "load: [0.5]"))
    rows = run_sweep(smaller, tmp_path / "out", resume=True)
    assert len(rows) == 4 and set(rows["load"]) == {0.5}
    assert len(load_results(tmp_path / "out")) == 8


def load_spec_text(tmp_path, text):
    path = tmp_path / "other.yaml"
    path.write_text(text)
    return load_spec(path)


def test_random_workload_graphs_are_shared_by_replications(tmp_path):
    (tmp_path / "w.yaml").write_text(
        "job_types:\n  - {name: g, arrival_rate: 0.5, mean_duration: 1, "
        "topology: {generator: random, nodes: 6, p: 0.5}}\n"
    )
    (tmp_path / "s.yaml").write_text(
        "kind: place\nseed: 4\nreplications: 3\n"
        "fixed: {cluster: 3x4, workload: w.yaml, horizon: 50}\ngrid: {policy: [greedy]}\n"
    )
    df = run_sweep(load_spec(tmp_path / "s.yaml"), tmp_path / "out")
    assert len(df) == 3
    assert df["g.edges"].nunique() == 1  # one graph per point
    assert df["events"].nunique() == 3  # replications still differ
    text = (tmp_path / "s.yaml").read_text()
    (tmp_path / "t.yaml").write_text(text.replace("seed: 4", "seed: 5"))
    other = run_sweep(load_spec(tmp_path / "t.yaml"), tmp_path / "out", resume=True)
    assert len(other) == 3 and set(other["run_id"]).isdisjoint(df["run_id"])  # a new seed


def _failing_client(client_class, address, **kw):
    """Start a Client that is expected to fail, with the garbage collector held off.

    A Client that failed to start closes itself in ``__del__``; run by a collection that
    happens inside the next Client's start (which holds distributed's loop-runner lock), that
    close waits for the same lock and the test hangs (seen once in a run on two processes).
    Collecting here, while no Client is starting, finalises it safely.
    """
    gc.disable()
    try:
        client_class(address, timeout=3, **kw)
    finally:
        gc.enable()
        gc.collect()


def test_the_sweeps_dask_cluster_admits_only_its_own_client():
    """The issue's case: a second process ran code in a worker of the sweep's cluster."""
    from distributed import Client
    from distributed.security import Security

    from cloudsched.experiments.sweep_dask import local_cluster

    cluster = local_cluster(1)
    try:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        with Client(cluster, security=cluster.security) as own:
            assert own.submit(lambda: 41 + 1).result() == 42
        intruders = [
            {},  # plain, no certificate
            {"security": Security.temporary()},  # TLS with a certificate of its own
        ]
        # each intruder's Client fails to start (how it fails - a refused handshake, a
        # timeout, distributed's own loop runner giving up - is distributed's business), and
        # the scheduler never admits it: only its fire-and-forget client is left
        for kw in intruders:
            with pytest.raises(Exception):  # noqa: B017
                _failing_client(Client, address, **kw)
        with pytest.raises(Exception):  # noqa: B017  (the same port, spoken in clear)
            _failing_client(Client, address.replace("tls://", "tcp://"))
        assert list(cluster.scheduler.clients) == ["fire-and-forget"]
    finally:
        cluster.close()


def test_tls_files_are_for_an_external_scheduler(spec, tmp_path, capsys):
    from cloudsched.cli import main

    path = tmp_path / "spec.yaml"
    path.write_text("kind: predict\nfixed: {policy: jiq}\ngrid: {load: [0.5]}\n")
    for argv, name in (
        (["--tls-ca", str(path)], "--tls-ca"),
        (["--scheduler", "tls://127.0.0.1:1", "--tls-ca", str(path)], "--tls-cert"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["sweep", str(path), "--out", str(tmp_path / "o"), *argv])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith(f"error: {name}") and err.count("\n") == 1
