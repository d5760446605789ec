"""One entry point for every workload log: shipped names, format detection, digests.

:func:`read_log` takes file paths or the names of the logs that ship with the package
(:data:`cloudsched.data.DATASETS`), finds the format when it is ``auto`` (from a shipped
name, an ``.swf`` file name, or the first line of the first file) and calls the reader of
:mod:`~cloudsched.dispatch.workload.traces` or :mod:`~cloudsched.dispatch.workload.accesslogs`.
:func:`log_inputs` describes what was read (names, sha256, format) for a result's record.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Sequence
from pathlib import Path

from cloudsched.data import DATASETS, dataset_path
from cloudsched.dispatch.workload.accesslogs import ACCESS_FORMATS, read_access_log
from cloudsched.dispatch.workload.formats import detect_line
from cloudsched.dispatch.workload.logfiles import check_regular
from cloudsched.dispatch.workload.traces import FORMATS, TraceError, TraceLog, read_trace
from cloudsched.errors import ParameterError

__all__ = ["ALL_FORMATS", "detect_format", "log_inputs", "read_log", "resolve_files"]

ALL_FORMATS = ("auto", *FORMATS, *ACCESS_FORMATS)


def resolve_files(values: str | Path | Sequence[str | Path]) -> tuple[list[Path], str | None]:
    """Paths of ``values`` (shipped names become installed files) and the names' format."""
    items = [values] if isinstance(values, str | Path) else list(values)
    if not items:
        raise ParameterError("trace", values, "at least one file")
    paths, formats = [], set()
    for item in items:
        name = str(item)
        if name in DATASETS and not Path(name).exists():
            paths.append(dataset_path(name))
            formats.add(DATASETS[name][1])
        else:
            paths.append(Path(item))
    if len(formats) > 1:
        raise ParameterError("trace", [str(i) for i in items], "logs of one format")
    return paths, (formats.pop() if formats else None)


#: Most characters of a line read to tell a log's format (a longer line is in no format).
DETECT_CHARS = 1 << 16


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rt", errors="replace") as f:
            for line in iter(lambda: f.readline(DETECT_CHARS), ""):
                if len(line) == DETECT_CHARS and not line.endswith("\n"):
                    return ""  # no log line is this long: no format will match
                if line.strip() and not line.lstrip().startswith(";"):
                    return str(line)
    except (OSError, EOFError) as exc:
        raise TraceError(str(path), f"cannot read ({exc})") from None
    return ""


def detect_format(path: Path) -> str:
    """Return the format of the log ``path``, from its name (``.swf``) or its first line."""
    return _detect(path)[0]


def _detect(path: Path) -> tuple[str, str | None]:
    """Return the format of the log ``path`` and, for NGINX, the ``log_format`` recognised."""
    if ".swf" in path.name.lower():
        return "swf", None
    line = _first_line(path)
    fields = line.rstrip("\r\n").split(",")
    if len(fields) == 13 and fields[0].strip().isdigit():
        return "google2011", None
    names = {f.strip().lower() for f in fields}
    if {"arrival", "service"} <= names:
        return "csv", None
    found = detect_line(line)
    if found is None:
        raise TraceError(
            f"{path}:1",
            "cannot tell the log's format: give --trace-format (one of "
            + ", ".join(ALL_FORMATS[1:])
            + "; nginx logs in a custom format need --log-format)",
        )
    return found


def read_log(
    paths: str | Path | Sequence[str | Path],
    fmt: str = "auto",
    *,
    unfinished: str = "drop",
    log_format: str | None = None,
    log_service: str = "upstream",
) -> TraceLog:
    """Read a workload log of any supported format (``fmt="auto"``: detected).

    ``paths`` are files or shipped names (``google2011-sample``, ``nginx-sample``, ...);
    several are read in order as one log.  ``unfinished`` applies to Google traces,
    ``log_format`` to NGINX logs and ``log_service`` (``upstream`` or ``total``) to access
    logs; giving one for another format is an error.
    """
    if fmt not in ALL_FORMATS:
        raise ParameterError("trace_format", fmt, "one of " + ", ".join(ALL_FORMATS))
    files, named = resolve_files(paths)
    check_regular(files)  # before anything reads them: /dev/zero or a FIFO never ends
    if fmt == "auto" and log_format is not None:
        fmt = "nginx"
    elif fmt == "auto" and named is not None:
        fmt = named
    elif fmt == "auto":
        fmt, log_format = _detect(files[0])  # an NGINX log in a format it recognises
    if log_format is not None and fmt != "nginx":
        raise ParameterError("log_format", log_format, "given only for nginx logs")
    if fmt in ACCESS_FORMATS:
        from cloudsched.dispatch.workload.logfiles import check_log_files

        check_log_files(files, fmt)
        return read_access_log(files, fmt, log_format=log_format, service=log_service)
    if log_service != "upstream":
        raise ParameterError("log_service", log_service, "given only for access logs")
    return read_trace(files, fmt, unfinished=unfinished)


def log_inputs(log: TraceLog) -> dict[str, object]:
    """Describe what a result replayed: the format and each file's name and sha256."""
    entries = []
    for f in log.files:
        digest = hashlib.sha256()
        with open(f, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        name = next((k for k, v in DATASETS.items() if Path(f).name == v[0]), None)
        entries.append({"file": name or str(f), "sha256": digest.hexdigest()})
    return {
        "format": log.format,
        "files": entries,
        **({"read_as": dict(log.header)} if log.format in ACCESS_FORMATS else {}),
    }
