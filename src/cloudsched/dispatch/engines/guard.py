"""Running a compiled kernel so that it can always be stopped, and its failures read.

:func:`call_kernel` calls a policy's kernel.  A built-in kernel returns every chunk of
events, where Ctrl-C and the time limit are seen.  A plug-in's hook may never return (a loop
that does not end), so its kernel runs in a helper thread (kernels release the GIL) while
the calling thread waits: Ctrl-C (``KeyboardInterrupt``) or the run's deadline stop the run
at once, and the abandoned kernel ends with the process.  A plug-in that fails to compile
or raises becomes a one-line :class:`~cloudsched.dispatch.plugin.PluginError`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba

from cloudsched.dispatch.plugin import PluginError, Policy
from cloudsched.errors import ExternalError

__all__ = ["TimeLimitExceeded", "call_kernel", "check_deadline", "plugin_failure"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class TimeLimitExceeded(ExternalError):
    """A run went past its wall-clock limit (``time_limit``); the message says where."""

    def __init__(self, policy: Policy, events: int, stuck: bool) -> None:
        why = (
            f"inside one call of {policy.name}'s compiled hooks (a hook that never returns?)"
            if stuck
            else f"after {events:,} events: a larger time_limit, a coarser "
            "precision or a smaller max_tasks"
        )
        super().__init__(f"the run was stopped at its time limit, {why}")


def plugin_failure(policy: Policy, exc: Exception) -> PluginError:
    """Return the one-line error of a plug-in that failed to compile or raised."""
    if isinstance(exc, IndexError) and str(exc) == "index is out of bounds":
        return PluginError(
            policy.name,
            "a hook indexed outside an array (st.mem beyond its "
            "declared size, or a server outside [0, N)): IndexError, caught by "
            "the bounds checks plug-ins are compiled with",
        )
    if not isinstance(exc, numba.core.errors.NumbaError):
        return PluginError(policy.name, f"a hook raised {type(exc).__name__}: {exc}")
    text = _ANSI.sub("", str(exc))
    lines = [line.strip() for line in text.splitlines()]
    useful = [line for line in lines if line and not line.startswith(("Failed in", "During:"))]
    why = useful[0].rstrip(":") if useful else type(exc).__name__
    if "Only accept returning of array" in text or "NRT required" in text:
        why = "a hook allocates an array, which hooks may not do (keep state in st.mem)"
    where = ""
    if policy.source is not None:
        name = Path(policy.source).name
        found = re.findall(r'File "([^"]*)", line (\d+)', text)
        lines_in = [line for path, line in found if Path(path).name == name]
        if lines_in:
            where = f" at {name} line {lines_in[0]}"
    return PluginError(policy.name, f"failed to compile{where}: {why}")


def check_deadline(
    policy: Policy, deadline: float | None, events: int, stuck: bool = False
) -> None:
    """Stop a run past its deadline (``stuck``: inside one call of the kernel)."""
    if deadline is not None and time.perf_counter() > deadline:
        raise TimeLimitExceeded(policy, events, stuck)


def call_kernel(
    policy: Policy,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    deadline: float | None,
    events: Callable[[], int],
) -> Any:
    """Call ``fn(*args)`` for ``policy`` (see the module notes)."""
    if policy.builtin:
        return fn(*args)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc

    helper = threading.Thread(target=target, name=f"cloudsched {policy.name}", daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(0.25)  # returns when the kernel does; wakes for signals
        if helper.is_alive():
            check_deadline(policy, deadline, events(), stuck=True)
    if "error" in box:
        exc = box["error"]
        if isinstance(exc, Exception):
            raise plugin_failure(policy, exc) from None
        raise exc
    return box["value"]
