"""``place flink`` against a real Flink session cluster on loopback (slow tier).

Flink's jars come from ``pip install "cloudsched[flink]"`` (apache-flink-libraries) and run
on the JDK ``.ci/run`` installs.  ``tests/flink_job/PlacementJob.java`` is compiled against
them: six operators (a bounded DataGeneratorSource, FORWARD, HASH, REBALANCE, FORWARD,
FORWARD), each operator's parallelism and slot-sharing group from its arguments.

One run under Flink's default measures the job; ``place flink`` reads it from the REST API
and predicts, for Flink's default, evenly spread slots and the configuration it chooses,
the records that cross TaskManagers.  Each configuration then runs on a cluster with the
right ``taskmanager.load-balance.mode``, and what crossed (from where every subtask ran and
its record counts, read back from the REST API) is checked against the prediction.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cloudsched.cli import main
from cloudsched.placement.flink import measured_crossing

pytestmark = pytest.mark.slow

JOB_SOURCE = Path(__file__).parent / "flink_job" / "PlacementJob.java"
RECORDS = "300000"
# source and parse 3 wide, the rest 1 wide; every subtask taken to keep 0.2 cores busy
PARALLELISM = {"source": 3, "parse": 3, "count": 3, "enrich": 1, "filter": 1, "sink": 1}
OPERATOR = {
    "Source: source": "source",
    "parse": "parse",
    "count": "count",
    "enrich": "enrich",
    "filter": "filter",
    "sink: Writer": "sink",
}


def _lib() -> Path | None:
    from cloudsched.placement.flink_local import FlinkNotFound, flink_lib_dir

    try:
        return flink_lib_dir()
    except FlinkNotFound:
        return None


LIB = _lib()
if LIB is None or shutil.which("javac") is None:
    pytestmark = [  # type: ignore[assignment]
        pytest.mark.slow,
        pytest.mark.skip(reason='needs pip install "cloudsched[flink]" and a JDK (.ci/run)'),
    ]


@pytest.fixture(scope="module")
def job_jar(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flinkjob")
    subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-d", str(out), "-cp", f"{LIB}/*", str(JOB_SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    jar = out / "job.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(out), "."], check=True, timeout=120)
    return jar


def _args(groups: dict[str, str]) -> list[str]:
    return [RECORDS] + [f"{op}={PARALLELISM[op]}:{groups[op]}" for op in PARALLELISM]


def _run(cluster, jar_id: str, groups: dict[str, str]) -> str:
    job_id = cluster.run_jar(jar_id, "PlacementJob", _args(groups))
    state = cluster.wait_job(job_id)["state"]
    assert state == "FINISHED", cluster.get(f"/jobs/{job_id}/exceptions")
    return f"{cluster.url}/jobs/{job_id}"


def _crossed(cluster, url: str) -> tuple[float, float]:
    from cloudsched.placement.flink_rest import fetch_job, job_from_bundle, placement_from_bundle

    bundle = fetch_job(url, cluster.ssl_context)
    job = job_from_bundle(bundle)
    return measured_crossing(job, placement_from_bundle(bundle, job)), job.total_records


def _advise(cluster, url: str, tmp_path: Path, capsys) -> dict:
    capsys.readouterr()
    config = tmp_path / "groups.json"
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "place",
                "flink",
                url,
                "--cpu",
                "1.5",
                "--cpu-of",
                "*=0.2",
                "--format",
                "json",
                "--write",
                str(config),
                "--save",
                str(tmp_path / "job.json"),
                "--rest-ca",
                str(cluster.cert),
                "--rest-cert",
                str(cluster.cert),
                "--rest-key",
                str(cluster.key),
            ]
        )
    assert exc.value.code in (0, None)
    payload = json.loads(capsys.readouterr().out)
    payload["written"] = json.loads(config.read_text())
    return payload


def _check_authenticated(cluster, url: str) -> None:
    """A client without the cluster's certificate is refused, trusted or not."""
    import ssl
    import urllib.request

    from cloudsched.errors import InputError
    from cloudsched.placement.flink_rest import fetch_job

    with pytest.raises(InputError, match="cannot be read"):
        fetch_job(url)  # the self-signed certificate is not trusted
    trusting = ssl.create_default_context(cafile=str(cluster.cert))
    with pytest.raises(InputError, match="cannot be read"):
        fetch_job(url, trusting)  # trusted, but no client certificate
    with pytest.raises(OSError):
        urllib.request.urlopen(url.replace("https://", "http://"), timeout=10)


def _check(measured: float, row: dict, total: float) -> None:
    """Within 10% of the prediction (1% of all records where it predicts about none)."""
    slack = 0.10 * row["across_mean"] + 0.01 * total
    assert row["across_p5"] - slack <= measured <= row["across_p95"] + slack, (measured, row)
    if not row["varies"]:
        assert abs(measured - row["across_mean"]) <= slack, (measured, row)


def test_place_flink_predicts_what_a_real_cluster_sends_across(job_jar, tmp_path, capsys):
    from cloudsched.placement.flink_local import LocalFlinkCluster

    one = dict.fromkeys(PARALLELISM, "default")
    results = {}
    with LocalFlinkCluster(taskmanagers=3, slots=2) as cluster:
        jar_id = cluster.upload_jar(job_jar)
        first = _run(cluster, jar_id, one)
        payload = _advise(cluster, first, tmp_path, capsys)
        rows = {r["configuration"].split(" (")[0]: r for r in payload["rows"]}
        best = rows["best"]
        groups = {OPERATOR[v]: g for v, g in best["groups_by_vertex"].items()}
        assert payload["written"]["slot_sharing_groups"] == best["groups_by_vertex"]
        results["default"] = _crossed(cluster, first)
        if best["mode"] == "NONE":
            results["best"] = _crossed(cluster, _run(cluster, jar_id, groups))
        _check_authenticated(cluster, first)
    with LocalFlinkCluster(
        taskmanagers=3, slots=2, config={"taskmanager.load-balance.mode": "SLOTS"}
    ) as cluster:
        jar_id = cluster.upload_jar(job_jar)
        results["evenly spread"] = _crossed(cluster, _run(cluster, jar_id, one))
        if best["mode"] == "SLOTS":
            results["best"] = _crossed(cluster, _run(cluster, jar_id, groups))
    for name, (measured, total) in results.items():
        _check(measured, rows[name], total)
    # Flink's default puts two of its three slots, 1.2 and 0.6 cores, on one TaskManager:
    # more than --cpu 1.5.  Spread evenly, the job fits but sends more across than the
    # groups chosen, measured as predicted
    assert not rows["default"]["fits"] and rows["evenly spread"]["fits"] and best["fits"]
    assert best["across_mean"] <= 0.9 * rows["evenly spread"]["across_mean"]
    assert results["best"][0] <= 0.9 * results["evenly spread"][0]
    assert payload["lower_bound"] <= best["across_mean"] + 1e-6
