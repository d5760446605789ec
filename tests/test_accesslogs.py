"""Access logs as workloads: NGINX, Envoy (text, JSON), HAProxy; shipped logs by name."""

import gzip
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.data import DATASETS, dataset_path
from cloudsched.dispatch.workload.accesslogs import read_access_log
from cloudsched.dispatch.workload.fields import nginx_regex
from cloudsched.dispatch.workload.logs import detect_format, read_log
from cloudsched.dispatch.workload.traces import TraceError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _generator():
    spec = importlib.util.spec_from_file_location("make_logs", EXAMPLES / "make_sample_logs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", list(DATASETS))
def test_shipped_logs_are_installed_intact_and_detected(name):
    path = dataset_path(name)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == DATASETS[name][2]
    assert detect_format(path) == DATASETS[name][1]


def test_generator_reproduces_the_shipped_logs_byte_for_byte(tmp_path, monkeypatch):
    mod = _generator()
    monkeypatch.setattr(mod, "OUT", tmp_path)
    mod.main()
    for name in (
        "nginx-sample",
        "nginx-upstream-sample",
        "envoy-sample",
        "envoy-json-sample",
        "haproxy-sample",
    ):
        made = (tmp_path / DATASETS[name][0]).read_bytes()
        assert hashlib.sha256(made).hexdigest() == DATASETS[name][2], name


def test_envoy_reader_returns_the_generated_requests():
    """Oracle: the generator's own requests, rounded to the log's milliseconds."""
    rows = _generator().requests(np.random.default_rng(20261103))
    kept = [r for r in rows if r["upstream"] is not None and round(r["upstream"] * 1000) > 0]
    kept.sort(key=lambda r: r["start"])
    log = read_log("envoy-sample")
    assert log.trace.arrivals.size == len(kept) and log.dropped == len(rows) - len(kept)
    start = np.array([np.floor(r["start"] * 1000) / 1000 for r in kept])
    np.testing.assert_allclose(np.sort(log.trace.arrivals), np.sort(start), atol=1e-6, rtol=0)
    up = np.sort([round(r["upstream"] * 1000) / 1000 for r in kept])
    np.testing.assert_allclose(np.sort(log.trace.services), up, atol=1e-9, rtol=0)


def test_the_four_formats_of_the_same_requests_agree():
    logs = {
        n: read_log(n)
        for n in ("nginx-sample", "envoy-sample", "envoy-json-sample", "haproxy-sample")
    }
    ref = np.sort(logs["envoy-sample"].trace.services)
    for name in ("nginx-sample", "envoy-json-sample"):
        np.testing.assert_allclose(np.sort(logs[name].trace.services), ref, atol=1.5e-3)
    # haproxy also drops the requests the client aborted (Tr = -1)
    envoy, haproxy = logs["envoy-sample"].trace, logs["haproxy-sample"].trace
    assert 0 < envoy.arrivals.size - haproxy.arrivals.size < 100
    # nginx has whole-second stamps: arrivals spread within the second, within 1 s of the truth
    gap = np.sort(logs["nginx-sample"].trace.arrivals) - np.sort(envoy.arrivals)
    assert np.abs(gap).max() < 1.5
    # the whole request at the proxy: static files (no upstream time) are kept too
    total = read_log("envoy-sample", log_service="total")
    assert total.trace.arrivals.size > logs["envoy-sample"].trace.arrivals.size


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_nginx_msec_format_and_retries(tmp_path):
    fmt = "$msec $request_time $upstream_response_time $status"
    log = read_access_log(
        write(
            tmp_path / "a.log",
            [
                "1000.500 0.200 0.150 200",
                "1000.900 0.100 0.010, 0.040 200",  # two upstream attempts: summed
                "1001.000 0.001 - 200",  # answered by the proxy: dropped
                "1001.200 0.300 0.250 : 0.010 200",  # an internal redirect
            ],
        ),
        "nginx",
        log_format=fmt,
    )
    np.testing.assert_allclose(log.trace.arrivals, [1000.3, 1000.8, 1000.9])
    np.testing.assert_allclose(log.trace.services, [0.15, 0.05, 0.26])
    assert log.dropped == 1 and log.submitted == 4


def test_nginx_whole_seconds_are_spread_within_their_second(tmp_path):
    line = '10.0.0.1 - - [03/Nov/2026:14:00:0{s} +0100] "GET / HTTP/1.1" 200 5 "-" "x" 0.000 {u}'
    lines = [line.format(s=0, u="0.010")] * 4 + [line.format(s=1, u="0.020")]
    log = read_access_log(write(tmp_path / "b.log", lines), "nginx")
    base = 1793710800.0  # 2026-11-03 13:00:00 UTC
    np.testing.assert_allclose(
        log.trace.arrivals, base + np.array([0.125, 0.375, 0.625, 0.875, 1.5])
    )
    assert log.header["timestamps"].startswith("whole seconds")


def test_nginx_iso_time_and_custom_format(tmp_path):
    fmt = '$time_iso8601 "$request" $request_time $upstream_response_time'
    assert nginx_regex(fmt).match('2026-11-03T14:00:00+00:00 "GET / HTTP/1.1" 0.2 0.1')
    log = read_access_log(
        write(
            tmp_path / "c.log",
            [
                '2026-11-03T14:00:00+00:00 "GET / HTTP/1.1" 0.2 0.1',
                '2026-11-03T14:00:01.250+00:00 "GET /a HTTP/1.1" 0.2 0.1',
            ],
        ),
        "nginx",
        log_format=fmt,
        service="total",
    )
    np.testing.assert_allclose(np.diff(log.trace.arrivals), 1.25 - 0.5)
    np.testing.assert_allclose(log.trace.services, [0.2, 0.2])


def test_envoy_json_numeric_start_and_key_case(tmp_path):
    log = read_access_log(
        write(
            tmp_path / "d.log",
            [
                json.dumps({"START_TIME": 100.25, "DURATION": 30, "UPSTREAM_SERVICE_TIME": "20"}),
                json.dumps(
                    {
                        "start_time": "1970-01-01T00:01:41.000Z",
                        "duration": 5,
                        "upstream_service_time": None,
                    }
                ),
                json.dumps({"start_time": 102.0, "duration": 7, "upstream_service_time": 6}),
            ],
        ),
        "envoy-json",
    )
    np.testing.assert_allclose(log.trace.arrivals, [100.25, 102.0])
    np.testing.assert_allclose(log.trace.services, [0.02, 0.006])


def test_haproxy_with_and_without_syslog_prefix(tmp_path):
    body = (
        "10.0.0.1:4000 [03/Nov/2026:14:00:00.{ms}] fe be/srv1 0/0/1/{tr}/{ta} 200 100 - - "
        '---- 1/1/1/1/0 0/0 "GET / HTTP/1.1"'
    )
    log = read_access_log(
        write(
            tmp_path / "e.log",
            [
                "Nov  3 14:00:00 lb haproxy[1]: " + body.format(ms="100", tr=20, ta=25),
                body.format(ms="300", tr=-1, ta=5),  # aborted: no server time
                body.format(ms="600", tr=7, ta="+9"),  # logasap: Ta prefixed with +
            ],
        ),
        "haproxy",
    )
    assert log.trace.arrivals.size == 2 and log.dropped == 1
    np.testing.assert_allclose(log.trace.arrivals - log.trace.arrivals[0], [0.0, 0.5])
    np.testing.assert_allclose(log.trace.services, [0.020, 0.007])


@pytest.mark.parametrize(
    ("fmt", "lines", "where"),
    [
        (
            "nginx",
            [
                '1.2.3.4 - - [03/Nov/2026:14:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "x" 0.1 0.1',
                "garbage",
            ],
            ":2",
        ),
        (
            "nginx",
            ['1.2.3.4 - - [03/Nov/2026:14:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "x" 0.1 x'],
            ":1",
        ),
        ("envoy-json", ["{}", "not json"], ":1"),
        ("haproxy", ["nothing here"], ":1"),
        (
            "envoy",
            ['[2026-11-03T14:00:00.000Z] "GET / HTTP/1.1" 200 - 0 5 12 10 "-"', "[x] y"],
            ":2",
        ),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, fmt, lines, where):
    path = write(tmp_path / "bad.log", lines)
    with pytest.raises(TraceError, match=f"bad.log{where}"):
        read_access_log(path, fmt)


def test_gzip_access_log_and_cli(tmp_path, capsys):
    path = tmp_path / "x.log.gz"
    with gzip.open(path, "wt") as f:
        for k in range(50):
            f.write(
                f'[2026-11-03T14:00:{k // 10:02d}.{k % 10}00Z] "GET / HTTP/1.1" 200 - 0 5 '
                f'12 {10 + k} "-" "curl" "id" "host" "10.0.0.2:80"\n'
            )
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(path), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and doc["format"] == "envoy" and doc["tasks_used"] == 50
    assert doc["inputs"]["files"][0]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SystemExit) as exc:
        main(["trace", "stats", str(path), "--log-format", "$msec"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("error: --log-format") and err.count("\n") == 1


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_simulate_replays_a_shipped_access_log_and_records_it(capsys):
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "simulate",
                "jiq-pod",
                "--servers",
                "20",
                "--trace",
                "haproxy-sample",
                "--load",
                "0.7",
                "--seed",
                "1",
                "--format",
                "json",
            ]
        )
    doc = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0
    assert doc["inputs"]["trace"]["files"] == [
        {"file": "haproxy-sample", "sha256": DATASETS["haproxy-sample"][2]}
    ]
    assert doc["inputs"]["rescaled_to_load"] is True and doc["meanfield_response_time"] is None
    assert 0.01 < doc["mean_response_time"] < 1.0  # seconds: backend times of 27 ms on average
