"""Ctrl-C that never lands inside a compiled library's callback.

Python runs a signal handler between bytecodes, and that may be inside a ctypes callback:
llvmlite calls one while numba saves a freshly compiled kernel to its cache.  An exception
raised there is printed and dropped ("Exception ignored on calling ctypes callback"), and
numba then fails with an unrelated ``RuntimeError`` (``no compiled object yet``), so a
Ctrl-C at that moment would end the command with a traceback instead of ``interrupted:``.
:func:`interruptible` installs a SIGINT handler that, when the signal arrives inside
llvmlite, asks for it again a tenth of a second later instead (the compile finishes or
leaves llvmlite first); everywhere else it raises ``KeyboardInterrupt`` as Python's own
handler does.  SIGTERM (what ``kill``, ``timeout`` and service managers send) is treated
the same way, so that it too stops a command cleanly: nothing half-written, one line, and
the conventional status 143 (:func:`stopped_by`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["interruptible", "stopped_by"]

#: Seconds before an interrupt that arrived inside a callback is delivered again.
RETRY_SECONDS = 0.1

#: The signals handled, and the last one received (empty: none yet).
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []


def stopped_by() -> int | None:
    """Return the signal that stopped the last :func:`interruptible` block, or None."""
    return _received[-1] if _received else None


def _inside_callback(frame: FrameType | None) -> bool:
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("llvmlite"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C or SIGTERM raise ``KeyboardInterrupt`` outside llvmlite's callbacks.

    Only the main thread receives signals; elsewhere the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    timers: list[threading.Timer] = []
    main = threading.main_thread().ident
    assert main is not None

    def handler(signum: int, frame: FrameType | None) -> None:
        if _inside_callback(frame):
            timer = threading.Timer(RETRY_SECONDS, signal.pthread_kill, (main, signum))
            timer.daemon = True
            timers.append(timer)
            timer.start()
            return
        _received.append(signum)
        raise KeyboardInterrupt

    _received.clear()
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for timer in timers:
            timer.cancel()
        for sig, old in previous.items():
            signal.signal(sig, old)
