"""Which upstream served each request, and when: access logs read for ``check-lb``.

A conformance check needs, per request, the time the proxy sent it, the time it ended and
the upstream that served it; the workload readers (:mod:`.accesslogs`) keep only times.

* ``haproxy``: ``option httplog`` lines (the default HTTP log): the accept date in brackets
  (milliseconds), ``backend/server``, and the timers ``TR/Tw/Tc/Tr/Ta`` (ms).  The request is
  outstanding at its server from ``accept + TR + Tw`` (after the request was read and the
  queue left) to ``accept + Ta``.
* ``nginx``: the user's ``log_format`` (``--log-format``) must hold ``$msec`` (the time the
  line is written, to the millisecond), ``$request_time`` and ``$upstream_addr``
  (:data:`NGINX_UPSTREAM_FORMAT` is one such): the request is outstanding from ``$msec -
  $request_time`` to ``$msec``.  A request tried on several upstreams (``"a, b"``) counts
  for the last, which served it.
* ``envoy``: Envoy's default text format (``[%START_TIME%] "..." %RESPONSE_CODE%
  %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ... "%UPSTREAM_HOST%"``, the
  host the last quoted field); ``envoy-json``: one JSON object a line with ``start_time``
  (ISO 8601 or seconds since the epoch), ``duration`` (ms) and ``upstream_host``, keys in
  any letter case.  The request is outstanding from ``START_TIME`` to ``START_TIME +
  DURATION``.

The three write times in milliseconds (NGINX: as many digits as ``$msec`` has), so a
request starts up to one resolution and ends up to two after its logged times (a start and
a duration truncated; NGINX's cached clock lags by less than a millisecond).  Arrivals that
cannot be ordered against another request's start or end are left out of the test
(``resolution``): counting them anyway made live NGINX ``least_conn`` and HAProxy
``leastconn`` logs look unlike least-request (the least-loaded upstream chosen for 93-96%
of requests instead of all; with the ambiguous arrivals left out, 99.6-100%).

Requests without an upstream (``-``, ``<NOSRV>``, aborted with a negative timer) are left
out and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cloudsched.dispatch.workload.accesslogs import iso_time, nginx_regex
from cloudsched.dispatch.workload.logfiles import TraceError, check_log_files, log_lines
from cloudsched.errors import ParameterError, check_real

__all__ = [
    "NGINX_UPSTREAM_FORMAT",
    "UPSTREAM_FORMATS",
    "UpstreamLog",
    "detect_upstream_format",
    "read_upstream_log",
]

UPSTREAM_FORMATS = ("haproxy", "nginx", "envoy", "envoy-json")
#: An NGINX ``log_format`` with what the check needs (the lab's proxies write it).
NGINX_UPSTREAM_FORMAT = "$msec $request_time $upstream_addr $status"

_HAPROXY = re.compile(
    r"\[(?P<date>\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\] (?P<frontend>\S+) "
    r"(?P<backend>[^/\s]+)/(?P<server>\S+) "
    r"(?P<TR>-?\d+)/(?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tr>-?\d+)/\+?(?P<Ta>-?\d+) "
)
_ENVOY = re.compile(
    r'^\[(?P<start>[^\]]+)\] "[^"]*" \S+ \S+ \S+ \S+ (?P<duration>\S+) .*"(?P<host>[^"]*)"\s*$'
)
#: How long after its logged end a request may still count, per format (see the notes).
END_SLACK = {"haproxy": 0.0, "nginx": 1e-3, "envoy": 1e-3, "envoy-json": 1e-3}


@dataclass(frozen=True)
class UpstreamLog:
    """Requests in log order: sent and end times (s), the upstream's index, its names.

    ``end_slack`` (s): how long a request may still count at its upstream after its logged
    end, for a log read with ``resolution`` 0 (NGINX logs ``$msec`` from its cached clock,
    read once per turn of its event loop: 1 ms; Envoy's truncated start and duration: 1 ms;
    HAProxy: 0).  With the log's own resolution no arrival tested has an end that near.

    ``resolution`` (s): the log's times are truncated to it, so a request may start up to
    one ``resolution`` and end up to two after its logged times; ``check-lb`` then tests
    only the arrivals with no other start within one resolution and no end within (two
    before, one after), whose counts the log fixes.  0: every arrival is tested, with
    ``end_slack`` (for a log whose times are exact).
    """

    sent: np.ndarray
    end: np.ndarray
    upstream: np.ndarray
    names: tuple[str, ...]
    dropped: int
    source: str
    end_slack: float = 0.0
    resolution: float = 0.0


def _haproxy_times(m: re.Match[str], where: str) -> tuple[float, float] | None:
    from datetime import datetime

    try:
        stamp = datetime.strptime(m["date"], "%d/%b/%Y:%H:%M:%S.%f").timestamp()
    except ValueError:
        try:
            stamp = datetime.strptime(m["date"], "%d/%b/%Y:%H:%M:%S").timestamp()
        except ValueError:
            raise TraceError(where, f"bad date {m['date']!r}") from None
    tr, tw, ta = int(m["TR"]), int(m["Tw"]), int(m["Ta"])
    if min(tr, tw, ta) < 0 or m["server"] in ("<NOSRV>", "-"):
        return None
    return stamp + (tr + tw) / 1e3, stamp + ta / 1e3


def _nginx_times(m: re.Match[str], where: str) -> tuple[float, float, str, float] | None:
    """Sent and end times, the upstream and the clock's step (from ``$msec``'s digits)."""
    f = m.groupdict()
    addr = f["upstream_addr"].split(",")[-1].strip().strip(":").strip()
    if addr in ("", "-"):
        return None
    try:
        end, total = float(f["msec"]), float(f["request_time"])
    except ValueError:
        raise TraceError(
            where, f"bad $msec or $request_time ({f['msec']}, {f['request_time']})"
        ) from None
    if not (end > 0 and total >= 0):
        raise TraceError(where, "$msec must be positive and $request_time not negative")
    digits = max(len(f[k].strip().partition(".")[2]) for k in ("msec", "request_time"))
    return end - total, end, addr, 10.0 ** -min(digits, 9)


def _envoy_times(
    start: str, duration: str, host: str, where: str
) -> tuple[float, float, str, float] | None:
    """Sent and end times, the host and the clock step (1 ms) of one Envoy request.

    None: no upstream served it.
    """
    host = host.strip()
    if host in ("", "-") or duration.strip() in ("", "-"):
        return None
    text = start.strip()
    try:
        if text.replace(".", "", 1).isdigit():  # %START_TIME(%s.%3f)%
            stamp, fraction = float(text), "." in text
        else:
            stamp, fraction = iso_time(text)
    except ValueError:
        raise TraceError(where, f"START_TIME is not a time: {text[:40]!r}") from None
    if not fraction:
        raise TraceError(
            where,
            "START_TIME has whole seconds: check-lb needs milliseconds (Envoy's default "
            "%START_TIME%)",
        )
    try:
        ms = float(duration)
    except ValueError:
        raise TraceError(where, f"DURATION must be milliseconds, got {duration[:40]!r}") from None
    if not (0 <= ms <= 1e9):
        raise TraceError(where, f"DURATION must be in [0, 1e9] ms, got {ms:g}")
    return stamp, stamp + ms / 1e3, host, 1e-3


def _envoy_json(text: str, where: str) -> tuple[float, float, str, float] | None:
    try:
        obj = {str(k).lower(): v for k, v in json.loads(text).items()}
    except (ValueError, AttributeError, RecursionError):
        raise TraceError(where, "not a JSON object") from None
    need_keys = ("start_time", "duration", "upstream_host")
    need = [key for key in need_keys if key not in obj]
    if need:
        raise TraceError(where, "a JSON log line needs the keys " + ", ".join(need))
    start, duration, host = ("-" if obj[k] is None else str(obj[k]) for k in need_keys)
    return _envoy_times(start, duration, host, where)


def _parse(fmt: str, pattern: re.Pattern[str], text: str, where: str) -> object:
    """Return ``(sent, end, upstream, clock step)`` of a line.

    None: a request no upstream served; False: the line is not in the format.
    """
    if fmt == "envoy-json":
        return _envoy_json(text, where) if text.strip() else False
    m = pattern.search(text) if fmt == "haproxy" else pattern.match(text)
    if m is None:
        return False
    if fmt == "haproxy":
        times = _haproxy_times(m, where)
        return None if times is None else (*times, f"{m['backend']}/{m['server']}", 1e-3)
    if fmt == "envoy":
        return _envoy_times(m["start"], m["duration"], m["host"], where)
    return _nginx_times(m, where)


def read_upstream_log(
    paths: str | Path | Sequence[str | Path],
    fmt: str,
    *,
    log_format: str | None = None,
    end_slack: float | None = None,
    resolution: float | None = None,
) -> UpstreamLog:
    """Read who served each request and when (see the module notes for each format).

    ``end_slack`` and ``resolution`` override the format's (:class:`UpstreamLog`): 0 and 0
    for a log whose times are exact.
    """
    if fmt not in UPSTREAM_FORMATS:
        raise ParameterError("format", fmt, " or ".join(UPSTREAM_FORMATS))
    if end_slack is not None:
        end_slack = check_real("end_slack", end_slack, low=0.0, high=10.0)
    if resolution is not None:
        resolution = check_real("resolution", resolution, low=0.0, high=10.0)
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    pattern = {"haproxy": _HAPROXY, "envoy": _ENVOY}.get(fmt, _HAPROXY)
    if fmt == "nginx":
        log_format = log_format or NGINX_UPSTREAM_FORMAT
        need = [v for v in ("msec", "request_time", "upstream_addr") if f"${v}" not in log_format]
        if need:
            raise ParameterError(
                "log_format", log_format, "an NGINX format with " + ", ".join(f"${v}" for v in need)
            )
        pattern = nginx_regex(log_format)
    check_log_files(files)  # regular files whose rows fit in memory, before reading any
    sent: list[float] = []
    end: list[float] = []
    ups: list[int] = []
    names: dict[str, int] = {}
    dropped = 0
    step = 0.0  # the coarsest clock step of the lines read
    for file, line_no, text in log_lines(files):
        got = _parse(fmt, pattern, text, f"{file}:{line_no}")
        if got is False:
            continue
        if got is None:
            dropped += 1
            continue
        assert isinstance(got, tuple)
        step = max(step, got[3])
        sent.append(got[0])
        end.append(got[1])
        ups.append(names.setdefault(got[2], len(names)))
    if len(sent) < 2:
        shown = f"nginx format {log_format!r}" if fmt == "nginx" else f"{fmt} format"
        raise TraceError(
            ", ".join(map(str, files)),
            f"fewer than two requests with an upstream in the {shown}"
            + (" (give the log's --log-format)" if fmt == "nginx" else ""),
        )
    return UpstreamLog(
        np.array(sent),
        np.array(end),
        np.array(ups, dtype=np.int64),
        tuple(names),
        dropped,
        ", ".join(map(str, files)),
        END_SLACK[fmt] if end_slack is None else end_slack,
        step if resolution is None else resolution,
    )


def detect_upstream_format(paths: str | Path | Sequence[str | Path]) -> str:
    """Name the format of a log from its first non-empty line (``--trace-format`` unset)."""
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    check_log_files(files)
    for _, _, text in log_lines(files[:1]):
        if not text.strip():
            continue
        if text.lstrip().startswith("{"):
            return "envoy-json"
        for fmt, pattern in (("haproxy", _HAPROXY), ("envoy", _ENVOY)):
            if (pattern.search(text) if fmt == "haproxy" else pattern.match(text)) is not None:
                return fmt
        if nginx_regex(NGINX_UPSTREAM_FORMAT).match(text) is not None:
            return "nginx"
        break
    raise TraceError(
        str(files[0]),
        "its first line is in none of the formats check-lb reads (haproxy, nginx, envoy, "
        "envoy-json): name it with --trace-format, and an NGINX log_format with --log-format",
    )
