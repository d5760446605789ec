"""Reading log files safely: regular files, gzip or plain text, bounded lines and numbers.

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

__all__ = ["MAX_INT", "MAX_LINE", "MAX_VALUE", "TraceError", "log_lines"]


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
                        raise TraceError(f"{name}:{lineno}", f"a line longer than {MAX_LINE} "
                                         "characters: not a log of this kind")  # fmt: skip
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
