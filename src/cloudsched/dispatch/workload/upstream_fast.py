"""Access logs read a batch of lines at a time, for ``check-lb`` on long logs.

:func:`batches` cuts the files into batches of :data:`BATCH` lines (reporting progress),
:func:`read_fast` reads a batch's plain lines, :class:`Batch` holds a batch's requests
(the others filled in by the per-line reader) and :class:`Rows` gathers them in log order.

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
  ``Tw`` not negative, a server other than ``<NOSRV>`` and ``-``;
* ``envoy-json`` (:func:`~cloudsched.dispatch.workload.upstream_json.read_json_fast`,
  Arrow's JSON reader over the batch):
  ``start_time`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ``, ``duration`` a number in [0, 1e9],
  ``upstream_host`` a string other than ``-``, and ``us_tx_beg`` and ``us_rx_end`` both
  absent or both numbers in order, every key written in lower case once.  A batch Arrow
  cannot read as one table (a key of two types, a key twice, a line not an object) is
  read line by line.

Each fast pattern is a sub-language of the per-line one: where it matches, both split the
line alike and compute the same times with the same floating-point operations (a test
reads logs both ways, line for line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.dispatch.workload.logfiles import log_lines

__all__ = [
    "BATCH",
    "Batch",
    "FastRows",
    "Rows",
    "batches",
    "fast_pattern",
    "flags",
    "read_fast",
    "stamps",
]

_NUMBER = r"\d{{1,12}}(?:\.(?P<{0}_frac>\d{{1,9}}))?"
_NUMERIC = ("msec", "request_time", "upstream_response_time", "upstream_header_time")
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
    worker: list[str | None] | None = None  # NGINX $pid, where the format has it
    own: np.ndarray | None = None  # the upstream's own times (Envoy JSON's us_* keys)
    header: np.ndarray | None = None  # NGINX $upstream_header_time (s)


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


def flags(values: Any) -> np.ndarray:
    """Return a boolean column as numpy, null as True."""
    return np.asarray(values.fill_null(True).to_numpy(zero_copy_only=False), dtype=bool)


def _nginx(m: Any, ok: np.ndarray) -> FastRows:
    """As ``upstreams._times`` reads an NGINX line: from ``$msec - $request_time``."""
    import pyarrow.compute as pc

    msec, total = _number(m, "msec"), _number(m, "request_time")
    addr = _column(m, "upstream_addr")
    ok &= ~flags(pc.match_substring_regex(addr, "^:|:$|^-$"))  # the per-line reader's cases
    ok &= msec > 0
    start, done = msec - total, msec
    if "upstream_response_time" in [f.name for f in m.type]:
        start = start + 0.0  # no tries before the one that served it
        done = start + _number(m, "upstream_response_time")

    def frac(name: str) -> np.ndarray:
        return np.asarray(pc.utf8_length(_column(m, f"{name}_frac")).fill_null(0).to_numpy())

    digits = np.minimum(np.maximum(frac("msec"), frac("request_time")), 9)
    names = [f.name for f in m.type]
    pid = _column(m, "pid").to_pylist() if "pid" in names else None
    header = _number(m, "upstream_header_time") if "upstream_header_time" in names else None
    return FastRows(ok, start, done, _STEPS[digits], addr.to_pylist(), pid, None, header)


def stamps(m: Any, ok: np.ndarray, fmt: str) -> np.ndarray:
    """Return the stamps of ``m``'s ``date`` and ``ms``; clear ``ok`` where not plain."""
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = "%Y-%m-%dT%H:%M:%S" if fmt == "envoy" else "%d/%b/%Y:%H:%M:%S"
    text = _column(m, "date")
    date = pc.strptime(text, format=layout, unit="s", error_is_null=True)
    ok &= np.asarray(date.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    # Arrow's strptime rolls an impossible date over (31 Nov: 1 Dec; second 60: the next
    # minute); the per-line reader refuses it: a date is plain only when its day and its
    # second are the ones written
    day, sec = (0, 18) if fmt == "haproxy" else (8, 17)
    for field, at in ((pc.day, day), (pc.second, sec)):
        written = pc.cast(pc.utf8_slice_codeunits(text, at, at + 2), pa.int64())
        same = pc.equal(field(date.fill_null(0)), written).fill_null(False)
        ok &= np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
    seconds = np.asarray(pc.cast(date, pa.int64()).fill_null(0).to_numpy())
    ms = np.asarray(pc.cast(_column(m, "ms"), pa.int64()).fill_null(0).to_numpy())
    return (seconds * 10**6 + ms * 1000) / 10**6  # as datetime.timestamp() divides


def _stamped(m: Any, ok: np.ndarray, fmt: str) -> FastRows:
    """Envoy's and HAProxy's lines: a date with milliseconds and times in milliseconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    stamp = stamps(m, ok, fmt)
    if fmt == "envoy":
        host = pc.utf8_trim_whitespace(_column(m, "host"))
        ok &= ~flags(pc.match_substring_regex(host, "^-?$"))
        end = stamp + _number(m, "duration") / 1e3
        return FastRows(ok, stamp, end, np.full(ok.size, 1e-3), host.to_pylist())
    server = _column(m, "server")
    ok &= ~flags(pc.is_in(server, pa.array(["<NOSRV>", "-"])))
    # a date before this one that the per-line pattern would match first: that reader's
    ok &= ~flags(pc.match_substring_regex(_column(m, "pre"), r"\[\d\d/\w{3}/\d{4}:"))
    queued = _number(m, "TR") + _number(m, "Tw")
    names = pc.binary_join_element_wise(_column(m, "backend"), server, "/")
    sent = stamp + queued / 1e3
    end = stamp + _number(m, "Ta") / 1e3
    return FastRows(ok, sent, end, np.full(ok.size, 1e-3), names.to_pylist())


#: Lines read a batch at a time.
BATCH = 65_536


def batches(
    files: list[str | Path], progress: Callable[[float], None] | None
) -> Iterator[list[tuple[str, int, str]]]:
    """Yield the files' lines in batches of :data:`BATCH`, reporting the share read."""
    total = sum(text_size(f) for f in files) if progress is not None else 1
    read = 0
    batch: list[tuple[str, int, str]] = []
    for file, line_no, text in log_lines(files):
        batch.append((file, line_no, text))
        read += len(text)
        if len(batch) == BATCH:
            yield batch
            batch = []
            if progress is not None:
                progress(min(1.0, read / max(total, 1)))
    if batch:
        yield batch


def text_size(path: str | Path) -> int:
    """Return the size of a file's text, for progress only.

    A gzip file's trailer gives it (modulo 4 GiB); else the size on disk.
    """
    size = Path(path).stat().st_size
    with open(path, "rb") as f:
        if f.read(2) != b"\x1f\x8b" or size < 18:
            return size
        f.seek(-4, 2)
        return max(int.from_bytes(f.read(4), "little"), size)


class Batch:
    """One batch's requests: the plain lines read together, the others one by one."""

    def __init__(self, n: int, got: FastRows | None, files: np.ndarray) -> None:
        self.files = files  # each line's file (its index among the files read)
        self.sent, self.end, self.step = np.zeros(n), np.zeros(n), np.zeros(n)
        self.keep = np.zeros(n, dtype=bool)
        self.name: list[str | None] = [None] * n
        self.worker: list[str | None] = [None] * n
        self.header = np.full(n, np.nan)
        self.dropped = self.unparsed = self.upstream_times = 0
        self.first_unparsed = ""
        if got is not None:
            self.keep = got.ok.copy()
            self.sent[got.ok], self.end[got.ok] = got.sent[got.ok], got.end[got.ok]
            self.step[got.ok] = got.step[got.ok]
            self.name = list(got.upstream)
            self.worker = list(got.worker) if got.worker is not None else self.worker
            if got.own is not None:
                self.upstream_times = int((got.own & got.ok).sum())
            if got.header is not None:
                self.header[got.ok] = got.header[got.ok]

    def add(self, i: int, got: object, where: str) -> None:
        """Add what the per-line reader made of line ``i`` (``upstreams._timed``)."""
        if got is False:
            self.unparsed += 1
            self.first_unparsed = self.first_unparsed or where
        elif got is None:
            self.dropped += 1
        else:
            assert isinstance(got, tuple)
            self.sent[i], self.end[i], self.name[i], self.step[i], own, self.worker[i] = got[:6]
            self.header[i] = got[6]
            self.keep[i] = True
            self.upstream_times += own


class Rows:
    """The requests read so far, in log order, and what was left out."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.names: dict[str, int] = {}
        self.workers: dict[str, int] = {}
        self.dropped = self.unparsed = self.absurd = self.upstream_times = 0
        self.first_unparsed = ""
        self.step = 0.0  # the coarsest clock step of the lines read

    def extend(self, b: Batch, max_request: float) -> None:
        """Add a batch's requests; one held longer than ``max_request`` is absurd."""
        self.dropped += b.dropped
        self.unparsed += b.unparsed
        self.upstream_times += b.upstream_times
        self.first_unparsed = self.first_unparsed or b.first_unparsed
        absurd = b.keep & ~(b.end - b.sent <= max_request)
        self.absurd += int(absurd.sum())
        keep = np.flatnonzero(b.keep & ~absurd)
        if keep.size:
            self.step = max(self.step, float(b.step[keep].max()))
        ups = _codes([b.name[i] for i in keep], self.names)
        who = _codes([b.worker[i] for i in keep], self.workers)
        self.parts.append((b.sent[keep], b.end[keep], ups, who, b.files[keep], b.header[keep]))

    @property
    def sent(self) -> np.ndarray:
        """Each request's send time, in log order."""
        return np.concatenate([p[0] for p in self.parts]) if self.parts else np.zeros(0)

    @property
    def end(self) -> np.ndarray:
        """Each request's end."""
        return np.concatenate([p[1] for p in self.parts]) if self.parts else np.zeros(0)

    @property
    def ups(self) -> np.ndarray:
        """Each request's upstream (codes of :attr:`names`)."""
        parts = [p[2] for p in self.parts]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    @property
    def files(self) -> np.ndarray:
        """Each request's file (its index among the files read)."""
        parts = [p[4] for p in self.parts]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    @property
    def header(self) -> np.ndarray | None:
        """Each request's header time (NaN: none); None: no line has one."""
        parts = [p[5] for p in self.parts]
        got = np.concatenate(parts) if parts else np.zeros(0)
        return None if np.isnan(got).all() else got

    @property
    def worker(self) -> np.ndarray | None:
        """Each request's worker (codes of :attr:`workers`); None: no line names one."""
        if not self.workers:
            return None
        who = np.concatenate([p[3] for p in self.parts])
        return None if (who < 0).any() else who


def _codes(values: list[str | None], known: dict[str, int]) -> np.ndarray:
    """Code ``values`` by ``known``, adding new ones in order of first appearance (None: -1).

    Arrow's dictionary encoding orders a batch's distinct values by first appearance, so
    adding them in that order keeps the codes a one-by-one reading would give.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not values:
        return np.zeros(0, dtype=np.int64)
    enc = pc.dictionary_encode(pa.array(values, type=pa.string()))
    table = np.array(
        [known.setdefault(v, len(known)) for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int64
    )
    idx = np.asarray(enc.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return table[idx]
