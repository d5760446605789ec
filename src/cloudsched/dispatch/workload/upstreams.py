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

Requests without an upstream (``-``, ``<NOSRV>``, aborted with a negative timer) are left
out and counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cloudsched.dispatch.workload.accesslogs import nginx_regex
from cloudsched.dispatch.workload.logfiles import TraceError, check_log_files, log_lines
from cloudsched.errors import ParameterError, check_real

__all__ = ["NGINX_UPSTREAM_FORMAT", "UPSTREAM_FORMATS", "UpstreamLog", "read_upstream_log"]

UPSTREAM_FORMATS = ("haproxy", "nginx")
#: An NGINX ``log_format`` with what the check needs (the lab's proxies write it).
NGINX_UPSTREAM_FORMAT = "$msec $request_time $upstream_addr $status"

_HAPROXY = re.compile(
    r"\[(?P<date>\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\] (?P<frontend>\S+) "
    r"(?P<backend>[^/\s]+)/(?P<server>\S+) "
    r"(?P<TR>-?\d+)/(?P<Tw>-?\d+)/(?P<Tc>-?\d+)/(?P<Tr>-?\d+)/\+?(?P<Ta>-?\d+) "
)


@dataclass(frozen=True)
class UpstreamLog:
    """Requests in log order: sent and end times (s), the upstream's index, its names.

    ``end_slack`` (s) is how long a request may still have counted at its upstream after
    its logged end: NGINX logs ``$msec`` from its cached clock, read once per turn of its
    event loop, so a request ends up to a turn after the time logged (1 ms here: CHOICE,
    measured on the lab's NGINX, where it makes plain ``random`` and ``random two
    least_conn`` conform and anything less does not); HAProxy times each request itself
    (0).
    """

    sent: np.ndarray
    end: np.ndarray
    upstream: np.ndarray
    names: tuple[str, ...]
    dropped: int
    source: str
    end_slack: float = 0.0


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


def _nginx_times(m: re.Match[str], where: str) -> tuple[float, float, str] | None:
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
    return end - total, end, addr


def read_upstream_log(
    paths: str | Path | Sequence[str | Path],
    fmt: str,
    *,
    log_format: str | None = None,
    end_slack: float | None = None,
) -> UpstreamLog:
    """Read who served each request and when (see the module notes for each format).

    ``end_slack`` overrides the format's (:class:`UpstreamLog`): 0 for a log whose end
    times are exact.
    """
    if fmt not in UPSTREAM_FORMATS:
        raise ParameterError("format", fmt, " or ".join(UPSTREAM_FORMATS))
    if end_slack is not None:
        end_slack = check_real("end_slack", end_slack, low=0.0, high=10.0)
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    pattern = _HAPROXY
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
    for file, line_no, text in log_lines(files):
        m = pattern.search(text) if fmt == "haproxy" else pattern.match(text)
        if m is None:
            continue
        where = f"{file}:{line_no}"
        if fmt == "haproxy":
            times = _haproxy_times(m, where)
            got = None if times is None else (*times, f"{m['backend']}/{m['server']}")
        else:
            got = _nginx_times(m, where)
        if got is None:
            dropped += 1
            continue
        sent.append(got[0])
        end.append(got[1])
        ups.append(names.setdefault(got[2], len(names)))
    if len(sent) < 2:
        raise TraceError(
            ", ".join(map(str, files)),
            f"fewer than two requests with an upstream in the {fmt} format",
        )
    return UpstreamLog(
        np.array(sent),
        np.array(end),
        np.array(ups, dtype=np.int64),
        tuple(names),
        dropped,
        ", ".join(map(str, files)),
        (1e-3 if fmt == "nginx" else 0.0) if end_slack is None else end_slack,
    )
