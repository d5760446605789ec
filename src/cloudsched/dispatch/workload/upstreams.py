"""Which upstream served each request, and when: access logs read for ``check-lb``.

A conformance check needs, per request, the time the proxy sent it, the time it ended and
the upstream that served it; the workload readers (:mod:`.accesslogs`) keep only times.  How
a line of each format is read is :mod:`.formats` (the one table both read); here, what the
check takes from it.

* ``haproxy``: ``option httplog`` lines (the default HTTP log): the accept date in brackets
  (milliseconds), ``backend/server``, and the timers ``TR/Tw/Tc/Tr/Ta`` (ms).  The request is
  outstanding at its server from ``accept + TR + Tw`` (after the request was read and the
  queue left) to ``accept + Ta``.
* ``nginx``: the user's ``log_format`` (``--log-format``) must hold ``$msec`` (the time the
  line is written, to the millisecond), ``$request_time`` and ``$upstream_addr``
  (:data:`NGINX_UPSTREAM_FORMAT` is one such): the request is outstanding from ``$msec -
  $request_time`` for its ``$upstream_response_time``.  NGINX counts a connection to a peer
  from choosing it, when that time starts, until the upstream request is finalised, when
  it ends (``ngx_http_upstream_connect`` sets ``u->start_time`` before
  ``ngx_event_connect_peer``; ``ngx_http_upstream_finalize_request`` takes
  ``response_time`` and then calls ``u->peer.free``, src/http/ngx_http_upstream.c), while
  ``$msec`` comes after the response reached the client: without
  ``$upstream_response_time`` the request counts until ``$msec`` and the note says the
  times are the client's.  A request tried on several upstreams (``"a, b"``, times ``"x,
  y"``) counts for the last, which served it, from the end of the tries before it.
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

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cloudsched.dispatch.workload.formats import (
    LOG_FORMATS,
    NGINX_UPSTREAM_FORMAT,
    Request,
    detect_line,
    line_pattern,
    read_line,
)
from cloudsched.dispatch.workload.logfiles import TraceError, check_log_files, log_lines
from cloudsched.dispatch.workload.upstream_fast import Batch, Rows, batches, fast_pattern, read_fast
from cloudsched.dispatch.workload.upstream_json import read_json_fast
from cloudsched.errors import ParameterError, check_real

__all__ = [
    "NGINX_UPSTREAM_FORMAT",
    "UPSTREAM_FORMATS",
    "UpstreamLog",
    "detect_upstream_format",
    "read_upstream_log",
]

#: The formats that name each request's upstream (the table's ``upstream`` field).
UPSTREAM_FORMATS = tuple(f for f, spec in LOG_FORMATS.items() if "upstream" in dict(spec.fields))
#: A request held longer than this (s) is absurd: left out of the log and counted.
MAX_REQUEST = 86_400.0
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
    client_times: str = ""  # how the times include the client's (no upstream's own time)
    unparsed: int = 0  # lines not in the format, skipped
    absurd: int = 0  # requests longer than MAX_REQUEST, left out
    worker: np.ndarray | None = None  # each request's worker process (NGINX $pid), coded
    workers: tuple[str, ...] = ()  # their names (pids)
    file: np.ndarray | None = None  # each request's file (index into files)
    files: tuple[str, ...] = ()  # the files read, in order
    header: np.ndarray | None = None  # NGINX $upstream_header_time (s; NaN: none); None


def _timed(fmt: str, req: Request | None, where: str) -> object:
    """Return ``(sent, end, upstream, clock step, upstream's own times, worker, header)``.

    ``header``: NGINX's time from the send to the response header (s; NaN: not logged).

    None: a request no upstream served; False: the line is not in the format.
    """
    got = _times(fmt, req, where)
    if not isinstance(got, tuple):
        return got
    assert req is not None
    header = math.nan if req.upstream_header is None else req.upstream_header
    return (*got[:4], len(got) > 4, req.worker, header)


def _times(fmt: str, req: Request | None, where: str) -> object:
    """Return ``(sent, end, upstream, clock step)`` of a line's request (see :func:`_timed`).

    None: a request no upstream served; False: the line is not in the format.
    """
    if req is None:
        return False
    if fmt == "envoy-json" and req.missing:
        if "upstream_host" in req.missing:
            raise TraceError(
                where,
                "this Envoy JSON log records no upstream_host: check-lb needs the upstream "
                "of each request (add upstream_host, %UPSTREAM_HOST%, to the access log's "
                "json_format)"
                + (
                    "; it also lacks " + ", ".join(m for m in req.missing if m != "upstream_host")
                    if len(req.missing) > 1
                    else ""
                ),
            )
        raise TraceError(where, "a JSON log line needs the keys " + ", ".join(req.missing))
    if "upstream" in req.missing:  # no backend/server, no quoted host: not such a line
        return False
    if req.upstream is None or req.time is None:
        return None
    per = req.per_second
    if fmt == "haproxy":
        if req.queued is None or req.total is None or req.total < 0:  # aborted: -1 timers
            return None
        return req.time + req.queued / per, req.time + req.total / per, req.upstream, req.step
    if fmt == "nginx":
        if not (req.time > 0 and req.total is not None and req.total >= 0):
            raise TraceError(where, "$msec must be positive and $request_time not negative")
        start = req.time - req.total
        if req.upstream_last is not None:  # the upstream's own time: from its connect
            start += req.upstream_before
            return start, start + req.upstream_last, req.upstream, req.step
        return start, req.time, req.upstream, req.step
    if req.total is None:
        return None
    if req.step >= 1.0:
        raise TraceError(
            where,
            "START_TIME has whole seconds: check-lb needs milliseconds (Envoy's default "
            "%START_TIME%)",
        )
    if not (0 <= req.total <= 1e9):
        raise TraceError(where, f"DURATION must be in [0, 1e9] ms, got {req.total:g}")
    if req.upstream_last is not None:  # the upstream stream's own begin and end
        if not (req.upstream_before >= 0 and 0 <= req.upstream_last <= 1e9):
            raise TraceError(where, "us_tx_beg and us_rx_end must be 0 <= us_tx_beg <= us_rx_end")
        start = req.time + req.upstream_before / per
        return start, start + req.upstream_last / per, req.upstream, req.step, True
    return req.time, req.time + req.total / per, req.upstream, req.step


def read_upstream_log(
    paths: str | Path | Sequence[str | Path],
    fmt: str,
    *,
    log_format: str | None = None,
    end_slack: float | None = None,
    resolution: float | None = None,
    fast: bool = True,
    progress: Callable[[float], None] | None = None,
) -> UpstreamLog:
    """Read who served each request and when (see the module notes for each format).

    ``end_slack`` and ``resolution`` override the format's (:class:`UpstreamLog`): 0 and 0
    for a log whose times are exact.  ``fast``: plain lines a batch at a time
    (:mod:`.upstream_fast`; False: every line by the per-line reader, the reference).
    ``progress``: called with the share of the files' text read, every batch of lines.
    """
    if fmt not in UPSTREAM_FORMATS:
        raise ParameterError("format", fmt, " or ".join(UPSTREAM_FORMATS))
    if end_slack is not None:
        end_slack = check_real("end_slack", end_slack, low=0.0, high=10.0)
    if resolution is not None:
        resolution = check_real("resolution", resolution, low=0.0, high=10.0)
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if fmt == "nginx":
        if log_format is None:
            _no_upstream(files)
        log_format = log_format or _nginx_format(files)
        need = [v for v in ("msec", "request_time", "upstream_addr") if f"${v}" not in log_format]
        if need:
            raise ParameterError(
                "log_format", log_format, "an NGINX format with " + ", ".join(f"${v}" for v in need)
            )
    pattern, clock = line_pattern(fmt, log_format)
    check_log_files(files)  # regular files whose rows fit in memory, before reading any
    plain = None
    if fast and (fmt != "nginx" or clock == "msec"):
        plain = fast_pattern(fmt, log_format)
    rows = Rows()
    index = {str(f): i for i, f in enumerate(files)}
    for batch in batches(files, progress):
        texts = [text for _, _, text in batch]
        got = read_fast(texts, fmt, plain) if plain else None
        if fast and fmt == "envoy-json":
            got = read_json_fast(texts)
        codes = np.array([index[file] for file, _, _ in batch], dtype=np.int64)
        out = Batch(len(batch), got, codes)
        for i in np.flatnonzero(~out.keep).tolist():
            file, line_no, text = batch[i]
            if text.strip():
                where = f"{file}:{line_no}"
                out.add(i, _timed(fmt, read_line(fmt, pattern, clock, text, where), where), where)
        rows.extend(out, MAX_REQUEST)
    sent, end, ups, names = rows.sent, rows.end, rows.ups, rows.names
    dropped, unparsed, absurd, step = rows.dropped, rows.unparsed, rows.absurd, rows.step
    first_unparsed = rows.first_unparsed
    if unparsed > len(sent) + dropped + absurd:
        raise TraceError(
            ", ".join(map(str, files)),
            f"{unparsed} of {unparsed + len(sent) + dropped + absurd} lines are not in the "
            f"{_shown(fmt, log_format)} (the first: {first_unparsed}); name the format with "
            "--trace-format" + (" and --log-format" if fmt == "nginx" else ""),
        )
    if len(sent) < 2:
        raise TraceError(
            ", ".join(map(str, files)),
            f"fewer than two requests with an upstream in the {_shown(fmt, log_format)}"
            + (" (give the log's --log-format)" if fmt == "nginx" else ""),
        )
    return UpstreamLog(
        sent,
        end,
        ups,
        tuple(names),
        dropped,
        ", ".join(map(str, files)),
        END_SLACK[fmt] if end_slack is None else end_slack,
        step if resolution is None else resolution,
        client_times(fmt, log_format, rows.upstream_times),
        unparsed,
        absurd,
        rows.worker,
        tuple(rows.workers) if rows.worker is not None else (),
        rows.files,
        tuple(map(str, files)),
        rows.header,
    )


def client_times(fmt: str, log_format: str | None, upstream_times: int) -> str:
    """Say how the log's times differ from the upstream's own ("": they do not)."""
    if fmt == "nginx" and "$upstream_response_time" not in (log_format or ""):
        return (
            "$request_time includes sending the response to the client after the upstream is "
            "free; add $upstream_response_time to the log_format"
        )
    if fmt.startswith("envoy") and not upstream_times:
        return (
            "DURATION runs until the response reached the client, after the upstream stream "
            "closed; log %COMMON_DURATION(DS_RX_BEG:US_TX_BEG:ms)% and "
            "%COMMON_DURATION(DS_RX_BEG:US_RX_END:ms)% as us_tx_beg and us_rx_end in a JSON "
            "format"
        )
    return ""


def _shown(fmt: str, log_format: str | None) -> str:
    return f"nginx format {log_format!r}" if fmt == "nginx" else f"{fmt} format"


def _nginx_format(files: list[str | Path]) -> str:
    """Return the log_format of an NGINX log read without one.

    The first line's, if it is one of the upstream formats recognised unasked, else
    :data:`NGINX_UPSTREAM_FORMAT`.
    """
    check_log_files(files)
    for _, _, text in log_lines(files[:1]):
        if text.strip():
            found = detect_line(text)
            if found is not None and found[1] is not None and "$upstream_addr" in found[1]:
                return found[1]
            break
    return NGINX_UPSTREAM_FORMAT


def _no_upstream(files: list[str | Path]) -> None:
    """Raise when the first line is in a format check-lb knows to record no upstream."""
    check_log_files(files)
    for _, _, text in log_lines(files[:1]):
        if not text.strip():
            continue
        found = detect_line(text)
        if found is not None and found[1] is not None and "$upstream_addr" not in found[1]:
            fmt, log_format = found
            raise TraceError(
                str(files[0]),
                f"its first line is {fmt} in the format {log_format!r}, which records no "
                "upstream ($upstream_addr): check-lb needs the upstream of each request; "
                "give --log-format if the log was written in another format",
            )
        return


def detect_upstream_format(paths: str | Path | Sequence[str | Path]) -> str:
    """Name the format of a log from its first non-empty line (``--trace-format`` unset)."""
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    check_log_files(files)
    for _, _, text in log_lines(files[:1]):
        if not text.strip():
            continue
        found = detect_line(text)
        if found is not None and found[0] in UPSTREAM_FORMATS:
            fmt, log_format = found
            if log_format is not None and "$upstream_addr" not in log_format:
                raise TraceError(
                    str(files[0]),
                    f"its first line is {fmt} in the format {log_format!r}, which records no "
                    "upstream ($upstream_addr): check-lb needs the upstream of each request; "
                    f"give --log-format if the log was written in another format",
                )
            return fmt
        break
    raise TraceError(
        str(files[0]),
        "its first line is in none of the formats check-lb reads ("
        + ", ".join(UPSTREAM_FORMATS)
        + "): name it with --trace-format, and an NGINX log_format with --log-format",
    )
