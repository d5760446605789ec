"""Keep what compiled libraries print off the user's terminal and out of JSON output.

HiGHS (highspy's MILPs and :func:`~scipy.optimize.linprog`'s LPs) can write to
the process's standard output from C++, below Python's ``sys.stdout``, where no Python
setting reaches it.  :func:`captured_output` points file descriptors 1 and 2 at a temporary
file for the duration of a call and hands what was written to the ``cloudsched.solver``
logger at DEBUG level.

:func:`solve_quietly` also runs the call in a helper thread: HiGHS releases the GIL but
never returns to Python during a long solve, so a Ctrl-C would otherwise wait for the solve
to end (minutes for a large cluster).  The main thread waits on the helper and gets the
``KeyboardInterrupt`` at once; descriptors 1 and 2 are restored before it propagates.  The
abandoned solve ends with the process: the CLI then exits without the interpreter's
shutdown, which a thread still inside HiGHS's C++ turns into an abort (SIGABRT).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["SOLVER_THREAD", "captured_output", "solve_quietly"]


#: Name prefix of the helper threads solves run in (the CLI ends without waiting for them).
SOLVER_THREAD = "cloudsched solve: "

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


def solve_quietly(label: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with its C output captured and Ctrl-C answered at once."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    with captured_output(label):
        helper = threading.Thread(target=target, name=SOLVER_THREAD + label, daemon=True)
        helper.start()
        while helper.is_alive():
            helper.join(0.25)  # returns as soon as the solve ends; wakes for signals
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
