"""Readers of HTTP access logs as workloads: NGINX, Envoy (text and JSON) and HAProxy.

How a line of each format is read is :mod:`.formats` (the one table of formats, which
``check-lb``'s reader reads too); here, what a workload takes from it.

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

from array import array
from collections.abc import Callable, Sequence
from pathlib import Path

from cloudsched.dispatch.workload.formats import (
    LOG_FORMATS,
    NGINX_DEFAULT_FORMAT,
    line_pattern,
    read_line,
)
from cloudsched.dispatch.workload.logfiles import TraceError, log_lines
from cloudsched.dispatch.workload.traces import TraceLog, finish_log
from cloudsched.errors import ParameterError

__all__ = ["ACCESS_FORMATS", "read_access_log"]

ACCESS_FORMATS = tuple(LOG_FORMATS)
SERVICE_FIELDS = ("upstream", "total")


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
    pattern, clock = line_pattern(fmt, log_format or NGINX_DEFAULT_FORMAT)
    if fmt == "nginx":
        assert pattern is not None
        need = "upstream_response_time" if service == "upstream" else "request_time"
        if not clock or need not in pattern.groupindex:
            raise ParameterError(
                "log_format",
                log_format or NGINX_DEFAULT_FORMAT,
                f"a format with a time ($msec, $time_iso8601 or $time_local) and ${need}",
            )
    at_end = LOG_FORMATS[fmt].stamp == "end"  # NGINX: a line is written when a request ends
    for name, lineno, raw in log_lines(files):
        if not c.files or c.files[-1] != name:
            c.files.append(name)
        text = raw.strip()
        if not text:
            continue
        where = f"{name}:{lineno}"
        c.records += 1
        req = read_line(fmt, pattern, clock, text, where)
        if req is None or "upstream_time" in req.missing:
            raise TraceError(where, f"line does not match the {fmt} format")
        if req.time is None:
            raise TraceError(where, "no start_time key")
        unit = 1.0 / req.per_second
        value = req.upstream_time if service == "upstream" else req.total
        svc = None if value is None else value * unit
        shift = 0.0
        if at_end:  # the arrival is the time less the request's total
            shift = req.total * unit if req.total is not None else (svc or 0.0)
        c.add(req.time, req.exact, svc, shift)
    notes = {"service": service}
    if fmt == "nginx":
        notes["log_format"] = log_format or NGINX_DEFAULT_FORMAT
    return c.finish(fmt, notes)
