"""Readers of real workload logs: Google cluster trace 2011, SWF, and plain CSV.

Each reader streams its files line by line (gzip or plain text; several files are read in
the order given, as one log) and returns a :class:`TraceLog`: the tasks as a
:class:`~cloudsched.dispatch.workload.resolved.Trace` (arrival and service times in seconds) plus
what was read, dropped and censored.  A malformed line stops the reader with a
:class:`TraceError` naming the file and the line.

Rules (CHOICE where the formats leave room):

* ``google2011`` (``task_events``): a task is ``(job_id, task_index)``; its arrival is its
  first SUBMIT; tasks whose first event is at time 0 (present before the trace window)
  are left out.  Run time = FINISH minus the last SCHEDULE before it.  Tasks that never
  finish are dropped (``unfinished="drop"``, the default) or censored
  (``unfinished="censor"``: run time = time of their last KILL/FAIL/EVICT/LOST event, or
  the end of the log, minus their last SCHEDULE); tasks never scheduled, and tasks whose
  run time comes out as 0, are always dropped.
  Events are time-ordered; a time that goes backwards is an error.
* ``swf``: arrival = submit time, service = run time; jobs with an unknown (-1) or zero run
  time are dropped.  Header comments ``; Key: value`` are kept in ``header``.
* ``csv``: a header with ``arrival`` and ``service`` columns (seconds), arrivals in order,
  services > 0.
"""

from __future__ import annotations

import csv
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cloudsched.dispatch.workload.logfiles import (
    MAX_INT,
    MAX_VALUE,
    TraceError,
    check_log_files,
    log_lines,
)
from cloudsched.dispatch.workload.resolved import Trace
from cloudsched.errors import ParameterError

__all__ = [
    "FORMATS",
    "TraceError",
    "TraceLog",
    "check_log_files",
    "finish_log",
    "log_lines",
    "read_trace",
    "trace_summary",
]

FORMATS = ("google2011", "swf", "csv")
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST = range(7)


@dataclass(frozen=True)
class TraceLog:
    """Tasks read from a log and an account of the reading."""

    trace: Trace
    format: str
    files: tuple[str, ...]
    records: int  # lines (events or jobs) read
    submitted: int  # tasks or jobs found
    dropped: int
    censored: int = 0
    first_submit: float = 0.0
    last_submit: float = 0.0
    header: dict[str, str] = field(default_factory=dict)


def _number(where: str, text: str, what: str, integer: bool = True) -> float:
    try:
        x = int(text) if integer else float(text)
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise TraceError(where, f"{what} must be a number, got {shown!r}") from None
    if (integer and not -MAX_INT <= x < MAX_INT) or (
        not integer and not (math.isfinite(x) and abs(x) <= MAX_VALUE)
    ):
        bound = "a 64-bit integer" if integer else f"a finite number of magnitude <= {MAX_VALUE:g}"
        raise TraceError(where, f"{what} must be {bound} ({len(text)} characters given)")
    return x


def _read_google(paths: Sequence[str | Path], unfinished: str) -> TraceLog:
    first: dict[tuple[int, int], float] = {}  # task -> arrival (s), for tasks in the window
    sched: dict[tuple[int, int], float] = {}  # task -> last SCHEDULE time (s)
    ended: dict[tuple[int, int], float] = {}  # task -> last KILL/FAIL/EVICT/LOST time (s)
    skipped: set[tuple[int, int]] = set()  # tasks present before the window
    done: set[tuple[int, int]] = set()
    arrivals = array("d")  # 8 bytes a value (a list of floats costs 32)
    services = array("d")
    files: list[str] = []
    last_time, records, zero = 0, 0, 0
    for name, lineno, text in log_lines(paths):
        if not files or files[-1] != name:
            files.append(name)
        where = f"{name}:{lineno}"
        fields = text.rstrip("\r\n").split(",")
        if len(fields) != 13:
            raise TraceError(where, f"expected 13 comma-separated fields, found {len(fields)}")
        t = int(_number(where, fields[0], "time"))
        if t < 0:
            raise TraceError(where, f"time must be >= 0, got {t}")
        if t < last_time:
            raise TraceError(where, f"events out of time order ({t} after {last_time})")
        last_time = t
        key = (
            int(_number(where, fields[2], "job_id")),
            int(_number(where, fields[3], "task_index")),
        )
        kind = int(_number(where, fields[5], "event_type"))
        if not 0 <= kind <= 8:
            raise TraceError(where, f"event_type must be in [0, 8], got {kind}")
        records += 1
        if key in skipped or key in done:
            continue
        seconds = t / 1e6
        if key not in first:
            if t == 0:
                skipped.add(key)
                continue
            if kind != SUBMIT:
                continue  # an event of a task whose submission we never saw
            first[key] = seconds
        if kind == SCHEDULE:
            sched[key] = seconds
        elif kind in (EVICT, FAIL, KILL, LOST):
            ended[key] = seconds
        elif kind == FINISH and key in sched:
            run = seconds - sched.pop(key)
            arrival = first.pop(key)
            ended.pop(key, None)
            done.add(key)
            if run > 0:  # a zero run time is not a usable service time: counted as dropped
                arrivals.append(arrival)
                services.append(run)
            else:
                zero += 1
    submitted = len(arrivals) + len(first) + zero
    first_submit = min(min(arrivals, default=np.inf), min(first.values(), default=np.inf))
    last_submit = max(max(arrivals, default=-np.inf), max(first.values(), default=-np.inf))
    if not arrivals and not first:
        first_submit = last_submit = 0.0
    censored = 0
    if unfinished == "censor":
        end = last_time / 1e6
        for key, arrival in first.items():
            run = ended.get(key, end) - sched.get(key, end)
            if key in sched and run > 0:
                arrivals.append(arrival)
                services.append(run)
                censored += 1
    return finish_log(
        arrivals,
        services,
        "google2011",
        files,
        records,
        submitted,
        censored,
        first_submit,
        last_submit,
        {},
    )


def _read_swf(paths: Sequence[str | Path]) -> TraceLog:
    arrivals = array("d")  # 8 bytes a value (a list of floats costs 32)
    services = array("d")
    header: dict[str, str] = {}
    files: list[str] = []
    records = 0
    for name, lineno, text in log_lines(paths):
        if not files or files[-1] != name:
            files.append(name)
        where = f"{name}:{lineno}"
        line = text.strip()
        if not line:
            continue
        if line.startswith(";"):
            key, colon, value = line[1:].partition(":")
            if colon and key.strip() and " " not in key.strip():
                header.setdefault(key.strip(), value.strip())
            continue
        fields = line.split()
        if len(fields) != 18:
            raise TraceError(where, f"expected 18 whitespace-separated fields, found {len(fields)}")
        submit = _number(where, fields[1], "submit time", integer=False)
        run = _number(where, fields[3], "run time", integer=False)
        if submit < 0:
            raise TraceError(where, f"submit time must be >= 0, got {submit:g}")
        if run < -1:
            raise TraceError(where, f"run time must be >= 0 or -1 (unknown), got {run:g}")
        records += 1
        if run > 0:
            arrivals.append(submit)
            services.append(run)
    if np.any(np.diff(np.asarray(arrivals)) < 0):  # SWF is sorted by submit time
        raise TraceError(files[-1] if files else "swf", "jobs are not sorted by submit time")
    first, last = (arrivals[0], arrivals[-1]) if arrivals else (0.0, 0.0)
    return finish_log(arrivals, services, "swf", files, records, records, 0, first, last, header)


def _read_csv(paths: Sequence[str | Path]) -> TraceLog:
    arrivals = array("d")  # 8 bytes a value (a list of floats costs 32)
    services = array("d")
    columns: tuple[int, int] | None = None
    files: list[str] = []
    records, last = 0, -np.inf
    for name, lineno, text in log_lines(paths):
        if not files or files[-1] != name:
            files.append(name)
            columns = None
        where = f"{name}:{lineno}"
        if not text.strip():
            continue
        row = next(csv.reader([text]))
        if columns is None:
            names = [c.strip().lower() for c in row]
            if "arrival" not in names or "service" not in names:
                raise TraceError(where, "the header must name the columns 'arrival' and 'service'")
            for col in ("arrival", "service"):
                if names.count(col) > 1:
                    raise TraceError(
                        where,
                        f"the header names the column {col!r} "
                        f"{names.count(col)} times (once, please)",
                    )
            columns = (names.index("arrival"), names.index("service"))
            width = len(names)
            continue
        if len(row) != width:
            raise TraceError(where, f"expected {width} fields, found {len(row)}")
        a = _number(where, row[columns[0]].strip(), "arrival", integer=False)
        s = _number(where, row[columns[1]].strip(), "service", integer=False)
        if not (np.isfinite(a) and np.isfinite(s)) or a < 0 or s <= 0:
            raise TraceError(where, "arrival must be >= 0 and service > 0 (finite)")
        if a < last:
            raise TraceError(where, f"arrivals out of order ({a:g} after {last:g})")
        last = a
        records += 1
        arrivals.append(a)
        services.append(s)
    first_a, last_a = (arrivals[0], arrivals[-1]) if arrivals else (0.0, 0.0)
    return finish_log(arrivals, services, "csv", files, records, records, 0, first_a, last_a, {})


def finish_log(
    arrivals: array[float],
    services: array[float],
    fmt: str,
    files: list[str],
    records: int,
    submitted: int,
    censored: int,
    first_submit: float,
    last_submit: float,
    header: dict[str, str],
) -> TraceLog:
    """Build the :class:`TraceLog` of a reader's values (sorted by arrival; >= 2 tasks)."""
    where = ", ".join(files) if files else fmt
    if len(arrivals) < 2:
        raise TraceError(where, f"fewer than two usable tasks ({len(arrivals)})")
    a = np.frombuffer(arrivals, dtype=np.float64)
    s = np.frombuffer(services, dtype=np.float64)
    order = np.argsort(a, kind="stable")  # censored tasks are appended out of order
    dropped = submitted - len(arrivals)
    trace = Trace(a[order], s[order], where)
    return TraceLog(
        trace,
        fmt,
        tuple(files),
        records,
        submitted,
        dropped,
        censored,
        float(first_submit),
        float(last_submit),
        header,
    )


def read_trace(
    paths: str | Path | Sequence[str | Path], fmt: str, *, unfinished: str = "drop"
) -> TraceLog:
    """Read one log (several files are read in the order given).

    Parameters
    ----------
    paths : path or sequence of paths
        Files (gzip or plain text).
    fmt : str
        ``google2011``, ``swf`` or ``csv``.
    unfinished : str
        Google trace only: ``drop`` or ``censor`` tasks that do not finish inside the log.

    Returns
    -------
    TraceLog
        Tasks sorted by arrival time, with counts of what was read, dropped and censored.
    """
    if fmt not in FORMATS:
        raise ParameterError("trace_format", fmt, "one of " + ", ".join(FORMATS))
    if unfinished not in ("drop", "censor"):
        raise ParameterError("unfinished", unfinished, "drop or censor")
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if not files:
        raise ParameterError("trace", paths, "at least one file")
    check_log_files(files, fmt)
    if fmt == "google2011":
        from cloudsched.dispatch.workload.fastlogs import read_google_fast  # columns, 10x faster

        fast = read_google_fast(files, unfinished)
        if fast is None:  # something to report with its file and line
            return _read_google(files, unfinished)
        a, s, records, submitted, censored, first, last = fast
        return finish_log(
            array("d", a),
            array("d", s),
            "google2011",
            [str(f) for f in files],
            records,
            submitted,
            censored,
            first,
            last,
            {},
        )
    if fmt == "swf":
        return _read_swf(files)
    return _read_csv(files)


def trace_summary(log: TraceLog) -> dict[str, object]:
    """Summarise a log: counts, span, arrival rate, service-time statistics (JSON-ready)."""
    t = log.trace
    svc = t.services
    pct = np.percentile(svc, [50, 90, 99])
    return {
        "format": log.format,
        "files": list(log.files),
        "records": log.records,
        "tasks_found": log.submitted,
        "tasks_used": int(t.arrivals.size),
        "dropped": log.dropped,
        "censored": log.censored,
        "first_arrival_s": float(t.arrivals[0]),
        "last_arrival_s": float(t.arrivals[-1]),
        "span_s": t.span,
        "arrival_rate_per_s": (t.arrivals.size - 1) / t.span if t.span > 0 else float("inf"),
        "service_mean_s": float(svc.mean()),
        "service_cv": float(svc.std() / svc.mean()),
        "service_p50_s": float(pct[0]),
        "service_p90_s": float(pct[1]),
        "service_p99_s": float(pct[2]),
        "service_max_s": float(svc.max()),
        "offered_work_s_per_s": float(svc.sum() / t.span) if t.span > 0 else float("inf"),
        "notes": []
        if t.span > 0
        else [
            "arrival_rate_per_s and offered_work_s_per_s are infinite: every arrival of the "
            "log is at the same time"
        ],
    }
