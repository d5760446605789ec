"""The one table of access-log formats: how a line of each is read, and what its fields mean.

Both readers of access logs read it: :mod:`.accesslogs` (a log as a workload: arrival and
service times) and :mod:`.upstreams` (who served each request and when, for ``check-lb``).
Each :class:`LogFormat` says where a line's time is (``stamp``: the request's ``start``, or its
``end`` for NGINX, which writes a line when a request ends), which field gives what, the
step of its clock, and how a line is matched and read into a :class:`Request`.  Adding a
format is one entry of :data:`LOG_FORMATS` (a pattern and a function from a match to a
``Request``) and its tests; both readers, detection and ``--trace-format`` then know it.

* ``nginx``: time ``$msec``, ``$time_iso8601`` or ``$time_local`` (the request's end);
  total ``$request_time``; upstream's time ``$upstream_response_time``; upstream
  ``$upstream_addr`` (the last tried); step: from the digits of ``$msec``;
* ``envoy``: time ``%START_TIME%`` (the start); total ``%DURATION%`` (ms); upstream's time
  ``%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%``; upstream the last quoted field; step 1 ms;
* ``envoy-json``: time ``start_time`` (the start); total ``duration`` (ms); upstream's time
  ``upstream_service_time``; upstream ``upstream_host``; step 1 ms; where the line has
  ``us_tx_beg`` and ``us_rx_end`` (ms after the start: ``%COMMON_DURATION(DS_RX_BEG:US_TX_BEG:ms)%``
  and ``...:US_RX_END:ms)%``), the upstream stream's own span (``upstream_before``,
  ``upstream_last``);
* ``haproxy``: time the accept date (the start); total ``Ta`` (ms); upstream's time ``Tr``
  (ms); upstream ``backend/server``; step 1 ms.

HAProxy's request leaves the queue for its server ``TR + Tw`` after the accept date
(``queued``; the connect time ``Tc`` follows).  Times without a fraction of a second
(``$time_local``, ``$time_iso8601`` without one) have a step of one second.  A duration is
``-`` (unknown: None), or a finite number of at most :data:`~.logfiles.MAX_VALUE` seconds
(NGINX's retries ``"0.010, 0.004 : 0.002"`` are summed; :mod:`.fields` reads the values);
anything else stops the reader with a one-line
:class:`~cloudsched.dispatch.workload.logfiles.TraceError` naming the file and the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from cloudsched.dispatch.workload.fields import duration as _duration
from cloudsched.dispatch.workload.fields import log_time as _time
from cloudsched.dispatch.workload.fields import nginx_regex
from cloudsched.dispatch.workload.fields import start_time as _start_time
from cloudsched.dispatch.workload.logfiles import TraceError

__all__ = [
    "LOG_FORMATS",
    "NGINX_CLIENT_FORMAT",
    "NGINX_DEFAULT_FORMAT",
    "NGINX_UPSTREAM_FORMAT",
    "NGINX_WORKER_FORMAT",
    "LogFormat",
    "Request",
    "detect_line",
    "line_pattern",
    "read_line",
]

#: NGINX's ``combined`` format with the two timing variables appended (a common choice).
NGINX_DEFAULT_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" $request_time $upstream_response_time'
)
#: An NGINX ``log_format`` with what ``check-lb`` needs (the lab's proxies write it):
#: ``$upstream_response_time`` is the time the upstream held the request.
NGINX_UPSTREAM_FORMAT = "$msec $request_time $upstream_addr $status $upstream_response_time"
#: The same without the upstream's time (the lab's logs before it; recognised unasked).
NGINX_CLIENT_FORMAT = "$msec $request_time $upstream_addr $status"
#: The same with the worker process (``$pid``): each worker counts its own requests
#: unless the upstream has a shared ``zone`` (recognised unasked).
NGINX_WORKER_FORMAT = NGINX_UPSTREAM_FORMAT + " $pid"
_NGINX_TIMES = ("msec", "time_iso8601", "time_local")


class Request(NamedTuple):
    """What one line says of one request.

    ``time``: the line's time, in seconds since the epoch (None: not given), ``exact``: it
    has a fraction of a second; durations in the log's own unit (``per_second`` of them make
    a second; None: ``-``): ``total`` (the whole request at the proxy), ``upstream_time``
    (the upstream's own time), ``queued`` (from ``time`` to the upstream: HAProxy's ``TR +
    Tw``; 0 elsewhere; None when a timer says the request was aborted); ``upstream`` (the
    upstream that served it, None: none); ``step`` (its clock step, s); ``missing`` (keys
    of a JSON line that are absent); NGINX: ``upstream_last``, the time of the try that
    served it (None: not logged) and ``upstream_before``, the tries before it, summed;
    ``worker``: the worker process that proxied it (NGINX ``$pid``; None: not logged);
    ``upstream_header``: NGINX's time of the serving try to the response header
    (``$upstream_header_time``; None: not logged).
    """

    time: float | None
    exact: bool
    total: float | None
    upstream_time: float | None
    queued: float | None
    upstream: str | None
    per_second: float
    step: float
    missing: tuple[str, ...] = ()
    upstream_last: float | None = None
    upstream_before: float = 0.0
    worker: str | None = None
    upstream_header: float | None = None  # NGINX: the serving try's $upstream_header_time


@dataclass(frozen=True)
class LogFormat:
    """An access-log format (see the module notes): how to read a line, what it gives."""

    name: str
    summary: str
    stamp: str
    fields: tuple[tuple[str, str], ...]
    pattern: re.Pattern[str] | None
    read: Callable[[re.Match[str] | str, str, str], Request]
    search: bool = False  # the pattern may start anywhere in the line (a syslog prefix)
    log_formats: tuple[str, ...] = ()  # NGINX: the log_format strings recognised unasked


def _nginx(m: re.Match[str] | str, where: str, clock: str) -> Request:
    assert isinstance(m, re.Match)
    f = m.groupdict()
    stamp, exact = _time(where, clock, f[clock])
    total = _duration(where, f.get("request_time", "-"), "$request_time", 1.0)
    raw = f.get("upstream_response_time", "-")
    up = _duration(where, raw, "$upstream_response_time", 1.0)
    tries = re.split(r"[,:]\s*", raw.strip().strip('"'))
    last = _duration(where, tries[-1], "$upstream_response_time", 1.0)
    before = _duration(where, ", ".join(tries[:-1]), "$upstream_response_time", 1.0) or 0.0
    addr = f.get("upstream_addr")
    if addr is not None:
        addr = addr.split(",")[-1].strip().strip(":").strip()
    step = 1.0
    if clock == "msec":  # as many digits as $msec and $request_time have
        digits = max(
            len(f[k].strip().partition(".")[2]) for k in ("msec", "request_time") if k in f
        )
        step = 10.0 ** -min(digits, 9)
    upstream = None if addr in (None, "", "-") else addr
    worker = f["pid"].strip() if f.get("pid") is not None else None
    header = None
    if f.get("upstream_header_time") is not None:
        heads = re.split(r"[,:]\s*", f["upstream_header_time"].strip().strip('"'))
        header = _duration(where, heads[-1], "$upstream_header_time", 1.0)
    return Request(
        stamp, exact, total, up, 0.0, upstream, 1.0, step, (), last, before, worker, header
    )


def _envoy(m: re.Match[str] | str, where: str, clock: str) -> Request:
    assert isinstance(m, re.Match)
    stamp, exact, step = _start_time(where, m["start"], "START_TIME")
    after = m["after"] or ""
    first = re.match(r" (\S+)(?: |$)", after)
    host = re.match(r' .*"(?P<host>[^"]*)"\s*$', after)
    up = _duration(where, first[1], "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%", 1e3) if first else None
    name = host["host"].strip() if host else None
    upstream = None if name in (None, "", "-") else name
    missing = ("upstream_time",) * (first is None) + ("upstream",) * (host is None)
    return Request(
        stamp,
        exact,
        _duration(where, m["duration"], "DURATION", 1e3),
        up,
        0.0,
        upstream,
        1e3,
        step,
        missing,
    )


def _envoy_json(text: re.Match[str] | str, where: str, clock: str) -> Request:
    assert isinstance(text, str)
    try:
        obj = {str(k).lower(): v for k, v in json.loads(text).items()}
    except (ValueError, AttributeError):
        raise TraceError(where, "not a JSON object") from None
    except RecursionError:
        raise TraceError(where, "not a JSON object of a log line (nested too deep)") from None

    def value(*keys: str) -> str:
        got = next((obj[k] for k in keys if k in obj), None)
        return "-" if got is None else str(got)

    missing = tuple(k for k in ("start_time", "duration", "upstream_host") if k not in obj)
    stamp: float | None = None
    exact, step = False, 1.0
    if "start_time" in obj and obj["start_time"] is not None:
        start = obj["start_time"]
        stamp, exact, step = _start_time(where, str(start), "start_time")
    keys = ("upstream_service_time", "x-envoy-upstream-service-time")
    up = _duration(where, value(*keys), "upstream_service_time", 1e3)
    host = value("upstream_host").strip()
    begin = _duration(where, value("us_tx_beg"), "us_tx_beg", 1e3)
    end = _duration(where, value("us_rx_end"), "us_rx_end", 1e3)
    on_upstream = None if begin is None or end is None else end - begin
    return Request(
        stamp,
        exact,
        _duration(where, value("duration"), "duration", 1e3),
        up,
        0.0,
        None if host in ("", "-") else host,
        1e3,
        step,
        missing,
        on_upstream,
        begin or 0.0,
    )


def _haproxy(m: re.Match[str] | str, where: str, clock: str) -> Request:
    assert isinstance(m, re.Match)
    stamp, exact = _time(where, "time_local", m["date"])
    tr, tw = int(m["TR"]), int(m["Tw"])
    server = m["server"]
    upstream = None if server in (None, "<NOSRV>", "-") else f"{m['backend']}/{server}"
    return Request(
        stamp,
        exact,
        _duration(where, m["Ta"], "Ta", 1e3),
        _duration(where, m["Tr"], "Tr", 1e3),
        float(tr + tw) if min(tr, tw) >= 0 else None,
        upstream,
        1e3,
        1e-3,
        () if server is not None else ("upstream",),
    )


#: Every access-log format, by name (see the module notes).
LOG_FORMATS: dict[str, LogFormat] = {
    f.name: f
    for f in (
        LogFormat(
            "nginx",
            "NGINX's access log, in the log_format it was written with",
            stamp="end",
            fields=(
                ("time", "$msec, $time_iso8601 or $time_local"),
                ("total", "$request_time"),
                ("upstream_time", "$upstream_response_time"),
                ("upstream", "$upstream_addr"),
            ),
            pattern=None,  # from the log_format (line_pattern)
            read=_nginx,
            log_formats=(
                NGINX_DEFAULT_FORMAT,
                NGINX_WORKER_FORMAT,
                NGINX_UPSTREAM_FORMAT,
                NGINX_CLIENT_FORMAT,
            ),
        ),
        LogFormat(
            "envoy",
            "Envoy's default text format",
            stamp="start",
            fields=(
                ("time", "%START_TIME%"),
                ("total", "%DURATION%"),
                ("upstream_time", "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%"),
                ("upstream", "the last quoted field (%UPSTREAM_HOST%)"),
            ),
            pattern=re.compile(
                r'^\[(?P<start>[^\]]+)\] "[^"]*" (?P<code>\S+) (?P<flags>\S+) (?P<rx>\S+) '
                r"(?P<tx>\S+) (?P<duration>\S+)(?P<after>(?: .*)?)$"
            ),
            read=_envoy,
        ),
        LogFormat(
            "envoy-json",
            "Envoy's access log as one JSON object a line (keys in any letter case)",
            stamp="start",
            fields=(
                ("time", "start_time"),
                ("total", "duration"),
                ("upstream_time", "upstream_service_time or x-envoy-upstream-service-time"),
                ("upstream", "upstream_host"),
            ),
            pattern=None,
            read=_envoy_json,
        ),
        LogFormat(
            "haproxy",
            "HAProxy's option httplog lines (with or without the syslog prefix)",
            stamp="start",
            fields=(
                ("time", "the accept date [..] (ms)"),
                ("total", "Ta"),
                ("upstream_time", "Tr"),
                ("queued", "TR + Tw"),
                ("upstream", "backend/server"),
            ),
            pattern=re.compile(
                r"\[(?P<date>\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\] "
                r"(?P<frontend>\S+) (?P<backend>[^/\s]*)(?:/(?P<server>\S+))? "
                r"(?P<TR>-?\d+)/(?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tr>-?\d+)/\+?(?P<Ta>-?\d+) "
            ),
            read=_haproxy,
            search=True,
        ),
    )
}


def line_pattern(fmt: str, log_format: str | None = None) -> tuple[re.Pattern[str] | None, str]:
    """Return the pattern of ``fmt``'s lines and the name of its time field (NGINX's clock).

    NGINX's pattern is built from ``log_format`` (default: the first it recognises).
    """
    spec = LOG_FORMATS[fmt]
    if fmt != "nginx":
        return spec.pattern, "start"
    pattern = nginx_regex(log_format or spec.log_formats[0])
    clock = next((t for t in _NGINX_TIMES if t in pattern.groupindex), "")
    return pattern, clock


def read_line(
    fmt: str, pattern: re.Pattern[str] | None, clock: str, text: str, where: str
) -> Request | None:
    """Read one line of ``fmt`` (pattern and clock from :func:`line_pattern`).

    None: the line is not in the format.
    """
    spec = LOG_FORMATS[fmt]
    if pattern is None:
        return spec.read(text, where, clock)
    m = pattern.search(text) if spec.search else pattern.match(text)
    return None if m is None else spec.read(m, where, clock)


def detect_line(line: str) -> tuple[str, str | None] | None:
    """Name the format a first line is written in and, for NGINX, its ``log_format``.

    None: none of :data:`LOG_FORMATS` (NGINX: none of the formats it recognises unasked).
    """
    text = line.strip()
    if text.startswith("{"):
        try:
            keys = {str(k).lower() for k in json.loads(text)}
        except (ValueError, AttributeError, RecursionError, TypeError):
            return None
        return ("envoy-json", None) if "start_time" in keys else None
    for fmt in ("haproxy", "envoy"):
        spec = LOG_FORMATS[fmt]
        assert spec.pattern is not None
        if (spec.pattern.search(text) if spec.search else spec.pattern.match(text)) is not None:
            return fmt, None
    for k, log_format in enumerate(LOG_FORMATS["nginx"].log_formats):
        pattern, clock = line_pattern("nginx", log_format)
        try:  # the later formats are loose (any four fields): their values must read too
            if read_line("nginx", pattern, clock, text, "") is not None:
                return "nginx", log_format
        except TraceError:
            if k == 0:  # the combined format's shape, with a bad value: the reader says which
                return "nginx", log_format
    return None
