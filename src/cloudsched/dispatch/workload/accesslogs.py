"""Readers of HTTP access logs as workloads: NGINX, Envoy (text and JSON) and HAProxy.

Each request of a log becomes one task: an arrival time and a service time, in seconds.
Lines are streamed (gzip or plain text, several files read in order as one log); a line
that matches the format but carries an unusable value stops the reader with a
:class:`~cloudsched.dispatch.workload.traces.TraceError` naming the file and the line.  Memory is
two floats per request kept, plus the lines of one second while they are spread.

What each format gives (CHOICE where the formats leave room):

* ``nginx``: the user's ``log_format`` string (``--log-format``; default
  :data:`NGINX_DEFAULT_FORMAT`, the ``combined`` format followed by ``$request_time
  $upstream_response_time``).  NGINX writes a line when a request *ends*, so the arrival is
  the logged time (``$msec``, ``$time_iso8601`` or ``$time_local``) minus ``$request_time``
  (or minus the service time when the format has no ``$request_time``).  Service:
  ``$upstream_response_time`` (``service="upstream"``; several upstream attempts
  ``"0.010, 0.004"`` are summed) or ``$request_time`` (``service="total"``).
* ``envoy``: the default format string (``[%START_TIME%] "..." %RESPONSE_CODE%
  %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
  %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% ...``).  Arrival: ``START_TIME``; service: the
  upstream service time (ms) or ``DURATION`` (ms).
* ``envoy-json``: one JSON object a line; the start time from ``start_time``
  (ISO 8601, or seconds since the epoch), the service from ``upstream_service_time`` (or
  ``x-envoy-upstream-service-time``) or ``duration`` (ms), keys in any letter case.
* ``haproxy``: ``option httplog`` lines (with or without the syslog prefix): the date in
  brackets (milliseconds) is the arrival, the timers ``TR/Tw/Tc/Tr/Ta`` (ms) give the
  service: ``Tr`` (server response time) or ``Ta`` (total active time).

A request whose service field is ``-``, negative (HAProxy's -1 for an aborted request) or
zero is counted as dropped.  Timestamps with whole seconds only (``$time_local``,
``$time_iso8601`` without a fraction) are spread within their second: the ``k`` requests
logged in one second (consecutive lines with the same timestamp) are placed at
``(i + 1/2) / k`` of it, in their order in the log.  The times logged by a proxy include
any queueing at the backend: a replay treats them as service times, which is accurate
when the backends were lightly loaded, and pessimistic otherwise.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from cloudsched.dispatch.workload.logfiles import MAX_VALUE, TraceError, log_lines
from cloudsched.dispatch.workload.traces import TraceLog, finish_log
from cloudsched.errors import ParameterError

__all__ = [
    "ACCESS_FORMATS",
    "NGINX_DEFAULT_FORMAT",
    "detect_access_format",
    "iso_time",
    "nginx_regex",
    "read_access_log",
]

ACCESS_FORMATS = ("nginx", "envoy", "envoy-json", "haproxy")
SERVICE_FIELDS = ("upstream", "total")

#: NGINX's ``combined`` format with the two timing variables appended (a common choice).
NGINX_DEFAULT_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" $request_time $upstream_response_time'
)
_NGINX_TIMES = ("msec", "time_iso8601", "time_local")

_ENVOY = re.compile(
    r'^\[(?P<start>[^\]]+)\] "[^"]*" (?P<code>\S+) (?P<flags>\S+) (?P<rx>\S+) (?P<tx>\S+) '
    r"(?P<duration>\S+) (?P<upstream>\S+)(?: |$)"
)
_HAPROXY = re.compile(
    r"\[(?P<date>\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\] \S+ \S+ "
    r"(?P<TR>-?\d+)/(?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tr>-?\d+)/\+?(?P<Ta>-?\d+) "
)


def nginx_regex(log_format: str) -> re.Pattern[str]:
    """Compile an NGINX ``log_format`` string into a regular expression with named groups.

    A variable (``$name`` or ``${name}``) matches up to the first character of the literal
    text that follows it (``[^"]*`` before a quote), the last one to the end of the line.
    """
    parts = re.split(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", log_format)
    literals, names = parts[0::2], parts[1::2]
    if len(set(names)) != len(names):
        raise ParameterError("log_format", log_format, "a format naming each variable once")
    pattern = "^" + re.escape(literals[0])
    for name, literal in zip(names, literals[1:], strict=True):
        stop = literal[:1]
        body = f"[^{re.escape(stop)}]*" if stop else ".*"
        if name.startswith("upstream_") and name.endswith("_time"):  # retries and redirects:
            body = r"[0-9.-]+(?:(?:, | : )[0-9.-]+)*"  # "0.010, 0.004 : 0.002", or "-"
        pattern += f"(?P<{name}>{body}){re.escape(literal)}"
    return re.compile(pattern + r"\s*$")


class _Spreader:
    """Place requests logged within the same whole second evenly inside it."""

    def __init__(self, emit: Callable[[float, float, float], None]) -> None:
        self.emit = emit  # emit(time, service, shift): the request at ``time - shift``
        self.second: float | None = None
        self.pending: list[tuple[float, float]] = []

    def add(self, second: float, service: float, shift: float) -> None:
        if second != self.second:
            self.flush()
            self.second = second
        self.pending.append((service, shift))

    def flush(self) -> None:
        k = len(self.pending)
        assert self.second is not None or k == 0
        for i, (service, shift) in enumerate(self.pending):
            self.emit(self.second + (i + 0.5) / k, service, shift)  # type: ignore[operator]
        self.pending = []


_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}


def _clf_time(text: str) -> tuple[float, bool]:
    """``01/Dec/2026:18:00:00 +0000`` or HAProxy's ``01/Dec/2026:18:00:00.123`` (UTC)."""
    day, month, rest = text.split("/", 2)
    year, hh, mm, ss = rest[:4], rest[5:7], rest[8:10], rest[11:].split(" ")[0]
    zone = rest[11:].split(" ")[1] if " " in rest[11:] else "+0000"
    stamp = (
        datetime.fromisoformat(f"{year}-{_MONTHS[month]:02d}-{int(day):02d}T{hh}:{mm}:{ss}{zone}")
        if month in _MONTHS
        else None
    )
    if stamp is None:
        raise ValueError(text)
    return stamp.timestamp(), "." in ss


def iso_time(text: str) -> tuple[float, bool]:
    """Return an ISO 8601 time in seconds since the epoch, and whether it has a fraction.

    A time without a zone is taken as UTC.
    """
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        from datetime import UTC

        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp(), "." in text


def _seconds(where: str, text: str, what: str, scale: float = 1.0) -> float | None:
    """Read a duration in seconds (``-``: None; NGINX retries ``a, b : c``: summed)."""
    text = text.strip().strip('"')
    if text in ("", "-"):
        return None
    try:
        value = sum(float(p) for p in re.split(r"[,:]\s*", text)) * scale
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise TraceError(where, f"{what} must be a number or '-', got {shown!r}") from None
    if not (math.isfinite(value) and abs(value) <= MAX_VALUE):
        raise TraceError(
            where,
            f"{what} must be a finite duration of at most {MAX_VALUE:g} s "
            f"({len(text)} characters given)",
        )
    return value


class _Collector:
    """Arrays of kept requests, and the counts a summary reports."""

    def __init__(self) -> None:
        self.arrivals = array("d")
        self.services = array("d")
        self.records = 0
        self.found = 0
        self.files: list[str] = []
        self.spreader = _Spreader(self.keep)
        self.spread = False

    def keep(self, time: float, service: float, shift: float) -> None:
        self.arrivals.append(time - shift)
        self.services.append(service)

    def add(self, stamp: float, exact: bool, service: float | None, shift: float) -> None:
        self.found += 1
        if service is None or service <= 0:
            return
        if exact:
            self.spreader.flush()
            self.keep(stamp, service, shift)
        else:
            self.spread = True
            self.spreader.add(stamp, service, shift)

    def finish(self, fmt: str, notes: dict[str, str]) -> TraceLog:
        self.spreader.flush()
        if self.spread:
            notes["timestamps"] = "whole seconds, spread evenly within each second"
        a = self.arrivals
        first, last = (min(a), max(a)) if a else (0.0, 0.0)
        return finish_log(
            self.arrivals,
            self.services,
            fmt,
            self.files,
            self.records,
            self.found,
            0,
            first,
            last,
            notes,
        )


def _parse_time(where: str, name: str, text: str) -> tuple[float, bool]:
    try:
        if name == "msec":
            return float(text), True
        if name == "time_local":
            return _clf_time(text)
        return iso_time(text)
    except (ValueError, IndexError, KeyError):
        raise TraceError(where, f"${name} is not a time: {text!r}") from None


def _nginx_line(c: _Collector, where: str, m: re.Match[str], clock: str, service: str) -> None:
    fields = m.groupdict()
    stamp, exact = _parse_time(where, clock, fields[clock])
    total = _seconds(where, fields.get("request_time", "-"), "$request_time")
    up = _seconds(where, fields.get("upstream_response_time", "-"), "$upstream_response_time")
    svc = up if service == "upstream" else total
    c.add(stamp, exact, svc, total if total is not None else (svc or 0.0))


def _envoy_line(c: _Collector, where: str, m: re.Match[str], service: str) -> None:
    stamp, exact = _parse_time(where, "time_iso8601", m["start"])
    key = "upstream" if service == "upstream" else "duration"
    c.add(stamp, exact, _seconds(where, m[key], key, 1e-3), 0.0)


def _envoy_json_line(c: _Collector, where: str, text: str, service: str) -> None:
    try:
        obj = {str(k).lower(): v for k, v in json.loads(text).items()}
    except (ValueError, AttributeError):
        raise TraceError(where, "not a JSON object") from None
    except RecursionError:
        raise TraceError(where, "not a JSON object of a log line (nested too deep)") from None
    start = obj.get("start_time")
    if start is None:
        raise TraceError(where, "no start_time key")
    if isinstance(start, int | float) or str(start).replace(".", "", 1).isdigit():
        stamp, exact = _seconds(where, str(start), "start_time") or 0.0, True
    else:
        stamp, exact = _parse_time(where, "time_iso8601", str(start))
    keys = (
        ("upstream_service_time", "x-envoy-upstream-service-time")
        if service == "upstream"
        else ("duration",)
    )
    value = next((obj[k] for k in keys if k in obj), None)
    c.add(
        stamp, exact, _seconds(where, str(value if value is not None else "-"), keys[0], 1e-3), 0.0
    )


def _haproxy_line(c: _Collector, where: str, m: re.Match[str], service: str) -> None:
    stamp, exact = _parse_time(where, "time_local", m["date"])
    ms = _seconds(
        where,
        m["Tr"] if service == "upstream" else m["Ta"],
        "Tr" if service == "upstream" else "Ta",
        1e-3,
    )
    c.add(stamp, exact, ms if ms is not None and ms > 0 else None, 0.0)


def read_access_log(
    paths: str | Path | Sequence[str | Path],
    fmt: str,
    *,
    log_format: str | None = None,
    service: str = "upstream",
) -> TraceLog:
    """Read an access log as a workload (see the module notes for each format's rules).

    Parameters
    ----------
    paths : path or sequence of paths
        Files (gzip or plain text), read in order as one log.
    fmt : str
        ``nginx``, ``envoy``, ``envoy-json`` or ``haproxy``.
    log_format : str, optional
        NGINX only: the ``log_format`` string the log was written with.
    service : str
        ``upstream`` (the backend's time) or ``total`` (the whole request at the proxy).
    """
    if fmt not in ACCESS_FORMATS:
        raise ParameterError("trace_format", fmt, "one of " + ", ".join(ACCESS_FORMATS))
    if service not in SERVICE_FIELDS:
        raise ParameterError("log_service", service, "upstream or total")
    if log_format is not None and fmt != "nginx":
        raise ParameterError("log_format", log_format, "given only with the nginx format")
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if not files:
        raise ParameterError("trace", paths, "at least one file")
    c = _Collector()
    pattern, clock = None, ""
    if fmt == "nginx":
        pattern = nginx_regex(log_format or NGINX_DEFAULT_FORMAT)
        names = set(pattern.groupindex)
        clock = next((t for t in _NGINX_TIMES if t in names), "")
        need = "upstream_response_time" if service == "upstream" else "request_time"
        if not clock or need not in names:
            raise ParameterError(
                "log_format",
                log_format or NGINX_DEFAULT_FORMAT,
                f"a format with a time ($msec, $time_iso8601 or $time_local) and ${need}",
            )
    regex = {"envoy": _ENVOY, "haproxy": _HAPROXY}.get(fmt, pattern)
    for name, lineno, raw in log_lines(files):
        if not c.files or c.files[-1] != name:
            c.files.append(name)
        text = raw.strip()
        if not text:
            continue
        where = f"{name}:{lineno}"
        c.records += 1
        if fmt == "envoy-json":
            _envoy_json_line(c, where, text, service)
            continue
        assert regex is not None
        m = regex.search(text) if fmt == "haproxy" else regex.match(text)
        if m is None:
            raise TraceError(where, f"line does not match the {fmt} format")
        if fmt == "nginx":
            _nginx_line(c, where, m, clock, service)
        elif fmt == "envoy":
            _envoy_line(c, where, m, service)
        else:
            _haproxy_line(c, where, m, service)
    notes = {"service": service}
    if fmt == "nginx":
        notes["log_format"] = log_format or NGINX_DEFAULT_FORMAT
    return c.finish(fmt, notes)


def detect_access_format(line: str) -> str | None:
    """Name the access-log format a first line is written in, or None."""
    text = line.strip()
    if text.startswith("{"):
        try:
            return "envoy-json" if "start_time" in {k.lower() for k in json.loads(text)} else None
        except (ValueError, AttributeError, RecursionError):
            return None
    if _HAPROXY.search(text):
        return "haproxy"
    if _ENVOY.match(text):
        return "envoy"
    if nginx_regex(NGINX_DEFAULT_FORMAT).match(text):
        return "nginx"
    return None
