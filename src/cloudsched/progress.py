"""One shape for every progress callback: ``progress(fraction, status)``.

Every long computation of the package (a simulation, a placement run, a fluid trajectory,
an exact chain, the static bound, a sweep, ``compare``) takes an optional
:data:`Progress` and calls it as ``progress(fraction, status)``: ``fraction`` is the share
done, in [0, 1], or negative when the computation cannot tell (a search, an open-ended run
before its first estimate); ``status`` is a short text, possibly empty (``"3 of 10
runs"``, ``"precision 1.2% (target 1%)"``).  The command line's bars take exactly this
shape, so any callback can be handed to any computation.

A kernel that compiles is progress too (seconds to a minute, once per machine):
:mod:`cloudsched._jit.notice` tells every :class:`CompileWatcher` registered with
:func:`watch_compiles` (the command line's bars) when one starts and ends, as a
:class:`Compile`.  They live here, with no numeric library imported, so that a display can
watch before any kernel is loaded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Compile", "CompileWatcher", "Progress", "compile_watchers", "counted", "watch_compiles"]

#: A progress callback: ``progress(fraction, status)`` (see the module notes).
Progress = Callable[[float, str], None]


def counted(done: int, total: int, what: str = "runs") -> tuple[float, str]:
    """Return the fraction and status of ``done`` of ``total`` items (``(3 of 10 runs)``)."""
    return (done / total if total > 0 else 1.0), f"({done} of {total} {what})"


@dataclass(frozen=True)
class Compile:
    """A kernel compiling.

    What (``label``), since when (``time.perf_counter()``) and for how long it compiled
    before (``expected``, seconds; None when unknown) by ``basis`` (``last time here`` or
    ``typical``).
    """

    label: str
    started: float
    expected: float | None
    basis: str


class CompileWatcher(Protocol):
    """A display told of compiles (:func:`watch_compiles`)."""

    def compiling(self, compile_: Compile | None) -> None:
        """Show that a compile started (``compile_``), or that the one shown ended (None)."""
        ...

    def say(self, line: str) -> bool:
        """Show ``line`` above the display; False when it is not showing (stderr instead)."""
        ...


_WATCHERS: list[CompileWatcher] = []
_LOCK = threading.Lock()


@contextlib.contextmanager
def watch_compiles(watcher: CompileWatcher) -> Iterator[None]:
    """Tell ``watcher`` of every compile while the block runs."""
    with _LOCK:
        _WATCHERS.append(watcher)
    try:
        yield
    finally:
        with _LOCK:
            _WATCHERS.remove(watcher)


def compile_watchers() -> list[CompileWatcher]:
    """Return the watchers registered now (newest last)."""
    with _LOCK:
        return list(_WATCHERS)
