"""What a user sees while a kernel compiles: one line, the time it took before, a bar.

A kernel compiles once per machine and cloudsched version (the result is cached on disk,
:mod:`cloudsched._jit.cache`), in a few seconds to a minute.  So that nobody waits in
silence:

* once a kernel has compiled for :func:`delay` seconds (half a second), one line goes to
  standard error: what compiles, that it happens once, and how long it took the last time
  it compiled in this cache (kept in ``compile-times.json`` beside the cached code), or a
  typical time measured by ``benchmarks/bench_compile.py``;
* a progress display that watches compiles (:func:`cloudsched.progress.watch_compiles`: the
  command line's bars) is told when one starts and ends, to show it in its bar, and prints
  the line itself.

Only the outermost compile of a thread is announced (a kernel's helpers compile inside it).
``CLOUDSCHED_COMPILE_NOTICE``: ``off`` for no line, or the seconds to wait before it (0:
at the compile's start).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import threading
import time
from typing import Any

from numba.core import event

from cloudsched.progress import Compile, compile_watchers

__all__ = ["delay", "install", "notice_line", "typical"]

#: Seconds a compile runs before its line is written.
DEFAULT_DELAY = 0.5
TIMES_FILE = "compile-times.json"
_LOCAL = threading.local()  # per thread: how deep in compiles, and the outermost one


def delay() -> float | None:
    """Seconds before a compile's line (``CLOUDSCHED_COMPILE_NOTICE``), None for no line."""
    raw = os.environ.get("CLOUDSCHED_COMPILE_NOTICE", "").strip().lower()
    if raw in ("off", "no", "false"):
        return None
    try:
        value = float(raw) if raw else DEFAULT_DELAY
    except ValueError:
        return DEFAULT_DELAY
    return value if math.isfinite(value) and value >= 0 else DEFAULT_DELAY


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 9.5 else f"{seconds:.1f} s"


def notice_line(c: Compile) -> str:
    """Return the line a compile writes (module notes)."""
    took = ""
    if c.expected is not None:
        took = f": about {_duration(c.expected)} ({c.basis})"
    return (
        f"compiling {c.label}, once for this machine and version of cloudsched{took} "
        "(`cloudsched warmup` compiles ahead of use)"
    )


def _times_path(dispatcher: Any) -> str | None:
    cache = getattr(dispatcher, "_cache", None)
    path = getattr(cache, "_cache_path", None)
    return os.path.join(path, TIMES_FILE) if isinstance(path, str) else None


def _read(path: str | None) -> dict[str, float]:
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in data.items()
        if isinstance(v, int | float) and math.isfinite(v) and v >= 0
    }


def _record(path: str | None, label: str, seconds: float) -> None:
    """Keep ``seconds`` as ``label``'s last compile time (atomically; a race loses one)."""
    if path is None or not os.path.isdir(os.path.dirname(path)):
        return
    times = _read(path)
    times[label] = round(seconds, 2)
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".compile-times.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(times, fh, indent=0, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def typical(label: str) -> float | None:
    """Return how long ``label`` took to compile where ``bench_compile.py`` measured it."""
    from importlib.resources import files

    try:
        data = json.loads(files("cloudsched.data").joinpath(TIMES_FILE).read_text())
    except (OSError, ValueError):
        return None
    value = data.get("kernels", {}).get(label) if isinstance(data, dict) else None
    return float(value) if isinstance(value, int | float) else None


def _say(line: str) -> None:
    if not any(w.say(line) for w in compile_watchers()):
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()


class _Listener(event.Listener):
    """numba's ``numba:compile`` events: the outermost compile of a thread is announced."""

    def on_start(self, ev: event.Event) -> None:
        depth = getattr(_LOCAL, "depth", 0)
        _LOCAL.depth = depth + 1
        dispatcher = ev.data["dispatcher"]
        label = getattr(dispatcher, "_cloudsched_label", None)
        if depth or label is None:
            return
        path = _times_path(dispatcher)
        before = _read(path).get(label)
        expected, basis = before, "last time here"
        if before is None:
            expected, basis = typical(label), "typical"
        c = Compile(label, time.perf_counter(), expected, basis)
        for w in compile_watchers():  # first, so that a bar is showing for the line
            w.compiling(c)
        wait = delay()
        timer = None
        if wait == 0:
            _say(notice_line(c))
        elif wait is not None:
            timer = threading.Timer(wait, _say, (notice_line(c),))
            timer.daemon = True
            timer.start()
        _LOCAL.current = (c, path, timer)

    def on_end(self, ev: event.Event) -> None:
        _LOCAL.depth = max(0, getattr(_LOCAL, "depth", 1) - 1)
        current = getattr(_LOCAL, "current", None)
        if _LOCAL.depth or current is None:
            return
        _LOCAL.current = None
        c, path, timer = current
        if timer is not None:
            timer.cancel()
        for w in compile_watchers():
            w.compiling(None)
        data = ev.data or {}
        dispatcher, args = data.get("dispatcher"), data.get("args")
        if dispatcher is not None and tuple(args or ()) in dispatcher.overloads:  # compiled
            _record(path, c.label, time.perf_counter() - c.started)


_INSTALLED: list[_Listener] = []


def install() -> None:
    """Listen to numba's compile events (once a process)."""
    if not _INSTALLED:
        _INSTALLED.append(_Listener())
        event.register("numba:compile", _INSTALLED[0])
