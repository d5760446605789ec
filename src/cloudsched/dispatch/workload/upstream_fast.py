"""Access logs read a batch of lines at a time, for ``check-lb`` on long logs.

A *plain* line is read by one compiled regular expression over the whole batch (Arrow's
RE2, through ``pyarrow.compute``), Arrow's number parsing (which rounds as Python's
``float`` does) and Arrow's date parsing; every other line is read by the per-line reader
(:func:`cloudsched.dispatch.workload.formats.read_line`), which gives it the same meaning
and the same errors.  Plain lines:

* ``nginx`` with ``$msec``: ``$msec``, ``$request_time`` and ``$upstream_response_time``
  plain decimal numbers, ``$msec`` positive, one upstream address without retries;
* ``envoy``: ``[YYYY-MM-DDTHH:MM:SS.mmmZ]`` (Envoy's default ``%START_TIME%``), a
  ``%DURATION%`` of at most 9 digits, an upstream host other than ``-``;
* ``haproxy``: an accept date with milliseconds, whole-number timers with ``Ta``, ``TR`` and
  ``Tw`` not negative, a server other than ``<NOSRV>`` and ``-``.

Each fast pattern is a sub-language of the per-line one: where it matches, both split the
line alike and compute the same times with the same floating-point operations (a test
reads logs both ways, line for line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FastRows", "fast_pattern", "read_fast"]

_NUMBER = r"\d{{1,12}}(?:\.(?P<{0}_frac>\d{{1,9}}))?"
_NUMERIC = ("msec", "request_time", "upstream_response_time")
_ENVOY = (
    r'^\[(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(?P<ms>\d{3})Z\] "[^"]*" \S+ \S+ \S+ \S+ '
    r'(?P<duration>\d{1,9}) \S+ .*"(?P<host>[^"]*)"\s*$'
)
_HAPROXY = (  # the earliest date, as the per-line reader's search finds (see _stamped)
    r"^(?P<pre>.*?)\[(?P<date>\d\d/[A-Z][a-z][a-z]/\d{4}:\d\d:\d\d:\d\d)\.(?P<ms>\d{3})\] \S+ "
    r"(?P<backend>[^/\s]*)/(?P<server>\S+) (?P<TR>\d{1,9})/(?P<Tw>\d{1,9})/-?\d+/-?\d+/"
    r"\+?(?P<Ta>\d{1,9}) "
)


def fast_pattern(fmt: str, log_format: str | None = None) -> str | None:
    """Return the RE2 pattern of the plain lines of ``fmt`` (NGINX: of ``log_format``).

    None: no fast path (Envoy JSON; NGINX without a ``$msec`` clock, or naming a variable
    twice): the per-line reader reads every line.
    """
    if fmt == "envoy":
        return _ENVOY
    if fmt == "haproxy":
        return _HAPROXY
    if fmt != "nginx" or log_format is None:
        return None
    parts = re.split(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", log_format)
    literals, names = parts[0::2], parts[1::2]
    if len(set(names)) != len(names) or not {"msec", "request_time", "upstream_addr"} <= set(names):
        return None
    pattern = "^" + re.escape(literals[0])
    for name, literal in zip(names, literals[1:], strict=True):
        stop = literal[:1]
        if name in _NUMERIC:
            body = _NUMBER.format(name)
        elif name == "upstream_addr":
            body = f"[^{re.escape(stop)},]+" if stop else "[^ ,]+"
        else:
            body = f"[^{re.escape(stop)}]*" if stop else ".*"
        pattern += f"(?P<{name}>{body}){re.escape(literal)}"
    return pattern + r"\s*$"


@dataclass(frozen=True)
class FastRows:
    """The plain lines of a batch (``ok``) and their requests (other rows: anything)."""

    ok: np.ndarray
    sent: np.ndarray
    end: np.ndarray
    step: np.ndarray
    upstream: list[str | None]


#: The clock step of a time with so many digits after the point (NGINX: at most 9).
_STEPS = np.array([10.0 ** -min(d, 9) for d in range(10)])


def read_fast(texts: list[str], fmt: str, pattern: str) -> FastRows:
    """Read the plain lines of ``texts`` (one batch) of ``fmt`` with ``pattern``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pc.utf8_rtrim_whitespace(pa.array(texts, type=pa.string()))
    m = pc.extract_regex(arr, pattern)
    ok = np.asarray(m.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if fmt == "nginx":
        return _nginx(m, ok)
    return _stamped(m, ok, fmt)


def _column(m: Any, name: str) -> Any:
    import pyarrow.compute as pc

    return pc.struct_field(m, name)


def _number(m: Any, name: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    return np.asarray(pc.cast(_column(m, name), pa.float64()).fill_null(0.0).to_numpy())


def _flag(values: Any) -> np.ndarray:
    return np.asarray(values.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def _nginx(m: Any, ok: np.ndarray) -> FastRows:
    """As ``upstreams._times`` reads an NGINX line: from ``$msec - $request_time``."""
    import pyarrow.compute as pc

    msec, total = _number(m, "msec"), _number(m, "request_time")
    addr = _column(m, "upstream_addr")
    ok &= ~_flag(pc.match_substring_regex(addr, "^:|:$|^-$"))  # the per-line reader's cases
    ok &= msec > 0
    start, done = msec - total, msec
    if "upstream_response_time" in [f.name for f in m.type]:
        start = start + 0.0  # no tries before the one that served it
        done = start + _number(m, "upstream_response_time")

    def frac(name: str) -> np.ndarray:
        return np.asarray(pc.utf8_length(_column(m, f"{name}_frac")).fill_null(0).to_numpy())

    digits = np.minimum(np.maximum(frac("msec"), frac("request_time")), 9)
    return FastRows(ok, start, done, _STEPS[digits], addr.to_pylist())


def _stamped(m: Any, ok: np.ndarray, fmt: str) -> FastRows:
    """Envoy's and HAProxy's lines: a date with milliseconds and times in milliseconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = "%Y-%m-%dT%H:%M:%S" if fmt == "envoy" else "%d/%b/%Y:%H:%M:%S"
    text = _column(m, "date")
    date = pc.strptime(text, format=layout, unit="s", error_is_null=True)
    ok &= np.asarray(date.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    # Arrow's strptime rolls an impossible day over (31 Nov: 1 Dec); the per-line reader
    # refuses it: a date is plain only when it writes back as it was read
    again = pc.strftime(date.fill_null(0), format=layout)
    ok &= _flag(pc.equal(again, text))
    seconds = np.asarray(pc.cast(date, pa.int64()).fill_null(0).to_numpy())
    ms = np.asarray(pc.cast(_column(m, "ms"), pa.int64()).fill_null(0).to_numpy())
    stamp = (seconds * 10**6 + ms * 1000) / 10**6  # as datetime.timestamp() divides
    if fmt == "envoy":
        host = pc.utf8_trim_whitespace(_column(m, "host"))
        ok &= ~_flag(pc.match_substring_regex(host, "^-?$"))
        end = stamp + _number(m, "duration") / 1e3
        return FastRows(ok, stamp, end, np.full(ok.size, 1e-3), host.to_pylist())
    server = _column(m, "server")
    ok &= ~_flag(pc.is_in(server, pa.array(["<NOSRV>", "-"])))
    # a date before this one that the per-line pattern would match first: that reader's
    ok &= ~_flag(pc.match_substring_regex(_column(m, "pre"), r"\[\d\d/\w{3}/\d{4}:"))
    queued = _number(m, "TR") + _number(m, "Tw")
    names = pc.binary_join_element_wise(_column(m, "backend"), server, "/")
    sent = stamp + queued / 1e3
    end = stamp + _number(m, "Ta") / 1e3
    return FastRows(ok, sent, end, np.full(ok.size, 1e-3), names.to_pylist())
