"""The command line's progress bars: a bar that appears when a run is long, compiles shown."""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from typing import TYPE_CHECKING

from rich.console import Console

from cloudsched.progress import Compile, watch_compiles

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["LazyProgress"]


class LazyProgress:
    """A rich progress bar that appears only once a run has taken more than ``delay`` seconds.

    Called as ``bar(fraction)`` or ``bar(fraction, status)``: a negative fraction keeps the
    last one (the run is alive but has no new estimate), and ``status`` is shown after the
    description (for example the precision an open-ended simulation has reached).  When
    standard error is not a terminal (a log file, CI), a helper thread writes a plain line
    with the share done and the time left every ``every`` seconds instead (default 60, or
    ``CLOUDSCHED_PROGRESS_SECONDS``), also while a solver holds the main thread; it writes
    to a copy of descriptor 2 taken at the start, which solver-output capture leaves alone.
    """

    def __init__(self, description: str, delay: float = 2.0, every: float | None = None) -> None:
        self.description = description
        self.delay = delay
        self.every = every if every is not None else _progress_seconds()
        self.console = Console(stderr=True)
        self.start = time.perf_counter()
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.fraction = -1.0  # unknown until the run gives an estimate
        self.status = ""
        self.compiling_now: Compile | None = None
        self.stop = threading.Event()
        self.fd = -1
        self.watching = contextlib.ExitStack()
        self.watching.enter_context(watch_compiles(self))
        if not self.console.is_terminal:
            with contextlib.suppress(OSError):
                self.fd = os.dup(2)
                threading.Thread(target=self._beat, name="cloudsched progress", daemon=True).start()

    def __call__(self, fraction: float, status: str = "") -> None:
        """Record progress (``fraction`` done, or < 0 for unknown) and a status text."""
        if fraction >= 0:
            self.fraction = fraction
        if status:
            self.status = status
        if not self.console.is_terminal:
            return  # the helper thread writes the lines
        if self.bar is None and time.perf_counter() - self.start < self.delay:
            return
        self._show()

    def _show(self) -> None:
        """Draw the bar: the run's share done, or the compile in progress."""
        if self.bar is None:
            from rich.progress import (  # 10 ms: only a run long enough for a bar loads it
                BarColumn,
                Progress,
                TaskProgressColumn,
                TimeRemainingColumn,
            )

            from cloudsched.cli.console import description_column

            self.bar = Progress(
                description_column(),
                BarColumn(),
                TaskProgressColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.description, total=1.0)
        assert self.task is not None
        c = self.compiling_now
        if c is None:
            text = f"{self.description} {self.status}".strip()
            self.bar.update(self.task, completed=max(self.fraction, 0.0), description=text)
            return
        took = time.perf_counter() - c.started
        share = min(0.99, took / c.expected) if c.expected else 0.0
        about = f" of about {c.expected:.0f}" if c.expected else ""
        text = f"{self.description}: compiling, {took:.0f} s{about}"
        self.bar.update(self.task, completed=share, description=text)

    def compiling(self, compile_: Compile | None) -> None:
        """Show a kernel compiling in the bar (at once), then the run again when it is done."""
        self.compiling_now = compile_
        if not self.console.is_terminal:
            return
        self._show()
        if compile_ is not None:
            threading.Thread(target=self._tick, args=(compile_,), daemon=True).start()

    def _tick(self, compile_: Compile) -> None:
        """Redraw the compile's seconds every half second while it lasts."""
        while self.compiling_now is compile_ and not self.stop.wait(0.5):
            with contextlib.suppress(Exception):  # a bar closed meanwhile
                if self.compiling_now is compile_:
                    self._show()

    def say(self, line: str) -> bool:
        """Print ``line`` above the bar when the bar is showing (else the caller writes it)."""
        if self.bar is None:
            return False
        self.bar.console.print(line, markup=False, highlight=False)
        return True

    def _beat(self) -> None:
        try:
            while not self.stop.wait(self.every):
                with contextlib.suppress(OSError):
                    os.write(self.fd, self.line().encode())
        finally:  # closed here, never under a write (the number could be reused meanwhile)
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def line(self) -> str:
        """Return the plain progress line (what a log shows)."""
        elapsed = time.perf_counter() - self.start
        text = f"{self.description} {self.status}".strip()
        c = self.compiling_now
        if c is not None:
            text += f" (compiling {c.label} for {time.perf_counter() - c.started:.0f} s)"
        if self.fraction < 0:  # no estimate of the share done (e.g. column generation)
            done = f"running for {_duration(elapsed)}, time left unknown"
        else:
            left = "unknown"
            if 0 < self.fraction < 1:
                left = "about " + _duration(elapsed * (1 - self.fraction) / self.fraction)
            done = f"{100 * self.fraction:.1f}% after {_duration(elapsed)}, {left} left"
        return f"progress: {text}: {done} (Ctrl-C stops)\n"

    def close(self) -> None:
        """Stop the bar (a run that ended before it was shown leaves no trace)."""
        self.watching.close()
        self.compiling_now = None
        if self.bar is not None:
            self.bar.stop()
        self.stop.set()


def _duration(seconds: float) -> str:
    """``95 s``, ``12 min``, ``3.4 h`` or ``127 days``: a rough duration for progress lines."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def _progress_seconds() -> float:
    """Seconds between plain progress lines: ``CLOUDSCHED_PROGRESS_SECONDS`` or 60."""
    try:
        value = float(os.environ.get("CLOUDSCHED_PROGRESS_SECONDS", "60"))
    except ValueError:
        return 60.0
    return value if math.isfinite(value) and value > 0 else 60.0
