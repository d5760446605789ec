"""Reading log files safely: regular files, gzip or plain text, bounded lines and numbers.

A log whose rows could not fit in memory is refused before it is read.

Shared by the workload-log readers (:mod:`cloudsched.dispatch.workload.traces`)
and the access-log readers (:mod:`cloudsched.dispatch.workload.accesslogs`).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from cloudsched.errors import InputError

__all__ = [
    "BYTES_PER_ROW_READ",
    "GOOGLE_BYTES_PER_BYTE",
    "MAX_INT",
    "MAX_LINE",
    "MAX_VALUE",
    "MIN_ROW_BYTES",
    "TraceError",
    "check_log_files",
    "check_regular",
    "log_lines",
]


class TraceError(InputError):
    """A trace file is missing or malformed; the message names the file and the line."""


#: Longest line of a log (a real record is a few hundred bytes).
MAX_LINE = 1 << 20


def log_lines(paths: Sequence[str | Path]) -> Iterator[tuple[str, int, str]]:
    """Yield ``(file, line number, text)`` from gzip or plain files, in order.

    Only regular files are read (:func:`cloudsched.io.open_input`); a line longer than
    :data:`MAX_LINE` characters is an error (it is never held whole in memory).
    """
    from cloudsched.io import open_input

    for path in paths:
        name = str(path)
        try:
            raw = open_input(path)
        except InputError as exc:
            raise TraceError(name, str(exc).removeprefix(f"{name}: ")) from None
        with raw:
            gz = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            stream = gzip.open(raw, "rt", newline="") if gz else io.TextIOWrapper(raw, newline="")  # noqa: SIM115
            lineno = 0
            try:
                while text := stream.readline(MAX_LINE + 1):
                    lineno += 1
                    if len(text) > MAX_LINE:
                        raise TraceError(
                            f"{name}:{lineno}",
                            f"a line longer than {MAX_LINE} characters: not a log of this kind",
                        )
                    yield name, lineno, text
            except (EOFError, OSError, zlib.error) as exc:
                raise TraceError(
                    f"{name}:{lineno + 1}", f"truncated or corrupt file ({exc})"
                ) from None
            except UnicodeDecodeError:
                raise TraceError(f"{name}:{lineno + 1}", "not a text file") from None


#: Largest magnitude of a number read from a log (seconds: 3e7 years; microseconds: 31
#: years); beyond it a value is a corrupt field, and sums of such values would overflow.
MAX_VALUE = 1e15
#: Integer fields (Google's ids and times) are 64-bit.
MAX_INT = 2**63


#: Memory per task while a log is read (value arrays, then the sorted copies), measured ~52 B.
BYTES_PER_ROW_READ = 64
#: A text row is at least this many bytes (the smallest plausible record).
MIN_ROW_BYTES = 16
#: Memory per byte of a Google task_events file while it is read: tasks in flight are kept
#: by (job, task) key until they finish; measured 5.5 B (2M rows of tasks that never finish:
#: 408 MB for 74 MB).
GOOGLE_BYTES_PER_BYTE = 8


def check_regular(files: Sequence[str | Path]) -> None:
    """Refuse a log that is missing or not a regular file (a device, pipe or folder).

    Checked before anything is read: /dev/zero never ends, and a FIFO blocks until written.
    """
    for f in files:
        p = Path(f)
        if not p.exists():
            raise TraceError(str(f), "cannot open (No such file or directory)")
        if not p.is_file():
            raise TraceError(
                str(f), "not a regular file (a device, pipe or folder cannot be read as a log)"
            )


def check_log_files(files: Sequence[str | Path], fmt: str = "csv") -> None:
    """Refuse non-regular files and logs whose rows could not fit in memory.

    A device such as /dev/zero never ends; gzip files are assumed to expand tenfold.
    """
    from cloudsched.resources import check_memory

    check_regular(files)
    total = 0.0
    for f in files:
        p = Path(f)
        size = p.stat().st_size
        total += size * (10 if p.suffix == ".gz" else 1)
    need = (
        total * GOOGLE_BYTES_PER_BYTE
        if fmt == "google2011"
        else (total / MIN_ROW_BYTES * BYTES_PER_ROW_READ)
    )
    check_memory("trace", ", ".join(map(str, files)), need, "reading the log (upper estimate)")
