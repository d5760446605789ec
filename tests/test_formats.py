"""The one table of access-log formats: both readers, detection and the options read it.

Adding a format is one entry of ``LOG_FORMATS`` and its tests: these check that every entry
is read by the workload reader and by check-lb's, detected from a first line, and offered by
the options, and that a line's fields mean what the table says.
"""

import json

import numpy as np
import pytest

from cloudsched.dispatch.workload.accesslogs import ACCESS_FORMATS, read_access_log
from cloudsched.dispatch.workload.formats import (
    LOG_FORMATS,
    NGINX_CLIENT_FORMAT,
    NGINX_DEFAULT_FORMAT,
    NGINX_UPSTREAM_FORMAT,
    detect_line,
    line_pattern,
    read_line,
)
from cloudsched.dispatch.workload.logfiles import TraceError
from cloudsched.dispatch.workload.logs import ALL_FORMATS, detect_format, read_log
from cloudsched.dispatch.workload.upstreams import (
    UPSTREAM_FORMATS,
    detect_upstream_format,
    read_upstream_log,
)

#: One request of 250 ms at the proxy, 200 ms of it at upstream 10.0.0.7:80, that arrived at
#: 2026-12-01T18:00:00.125Z, in each format (HAProxy: 50 ms read and queued before it).
START = 1796148000.125
LINES = {
    "nginx": (f"{START + 0.25:.3f} 0.250 10.0.0.7:80 200 0.200", NGINX_UPSTREAM_FORMAT),
    "envoy": (
        '[2026-12-01T18:00:00.125Z] "GET / HTTP/1.1" 200 - 0 5 250 200 "-" "curl" "id" '
        '"api" "10.0.0.7:80"',
        None,
    ),
    "envoy-json": (
        json.dumps(
            {
                "start_time": "2026-12-01T18:00:00.125Z",
                "duration": 250,
                "upstream_service_time": "200",
                "upstream_host": "10.0.0.7:80",
            }
        ),
        None,
    ),
    "haproxy": (
        "Dec  1 18:00:00 host haproxy[1]: 127.0.0.1:5000 [01/Dec/2026:18:00:00.125] fe "
        'be/10.0.0.7:80 30/20/0/200/250 200 512 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"',
        None,
    ),
}


def test_every_format_has_a_line_here_and_the_options_offer_it():
    assert set(LINES) == set(LOG_FORMATS)
    assert tuple(LOG_FORMATS) == ACCESS_FORMATS
    assert set(UPSTREAM_FORMATS) == set(LOG_FORMATS)
    assert set(LOG_FORMATS) <= set(ALL_FORMATS)


@pytest.mark.parametrize("fmt", list(LOG_FORMATS))
def test_a_line_means_what_the_table_says(fmt):
    text, log_format = LINES[fmt]
    assert detect_line(text) == (fmt, log_format)
    pattern, clock = line_pattern(fmt, log_format)
    req = read_line(fmt, pattern, clock, text, "x:1")
    assert req is not None and req.upstream.endswith("10.0.0.7:80")
    assert req.total / req.per_second == pytest.approx(0.25)
    at_end = LOG_FORMATS[fmt].stamp == "end"
    assert req.time == pytest.approx(START + (0.25 if at_end else 0.0), abs=1e-6)
    assert req.upstream_time / req.per_second == pytest.approx(0.2)
    assert req.step == pytest.approx(1e-3)


@pytest.mark.parametrize("fmt", list(LOG_FORMATS))
def test_both_readers_read_every_format(fmt, tmp_path):
    text, log_format = LINES[fmt]
    path = tmp_path / f"{fmt}.log"
    path.write_text(f"{text}\n{text}\n")
    assert detect_format(path) == fmt
    assert detect_upstream_format(path) == fmt
    up = read_upstream_log(path, fmt, log_format=log_format)
    queued = 0.05 if fmt == "haproxy" else 0.0  # TR + Tw before the request reached it
    np.testing.assert_allclose(up.sent, START + queued, atol=1e-6)
    # NGINX: the upstream holds it for its own time (the line is written after the client
    # has the response); the others: until the request's end at the proxy
    np.testing.assert_allclose(up.end, START + (0.2 if fmt == "nginx" else 0.25), atol=1e-6)
    assert up.names[0].endswith("10.0.0.7:80")
    log = read_access_log(path, fmt, log_format=log_format, service="total")
    np.testing.assert_allclose(log.trace.services, 0.25, atol=1e-9)
    assert read_log(path).trace.services[0] == pytest.approx(0.2)  # detected, upstream


def test_a_loose_nginx_format_is_not_seen_in_any_four_fields():
    """check-lb's NGINX formats are four or five fields: detection reads their values too."""
    assert detect_line("x [04/Dec/2026:10:00:00.000] fe be/s 1/2/3/zz/5 200") is None
    assert detect_line("a b c d") is None
    assert detect_line("1700000000.123 0.004 10.0.0.1:80 200") == ("nginx", NGINX_CLIENT_FORMAT)
    line = "1700000000.123 0.004 10.0.0.1:80, 10.0.0.2:80 200 0.001, 0.002"
    assert detect_line(line) == ("nginx", NGINX_UPSTREAM_FORMAT)


def test_check_lb_says_plainly_when_a_log_records_no_upstream(tmp_path):
    path = tmp_path / "combined.log"
    line = '1.2.3.4 - - [01/Dec/2026:18:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl" 0.010 0.008'
    path.write_text(line + "\n")
    assert detect_line(line) == ("nginx", NGINX_DEFAULT_FORMAT)
    with pytest.raises(TraceError, match=r"records no upstream \(\$upstream_addr\)"):
        detect_upstream_format(path)


@pytest.mark.parametrize("bad", ["inf", "1e300", "nan"])
def test_a_duration_that_is_not_finite_stops_both_readers(bad, tmp_path):
    path = tmp_path / "nginx.log"
    path.write_text(f"1796148000.375 0.25 10.0.0.7:80 200\n1796148000.500 {bad} 10.0.0.7:80 200\n")
    with pytest.raises(TraceError, match=r"nginx.log:2: \$request_time must be a finite"):
        read_upstream_log(path, "nginx")
    with pytest.raises(TraceError, match=r"nginx.log:2: \$request_time must be a finite"):
        read_access_log(path, "nginx", log_format=NGINX_CLIENT_FORMAT, service="total")
