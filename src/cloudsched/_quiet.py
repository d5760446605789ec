"""Keep what compiled libraries print off the user's terminal and out of JSON output.

HiGHS (behind :func:`scipy.optimize.milp` and :func:`~scipy.optimize.linprog`) can write to
the process's standard output from C++, below Python's ``sys.stdout``, where no Python
setting reaches it.  :func:`captured_output` points file descriptors 1 and 2 at a temporary
file for the duration of a call and hands what was written to the ``cloudsched.solver``
logger at DEBUG level.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["captured_output"]

log = logging.getLogger("cloudsched.solver")
_LIBC = ctypes.CDLL(None) if os.name == "posix" else None


def _flush_c() -> None:
    if _LIBC is not None:
        _LIBC.fflush(None)


@contextlib.contextmanager
def captured_output(label: str) -> Iterator[None]:
    """Capture what is written to descriptors 1 and 2 inside the block (``label`` in the log)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield
        finally:
            _flush_c()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace").strip()
            if text:
                log.debug("%s wrote: %s", label, text)
